/**
 * The storage port contract: behaviour any implementation of `Storage` (storage/ports.ts) must
 * show. Each `*_test.ts` here states one port's rules once; `contract` runs them against every
 * backend listed below. A second backend is added by appending it to BACKENDS and passing.
 *
 * @module
 * @example
 * ```ts
 * contract("api keys", {
 *   "the registry is claimed once": async ({ storage }) => { ... },
 * });
 * ```
 */
import type { Storage } from "../../../storage/ports.ts";
import { createKvStorage } from "../../../storage/kv/mod.ts";

/** A clock the test moves by hand (request-limit windows, expiries). */
export class ManualClock {
  constructor(public ms = 1_700_000_000_000) {}
  now = () => this.ms;
  advance(ms: number) {
    this.ms += ms;
  }
}

export interface Opened {
  storage: Storage;
  clock: ManualClock;
  /** Opens a second view of the same data, as a second process would (closed with this one). */
  reopen(): Promise<Storage>;
}

export interface Backend {
  name: string;
  open(options: { atRestKey?: string }): Promise<Opened & { close(): Promise<void> }>;
}

async function kvBackend(path: string | undefined, atRestKey: string | undefined) {
  const clock = new ManualClock();
  const handles: Deno.Kv[] = [await Deno.openKv(path)];
  const make = (kv: Deno.Kv) => createKvStorage(kv, { atRestKey, now: clock.now });
  return {
    storage: make(handles[0]),
    clock,
    async reopen() {
      // A second handle on an in-memory KV would be a different store: share the first one.
      if (path === ":memory:") return make(handles[0]);
      const kv = await Deno.openKv(path);
      handles.push(kv);
      return make(kv);
    },
    close() {
      for (const kv of handles) kv.close();
      return Promise.resolve();
    },
  };
}

export const BACKENDS: Backend[] = [
  { name: "kv :memory:", open: ({ atRestKey }) => kvBackend(":memory:", atRestKey) },
  {
    name: "kv file",
    async open({ atRestKey }) {
      const dir = await Deno.makeTempDir({ prefix: "bridgebox-contract-" });
      const opened = await kvBackend(`${dir}/store.kv`, atRestKey);
      return {
        ...opened,
        async close() {
          await opened.close();
          await Deno.remove(dir, { recursive: true });
        },
      };
    },
  },
];

export type Case = (opened: Opened) => Promise<void>;

/** Registers every case of one port against every backend. */
export function contract(
  port: string,
  cases: Record<string, Case>,
  options: { atRestKey?: string } = {},
): void {
  for (const backend of BACKENDS) {
    for (const [name, run] of Object.entries(cases)) {
      Deno.test(`${port} contract [${backend.name}]: ${name}`, async () => {
        const opened = await backend.open(options);
        try {
          await run(opened);
        } finally {
          await opened.close();
        }
      });
    }
  }
}
