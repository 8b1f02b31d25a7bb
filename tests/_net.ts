/**
 * Network helpers for tests that need an address where a connection fails at once. A port
 * bound then released can be taken by anything else running on the machine (free-then-reuse),
 * and well-known ports (1, 9) are not always closed; a listener we hold and that closes every
 * connection it accepts fails each request quickly and surely.
 */
export interface RefusingListener {
  port: number;
  close(): void;
}

export function refusingListener(): RefusingListener {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepting = (async () => {
    try {
      for await (const conn of listener) conn.close();
    } catch { /* closed */ }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    close() {
      listener.close();
      void accepting;
    },
  };
}
