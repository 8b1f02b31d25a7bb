/**
 * Every operation of both shared schema files is routed: 444/675 (9.2) and 431/649 (9.1.11).
 * Each is called on both mounts with plausible path parameters on a freshly reset seed; none
 * may answer 501 (unknown route), 405 or a server error.
 */
import assert from "node:assert/strict";
import { indexSchema } from "../../../domain/hypervisor_schema/schema.ts";
import { call, type Harness, harness, login, SCHEMA_9111, SCHEMA_92, sharedSchema } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

function fill(path: string, values: Record<string, string>): string {
  const guest = /\/(qemu|lxc)\/\{vmid\}/.exec(path)?.[1];
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (name === "vmid") return guest === "lxc" ? values.ctid : values.vmid;
    return encodeURIComponent(values[name] ?? `${name}1`);
  });
}

/** Plausible path parameters that name objects of the seed. */
function pathValues(h: Harness): Record<string, string> {
  const ct = [...h.engine.state.guests.values()].find((g) => g.type === "lxc")!;
  const task = [...h.engine.state.tasks.values()].find((t) => t.node === "pve1")!;
  return {
    node: "pve1",
    vmid: "100",
    ctid: String(ct.vmid),
    storage: "local",
    userid: "root@pam",
    tokenid: "ci",
    poolid: "production",
    snapname: "before-upgrade",
    upid: task.upid,
    volume: "local:iso/debian-13.1.0-amd64-netinst.iso",
    iface: "vmbr0",
    id: "backup-4f1c2a7e",
    zone: "zone1",
    vnet: "vnet10",
    subnet: "zone1-10.10.0.0-24",
    pos: "0",
    groupid: "admins",
  };
}

for (
  const [label, url, paths, ops] of [
    ["9.2", SCHEMA_92, 444, 675],
    ["9.1.11", SCHEMA_9111, 431, 649],
  ] as const
) {
  Deno.test(
    `hypervisor: every operation of pve-${label}.json is routed on both mounts`,
    NEEDS_SCHEMAS,
    async () => {
      const tree = await sharedSchema(url);
      const index = indexSchema(tree);
      assert.equal(index.pathCount, paths);
      assert.equal(index.operations.length, ops);

      const h = await harness({}, { schemaUrl: url });
      try {
        assert.equal(h.engine.router.routes.length, paths);
        const s = await login(h);
        const values = pathValues(h);
        const seen = new Map<string, number>();
        let called = 0;
        for (const { method, path } of index.operations) {
          for (const mount of ["/pve", "/api2/json"]) {
            h.engine.reset();
            const res = await call(h, s, method, mount + fill(path, values));
            called++;
            const where = `${method} ${mount}${path} -> ${res.status} ${
              JSON.stringify(res.body).slice(0, 200)
            }`;
            assert.notEqual(res.status, 501, where);
            assert.notEqual(res.status, 405, where);
            if (mount === "/pve") assert.ok(res.status < 500, where);
            else {
              // Proxmox answers 500 for a missing resource; never for our own crash (the crash
              // handler also answers a `message`, so its text is what tells them apart).
              assert.ok(res.status < 500 || res.body?.message, where);
              assert.ok(res.status < 500 || !/^internal error/.test(res.body.message), where);
            }
            seen.set(String(res.status), (seen.get(String(res.status)) ?? 0) + 1);
          }
        }
        assert.equal(called, ops * 2);
        // Most operations succeed outright with these values (not just "routed").
        assert.ok((seen.get("200") ?? 0) > ops, JSON.stringify(Object.fromEntries(seen)));

        // Methods the schema lacks on a known path and unknown paths answer 501 as Proxmox does.
        const unknown = await call(h, s, "PATCH", "/api2/json/nodes/pve1/qemu");
        assert.equal(unknown.status, 501);
        assert.equal(unknown.res.statusText, "Method 'PATCH /nodes/pve1/qemu' not implemented");
        const nopath = await call(h, s, "GET", "/pve/nodes/pve1/no-such-thing");
        assert.equal(nopath.status, 501);
        assert.deepEqual(nopath.body, {
          detail: "Method 'GET /nodes/pve1/no-such-thing' not implemented",
          errors: [],
        });
      } finally {
        h.close();
      }
    },
  );
}

Deno.test("hypervisor: every operation of the built-in catalogue is routed and answers without error", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    const s = await login(h);
    const values = pathValues(h);
    let ok = 0;
    for (const { method, path } of h.engine.index.operations) {
      h.engine.reset();
      const res = await call(h, s, method, "/pve" + fill(path, values));
      const where = `${method} ${path} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
      assert.ok(![405, 501].includes(res.status) && res.status < 500, where);
      if (res.status === 200) ok++;
    }
    // With no body, creates fail validation; reads and most actions succeed.
    assert.ok(ok >= h.engine.operationCount / 2, `${ok} of ${h.engine.operationCount}`);
  } finally {
    h.close();
  }
});
