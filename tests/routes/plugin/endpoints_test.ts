import assert from "node:assert/strict";
import { DOMAIN_OR_IP_MESSAGE } from "../../../domain/plugin/validation.ts";
import { keys } from "../../../storage/kv/keys.ts";
import { openSecret } from "../../../domain/plugin/secrets.ts";
import { FP, harness, P } from "./_harness.ts";
import { refusingListener } from "../../_net.ts";

const KIND_PATHS = ["endpoints/hypervisor/", "endpoints/inventory/", "endpoints/backend/"];

Deno.test("domain-or-IP: 400 with the same message on both fields, for every endpoint kind", async () => {
  const h = await harness();
  try {
    for (const kind of KIND_PATHS) {
      const r = await h.call("POST", P + kind, { name: "x" });
      assert.equal(r.status, 400, kind);
      assert.deepEqual(r.body.domain, [DOMAIN_OR_IP_MESSAGE], kind);
      assert.deepEqual(r.body.ip_address, [DOMAIN_OR_IP_MESSAGE], kind);
    }
    const bad = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "x",
      domain: "not a host",
    });
    assert.equal(bad.status, 400);
    assert.ok(bad.body.domain);
  } finally {
    await h.close();
  }
});

Deno.test("hypervisor endpoint: defaults, display with domain or IP, secrets write-only", async () => {
  const h = await harness();
  try {
    const r = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "s3cret",
      token_value: "tv",
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const e = r.body;
    assert.equal(e.display, "pve (pve.example.com)");
    assert.equal(e.port, 8006);
    assert.equal(e.username, "root@pam");
    assert.equal(e.verify_ssl, false);
    assert.equal(e.use_https, true);
    assert.equal(e.enabled, true);
    assert.equal(e.allow_writes, false);
    assert.deepEqual(e.mode, { value: "undefined", label: "Undefined" });
    assert.equal(e.ssh_credential_source.value, "dedicated");
    assert.deepEqual(e.allowed_tenants, []);
    for (const secret of ["password", "token_value", "ssh_password", "ssh_private_key"]) {
      assert.ok(!(secret in e), `${secret} is never returned`);
    }
    assert.match(e.url, /\/api\/plugins\/service\/endpoints\/hypervisor\/\d+\/$/);

    const ip = await h.ip("10.0.0.5/24");
    const byIp = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve2",
      ip_address: ip,
    });
    assert.equal(byIp.status, 201);
    assert.equal(byIp.body.display, "pve2 (10.0.0.5)");
    assert.equal(byIp.body.ip_address.id, ip);

    // use_https is independent of verify_ssl.
    const plain = await h.call("PATCH", `${P}endpoints/hypervisor/${e.id}/`, {
      use_https: false,
      verify_ssl: true,
    });
    assert.equal(plain.status, 200);
    assert.deepEqual([plain.body.use_https, plain.body.verify_ssl], [false, true]);

    const brief = await h.call("GET", `${P}endpoints/hypervisor/?brief=1`);
    assert.deepEqual(Object.keys(brief.body.results[0]).sort(), ["display", "id", "name", "url"]);
    const ids = async (query: string) => {
      const found = await h.call("GET", `${P}endpoints/hypervisor/?${query}`);
      assert.equal(found.status, 200, `${query}: ${JSON.stringify(found.body)}`);
      return found.body.results.map((x: { id: number }) => x.id);
    };
    assert.deepEqual(await ids("q=example"), [e.id]);
    // The documented filter fields.
    assert.deepEqual(await ids("ip_address=10.0.0.5/24"), [byIp.body.id]);
    assert.deepEqual(await ids("ip_address=10.0.0.5"), [byIp.body.id]);
    assert.deepEqual(await ids(`ip_address=${ip}`), [byIp.body.id]);
    assert.deepEqual(await ids(`ip_address_id=${ip}`), [byIp.body.id]);
    assert.deepEqual(await ids("domain=pve.example.com"), [e.id]);
    assert.deepEqual(await ids("name=pve2"), [byIp.body.id]);
    assert.deepEqual(await ids(`id=${e.id}`), [e.id]);
    assert.deepEqual(await ids("mode=cluster"), []);
    assert.equal((await h.call("GET", `${P}endpoints/hypervisor/?mode=bogus`)).status, 400);
  } finally {
    await h.close();
  }
});

