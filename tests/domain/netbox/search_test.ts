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

// A search path across an FK that may be null (a VM's cluster, given the path here), and a
// searched field holding null (a VM's memory): a record naming no cluster is passed over by the
// related match and still found by its own fields; a null is no text, so `?q=null` finds none.
Deno.test("?q= across a nullable FK passes over records that name none; a null field never matches the text 'null'", async () => {
  const kv = await Deno.openKv(":memory:");
  try {
    const models = CORE_MODELS.map((d) =>
      d.app === "virtualization" && d.model === "virtualmachine"
        ? { ...d, search: ["name", "cluster__name", "memory"] }
        : d
    );
    const store = new KvModelStore(kv);
    const e = new ModelEngine({ store, logger: new MemoryLogger(), now: Date.now }).register(
      ...models,
    );
    const ct = await e.insert("virtualization.clustertype", { name: "PVE", slug: "pve" });
    assert.ok(ct.ok);
    const cl = await e.insert("virtualization.cluster", { name: "lab", type: ct.value.id });
    const site = await e.insert("dcim.site", { name: "hq", slug: "hq" });
    assert.ok(cl.ok && site.ok);
    const vms = await e.createMany("virtualization.virtualmachine", [
      { name: "in-lab", cluster: cl.value.id, memory: 2048 },
      { name: "lab-less", site: site.value.id },
      { name: "plain", site: site.value.id },
    ]);
    assert.ok(vms.ok, JSON.stringify(vms));
    const [inLab, labLess, plain] = vms.value.map((r) => r.id);
    const search = async (q: string) =>
      (await e.list("virtualization.virtualmachine", new URLSearchParams({ q, ordering: "id" })))
        .records.map((r) => r.id);
    assert.deepEqual(await search("lab"), [inLab, labLess]);
    assert.deepEqual(await search("plain"), [plain]);
    assert.deepEqual(await search("2048"), [inLab]);
    assert.deepEqual(await search("null"), []);
    assert.deepEqual(await search("undefined"), []);
  } finally {
    kv.close();
  }
});
