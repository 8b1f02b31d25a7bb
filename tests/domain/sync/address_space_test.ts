/**
 * NetBox's unique IP space meets the sync (docs/sync.md, "Addresses already in the inventory"):
 * what `adoptOrReport` does with each refused create, over the in-memory inventory fake.
 * An address or prefix nobody holds is adopted (patched to what the sync wants, hand-set tags
 * kept), one of the stage's own orphans or one it released is taken, one held by another owner
 * is a conflict naming the holder, and a refusal about anything else is a plain failure.
 */
import assert from "node:assert/strict";
import { FakeInventory, stageContext } from "./_fakes.ts";
import { adoptOrReport } from "../../../domain/sync/address_space.ts";
import type { Desired } from "../../../domain/sync/reconcile.ts";
import type { InventoryObject } from "../../../domain/sync/ports.ts";

const IPS = "ipam/ip-addresses/";
const PREFIXES = "ipam/prefixes/";
const SYNCED = 1;
const MISSING = 2;
const HAND = 50;

const duplicateIp = (a: string) => ({
  address: [`Duplicate IP address found in global table: ${a}`],
});

/** The fake, with NetBox's `address` filter: a value without a mask matches the host. */
class AddressInventory extends FakeInventory {
  readonly lookups: string[] = [];
  override list(path: string, query: Record<string, string | string[]>) {
    const { address, ...rest } = query;
    if (address === undefined) return super.list(path, query);
    this.lookups.push(`${path}?address=${address}`);
    return super.list(path, rest).then((all) =>
      all.filter((o) => String(o.address).split("/")[0] === String(address))
    );
  }
}

function setUp() {
  const inv = new AddressInventory();
  const conflicts: string[] = [];
  const ctx = stageContext(inv, {
    itemConflict: (object, detail) => {
      conflicts.push(`${object}: ${detail}`);
    },
  });
  const put = (path: string, o: InventoryObject) => {
    inv.table(path).set(o.id, o);
    return o;
  };
  return { inv, ctx, conflicts, put };
}

function want(key: string, body: Record<string, unknown>): Desired {
  return { key, label: `ip address ${key}`, body };
}

Deno.test("address space: an address nobody holds is adopted (patched, hand tags kept); the lowest id first; one in a VRF is not the one", async () => {
  const { inv, ctx, conflicts, put } = setUp();
  // In a VRF: another table, never the one NetBox refused for.
  put(IPS, { id: 3, address: "10.0.0.5/24", vrf: { id: 9 }, assigned_object_id: null });
  put(IPS, { id: 8, address: "10.0.0.5/32", vrf: null, assigned_object_id: null, tags: [] });
  put(IPS, {
    id: 6,
    address: "10.0.0.5/24",
    vrf: null,
    assigned_object_id: null,
    status: "reserved",
    tags: [{ id: HAND, display: "mine" }],
  });
  const existing = new Map<string, InventoryObject>();
  const resolve = adoptOrReport(ctx, {
    path: IPS,
    field: "address",
    existing,
    wanted: new Set(["101:10.0.0.5/24"]),
    managedTags: new Set([SYNCED, MISSING]),
    syncedTag: SYNCED,
  });
  const body = {
    address: "10.0.0.5/24",
    status: "active",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: 40,
    tags: [SYNCED],
  };
  const got = await resolve(want("101:10.0.0.5/24", body), duplicateIp("10.0.0.5/24"));
  assert.deepEqual(conflicts, []);
  // Looked up by its host, as NetBox's unique check compares them.
  assert.deepEqual(inv.lookups, [`${IPS}?address=10.0.0.5`]);
  assert.deepEqual(inv.writes, [`PATCH ${IPS}6`]);
  assert.deepEqual(got, {
    id: 6,
    address: "10.0.0.5/24",
    vrf: null,
    status: "active",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: 40,
    tags: [HAND, SYNCED],
  });
  // The others are untouched.
  assert.equal(inv.table(IPS).get(8)!.assigned_object_id, null);
  assert.deepEqual(inv.table(IPS).get(3)!.vrf, { id: 9 });
});