Deno.test("secrets are stored enc:<fernet> with the plugin key, plaintext without it", async () => {
  const h = await harness();
  try {
    const plain = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "a",
      domain: "a.local",
      password: "first",
    });
    const stored1 = await h.deps.kv.get<Record<string, unknown>>(
      keys.inventoryObject("service.hypervisorendpoint", plain.body.id),
    );
    assert.equal(stored1.value?.password, "first");
    assert.ok(h.deps.logger.at("critical").length > 0, "a CRITICAL line is logged");

    const set = await h.call("PATCH", P + "settings/", { encryption_key: "a long enough key!" });
    assert.equal(set.status, 200);
    const enc = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "b",
      domain: "b.local",
      password: "second",
    });
    const stored2 = await h.deps.kv.get<Record<string, unknown>>(
      keys.inventoryObject("service.hypervisorendpoint", enc.body.id),
    );
    assert.match(String(stored2.value?.password), /^enc:gAAAAA/);
    // Setting the key re-sealed the value stored before it.
    const again = await h.deps.kv.get<Record<string, unknown>>(
      keys.inventoryObject("service.hypervisorendpoint", plain.body.id),
    );
    assert.match(String(again.value?.password), /^enc:/);

    // Rotation re-seals under the new key: the new key alone opens every stored value.
    assert.equal(
      (await h.call("PATCH", P + "settings/", { encryption_key: "the next key, rotated" })).status,
      200,
    );
    for (const id of [plain.body.id, enc.body.id]) {
      const stored = await h.deps.kv.get<Record<string, unknown>>(
        keys.inventoryObject("service.hypervisorendpoint", id),
      );
      const opened = await openSecret(String(stored.value?.password), "the next key, rotated");
      assert.ok(opened.ok, JSON.stringify(opened));
    }
  } finally {
    await h.close();
  }
});

Deno.test("inventory endpoint: v1 needs the token reference, v2 needs key and secret", async () => {
  const h = await harness();
  try {
    const path = P + "endpoints/inventory/";
    const tok = await h.call("POST", "/api/users/tokens/", { version: 1, description: "push" });
    assert.equal(tok.status, 201);
    const v1Missing = await h.call("POST", path, { name: "nb", domain: "nb.local" });
    assert.equal(v1Missing.status, 400);
    assert.ok(v1Missing.body.token);
    const v1 = await h.call("POST", path, { name: "nb", domain: "nb.local", token: tok.body.id });
    assert.equal(v1.status, 201, JSON.stringify(v1.body));
    assert.equal(v1.body.port, 443);
    assert.equal(v1.body.verify_ssl, true);
    assert.equal(v1.body.use_https, true);
    assert.deepEqual(v1.body.token_version, { value: "v1", label: "v1" });
    assert.equal(v1.body.token.id, tok.body.id);
    const v2Token = await h.call("POST", "/api/users/tokens/", { version: 2 });
    assert.equal(v2Token.status, 201);
    const refV2 = await h.call("POST", path, {
      name: "nb",
      domain: "nb.local",
      token: v2Token.body.id,
    });
    assert.equal(refV2.status, 400, "a v2 token has no retrievable plaintext");
    assert.ok(refV2.body.token);
    const v1Key = await h.call("POST", path, {
      name: "nb2",
      domain: "nb.local",
      token: tok.body.id,
      token_key: "abc",
    });
    assert.equal(v1Key.status, 400);
    assert.ok(v1Key.body.token_key);

    const v2Missing = await h.call("POST", path, {
      name: "nb3",
      domain: "nb.local",
      token_version: "v2",
      token_key: "abc",
    });
    assert.equal(v2Missing.status, 400);
    assert.ok(v2Missing.body.token_secret);
    const v2NoKey = await h.call("POST", path, {
      name: "nb3",
      domain: "nb.local",
      token_version: "v2",
      token_secret: "s",
    });
    assert.equal(v2NoKey.status, 400);
    assert.ok(v2NoKey.body.token_key);
    const v2 = await h.call("POST", path, {
      name: "nb3",
      domain: "nb.local",
      token_version: "v2",
      token_key: "abc",
      token_secret: "s",
    });
    assert.equal(v2.status, 201);
    assert.ok(!("token_secret" in v2.body));
    assert.equal(v2.body.token, null);

    // Switching v2 → v1 drops the stored key and secret.
    const switched = await h.call("PATCH", `${path}${v2.body.id}/`, {
      token_version: "v1",
      token: tok.body.id,
    });
    assert.equal(switched.status, 200, JSON.stringify(switched.body));
    assert.equal(switched.body.token_key, null);
  } finally {
    await h.close();
  }
});

