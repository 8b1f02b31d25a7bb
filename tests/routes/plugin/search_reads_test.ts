/**
 * What one `?q=` costs on a model whose search follows a foreign key (replications search
 * `virtual_machine__name`), asked with the weakest token that may list them: the VMs read from KV
 * are the ones the replications name, however many VMs the inventory holds. It read every VM per
 * request (100,000 at the largest estate). Counted at two sizes, never timed (SECURITY.md,
 * "Limits").
 */
import assert from "node:assert/strict";
import { harness, P } from "./_harness.ts";
import { ReadCounter } from "../../_kv_reads.ts";

const REPLICATIONS = 4;
const VM = "virtualization.virtualmachine";

async function searchReads(vms: number) {
  const counter = new ReadCounter();
  const h = await harness({}, { kv: counter.wrap(await Deno.openKv(":memory:")) });
  try {
    const ct = await h.call("POST", "/api/virtualization/cluster-types/", { name: "P", slug: "p" });
    const cl = await h.call("POST", "/api/virtualization/clusters/", {
      name: "lab",
      type: ct.body.id,
    });
    assert.equal(cl.status, 201, JSON.stringify(cl.body));
    const ids: number[] = [];
    for (let at = 0; at < vms; at += 1000) {
      const batch = Array.from({ length: Math.min(1000, vms - at) }, (_, i) => ({
        name: `guest-${String(at + i).padStart(6, "0")}`,
        cluster: cl.body.id,
      }));
      const made = await h.call("POST", "/api/virtualization/virtual-machines/", batch);
      assert.equal(made.status, 201, JSON.stringify(made.body).slice(0, 300));
      ids.push(...made.body.map((v: { id: number }) => v.id));
    }
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.lab",
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    // Replications of the last VMs: their names are not in any replication's own fields.
    const reps: number[] = [];
    for (let i = 0; i < REPLICATIONS; i++) {
      const r = await h.call("POST", P + "replications/", {
        endpoint: ep.body.id,
        replication_id: `${100 + i}-0`,
        virtual_machine: ids[ids.length - 1 - i],
        target: "pve2",
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      reps.push(r.body.id);
    }
    const viewer = await h.token({ permissions: ["service.view_replication"] });
    const ask = async (q: string) => {
      counter.byModel.clear();
      counter.counting = true;
      const r = await h.call("GET", `${P}replications/?q=${q}&ordering=id`, undefined, {
        auth: viewer,
      });
      counter.counting = false;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return {
        ids: r.body.results.map((x: { id: number }) => x.id),
        vmReads: counter.byModel.get(VM) ?? 0,
      };
    };
    // By the VM's name (case-insensitive), by a replication's own field, and nothing.
    const last = `GUEST-${String(vms - 1).padStart(6, "0")}`;
    const byVm = await ask(last);
    assert.deepEqual(byVm.ids, [reps[0]], `q=${last}`);
    const byTarget = await ask("pve2");
    assert.deepEqual(byTarget.ids, reps);
    const none = await ask("no-such-guest");
    assert.deepEqual(none.ids, []);
    return { byVm: byVm.vmReads, byTarget: byTarget.vmReads, none: none.vmReads };
  } finally {
    await h.close();
  }
}

Deno.test("?q= across a foreign key reads the VMs the replications name, not every VM: the same at 60 and 600 VMs", async () => {
  const small = await searchReads(60);
  const large = await searchReads(600);
  console.log(
    `VM records read from KV per ?q= on replications: 60 VMs ${JSON.stringify(small)}, 600 VMs ${
      JSON.stringify(large)
    }`,
  );
  for (const reads of [small, large]) {
    // At most the replications' own VMs (for the search, then for their nested forms).
    assert.ok(reads.byVm <= 2 * REPLICATIONS, JSON.stringify(reads));
    assert.ok(reads.none <= REPLICATIONS, JSON.stringify(reads));
    // A replication matched by its own field needs no VM for the search.
    assert.ok(reads.byTarget <= REPLICATIONS, JSON.stringify(reads));
  }
  assert.deepEqual(large, small, "the same reads at ten times the VMs");
});
