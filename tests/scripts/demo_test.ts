/**
 * `deno task demo` as a test: the entry function on port 0 with its in-memory KV wires the loop
 * against itself (backend key, inventory token, both copies) and runs the first full sync.
 */
import assert from "node:assert/strict";
import { caSignedCertificate, HAS_OPENSSL } from "../_tls.ts";
import { startDemo } from "../../scripts/demo.ts";
import type { SyncIo } from "../../scripts/sync/run.ts";

function captureIo() {
  const seen = { out: "", err: "" };
  const io: SyncIo = {
    fetch: globalThis.fetch,
    out: (t) => void (seen.out += t),
    err: (t) => void (seen.err += t),
    columns: () => 120,
    color: false,
    now: () => performance.now(),
    isTerminal: false,
  };
  return { seen, io };
}

const occurrences = (text: string, part: string) => text.split(part).length - 1;

Deno.test("demo: wires the key, the token and both copies against itself", async () => {
  const { seen, io } = captureIo();
  const logs: string[] = [];
  const demo = await startDemo({
    env: { PORT: "0", SERVICE_KV_PATH: "./data/must-not-be-used.kv" },
    io,
    logLine: (l) => logs.push(l),
  });
  try {
    // It prints a superuser token and the mock's login: loopback only unless told otherwise.
    assert.equal(demo.hostname, "127.0.0.1");
    const base = `http://127.0.0.1:${demo.port}`;
    const backend = async (path: string) => {
      const res = await fetch(base + path, { headers: { "X-Service-API-Key": demo.backendKey } });
      return { status: res.status, body: await res.json() };
    };
    // The key and the token are printed twice: in the wiring block and in the line to paste.
    assert.equal(occurrences(seen.out, demo.backendKey), 2, seen.out);
    assert.equal(occurrences(seen.out, demo.inventoryToken), 2, seen.out);
    assert.match(seen.out, new RegExp(`backend API key {5}${demo.backendKey}\n`));
    // Its own KV: the configured file path was not used.
    assert.equal(demo.deps.config.kvPath, ":memory:");
    await assert.rejects(Deno.stat("./data/must-not-be-used.kv"));

    // The backend key works; it is the only one.
    const keys = await backend("/auth/keys");
    assert.equal(keys.status, 200);
    assert.equal(keys.body.keys.length, 1);
    // The inventory copy is this app, its secret opens.
    const inventory = await backend("/inventory/endpoint");
    assert.equal(inventory.body.length, 1);
    assert.equal(inventory.body[0].ip, "127.0.0.1");
    assert.equal(inventory.body[0].port, demo.port);
    assert.equal(inventory.body[0].use_https, false);
    // The hypervisor copy is this app's mock with its login; its credentials open.
    const hypervisors = await backend("/hypervisor/endpoints");
    assert.equal(hypervisors.body.length, 1);
    assert.equal(hypervisors.body[0].port, demo.port);
    assert.equal(hypervisors.body[0].username, "root@pam");
    // Writes are allowed on the demo's own mock, so the verbs can be tried at once.
    assert.equal(hypervisors.body[0].allow_writes, true);
    const started = await fetch(
      `${base}/hypervisor/qemu/100/start?endpoint_id=${hypervisors.body[0].id}`,
      { method: "POST", headers: { "X-Service-API-Key": demo.backendKey } },
    );
    assert.equal(started.status, 200, await started.clone().text());
    assert.equal((await started.json()).result, "ok");
    const check = await backend(
      `/hypervisor/endpoints/${hypervisors.body[0].id}/credentials/check`,
    );
    assert.equal(check.body.ok, true, JSON.stringify(check.body));
    // The inventory token is a v2 superuser token of this app's inventory (NetBox 4.5+'s
    // default), printed as clients send it; the inventory copy holds it as key and secret.
    assert.match(demo.inventoryToken, /^nbt_[A-Za-z0-9]{12}\.[A-Za-z0-9]{40}$/);
    const status = await fetch(`${base}/api/users/tokens/`, {
      headers: { authorization: `Bearer ${demo.inventoryToken}` },
    });
    assert.equal(status.status, 200);
    const [made] = (await status.json()).results;
    assert.deepEqual([made.is_superuser, made.version], [true, 2]);
    assert.equal(inventory.body[0].token_version, "v2", JSON.stringify(inventory.body));
    assert.equal(inventory.body[0].token_key, demo.inventoryToken.slice(4, 16));
    // The custom fields the sync fills in exist: the bootstrap card is healthy, no repair needed.
    const bootstrap = await backend("/extras/bootstrap-status");
    assert.equal(bootstrap.body.ok, true, JSON.stringify(bootstrap.body));
    // No CRITICAL line: the copies' secrets were sealed, not stored in plaintext.
    assert.deepEqual(logs.filter((l) => l.includes('"critical"')), []);

    const tour = `export B=http://127.0.0.1:${demo.port} KEY=${demo.backendKey} ` +
      `INV=${demo.inventoryToken}`;
    for (
      const where of [
        "/docs",
        "/api/docs",
        "/pve/docs",
        tour,
        "BRIDGEBOX_API_KEY=$KEY npx -y deno@2.9.6 task sync --url $B",
        "stop the demo (Ctrl-C), then\n  npx -y deno@2.9.6 task start",
      ]
    ) {
      assert.ok(seen.out.includes(where), where);
    }
    // The host-agent mock's token is said, and it opens the mock (which refuses anonymous calls).
    const agentToken = seen.out.match(/host-agent\/docs\s+\(Authorization: Bearer (\S+)\)/)?.[1];
    assert.ok(agentToken, seen.out);
    const anonymous = await fetch(`${base}/host-agent/mock/faults`);
    assert.equal(anonymous.status, 401);
    await anonymous.body?.cancel();
    const agent = await fetch(`${base}/host-agent/mock/faults`, {
      headers: { authorization: `Bearer ${agentToken}` },
    });
    assert.equal((await agent.json()).fail_step, null);
    // Every command it prints works as written for a user with only Node/npm.
    assert.doesNotMatch(seen.out + seen.err, /(^|[^@\w.])deno (task|run)\b/m);
  } finally {
    await demo.close();
  }
});

