/**
 * The sdn stage field by field (docs/sync.md, "What the sync writes"): vnets with a VLAN tag
 * in 1..4094 become VLANs of the cluster's site (one per vid, the first vnet by name), their
 * subnets prefixes scoped to the site; then a re-run with nothing changed, and one after a
 * subnet went and a vnet changed upstream. Over the in-memory fakes of the two ports.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, runStages, smallCluster } from "./_fakes.ts";

const PREFIXES = "ipam/prefixes/";
const VLANS = "ipam/vlans/";
const LONG_ALIAS = "a".repeat(250);

function cluster(): Record<string, any> {
  return {
    ...smallCluster(),
    // Unsorted, as an API may answer: the stage orders vnets by name.
    "/cluster/sdn/vnets": [
      { vnet: "vnetb", zone: "z1", tag: 20, alias: LONG_ALIAS },
      { vnet: "vnetc", zone: "z2", tag: 10 }, // vid 10 again: the VLAN is vneta's
      { vnet: "vneta", zone: "z1", tag: 10 },
      { vnet: "vnetd", zone: "z2" }, // no tag: no VLAN
      { vnet: "vnete", tag: 0 }, // out of range: no VLAN
      { vnet: "vnetf", zone: "z3", tag: 4095 }, // out of range: no VLAN
      { vnet: "vnetg", zone: "z3", tag: 4094 },
      { vnet: "vneth", zone: "z3", tag: 1 },
      { vnet: "vneti", zone: "z3", tag: 30 }, // its subnets cannot be read: the VLAN all the same
    ],
    "/cluster/sdn/vnets/vneta/subnets": [
      { cidr: "10.10.0.0/24", gateway: "10.10.0.1" },
      { subnet: "10.11.0.0/24" }, // no cidr: the subnet's own name, when it is one
      { cidr: "not-a-cidr" },
      {},
    ],
    "/cluster/sdn/vnets/vnetb/subnets": [{ cidr: "10.20.0.0/24" }],
    "/cluster/sdn/vnets/vnetc/subnets": [
      { cidr: "10.10.0.0/24" }, // vneta's already: its first vnet keeps it
      { cidr: "10.12.0.0/24" },
    ],
    "/cluster/sdn/vnets/vnetd/subnets": [{ cidr: "fd00:1::/64" }],
    "/cluster/sdn/vnets/vnete/subnets": [{ cidr: "10.0.0.0/24" }],
    "/cluster/sdn/vnets/vnetf/subnets": [],
    "/cluster/sdn/vnets/vnetg/subnets": [{ cidr: "10.40.0.0/24" }],
    "/cluster/sdn/vnets/vneth/subnets": [],
  };
}

async function run(inv: FakeInventory, hv: FakeHypervisor) {
  const { complete, events } = await runStages(inv, hv, ["devices", "sdn"]);
  assert.deepEqual(events.filter((e) => e.event !== "step" && e.event !== "complete"), []);
  const r = complete.stages.find((s) => s.step === "sdn")!.result;
  return [r.created, r.updated, r.unchanged, r.deleted, r.failed];
}

Deno.test("sdn: tagged vnets in 1..4094 are the site's VLANs (one per vid), subnets its prefixes; a re-run writes nothing; a gone subnet is deprecated", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const data = cluster();
  const hv = new FakeHypervisor(data);
  // 5 VLANs and 7 prefixes made.
  assert.deepEqual(await run(inv, hv), [12, 0, 0, 0, 0]);

  const site = inv.all("virtualization/clusters/")[0].scope_id;
  const synced = inv.all("extras/tags/").find((t) => t.slug === "bridgebox-synced")!.id;
  assert.deepEqual(
    inv.all(VLANS).map(({ id: _id, ...v }) => v as any).sort((a, b) => a.vid - b.vid),
    [
      { vid: 1, name: "vneth", site, status: "active", tags: [synced] },
      { vid: 10, name: "vneta", site, status: "active", tags: [synced] },
      { vid: 20, name: "vnetb", site, status: "active", tags: [synced] },
      { vid: 30, name: "vneti", site, status: "active", tags: [synced] },
      { vid: 4094, name: "vnetg", site, status: "active", tags: [synced] },
    ],
  );
  const vlan = (vid: number) => inv.all(VLANS).find((v) => v.vid === vid)!.id;
  const prefix = (p: string, vlanId: number | null, description: string) => ({
    prefix: p,
    status: "active",
    vlan: vlanId,
    scope_type: "dcim.site",
    scope_id: site,
    description,
    tags: [synced],
  });
  const prefixes = () =>
    Object.fromEntries(inv.all(PREFIXES).map(({ id: _id, ...p }) => [p.prefix, p]));
  assert.deepEqual(prefixes(), {
    "10.10.0.0/24": prefix("10.10.0.0/24", vlan(10), "SDN vnet vneta (zone z1)"),
    "10.11.0.0/24": prefix("10.11.0.0/24", vlan(10), "SDN vnet vneta (zone z1)"),
    "10.20.0.0/24": prefix(
      "10.20.0.0/24",
      vlan(20),
      `SDN vnet vnetb (zone z1): ${LONG_ALIAS}`.slice(0, 200),
    ),
    "10.12.0.0/24": prefix("10.12.0.0/24", vlan(10), "SDN vnet vnetc (zone z2)"),
    "fd00:1::/64": prefix("fd00:1::/64", null, "SDN vnet vnetd (zone z2)"),
    "10.0.0.0/24": prefix("10.0.0.0/24", null, "SDN vnet vnete"),
    "10.40.0.0/24": prefix("10.40.0.0/24", vlan(4094), "SDN vnet vnetg (zone z3)"),
  });
  assert.equal(prefixes()["10.20.0.0/24"].description.length, 200);

  // Nothing changed: nothing written.
  let before = inv.writes.length;
  assert.deepEqual(await run(inv, hv), [0, 0, 7, 0, 0]);
  assert.deepEqual(inv.writes.slice(before), []);

  // vnetb's subnet went; vnetd moved zone and got an alias; vnete got tag 40 (a new VLAN).
  data["/cluster/sdn/vnets/vnetb/subnets"] = [];
  data["/cluster/sdn/vnets"] = data["/cluster/sdn/vnets"].map((v: any) =>
    v.vnet === "vnetd"
      ? { ...v, zone: "z9", alias: "storage" }
      : v.vnet === "vnete"
      ? { ...v, tag: 40 }
      : v
  );
  const ids = Object.fromEntries(inv.all(PREFIXES).map((p) => [p.prefix, p.id]));
  before = inv.writes.length;
  assert.deepEqual(await run(inv, hv), [1, 3, 4, 0, 0]);
  assert.deepEqual(
    inv.writes.slice(before).sort(),
    [
      `PATCH ${PREFIXES}${ids["10.0.0.0/24"]}`,
      `PATCH ${PREFIXES}${ids["10.20.0.0/24"]}`,
      `PATCH ${PREFIXES}${ids["fd00:1::/64"]}`,
      `POST ${VLANS}`,
    ].sort(),
  );
  const after = prefixes();
  assert.deepEqual(after["10.20.0.0/24"], {
    ...prefix("10.20.0.0/24", vlan(20), `SDN vnet vnetb (zone z1): ${LONG_ALIAS}`.slice(0, 200)),
    status: "deprecated",
  });
  assert.deepEqual(
    after["fd00:1::/64"],
    prefix("fd00:1::/64", null, "SDN vnet vnetd (zone z9): storage"),
  );
  assert.deepEqual(after["10.0.0.0/24"], prefix("10.0.0.0/24", vlan(40), "SDN vnet vnete"));
  assert.deepEqual(inv.all(VLANS).map((v) => Number(v.vid)).sort((a, b) => a - b), [
    1,
    10,
    20,
    30,
    40,
    4094,
  ]);
});

Deno.test("sdn: a prefix of the same value at another site, or made by hand, is not the stage's: it is neither taken nor marked", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const data = cluster();
  const hv = new FakeHypervisor(data);
  await run(inv, hv);
  const synced = inv.all("extras/tags/").find((t) => t.slug === "bridgebox-synced")!.id;
  const site = Number(inv.all("virtualization/clusters/")[0].scope_id);
  // Another site's synced prefix (rendered with a nested scope), and a hand-made one here.
  inv.table(PREFIXES).set(900, {
    id: 900,
    prefix: "10.99.0.0/24",
    scope_type: "dcim.site",
    scope: { id: site + 100, display: "other" },
    scope_id: site + 100,
    status: "active",
    tags: [synced],
  });
  inv.table(PREFIXES).set(901, {
    id: 901,
    prefix: "10.98.0.0/24",
    scope_type: "dcim.site",
    scope: { id: site, display: "lab" },
    scope_id: site,
    status: "active",
    tags: [],
  });
  // This site's own prefix, rendered with only the nested scope: still the stage's.
  const own = inv.all(PREFIXES).find((p) => p.prefix === "10.40.0.0/24")!;
  inv.table(PREFIXES).set(own.id, { ...own, scope: { id: site, display: "lab" }, scope_id: null });
  data["/cluster/sdn/vnets/vnetg/subnets"] = [];
  const before = inv.writes.length;
  assert.deepEqual(await run(inv, hv), [0, 1, 6, 0, 0]);
  assert.deepEqual(inv.writes.slice(before), [`PATCH ${PREFIXES}${own.id}`]);
  assert.equal(inv.table(PREFIXES).get(own.id)!.status, "deprecated");
  assert.equal(inv.table(PREFIXES).get(900)!.status, "active");
  assert.equal(inv.table(PREFIXES).get(901)!.status, "active");
});