Deno.test("backend endpoint: token generated, read-only and returned; one backend only", async () => {
  const h = await harness();
  const refusing = refusingListener();
  try {
    const path = P + "endpoints/backend/";
    const r = await h.call("POST", path, {
      name: "backend",
      domain: "127.0.0.1",
      port: refusing.port,
      use_https: false,
      token: "client-chosen",
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.match(r.body.token, /^[A-Za-z0-9_-]{64}$/);
    assert.equal(r.body.use_websocket, false);
    assert.equal(r.body.websocket_port, 8800);
    assert.equal(r.body.verify_ssl, true);
    assert.equal(r.body.use_https, false, "use_https false gives http whatever verify_ssl says");
    const patched = await h.call("PATCH", `${path}${r.body.id}/`, { token: "other", name: "b2" });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.token, r.body.token, "token is read-only");
    const second = await h.call("POST", path, { name: "again", domain: "x.local" });
    assert.equal(second.status, 400);
    assert.ok(second.body.name);
    // The push failed (nothing listens): the save did not.
    assert.equal(r.body.last_push.ok, false);
    assert.equal(r.body.last_push.status, null);
    assert.match(r.body.last_push.error, /unreachable/);
    assert.match(r.body.last_push.at, /^\d{4}-\d{2}-\d{2}T/);
  } finally {
    refusing.close();
    await h.close();
  }
});

Deno.test("allowed_tenants and X-Cloud-Tenant: explicit grants hide the global pool", async () => {
  const h = await harness();
  try {
    const acme = await h.tenant("acme");
    const globex = await h.tenant("globex");
    const lonely = await h.tenant("lonely");
    const mk = async (name: string, allowed_tenants: number[]) => {
      const r = await h.call("POST", P + "endpoints/hypervisor/", {
        name,
        domain: `${name}.local`,
        allowed_tenants,
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body.id as number;
    };
    const global = await mk("global", []);
    const a = await mk("a", [acme]);
    const ab = await mk("ab", [acme, globex]);
    const list = async (tenant?: string, query = "") => {
      const r = await h.call(
        "GET",
        `${P}endpoints/hypervisor/${query}`,
        undefined,
        tenant ? { headers: { "x-cloud-tenant": tenant } } : {},
      );
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.results.map((e: { id: number }) => e.id).sort();
    };
    assert.deepEqual(await list(), [global, a, ab].sort());
    assert.deepEqual(await list("acme"), [a, ab].sort());
    assert.deepEqual(await list(String(globex)), [ab]);
    assert.deepEqual(await list("lonely"), [global], "no grants: the global pool");
    assert.deepEqual(await list(String(lonely)), [global]);
    const unknown = await h.call("GET", `${P}endpoints/hypervisor/`, undefined, {
      headers: { "x-cloud-tenant": "nope" },
    });
    assert.equal(unknown.status, 400);

    // The documented filters.
    assert.deepEqual(await list(undefined, `?allowed_tenants_id=${acme}`), [a, ab].sort());
    assert.deepEqual(await list(undefined, "?allowed_tenants__isnull=true"), [global]);
    assert.deepEqual(await list(undefined, `?allowed_tenants__id__in=${globex}`), [ab]);

    // PATCH with an empty list returns the endpoint to the global pool.
    const cleared = await h.call("PATCH", `${P}endpoints/hypervisor/${ab}/`, {
      allowed_tenants: [],
    });
    assert.deepEqual(cleared.body.allowed_tenants, []);
    assert.deepEqual(await list("globex"), [global, ab].sort());
  } finally {
    await h.close();
  }
});

Deno.test("read-only plugin resources answer 405 on writes", async () => {
  const h = await harness();
  try {
    for (const path of ["deletion-requests/", "apply-jobs/"]) {
      assert.equal((await h.call("GET", P + path)).status, 200);
      const post = await h.call("POST", P + path, {});
      assert.equal(post.status, 405);
      assert.deepEqual(post.body, { detail: 'Method "POST" not allowed.' });
      for (const method of ["PUT", "PATCH", "DELETE"]) {
        assert.equal((await h.call(method, `${P}${path}1/`, {})).status, 405, `${method} ${path}`);
      }
    }
  } finally {
    await h.close();
  }
});

Deno.test("ssh fields: reuse_endpoint requires a pinned SHA256 fingerprint; readiness flags", async () => {
  const h = await harness();
  try {
    const path = P + "endpoints/hypervisor/";
    const unpinned = await h.call("POST", path, {
      name: "r",
      domain: "r.local",
      password: "pw",
      ssh_credential_source: "reuse_endpoint",
    });
    assert.equal(unpinned.status, 400);
    assert.ok(unpinned.body.ssh_known_host_fingerprint);
    const badFp = await h.call("POST", path, {
      name: "r",
      domain: "r.local",
      ssh_known_host_fingerprint: "MD5:00:11",
    });
    assert.equal(badFp.status, 400);
    const reuse = await h.call("POST", path, {
      name: "r",
      domain: "r.local",
      password: "pw",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: FP,
    });
    assert.equal(reuse.status, 201);
    assert.deepEqual(
      [
        reuse.body.has_ssh_password,
        reuse.body.has_ssh_private_key,
        reuse.body.has_ssh_terminal_credentials,
      ],
      [true, false, true],
    );
    const tokenOnly = await h.call("POST", path, {
      name: "t",
      domain: "t.local",
      token_name: "root@pam!ro",
      token_value: "tv",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: FP,
    });
    assert.equal(tokenOnly.status, 201);
    assert.equal(tokenOnly.body.has_ssh_terminal_credentials, false);

    // Dedicated secrets need the plugin encryption key.
    const noKey = await h.call("POST", path, {
      name: "d",
      domain: "d.local",
      ssh_username: "term",
      ssh_password: "x",
    });
    assert.equal(noKey.status, 400);
    assert.ok(noKey.body.ssh_password);
  } finally {
    await h.close();
  }
});

Deno.test("ssh-secrets route: dedicated, reuse, token-only reuse 422, permissions", async () => {
  const h = await harness();
  try {
    assert.equal(
      (await h.call("PATCH", P + "settings/", { encryption_key: "0123456789abcdef" })).status,
      200,
    );
    const path = P + "endpoints/hypervisor/";
    const dedicated = await h.call("POST", path, {
      name: "d",
      domain: "d.local",
      ssh_username: "term",
      ssh_auth_method: "key",
      ssh_private_key:
        "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n",
    });
    assert.equal(dedicated.status, 201, JSON.stringify(dedicated.body));
    assert.equal(dedicated.body.has_ssh_private_key, true);
    const d = await h.call("GET", `${path}${dedicated.body.id}/ssh-secrets/`);
    assert.equal(d.status, 200);
    assert.deepEqual(d.body, {
      auth_method: "key",
      username: "term",
      password: "",
      private_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n",
    });

    const reuse = await h.call("POST", path, {
      name: "r",
      domain: "r.local",
      username: "admin@pve",
      password: "endpoint-pw",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: FP,
    });
    const r = await h.call("GET", `${path}${reuse.body.id}/ssh-secrets/`);
    assert.deepEqual(r.body, {
      auth_method: "password",
      username: "admin",
      password: "endpoint-pw",
      private_key: "",
    });

    const tokenOnly = await h.call("POST", path, {
      name: "t",
      domain: "t.local",
      token_name: "root@pam!ro",
      token_value: "tv",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: FP,
    });
    const t = await h.call("GET", `${path}${tokenOnly.body.id}/ssh-secrets/`);
    assert.equal(t.status, 422);
    assert.ok(!("password" in t.body), "never an empty password");

    assert.equal((await h.call("GET", `${path}999/ssh-secrets/`)).status, 404);
    const viewer = await h.token({ permissions: ["service.view_hypervisorendpoint"] });
    const denied = await h.call("GET", `${path}${reuse.body.id}/ssh-secrets/`, undefined, {
      auth: viewer,
    });
    assert.equal(denied.status, 403);
    const noAuth = await h.call("GET", `${path}${reuse.body.id}/ssh-secrets/`, undefined, {
      auth: null,
    });
    assert.equal(noAuth.status, 403);

    // Rotating the key keeps the secrets readable.
    assert.equal(
      (await h.call("PATCH", P + "settings/", { encryption_key: "fedcba9876543210!" })).status,
      200,
    );
    const after = await h.call("GET", `${path}${dedicated.body.id}/ssh-secrets/`);
    assert.equal(after.status, 200);
    assert.equal(after.body.private_key.endsWith("-----\n"), true);
  } finally {
    await h.close();
  }
});

Deno.test("plugin operational records: upserts, uniques, nested summaries", async () => {
  const h = await harness();
  try {
    const ep =
      (await h.call("POST", P + "endpoints/hypervisor/", { name: "pve", domain: "pve.local" }))
        .body;
    const cluster = await h.call("POST", P + "clusters/", { endpoint: ep.id, name: "lab" });
    assert.equal(cluster.status, 201, JSON.stringify(cluster.body));
    const node = await h.call("POST", P + "nodes/", {
      endpoint: ep.id,
      cluster: cluster.body.id,
      name: "pve1",
      node_id: 1,
      online: true,
    });
    assert.equal(node.status, 201, JSON.stringify(node.body));

    const s1 = await h.call("POST", P + "storage/", {
      cluster: cluster.body.id,
      name: "local-lvm",
      storage_type: "lvmthin",
      total: 100,
    });
    assert.equal(s1.status, 201, JSON.stringify(s1.body));
    const s2 = await h.call("POST", P + "storage/", {
      cluster: cluster.body.id,
      name: "local-lvm",
      total: 200,
    });
    assert.equal(s2.status, 200, "same cluster+name updates");
    assert.equal(s2.body.id, s1.body.id);
    assert.equal(s2.body.total, 200);
    assert.equal(s2.body.storage_type, "lvmthin", "upsert patches");
    const storages = await h.call("GET", P + "storage/");
    assert.equal(storages.body.count, 1);
    // A batch with an invalid new item writes nothing, not even the valid update.
    const mixed = await h.call("POST", P + "storage/", [
      { cluster: cluster.body.id, name: "local-lvm", total: 300 },
      { cluster: cluster.body.id },
    ]);
    assert.equal(mixed.status, 400);
    assert.deepEqual(mixed.body[0], {});
    assert.ok(mixed.body[1].name);
    assert.equal((await h.call("GET", `${P}storage/${s1.body.id}/`)).body.total, 200);
    // Updating through the upsert needs the change permission too.
    const adder = await h.token({ permissions: ["service.add_storage"] });
    const denied = await h.call("POST", P + "storage/", {
      cluster: cluster.body.id,
      name: "local-lvm",
    }, {
      auth: adder,
    });
    assert.equal(denied.status, 403);
    const fresh = await h.call("POST", P + "storage/", { cluster: cluster.body.id, name: "nfs" }, {
      auth: adder,
    });
    assert.equal(fresh.status, 201);
    await h.call("DELETE", `${P}storage/${fresh.body.id}/`);

    const routine = await h.call("POST", P + "backup-routines/", {
      endpoint: ep.id,
      job_id: "backup-1",
      schedule: "daily",
      node: node.body.id,
      storage: s1.body.id,
      selection: [100, 101],
      keep_last: 3,
    });
    assert.equal(routine.status, 201, JSON.stringify(routine.body));
    assert.deepEqual(routine.body.node, {
      id: node.body.id,
      url: node.body.url,
      display: "pve1",
      name: "pve1",
      node_id: 1,
      online: true,
    });
    assert.equal(routine.body.storage.name, "local-lvm");
    assert.equal(routine.body.storage.cluster.id, cluster.body.id);
    assert.deepEqual(routine.body.status, { value: "active", label: "Active" });
    assert.equal(routine.body.pbs_change_detection_mode, "default");
    assert.deepEqual(routine.body.selection, [100, 101]);
    const fleecing = await h.call("PATCH", `${P}backup-routines/${routine.body.id}/`, {
      fleecing: false,
      pbs_change_detection_mode: "data",
      keep_all: null,
    });
    assert.equal(fleecing.status, 200, JSON.stringify(fleecing.body));
    assert.equal(fleecing.body.fleecing, false);
    assert.equal(fleecing.body.pbs_change_detection_mode, "data");
    const badMode = await h.call("PATCH", `${P}backup-routines/${routine.body.id}/`, {
      pbs_change_detection_mode: "fast",
    });
    assert.equal(badMode.status, 400);
    assert.deepEqual(routine.body.endpoint, {
      id: ep.id,
      url: ep.url,
      display: "pve (pve.local)",
      name: "pve",
    });
    const filtered = await h.call(
      "GET",
      `${P}backup-routines/?storage_id=${s1.body.id}&status=active`,
    );
    assert.equal(filtered.body.count, 1);
    const dup = await h.call("POST", P + "backup-routines/", {
      endpoint: ep.id,
      job_id: "backup-1",
    });
    assert.equal(dup.status, 400);

    const rep = await h.call("POST", P + "replications/", {
      endpoint: ep.id,
      replication_id: "100-0",
      guest: 100,
      target: "pve2",
      source: "pve1",
      jobnum: 0,
      rate: 10.5,
    });
    assert.equal(rep.status, 201, JSON.stringify(rep.body));
    assert.deepEqual(rep.body.job_type, { value: "local", label: "Local" });
    assert.equal(
      (await h.call("POST", P + "replications/", { replication_id: "bad" })).status,
      400,
    );
    const ctype = await h.call("POST", "/api/virtualization/cluster-types/", {
      name: "PVE",
      slug: "pve",
    });
    const vcluster = await h.call("POST", "/api/virtualization/clusters/", {
      name: "lab",
      type: ctype.body.id,
    });
    assert.equal(vcluster.status, 201, JSON.stringify(vcluster.body));
    const vm = await h.call("POST", "/api/virtualization/virtual-machines/", {
      name: "web-01",
      cluster: vcluster.body.id,
    });
    assert.equal(vm.status, 201, JSON.stringify(vm.body));
    await h.call("PATCH", `${P}replications/${rep.body.id}/`, { virtual_machine: vm.body.id });
    const byVmName = await h.call("GET", `${P}replications/?q=web-0`);
    assert.deepEqual(byVmName.body.results.map((x: { id: number }) => x.id), [rep.body.id]);
    const byVmId = await h.call("GET", `${P}replications/?virtual_machine_id=${vm.body.id}`);
    assert.equal(byVmId.body.count, 1);
    assert.equal(byVmId.body.results[0].virtual_machine.name, "web-01");
    const patched = await h.call("PATCH", `${P}replications/${rep.body.id}/`, { status: "stale" });
    assert.equal(patched.body.status.value, "stale");
    assert.equal((await h.call("DELETE", `${P}replications/${rep.body.id}/`)).status, 204);

    const upid = "UPID:pve1:0000ABCD:00001234:65000000:qmstart:100:root@pam:";
    const t1 = await h.call("POST", P + "task-history/", {
      endpoint: ep.id,
      upid,
      status: "running",
    });
    assert.equal(t1.status, 201, JSON.stringify(t1.body));
    const t2 = await h.call("POST", P + "task-history/", [{ endpoint: ep.id, upid, status: "OK" }, {
      endpoint: ep.id,
      upid: upid.replace("qmstart", "qmstop"),
      status: "OK",
    }]);
    assert.equal(t2.status, 201);
    assert.equal(t2.body[0].id, t1.body.id);
    assert.equal(t2.body[0].status, "OK");
    assert.equal((await h.call("GET", P + "task-history/")).body.count, 2);

    const sync = await h.call("POST", P + "vm-sync-state/", {
      endpoint: ep.id,
      vmid: 100,
      vm_type: "qemu",
    });
    assert.equal(sync.status, 201, JSON.stringify(sync.body));
    const syncDup = await h.call("POST", P + "vm-sync-state/", {
      endpoint: ep.id,
      vmid: 100,
      vm_type: "lxc",
    });
    assert.equal(syncDup.status, 400);

    const snap = await h.call("POST", P + "snapshots/", {
      endpoint: ep.id,
      vmid: 100,
      name: "pre-upgrade",
    });
    assert.equal(snap.status, 201, JSON.stringify(snap.body));
    const backup = await h.call("POST", P + "backups/", {
      endpoint: ep.id,
      storage: s1.body.id,
      vmid: 100,
      volid: "local:backup/vzdump-qemu-100.vma.zst",
    });
    assert.equal(backup.status, 201, JSON.stringify(backup.body));

    // Deleting the endpoint cascades to its operational records.
    assert.equal((await h.call("DELETE", `${P}endpoints/hypervisor/${ep.id}/`)).status, 204);
    for (
      const path of [
        "nodes/",
        "clusters/",
        "storage/",
        "backup-routines/",
        "task-history/",
        "snapshots/",
        "backups/",
        "vm-sync-state/",
      ]
    ) {
      assert.equal((await h.call("GET", P + path)).body.count, 0, path);
    }
  } finally {
    await h.close();
  }
});

Deno.test("deletion requests and apply jobs: written internally, read through the API with filters", async () => {
  const h = await harness();
  try {
    // A second engine over the same KV stands in for the internal writers (UI intent, backend).
    const { createInventoryCore } = await import("../../../routes/inventory/mod.ts");
    const { createPlugin } = await import("../../../routes/plugin/mod.ts");
    const core = createInventoryCore(h.deps);
    core.engine.register(
      ...createPlugin(h.deps, { tokenPlaintext: () => Promise.resolve(null) }).models,
    );
    const ep =
      (await h.call("POST", P + "endpoints/hypervisor/", { name: "pve", domain: "pve.local" }))
        .body;
    for (const status of ["pending", "pending", "completed"]) {
      const r = await core.engine.insert("service.deletionrequest", {
        endpoint: ep.id,
        vmid: 100,
        name: "old-vm",
        status,
      });
      assert.ok(r.ok, JSON.stringify(r));
    }
    for (let i = 0; i < 3; i++) {
      const r = await core.engine.insert("service.applyjob", {
        endpoint: ep.id,
        branch: `intent-${i}`,
        status: "completed",
      });
      assert.ok(r.ok, JSON.stringify(r));
    }
    const pending = await h.call("GET", `${P}deletion-requests/?status=pending`);
    assert.equal(pending.body.count, 2);
    assert.deepEqual(pending.body.results[0].status, { value: "pending", label: "Pending" });
    assert.equal(pending.body.results[0].endpoint.id, ep.id);
    const jobs = await h.call("GET", `${P}apply-jobs/?endpoint_id=${ep.id}&limit=1`);
    assert.equal(jobs.body.count, 3);
    assert.equal(jobs.body.results.length, 1);
    assert.ok(jobs.body.next);
    const one = await h.call("GET", `${P}apply-jobs/${jobs.body.results[0].id}/`);
    assert.equal(one.status, 200);
    assert.equal((await h.call("DELETE", `${P}apply-jobs/${one.body.id}/`)).status, 405);
  } finally {
    await h.close();
  }
});

Deno.test("plugin reference filters take an id (the plugin's Meta.fields), where NetBox's own take only a key", async () => {
  const h = await harness();
  try {
    const made = async (path: string, body: unknown) => {
      const r = await h.call("POST", path, body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const pve = await made(P + "endpoints/hypervisor/", { name: "pve", domain: "pve.local" });
    const lab = await made(P + "endpoints/hypervisor/", { name: "lab", domain: "lab.local" });
    await made(P + "clusters/", { endpoint: pve.id, name: "one" });
    await made(P + "clusters/", { endpoint: lab.id, name: "two" });
    const names = async (query: string) => {
      const r = await h.call("GET", `${P}clusters/?${query}`);
      assert.equal(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
      return r.body.results.map((c: { name: string }) => c.name);
    };
    assert.deepEqual(await names(`endpoint=${lab.id}`), ["two"]);
    assert.deepEqual(await names(`endpoint=${pve.id}&endpoint=${lab.id}`), ["one", "two"]);
    assert.deepEqual(await names("endpoint=pve"), ["one"]);
    // A core model's `site` filter takes the slug only (docs/netbox-rules.md).
    const site = await h.call("POST", "/api/dcim/sites/", { name: "AMS1", slug: "ams1" });
    const bySite = await h.call(
      "GET",
      `/api/virtualization/virtual-machines/?site=${site.body.id}`,
    );
    assert.equal(bySite.status, 400, JSON.stringify(bySite.body));
  } finally {
    await h.close();
  }
});
