/**
 * A Proxmox stand-in for tests of a verb whose outcome is unknown: it logs in, lists guest 100
 * (a stopped QEMU VM on pve1), and takes any other call without ever answering, so a process
 * can be killed while the verb is in flight.
 */
export interface HangingHypervisor {
  port: number;
  /** Resolves when a call other than login and the resource list has arrived. */
  reached: Promise<void>;
  /** Answers the held calls (503) and stops the server. */
  close(): Promise<void>;
}

export function hangingHypervisor(): HangingHypervisor {
  const reached = Promise.withResolvers<void>();
  const never = Promise.withResolvers<Response>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/api2/json/access/ticket") {
      return Response.json({ data: { ticket: "PVE:t", CSRFPreventionToken: "c" } });
    }
    if (path === "/api2/json/cluster/resources") {
      return Response.json({
        data: [{ vmid: 100, node: "pve1", type: "qemu", status: "stopped" }],
      });
    }
    reached.resolve();
    return never.promise;
  });
  return {
    port: server.addr.port,
    reached: reached.promise,
    async close() {
      never.resolve(new Response(null, { status: 503 }));
      await server.shutdown();
    },
  };
}
