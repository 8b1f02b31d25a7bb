/**
 * The terminal tests' world: the app on a real socket (127.0.0.1:0) with the console harness's
 * tokens, an in-process SSH server (tests/_ssh_server.ts) and a hypervisor endpoint whose SSH
 * credentials and pinned key point at it.
 */
import { consoleHarness, type Harness } from "../routes/ui/_console.ts";
import { startSshServer, type TestSshServer } from "../_ssh_server.ts";
import type { TestOverrides } from "../_helpers.ts";

export const TERMINAL_PERMISSIONS = [
  "service.view_hypervisorendpoint",
  "service.open_ssh_terminal",
];

export interface TerminalWorld {
  h: Harness;
  ssh: TestSshServer;
  base: string;
  endpointId: number;
  close(): Promise<void>;
}

export async function terminalWorld(
  options: { pinned?: string; overrides?: TestOverrides } = {},
): Promise<TerminalWorld> {
  const ssh = await startSshServer();
  const h = await consoleHarness({}, undefined, options.overrides ?? {});
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request, info) => h.app.fetch(request, info),
  );
  const must = async (method: string, path: string, body: unknown) => {
    const r = await h.api(method, path, body);
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  await must("PATCH", "/api/plugins/service/settings/", {
    encryption_key: "terminal-test-encryption-key-0123456789",
  });
  const endpoint = await must("POST", "/api/plugins/service/endpoints/hypervisor/", {
    name: "lab",
    domain: "127.0.0.1",
    username: "root@pam",
    password: "hypervisor-password",
    ssh_username: "tester",
    ssh_password: "s3cret-ssh",
    ssh_port: ssh.port,
    ssh_known_host_fingerprint: options.pinned ?? ssh.fingerprint,
  });
  return {
    h,
    ssh,
    base: `http://127.0.0.1:${server.addr.port}`,
    endpointId: endpoint.id,
    async close() {
      await server.shutdown();
      await ssh.close();
      h.close();
    },
  };
}