Deno.test("address space: an adopted object that already holds what the sync wants is not written", async () => {
  const { inv, ctx, put } = setUp();
  const held = put(IPS, {
    id: 6,
    address: "10.0.0.5/24",
    assigned_object_id: undefined as unknown as null,
    status: "active",
    tags: [SYNCED],
  });
  const resolve = adoptOrReport(ctx, {
    path: IPS,
    field: "address",
    existing: new Map(),
    wanted: new Set(),
    managedTags: new Set([SYNCED]),
    syncedTag: SYNCED,
  });
  const got = await resolve(
    want("k", { address: "10.0.0.5/24", status: "active", tags: [SYNCED] }),
    duplicateIp("10.0.0.5/24"),
  );
  assert.deepEqual(inv.writes, []);
  assert.deepEqual(got, held);
});

Deno.test("address space: the stage's own orphan, or one it released, is taken (and leaves the orphans); an assigned one of another owner is a conflict naming it", async () => {
  const { inv, ctx, conflicts, put } = setUp();
  const orphan = put(IPS, {
    id: 11,
    address: "10.0.0.7/24",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: 31,
    status: "active",
    tags: [SYNCED],
  });
  put(IPS, {
    id: 12,
    address: "10.0.0.8/24",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: 32,
    status: "active",
    tags: [SYNCED],
  });
  put(IPS, {
    id: 13,
    address: "10.0.0.9/24",
    assigned_object_type: "dcim.interface",
    assigned_object_id: 70,
    assigned_object: {
      id: 70,
      display: "vmbr0",
      name: "vmbr0",
      device: { id: 5, display: "pve1", name: "pve1" },
    },
    status: "active",
    tags: [],
  });
  put(IPS, {
    id: 14,
    address: "10.0.0.10/24",
    assigned_object_id: 71,
    assigned_object: { id: 71, name: "net0", virtual_machine: { id: 6, name: "vm-100" } },
    status: "active",
    tags: [SYNCED],
  });
  const existing = new Map<string, InventoryObject>([
    ["31:10.0.0.7/24", orphan],
    ["33:10.0.0.20/24", { id: 20, address: "10.0.0.20/24" }],
  ]);
  const resolve = adoptOrReport(ctx, {
    path: IPS,
    field: "address",
    existing,
    wanted: new Set(["33:10.0.0.20/24"]),
    managedTags: new Set([SYNCED]),
    syncedTag: SYNCED,
    released: new Set([12]),
  });
  const moved = (iface: number) => ({
    address: "",
    assigned_object_type: "virtualization.vminterface",
    assigned_object_id: iface,
    tags: [SYNCED],
  });
  // The orphan moves to interface 41 and leaves the stage's orphans (it is not marked).
  const a = await resolve(
    want("41:10.0.0.7/24", { ...moved(41), address: "10.0.0.7/24" }),
    duplicateIp("10.0.0.7/24"),
  );
  assert.equal((a as InventoryObject).assigned_object_id, 41);
  assert.deepEqual([...existing.keys()], ["33:10.0.0.20/24"]);
  // A released one moves too.
  const b = await resolve(
    want("42:10.0.0.8/24", { ...moved(42), address: "10.0.0.8/24" }),
    duplicateIp("10.0.0.8/24"),
  );
  assert.equal((b as InventoryObject).assigned_object_id, 42);
  assert.deepEqual(inv.writes, [`PATCH ${IPS}11`, `PATCH ${IPS}12`]);
  // Held by a node's interface, and by another guest's: conflicts, nothing written.
  assert.equal(
    await resolve(
      want("43:10.0.0.9/24", { ...moved(43), address: "10.0.0.9/24" }),
      duplicateIp("10.0.0.9/24"),
    ),
    "conflict",
  );
  assert.equal(
    await resolve(
      want("44:10.0.0.10/24", { ...moved(44), address: "10.0.0.10/24" }),
      duplicateIp("10.0.0.10/24"),
    ),
    "conflict",
  );
  assert.deepEqual(inv.writes, [`PATCH ${IPS}11`, `PATCH ${IPS}12`]);
  const text = (a: string, who: string) =>
    `ip address ${a}: not written: Duplicate IP address found in global table: ${
      a.split(":")[1]
    } (NetBox's unique IP space, ENFORCE_GLOBAL_UNIQUE); it stays with ${who}`;
  assert.deepEqual(conflicts, [
    text("43:10.0.0.9/24", "pve1 vmbr0"),
    text("44:10.0.0.10/24", "vm-100 net0"),
  ]);
});

