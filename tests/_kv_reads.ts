/**
 * Counting what a request reads from Deno KV (never timing it): a KV handle whose reads of
 * inventory records are counted per model. Used where a cost must hold at two sizes
 * (tests/e2e/sync_rerun_reads_test.ts, tests/routes/plugin/search_reads_test.ts), and, with
 * another `part` of the store, where a request must read none of it (the backend's API keys,
 * tests/routes/backend/auth_test.ts).
 */

/** Inventory records (`["inventory", "obj", model, id]`). */
const inventoryRecord = (key: Deno.KvKey) => key[0] === "inventory" && key[1] === "obj";

/** Entries of one part of the store read from KV (by default inventory records), by key[2]. */
export class ReadCounter {
  readonly byModel = new Map<string, number>();
  counting = false;

  constructor(private readonly part: (key: Deno.KvKey) => boolean = inventoryRecord) {}

  add(key: Deno.KvKey): void {
    if (!this.counting || !this.part(key)) return;
    const model = String(key[2]);
    this.byModel.set(model, (this.byModel.get(model) ?? 0) + 1);
  }

  total(): number {
    let n = 0;
    for (const v of this.byModel.values()) n += v;
    return n;
  }

  /** A KV handle whose reads of records are counted (everything else passes through). */
  wrap(kv: Deno.Kv): Deno.Kv {
    return new Proxy(kv, {
      get: (target, prop) => {
        const value = Reflect.get(target, prop, target);
        if (prop === "get") {
          return (key: Deno.KvKey, options?: { consistency?: Deno.KvConsistencyLevel }) => {
            this.add(key);
            return target.get(key, options);
          };
        }
        if (prop === "getMany") {
          return (keys: Deno.KvKey[], options?: { consistency?: Deno.KvConsistencyLevel }) => {
            for (const key of keys) this.add(key);
            return target.getMany(keys, options);
          };
        }
        if (prop === "list") {
          return (selector: Deno.KvListSelector, options?: Deno.KvListOptions) => {
            const iterator = target.list(selector, options);
            const counted = {
              get cursor() {
                return iterator.cursor;
              },
              next: async () => {
                const out = await iterator.next();
                if (!out.done) this.add(out.value.key);
                return out;
              },
              // A loop left early ends the list (KV's iterator needs no closing).
              return: (v?: unknown) => Promise.resolve({ done: true as const, value: v }),
              [Symbol.asyncIterator]() {
                return counted;
              },
            };
            return counted as unknown as Deno.KvListIterator<unknown>;
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
