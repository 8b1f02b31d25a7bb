/**
 * What the sliced guest stages ask the inventory for (docs/sync.md, "Re-runs"): each slice's
 * disks, interfaces, MAC and IP addresses with only the fields the stage compares and writes
 * (NetBox's `fields`), several requests of 100 parents in flight, and a re-run that finds
 * nothing to write from those narrowed answers. Over the in-memory fakes: FakeInventory renders
 * `fields` as NetBox does (only those), so a field a stage uses without asking for it is missing.
 */
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, guestMac, runGuestStages, smallCluster } from "./_fakes.ts";
import { SLICE, STATE_FIELDS } from "../../../domain/sync/guests.ts";

/** A slice and a half: the first slice's reads of 500 parents go in five requests. */
const GUESTS = SLICE + SLICE / 2;

/** Guests 1..GUESTS, each with a disk, a NIC with a MAC and a static address. */
function cluster() {
  const data = smallCluster();
  const resources = [];
  for (let vmid = 1; vmid <= GUESTS; vmid++) {
    resources.push({ vmid, name: `vm-${vmid}`, node: "n1", type: "qemu", status: "running" });
    const mac = guestMac(vmid);
    data[`/nodes/n1/qemu/${vmid}/config`] = {
      name: `vm-${vmid}`,
      memory: 1024,
      cores: 1,
      scsi0: `local:vm-${vmid}-disk-0,size=8G`,
      net0: `virtio=${mac},bridge=vmbr0,tag=${10 + (vmid % 3)}`,
      ipconfig0: `ip=10.${vmid >> 8}.${vmid & 255}.1/16`,
    };
  }
  data["/cluster/resources"] = resources;
  return data;
}

/** The fake, recording each list call and how many were in flight at once. */
class WatchedInventory extends FakeInventory {
  readonly lists: { path: string; filters: Record<string, string | string[]> }[] = [];
  inFlight = 0;
  mostInFlight = 0;
  /** The paths of the calls in flight now, and "a while b" for each call made during another. */
  readonly #open = new Map<number, string>();
  readonly overlaps = new Set<string>();
  #next = 0;
  override async list(path: string, filters: Record<string, string | string[]>) {
    this.lists.push({ path, filters });
    this.inFlight++;
    this.mostInFlight = Math.max(this.mostInFlight, this.inFlight);
    const call = this.#next++;
    for (const other of this.#open.values()) this.overlaps.add(`${path} while ${other}`);
    this.#open.set(call, path);
    try {
      // Answered on a later turn, as a socket answers: a caller that waits for each answer
      // before asking the next never has two in flight, whatever the machine's speed.
      await Promise.resolve();
      return await super.list(path, filters);
    } finally {
      this.inFlight--;
      this.#open.delete(call);
    }
  }
}

function run(inv: FakeInventory) {
  return runGuestStages(inv, new FakeHypervisor(cluster()));
}

Deno.test("sliced reads: each slice's children are asked with only the fields their stage compares, several requests in flight, independent reads together; the re-run writes nothing", async () => {
  const inv = new WatchedInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  await run(inv);
  assert.equal(inv.all("virtualization/virtual-disks/").length, GUESTS);
  assert.equal(inv.all("ipam/ip-addresses/").length, GUESTS);

  inv.lists.length = 0;
  inv.mostInFlight = 0;
  const writes = inv.writes.length;
  const again = await run(inv);
  assert.deepEqual(inv.writes.slice(writes), [], "an unchanged re-run writes nothing");
  assert.equal(again.result.created + again.result.updated + again.result.deleted, 0);

  // The children of a slice: by parent, with the sync's tag, and `fields` naming what the
  // stage reads (no counts, no nested forms it never looks at).
  const sliced: Record<string, string> = {
    "virtualization/virtual-disks/": "virtual_machine_id",
    "virtualization/interfaces/": "virtual_machine_id",
    "dcim/mac-addresses/": "assigned_object_id",
    "ipam/ip-addresses/": "assigned_object_id",
  };
  const childReads = inv.lists.filter((l) => sliced[l.path]);
  assert.ok(childReads.length >= 4 * 2, `${childReads.length} child reads`);
  for (const { path, filters } of childReads) {
    assert.ok(Array.isArray(filters[sliced[path]]), `${path} read by ${sliced[path]}`);
    assert.equal(filters.tag, "bridgebox-synced");
    const fields = String(filters.fields ?? "").split(",");
    assert.ok(fields.includes("id") && fields.length > 1, `${path} asks fields: ${filters.fields}`);
    assert.ok(!fields.includes("custom_fields"), `${path} never asks custom fields`);
  }
  // A slice's VMs and sync-states by id: the VM stage without the interface count, the
  // ip-addresses stage its primary IPs only; sync-states their compared fields.
  const vmReads = inv.lists.filter((l) =>
    l.path === "virtualization/virtual-machines/" && Array.isArray(l.filters.id)
  );
  // Whole VMs but counts and fields of other stages (their primary IPs: an address read each).
  assert.ok(
    vmReads.some((l) =>
      ["interface_count", "primary_ip4", "primary_ip6", "primary_ip"].every((f) =>
        String(l.filters.omit).split(",").includes(f)
      )
    ),
    "VM stage's read",
  );
  assert.ok(
    vmReads.some((l) => String(l.filters.fields).split(",").includes("primary_ip4")),
    "ip-addresses stage's read",
  );
  assert.ok(vmReads.every((l) => l.filters.omit !== undefined || l.filters.fields !== undefined));
  // The endpoint's cluster by id, with the fields read (a whole cluster sums all its VMs).
  const clusterReads = inv.lists.filter((l) =>
    l.path === "virtualization/clusters/" && l.filters.id !== undefined
  );
  assert.ok(
    clusterReads.length > 0 && clusterReads.every((l) => l.filters.fields === "id,scope,scope_id"),
    JSON.stringify(clusterReads),
  );
  // Sync-states: read once per run, by the endpoint's walk, with the fields the VM stage
  // compares; never again by id (a record and its nested VM per guest, docs/sync.md "Re-runs").
  const stateReads = inv.lists.filter((l) => l.path === "plugins/service/vm-sync-state/");
  assert.deepEqual(
    stateReads.map((l) => [Object.keys(l.filters).sort().join(","), l.filters.fields]),
    [["endpoint_id,fields", STATE_FIELDS.join(",")]],
    `sync-state reads: ${stateReads.map((l) => Object.keys(l.filters).sort()).join(" | ")}`,
  );
  // The first slice's 500 parents go in five requests, several of them at once.
  assert.ok(inv.mostInFlight >= 4, `at most ${inv.mostInFlight} request(s) in flight`);
  // Reads that do not wait on each other go together: a slice's VMs with its interfaces
  // (ip-addresses).
  const together = (a: string, b: string) =>
    inv.overlaps.has(`${a} while ${b}`) || inv.overlaps.has(`${b} while ${a}`);
  const seen = [...inv.overlaps].join("\n");
  assert.ok(together("virtualization/interfaces/", "virtualization/virtual-machines/"), seen);
});
