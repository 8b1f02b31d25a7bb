/**
 * A Deno KV handle that times its calls for the metrics (`bridgebox_kv_operation_duration_seconds`,
 * docs/metrics.md): get, getMany, set, delete, an atomic's commit, and a list from its first page
 * to its last; and the entries each read returned or looked up (`bridgebox_kv_keys_read_total`:
 * a get 1, a getMany its keys, a list the entries it yielded), so a run's reads per object can be
 * compared at two sizes (docs/sync.md, "At 100,000 guests"). Everything else (watch, enqueue,
 * listenQueue, close) passes through untouched.
 * main.ts wraps the handle once, before the stores are built on it.
 */
import type { Metrics } from "../../infra/metrics.ts";

type Timed = "get" | "getMany" | "set" | "delete";
const TIMED: ReadonlySet<string> = new Set<Timed>(["get", "getMany", "set", "delete"]);
const MUTATIONS: ReadonlySet<PropertyKey> = new Set(["set", "delete", "sum", "min", "max"]);

export function timedKv(kv: Deno.Kv, metrics: Metrics): Deno.Kv {
  const time = async <T>(operation: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    let ok = false;
    try {
      const out = await work();
      ok = true;
      return out;
    } finally {
      metrics.kvOperation(operation, (performance.now() - started) / 1000, ok);
    }
  };

  const atomic = (): Deno.AtomicOperation => {
    const operation = kv.atomic();
    // Mutations are counted as they are added and reported once the atomic commits: what a
    // write costs the store (docs/sync.md, "Writes: mutations per object").
    let mutations = 0;
    const wrapped: Deno.AtomicOperation = new Proxy(operation, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (prop === "commit") {
          return async () => {
            const result = await time(
              "commit",
              () => value.call(target) as Promise<Deno.KvCommitResult | Deno.KvCommitError>,
            );
            if (result.ok) metrics.kvMutations(mutations);
            return result;
          };
        }
        return (...args: unknown[]) => {
          if (MUTATIONS.has(prop)) mutations++;
          else if (prop === "mutate") mutations += args.length;
          const out = value.apply(target, args);
          return out === target ? wrapped : out;
        };
      },
    });
    return wrapped;
  };

  const list = <T>(
    selector: Deno.KvListSelector,
    options?: Deno.KvListOptions,
  ): Deno.KvListIterator<T> => {
    const iterator = kv.list<T>(selector, options);
    let spent = 0;
    let entries = 0;
    let reported = false;
    const report = (ok: boolean) => {
      if (reported) return;
      reported = true;
      metrics.kvOperation("list", spent / 1000, ok);
      metrics.kvKeysRead("list", entries);
    };
    const step = async <R>(work: () => Promise<R>, last: (out: R) => boolean): Promise<R> => {
      const started = performance.now();
      try {
        const out = await work();
        spent += performance.now() - started;
        if (last(out)) report(true);
        return out;
      } catch (error) {
        spent += performance.now() - started;
        report(false);
        throw error;
      }
    };
    const wrapped = {
      get cursor() {
        return iterator.cursor;
      },
      next: () =>
        step(() => iterator.next(), (out) => {
          if (out.done !== true) entries++;
          return out.done === true;
        }),
      // A loop left early (break, return) ends the list here.
      return: (value?: unknown) => {
        report(true);
        return Promise.resolve({ done: true as const, value });
      },
      [Symbol.asyncIterator]() {
        return wrapped;
      },
    };
    return wrapped as unknown as Deno.KvListIterator<T>;
  };

  return new Proxy(kv, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop === "atomic") return atomic;
      if (prop === "list") return list;
      if (typeof value !== "function") return value;
      if (typeof prop === "string" && TIMED.has(prop)) {
        return (...args: unknown[]) => {
          if (prop === "get") metrics.kvKeysRead(prop, 1);
          else if (prop === "getMany") {
            metrics.kvKeysRead(prop, Array.isArray(args[0]) ? args[0].length : 0);
          }
          return time(prop, () => value.apply(target, args));
        };
      }
      return value.bind(target);
    },
  });
}
