/**
 * Several processes may share one KV file (README, Reliability): SQLite then answers a write
 * that meets another process's write transaction with "database is locked", and nothing of it
 * was applied. Such an operation is tried again after a short random pause; every check of an
 * atomic is evaluated afresh, so a retried commit is the same decision made a moment later.
 */

const RETRIED = new Set<PropertyKey>(["get", "getMany", "set", "delete", "enqueue"]);
const ATTEMPTS = 60;

function isBusy(error: unknown): boolean {
  return error instanceof Error && /database (table )?is locked|database is busy/i.test(
    error.message,
  );
}

async function whileBusy<T>(operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (!isBusy(error) || attempt >= ATTEMPTS) throw error;
      await new Promise((resolve) =>
        setTimeout(resolve, 1 + Math.random() * Math.min(50, attempt * 5))
      );
    }
  }
}

/** The same handle, with writes (and point reads) retried while another process holds the lock. */
export function retryWhenBusy(kv: Deno.Kv): Deno.Kv {
  return new Proxy(kv, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property === "atomic") {
        return () => {
          const operation = target.atomic();
          // A view of the atomic, not a patched one: assigning `commit` onto a handle that is
          // itself a proxy (timed_kv.ts) stacked a second timing around the first, so every
          // commit and its mutations were counted twice in the metrics.
          const retried: Deno.AtomicOperation = new Proxy(operation, {
            get(op, name) {
              const member = Reflect.get(op, name, op);
              if (typeof member !== "function") return member;
              if (name === "commit") return () => whileBusy(() => member.call(op));
              return (...args: unknown[]) => {
                const out = member.apply(op, args);
                return out === op ? retried : out; // chained calls keep the retry
              };
            },
          });
          return retried;
        };
      }
      if (RETRIED.has(property)) {
        return (...args: unknown[]) => whileBusy(() => value.apply(target, args));
      }
      return value.bind(target);
    },
  });
}
