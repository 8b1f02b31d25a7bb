import assert from "node:assert/strict";
import { ModelEngine } from "../../../domain/netbox/engine.ts";
import { CORE_MODELS } from "../../../domain/netbox/models/core.ts";
import { MemoryLogger } from "../../../infra/logger.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";

// `?q=` searches a model's search fields, and a search path across a foreign key
// (`virtual_machine__name`, as the plugin's replications declare) matches by the related
// object's field. The VM interface is given such a path here so the engine's own tests hold it.
Deno.test("?q= matches a search path across a foreign key by the related object's field", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const models = CORE_MODELS.map((d) =>
      d.app === "virtualization" && d.model === "vminterface"
        ? { ...d, search: ["name", "virtual_machine__name"] }
        : d
    );
    const e = new ModelEngine({
      store: new KvModelStore(kv),
      logger: new MemoryLogger(),
      now: Date.now,
    }).register(...models);
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "lab", type: ct.value.id });
    assert.ok(cl.ok);
    const web = await e.insert("virtualization.virtualmachine", {
      name: "web-01",
      cluster: cl.value.id,
    });
    const db = await e.insert("virtualization.virtualmachine", {
      name: "db-01",
      cluster: cl.value.id,
    });
    assert.ok(web.ok && db.ok);
    const ifaces = await e.createMany("virtualization.vminterface", [
      { name: "eth0", virtual_machine: web.value.id },
      { name: "eth0", virtual_machine: db.value.id },
      { name: "web-uplink", virtual_machine: db.value.id },
    ]);
    assert.ok(ifaces.ok);
    const ids = ifaces.value.map((r) => r.id);
    const search = async (q: string) =>
      (await e.list("virtualization.vminterface", new URLSearchParams({ q, ordering: "id" })))
        .records.map((r) => r.id);
    // By the VM's name (case-insensitive), and by the interface's own name.
    assert.deepEqual(await search("WEB-0"), [ids[0]]);
    assert.deepEqual(await search("web"), [ids[0], ids[2]]);
    assert.deepEqual(await search("db-01"), [ids[1], ids[2]]);
    assert.deepEqual(await search("eth0"), [ids[0], ids[1]]);
    assert.deepEqual(await search("nothing"), []);
  } finally {
    kv.close();
  }
});