Deno.test("address space: a holder the stage has yet to reach is postponed (no conflict); nobody found says 'its holder'; another refusal is a plain failure", async () => {
  const { inv, ctx, conflicts, put } = setUp();
  put(IPS, {
    id: 15,
    address: "10.0.0.11/24",
    assigned_object_id: 80,
    assigned_object: { id: 80, name: "net0", virtual_machine: { id: 7, name: "later" } },
    tags: [SYNCED],
  });
  const postponed: string[] = [];
  const resolve = adoptOrReport(ctx, {
    path: IPS,
    field: "address",
    existing: new Map(),
    wanted: new Set(),
    managedTags: new Set([SYNCED]),
    syncedTag: SYNCED,
    postpone: (d, holder) => {
      postponed.push(`${d.key} held by ${holder.id}`);
      return holder.id === 15;
    },
  });
  const body = { address: "10.0.0.11/24", tags: [SYNCED] };
  assert.equal(await resolve(want("k1", body), duplicateIp("10.0.0.11/24")), "conflict");
  assert.deepEqual(postponed, ["k1 held by 15"]);
  assert.deepEqual(conflicts, []);
  // The inventory refused it, but the address is not to be found (a VRF of its own): reported.
  const lost = { address: "10.0.0.12/24", tags: [SYNCED] };
  assert.equal(await resolve(want("k2", lost), duplicateIp("10.0.0.12/24")), "conflict");
  assert.equal(conflicts.length, 1);
  assert.match(conflicts[0], /it stays with its holder$/);
  // Not a duplicate: the create's failure stands.
  assert.equal(await resolve(want("k3", body), { address: ["Enter a valid IPv4 address."] }), null);
  assert.equal(
    await resolve(want("k3", body), { status: ["Duplicate IP address found in x"] }),
    null,
  );
  assert.equal(
    await resolve(want("k3", body), { address: "Duplicate IP address found in x" }),
    null,
  );
  assert.deepEqual(inv.writes, []);
  assert.equal(conflicts.length, 1);
});

Deno.test("address space: a prefix is free when the sync's tag is not on it; one of another endpoint's sync is a conflict named by its value", async () => {
  const { inv, ctx, conflicts, put } = setUp();
  put(PREFIXES, { id: 21, prefix: "10.20.0.0/24", status: "active", tags: [HAND] });
  put(PREFIXES, { id: 22, prefix: "10.30.0.0/24", status: "active", tags: [SYNCED] });
  put(PREFIXES, {
    id: 23,
    prefix: "10.40.0.0/24",
    display: "10.40.0.0/24 (lab-b)",
    status: "active",
    tags: [{ id: SYNCED, display: "synced" }],
  });
  const resolve = adoptOrReport(ctx, {
    path: PREFIXES,
    field: "prefix",
    existing: new Map(),
    wanted: new Set(),
    managedTags: new Set([SYNCED, MISSING]),
    syncedTag: SYNCED,
  });
  const prefix = (p: string) => ({
    prefix: p,
    status: "active",
    description: "SDN",
    tags: [SYNCED],
  });
  const dup = (p: string) => ({ prefix: [`Duplicate prefix found in global table: ${p}`] });
  const got = await resolve(
    { key: "10.20.0.0/24", label: "prefix 10.20.0.0/24", body: prefix("10.20.0.0/24") },
    dup("10.20.0.0/24"),
  );
  assert.deepEqual(got, {
    id: 21,
    prefix: "10.20.0.0/24",
    status: "active",
    description: "SDN",
    tags: [HAND, SYNCED],
  });
  for (const p of ["10.30.0.0/24", "10.40.0.0/24"]) {
    assert.equal(
      await resolve({ key: p, label: `prefix ${p}`, body: prefix(p) }, dup(p)),
      "conflict",
    );
  }
  assert.deepEqual(inv.writes, [`PATCH ${PREFIXES}21`]);
  assert.deepEqual(conflicts.map((c) => c.replace(/: not written.*stays with /, " → ")), [
    "prefix 10.30.0.0/24 → 10.30.0.0/24",
    "prefix 10.40.0.0/24 → 10.40.0.0/24 (lab-b)",
  ]);
});
