/**
 * Objects the sync owns below a VM or device (domain/sync/owned.ts): found by parent, first by
 * id when two claim one key, never another endpoint's; and the VLANs of a site, made once even
 * when another run makes some of them at the same moment. Over the in-memory inventory fake.
 */
import assert from "node:assert/strict";
import type { StageContext } from "../../../domain/sync/context.ts";
import { assignedTo, childrenOf, ensureVlans } from "../../../domain/sync/owned.ts";
import type { InventoryBody } from "../../../domain/sync/ports.ts";
import { FakeInventory, stageContext } from "./_fakes.ts";

const VLANS = "ipam/vlans/";

function context(inv: FakeInventory): StageContext {
  return stageContext(inv);
}

Deno.test("owned: children are keyed by parent and name, the lowest id first; other parents' are not ours", () => {
  const disks = childrenOf(
    [
      { id: 9, name: "scsi0", virtual_machine: { id: 1, display: "a" } },
      { id: 4, name: "scsi0", virtual_machine: 1 },
      { id: 5, name: "scsi1", virtual_machine: { id: 2, url: "u" } },
      { id: 6, name: "scsi0", virtual_machine: 3 },
      { id: 7, name: "scsi0", virtual_machine: null },
    ],
    "virtual_machine",
    new Set([1, 2]),
  );
  assert.deepEqual([...disks].map(([k, o]) => [k, o.id]), [["1:scsi0", 4], ["2:scsi1", 5]]);

  const ips = assignedTo(
    [
      {
        id: 8,
        address: "10.0.0.1/24",
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: 11,
      },
      {
        id: 3,
        address: "10.0.0.1/24",
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: 11,
      },
      {
        id: 4,
        address: "10.0.0.2/24",
        assigned_object_type: { value: "virtualization.vminterface", label: "x" },
        assigned_object_id: "12",
      },
      {
        id: 5,
        address: "10.0.0.3/24",
        assigned_object_type: "dcim.interface",
        assigned_object_id: 11,
      },
      {
        id: 6,
        address: "10.0.0.4/24",
        assigned_object_type: "virtualization.vminterface",
        assigned_object_id: 13,
      },
    ],
    "virtualization.vminterface",
    new Set([11, 12]),
    (o) => String(o.address),
  );
  assert.deepEqual([...ips].map(([k, o]) => [k, o.id]), [
    ["11:10.0.0.1/24", 3],
    ["12:10.0.0.2/24", 4],
  ]);
});

Deno.test("owned: a site's VLANs are found or made once; when another run made some meanwhile, its oldest copy is used and only the rest made", async () => {
  const inv = new FakeInventory();
  // Known beforehand: vid 30 (twice; the older one is used), and vid 40 of another site.
  inv.table(VLANS).set(61, { id: 61, vid: 30, site: { id: 1, display: "s" } });
  inv.table(VLANS).set(60, { id: 60, vid: 30, site: 1 });
  inv.table(VLANS).set(62, { id: 62, vid: 40, site: 2 });
  const create = inv.create.bind(inv);
  let refusals = 0;
  inv.create = (path: string, bodies: InventoryBody[]) => {
    if (path === VLANS && refusals++ === 0) {
      // Another run made vid 10 (twice, the newer first) between this run's read and write.
      inv.table(VLANS).set(71, { id: 71, vid: 10, site: 1 });
      inv.table(VLANS).set(70, { id: 70, vid: 10, site: 1 });
      return Promise.reject(
        Object.assign(new Error(`bulk write on ${VLANS}: HTTP 400`), {
          status: 400,
          refused: true,
        }),
      );
    }
    return create(path, bodies);
  };
  const ctx = context(inv);
  const tagsBefore = () => inv.all("extras/tags/").length;
  const vlans = await ensureVlans(
    ctx,
    1,
    new Map([[10, "ten"], [20, "twenty"], [30, "thirty"], [40, "forty"]]),
  );
  assert.equal(vlans.get(10), 70);
  assert.equal(vlans.get(30), 60);
  const made = inv.all(VLANS).filter((v) => v.id < 60);
  assert.deepEqual(made.map((v) => [v.vid, v.name, v.site]), [[20, "twenty", 1], [40, "forty", 1]]);
  assert.equal(vlans.get(20), made[0].id);
  assert.equal(vlans.get(40), made[1].id);
  // Two VLANs made by this run, and the sync's tags.
  assert.equal(ctx.result.created, 2 + tagsBefore());

  // The same run asks again (another endpoint on the site): nothing more is made.
  const writes = inv.writes.length;
  const again = await ensureVlans(ctx, 1, new Map([[10, "ten"], [20, "twenty"]]));
  assert.deepEqual([again.get(10), again.get(20)], [70, made[0].id]);
  assert.equal(inv.writes.length, writes);
});

Deno.test("owned: VLANs all made by one write are counted once each; names are cut to 64 characters", async () => {
  const inv = new FakeInventory();
  inv.table(VLANS).set(90, { id: 90, vid: 7, site: { id: 1, display: "s" } });
  const ctx = context(inv);
  const vlans = await ensureVlans(ctx, 1, new Map([[5, "x".repeat(80)], [6, "six"], [7, "seven"]]));
  assert.equal(vlans.get(7), 90, "a VLAN the site has is used, not made again");
  const made = inv.all(VLANS).filter((v) => v.id !== 90);
  assert.deepEqual(made.map((v) => [v.vid, String(v.name).length]), [[5, 64], [6, 3]]);
  assert.equal(ctx.result.created, 2 + inv.all("extras/tags/").length);
});
