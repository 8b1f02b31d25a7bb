/**
 * The backend's API keys in KV, for tests that order a request against a key change without
 * sleeps (tests/routes/backend/keys_test.ts, auth_test.ts).
 */

/**
 * A KV handle that holds the next look-up of one key's digest once it has read (the request then
 * waits between its read and its verdict), and tells when the key-set watch's reader has handled
 * a change: that reader asks for the next change only after its callback (the cache clear) ran.
 */
export class HeldLookup {
  #digest: string | null = null;
  #read = Promise.withResolvers<void>();
  #release = Promise.withResolvers<void>();
  #handled = "";
  #waiters: { at: string; resolve: () => void }[] = [];
  readonly kv: Deno.Kv;

  constructor(kv: Deno.Kv) {
    this.kv = new Proxy(kv, {
      get: (target, prop) => {
        if (prop === "getMany") {
          return async (
            keys: Deno.KvKey[],
            options?: { consistency?: Deno.KvConsistencyLevel },
          ) => {
            const entries = await target.getMany(keys, options);
            if (this.#digest !== null && keys.some((k) => k[3] === this.#digest)) {
              this.#digest = null;
              this.#read.resolve();
              await this.#release.promise;
            }
            return entries;
          };
        }
        if (prop === "watch") {
          return (keys: Deno.KvKey[], options?: { raw?: boolean }) => {
            const reader = target.watch(keys, options).getReader();
            let last: string | null = null;
            return new ReadableStream<Deno.KvEntryMaybe<unknown>[]>({
              pull: async (controller) => {
                if (last !== null) this.#handle(last);
                const { done, value } = await reader.read();
                if (done) return controller.close();
                last = value[0].versionstamp ?? "";
                controller.enqueue(value);
              },
              cancel: () => reader.cancel(),
            }, { highWaterMark: 0 });
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** Holds the next look-up of `rawKey` after its read; resolves once that read is done. */
  async hold(rawKey: string): Promise<void> {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(rawKey));
    this.#digest = new Uint8Array(digest).toHex();
    return this.#read.promise;
  }

  release(): void {
    this.#release.resolve();
  }

  /** Resolves once the key-set watch handled the key set as of `versionstamp` (or later). */
  handled(versionstamp: string): Promise<void> {
    if (this.#handled >= versionstamp) return Promise.resolve();
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiters.push({ at: versionstamp, resolve });
    return promise;
  }

  /** Resolves once the key-set watch handled every key change stored so far. */
  async settled(): Promise<void> {
    const { versionstamp } = await this.kv.get(["backend", "api_keys", "generation"]);
    if (versionstamp !== null) await this.handled(versionstamp);
  }

  #handle(versionstamp: string): void {
    if (versionstamp > this.#handled) this.#handled = versionstamp;
    this.#waiters = this.#waiters.filter((w) => w.at > this.#handled || (w.resolve(), false));
  }
}
