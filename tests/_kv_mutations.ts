/**
 * A KV handle that reports every mutation (set, delete, sum) its atomics carry, by key, before
 * passing it on: what the write-cost tests bound and `bench/write_tally.ts` ranks.
 */
export function reportingMutations(kv: Deno.Kv, onMutation: (key: Deno.KvKey) => void): Deno.Kv {
  const wrap = (op: Deno.AtomicOperation): Deno.AtomicOperation =>
    new Proxy(op, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (prop === "set" || prop === "delete" || prop === "sum") {
            onMutation(args[0] as Deno.KvKey);
          }
          const out = (value as (...a: unknown[]) => unknown).apply(target, args);
          return out === target ? wrap(target) : out;
        };
      },
    });
  return new Proxy(kv, {
    get(target, prop) {
      if (prop === "atomic") return () => wrap(target.atomic());
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
