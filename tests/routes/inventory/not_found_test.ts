/**
 * The single-object 404 as NetBox 4.6 answers it: DRF passes Django's get_object_or_404 text on,
 * `{"detail": "No <class name> matches the given query."}`, for a GET, PUT, PATCH or DELETE by an
 * id no object has and for a detail action of the plugin; an id that is no number is DRF's bare
 * "Not found.", as is a path no route serves (docs/api-behaviour.md, "Inventory: errors").
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";
import { testDeps } from "../../_helpers.ts";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { createPlugin } from "../../../routes/plugin/mod.ts";
import { objectNameOf } from "../../../domain/netbox/types.ts";

Deno.test("an unknown id answers 404 naming the model's class, as NetBox 4.6; a malformed id or path answers Not found.", async () => {
  const inv = await setup();
  try {
    const cases: Array<[string, string]> = [
      ["/api/virtualization/virtual-machines/", "VirtualMachine"],
      ["/api/virtualization/interfaces/", "VMInterface"],
      ["/api/dcim/interfaces/", "Interface"],
      ["/api/dcim/mac-addresses/", "MACAddress"],
      ["/api/ipam/ip-addresses/", "IPAddress"],
      ["/api/ipam/vlan-groups/", "VLANGroup"],
      ["/api/extras/tags/", "Tag"],
      ["/api/core/object-changes/", "ObjectChange"],
      ["/api/users/tokens/", "Token"],
      ["/api/plugins/service/endpoints/hypervisor/", "HypervisorEndpoint"],
      ["/api/plugins/service/task-history/", "TaskHistory"],
      ["/api/plugins/service/vm-sync-state/", "VMSyncState"],
    ];
    for (const [path, name] of cases) {
      const expected = { detail: `No ${name} matches the given query.` };
      const methods = /object-changes|vm-sync-state/.test(path)
        ? ["GET"]
        : ["GET", "PUT", "PATCH", "DELETE"];
      for (const method of methods) {
        const r = await inv.call(
          method,
          `${path}987654/`,
          method === "GET" || method === "DELETE" ? undefined : { name: "x" },
        );
        assert.deepEqual([r.status, r.body], [404, expected], `${method} ${path}987654/`);
      }
    }
    // A core job (its DELETE is the job runner's cancel) and the plugin's detail actions.
    const job = await inv.call("DELETE", "/api/core/jobs/987654/");
    assert.deepEqual([job.status, job.body], [404, { detail: "No Job matches the given query." }]);
    for (
      const [method, path, name] of [
        ["GET", "endpoints/hypervisor/987654/status/", "HypervisorEndpoint"],
        ["GET", "endpoints/hypervisor/987654/ssh-secrets/", "HypervisorEndpoint"],
        ["POST", "endpoints/inventory/987654/push/", "InventoryEndpoint"],
        ["POST", "endpoints/backend/987654/push/", "BackendEndpoint"],
      ]
    ) {
      const r = await inv.call(
        method,
        `/api/plugins/service/${path}`,
        method === "POST" ? {} : undefined,
      );
      assert.deepEqual(
        [r.status, r.body],
        [404, { detail: `No ${name} matches the given query.` }],
        `${method} ${path}`,
      );
    }
    // An id that is no number, and a path no route serves: DRF's and Django's bare text.
    for (const path of ["/api/dcim/sites/abc/", "/api/dcim/no-such-model/1/"]) {
      const r = await inv.call("GET", path);
      assert.deepEqual([r.status, r.body], [404, { detail: "Not found." }], path);
    }
  } finally {
    inv.close();
  }
});

Deno.test("every model's class name, in lower case, is its model name (NetBox's model_name)", async () => {
  const deps = await testDeps({});
  try {
    const core = createInventoryCore(deps);
    const plugin = createPlugin(deps, { tokenPlaintext: () => Promise.resolve(null) });
    const models = [...core.engine.models(), ...plugin.models];
    assert.ok(models.length > 50, `${models.length} models`);
    for (const def of models) {
      assert.equal(objectNameOf(def).toLowerCase(), def.model, `${def.app}.${def.model}`);
      assert.match(objectNameOf(def), /^[A-Z][A-Za-z]+$/, `${def.app}.${def.model}`);
    }
  } finally {
    deps.kv.close();
  }
});