Deno.test({
  name: "demo: the first full sync completes ok and fills the inventory",
  async fn() {
    const { seen, io } = captureIo();
    const demo = await startDemo({ env: { PORT: "0" }, io, logLine: () => {} });
    try {
      assert.equal(demo.sync.ok, true, seen.out + seen.err);
      assert.equal(demo.sync.exitCode, 0);
      assert.equal(demo.sync.progress.completes.length, 1);
      assert.equal(demo.sync.progress.completes[0].ok, true);
      assert.equal(demo.sync.progress.rows.length, 13);
      assert.match(seen.out, /\nSync complete/);
      assert.equal(demo.syncMissing, false);
      const count = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${demo.port}/api/${path}?limit=1`, {
          headers: { authorization: `Bearer ${demo.inventoryToken}` },
        });
        return (await res.json()).count as number;
      };
      const seed = demo.deps.config.hypervisor.seed;
      assert.equal(await count("dcim/devices/"), seed.nodes);
      assert.equal(await count("virtualization/virtual-machines/"), seed.vms + seed.cts);
    } finally {
      await demo.close();
    }
  },
});

Deno.test({
  name:
    "demo: SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE serve HTTPS, wired and synced as over HTTP",
  ignore: !HAS_OPENSSL,
  async fn() {
    const dir = await Deno.makeTempDir();
    const { ca } = await caSignedCertificate(dir);
    const { seen, io } = captureIo();
    const demo = await startDemo({
      env: {
        PORT: "0",
        SERVICE_TLS_CERT_FILE: `${dir}/cert.pem`,
        SERVICE_TLS_KEY_FILE: `${dir}/key.pem`,
      },
      io,
      logLine: () => {},
    });
    const client = Deno.createHttpClient({ caCerts: [ca] });
    try {
      assert.equal(demo.url, `https://localhost:${demo.port}`);
      assert.equal(demo.sync.ok, true, seen.out + seen.err);
      assert.ok(seen.out.includes(`export B=https://localhost:${demo.port} `), seen.out);
      const vms = await fetch(
        `https://localhost:${demo.port}/api/virtualization/virtual-machines/`,
        {
          client,
          headers: { authorization: `Bearer ${demo.inventoryToken}` },
        },
      );
      assert.equal((await vms.json()).count, 16);
      // Plain HTTP is not served on that port.
      await assert.rejects(fetch(`http://127.0.0.1:${demo.port}/health`));
    } finally {
      client.close();
      await demo.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
