/**
 * Stage 10, ip-addresses: the addresses of each guest's interfaces — static ones from the
 * config (`ipconfigN` for QEMU, `ip=`/`ip6=` for containers), else what the QEMU guest agent
 * reports for a running guest with the agent enabled (matched to netN by MAC) — and the VM's
 * primary IPv4/IPv6 (the first of each family, in interface order). Identity: interface +
 * address. Loopback and link-local addresses are skipped.
 */
import { mapLimit, type StageContext } from "../context.ts";
import { PATHS, syncTags } from "../base.ts";
import {
  type Guest,
  guests,
  madeThisRun,
  onlyFields,
  sliceAssigned,
  sliceChildren,
  vmAnchors,
  vmsById,
} from "../guests.ts";
import { containerDnsName, dnsName, guestNics, propertyString } from "../proxmox.ts";
import { changes, deleteOrphans, type Desired, reconcile, refId } from "../reconcile.ts";
import { createdThisRun } from "./virtual_machines.ts";
import { primaryIps } from "../options.ts";
import { VM_IFACE } from "./vm_interfaces.ts";
import type { InventoryObject } from "../ports.ts";
import { adoptOrReport } from "../address_space.ts";
import {
  digestOf,
  IP_STAGE,
  LEDGER_MODELS,
  readLog,
  SliceLogReads,
  type SyncLedger,
} from "../ledger.ts";

interface AgentInterface {
  name?: string;
  "hardware-address"?: string;
  "ip-addresses"?: { "ip-address-type"?: string; "ip-address"?: string; prefix?: number }[];
}

export function usableAddress(cidr: string): boolean {
  const host = cidr.split("/")[0].toLowerCase();
  return !(host.startsWith("127.") || host === "::1" || host.startsWith("fe80:") ||
    host.startsWith("169.254."));
}

const isV6 = (cidr: string) => cidr.includes(":");

/**
 * What the stage reads: of an interface, where it hangs (its addresses' anchor); of an address,
 * what it compares and writes; of a VM, its primary IPs (and its name, which a plan shows).
 */
const ANCHOR_FIELDS = ["id", "virtual_machine", "name"];
const IP_FIELDS = [
  "id",
  "address",
  "status",
  "dns_name",
  "assigned_object_type",
  "assigned_object_id",
  "tags",
  "last_updated",
];
const PRIMARY_IP_FIELDS = ["id", "name", "cluster", "primary_ip4", "primary_ip6", "last_updated"];

function agentEnabled(config: Record<string, unknown>): boolean {
  const props = propertyString(config.agent);
  return props[""] === "1" || props.enabled === "1";
}

interface GuestAddresses {
  /** Interface name → addresses. */
  byNic: Map<string, string[]>;
  /** The guest's DNS name: a container's hostname, or the name the QEMU guest agent reports. */
  dns: string | null;
}

/** Interface name → addresses of one guest, and its DNS name. */
async function addressesOf(ctx: StageContext, g: Guest): Promise<GuestAddresses> {
  const nics = guestNics(g.type, g.config);
  const out = new Map(nics.map((n) => [n.name, n.addresses.filter(usableAddress)]));
  const anyStatic = [...out.values()].some((a) => a.length);
  if (g.type === "lxc") return { byNic: out, dns: containerDnsName(g.config) };
  if (anyStatic || g.status !== "running" || !agentEnabled(g.config)) {
    return { byNic: out, dns: null };
  }
  const agent = `/nodes/${g.node}/qemu/${g.vmid}/agent`;
  const [answer, host] = await Promise.all([
    ctx.hv.get<{ result?: AgentInterface[] }>(
      `${agent}/network-get-interfaces`,
      undefined,
      ctx.signal,
    ).catch(() => null), // no agent running is normal, not a failure
    ctx.hv.get<{ result?: { "host-name"?: string } }>(
      `${agent}/get-host-name`,
      undefined,
      ctx.signal,
    )
      .catch(() => null),
  ]);
  for (const a of answer?.result ?? []) {
    const mac = a["hardware-address"]?.toUpperCase();
    const nic = nics.find((n) => n.mac && n.mac === mac);
    if (!nic) continue;
    for (const ip of a["ip-addresses"] ?? []) {
      if (!ip["ip-address"]) continue;
      const cidr = `${ip["ip-address"]}/${ip.prefix ?? (isV6(ip["ip-address"]) ? 128 : 32)}`;
      if (usableAddress(cidr)) out.get(nic.name)!.push(cidr);
    }
  }
  return { byNic: out, dns: dnsName(host?.result?.["host-name"]) };
}

/** `10.0.0.5/24` → `10.0.0.5/24` with a canonical host part, for comparing with the inventory. */
function addressKey(address: string): string {
  return address.toLowerCase();
}

/**
 * Slice by slice of guests (guests.ts): one slice's interfaces, addresses and VMs are read,
 * written, and let go. Addresses are counted first (the agent's are known only when asked, so
 * the first progress frame counts the static ones and the last one all).
 */
export async function syncIpAddresses(ctx: StageContext): Promise<void> {
  const tags = await syncTags(ctx);
  const list = await guests(ctx);
  const anchors = await vmAnchors(ctx);
  ctx.progress(0, list.count, `IP addresses of ${list.count} guests`);
  // VMs of the guests later slices hold: an address one of them holds may move to a guest of
  // an earlier slice in this run, once that later slice gives it up (NetBox's unique IP space).
  const pending = new Set<number>();
  for (const vmid of list.vmids) if (anchors.has(vmid)) pending.add(anchors.get(vmid)!);
  const moves: Moves = { claimed: new Set(), released: new Map() };
  let total = 0;
  const later: Guest[] = [];
  // The ledger (docs/sync.md, "Re-runs: guests that did not change"): a guest whose addresses,
  // DNS name and VM would be written from the same as when it recorded them, untouched since,
  // is not read again (its agent is still asked: what it reports is part of the digest).
  const ledger = await readLog(ctx);
  const skip = ledger && {
    ledger,
    closing: new SliceLogReads(ctx),
    shape: {
      managed: [...tags.managed].sort((a, b) => a - b),
      synced: tags.synced,
      primary: ctx.options.primaryIpPreference,
    },
  };
  for (const slice of list.slices()) {
    ctx.signal.throwIfAborted();
    for (const g of slice) pending.delete(anchors.get(g.vmid)!);
    const done = await syncSlice(ctx, slice, anchors, tags, pending, moves, skip || undefined);
    total += done.count;
    later.push(...done.postponed);
  }
  if (skip) await skip.closing.settle();
  if (later.length) {
    // Their addresses were counted; what this pass writes counts, what it finds unchanged not.
    const unchanged = ctx.result.unchanged;
    await syncSlice(ctx, later, anchors, tags, null, moves);
    ctx.result.unchanged = unchanged;
    // Released for a move that did not happen (the guest wants it no more): gone, as orphans go.
    const left = new Map([...moves.released].map(([id, o]) => [String(id), o]));
    await deleteOrphans(ctx, PATHS.ips, left, []);
  }
  ctx.progress(total, total, `${total} IP addresses synced`);
}

/**
 * One slice: its interfaces' addresses, the VMs' primary IPs, the addresses gone. An address
 * held by a VM of `pending` is postponed with its guest (whose primary IPs wait too): the
 * guests returned are synced again after every slice (`pending` null: nothing postponed).
 */
async function syncSlice(
  ctx: StageContext,
  slice: Guest[],
  anchors: Map<number, number>,
  tags: Awaited<ReturnType<typeof syncTags>>,
  pending: ReadonlySet<number> | null,
  moves: Moves,
  skip?: Skip,
): Promise<{ count: number; postponed: Guest[] }> {
  if (!skip) return await compareSlice(ctx, slice, anchors, tags, pending, moves);
  const { ledger, shape } = skip;
  const mark = ledger.beginSlice();
  try {
    const all = slice.filter((g) => anchors.has(g.vmid));
    const found = await mapLimit(all, ctx.concurrency, ctx.signal, (g) => addressesOf(ctx, g));
    const digests = new Map<number, number>();
    const todo: Guest[] = [];
    const known = new Map<Guest, GuestAddresses>();
    let count = 0;
    all.forEach((g, i) => {
      const { byNic, dns } = found[i];
      const digest = digestOf([shape, anchors.get(g.vmid), [...byNic], dns]);
      if (ledger.unchanged(IP_STAGE, g.vmid, digest)) {
        // Its addresses, as a compare would have counted them (one per interface and value).
        let n = 0;
        for (const addresses of byNic.values()) n += new Set(addresses.map(addressKey)).size;
        ctx.result.unchanged += n;
        count += n;
      } else {
        todo.push(g);
        digests.set(g.vmid, digest);
        known.set(g, found[i]);
      }
    });
    if (!todo.length) return { count, postponed: [] };
    const failed = ctx.result.failed;
    const done = await compareSlice(ctx, todo, anchors, tags, pending, moves, known);
    for (const [vmid, objects] of done.objects) ledger.track(vmid, objects);
    const refused = ctx.result.failed !== failed; // compared again next run
    // Entries made since the slice's read (someone's edit meanwhile) forget their guest; read
    // while the next slice is written.
    await skip.closing.close(ledger, () => {
      if (refused) return;
      const postponed = new Set(done.postponed);
      for (const g of todo) {
        if (postponed.has(g) || !done.complete.has(g.vmid)) continue;
        ledger.record(IP_STAGE, g.vmid, digests.get(g.vmid)!, mark);
      }
    });
    return { count: count + done.count, postponed: done.postponed };
  } finally {
    ledger.endSlice();
  }
}

/** What the ledger takes to skip guests in this stage (none: every guest compared). */
interface Skip {
  ledger: SyncLedger;
  /** The slices' closing reads of the log (each goes on while the next slice is written). */
  closing: SliceLogReads;
  shape: unknown;
}

/**
 * One slice compared: `known` holds the guests' addresses when already asked (the ledger's
 * digests). Besides what `syncSlice` returns: each guest's objects (its VM, interfaces and
 * addresses) and the guests whose every interface with an address was there (a guest missing
 * one is not recorded: the address comes once vm-interfaces makes the interface).
 */
async function compareSlice(
  ctx: StageContext,
  slice: Guest[],
  anchors: Map<number, number>,
  tags: Awaited<ReturnType<typeof syncTags>>,
  pending: ReadonlySet<number> | null,
  moves: Moves,
  known?: Map<Guest, GuestAddresses>,
): Promise<
  {
    count: number;
    postponed: Guest[];
    objects: Map<number, [string, number][]>;
    complete: Set<number>;
  }
> {
  const present = slice.filter((g) => anchors.has(g.vmid));
  const parents = new Set(present.map((g) => anchors.get(g.vmid)!));
  // The slice's VMs (their primary IPs), its interfaces and what the guest agents report are
  // read at once: none depends on another, and the address writes below change no VM.
  const vmRead = vmsById(ctx, parents, onlyFields(PRIMARY_IP_FIELDS));
  vmRead.catch(() => {}); // awaited below; a failed read before then must not go unhandled
  const [ifaces, perGuest] = await Promise.all([
    sliceChildren(ctx, PATHS.vmInterfaces, parents, ANCHOR_FIELDS),
    mapLimit(
      present,
      ctx.concurrency,
      ctx.signal,
      (g) => known?.get(g) ? Promise.resolve(known.get(g)!) : addressesOf(ctx, g),
    ),
  ]);
  const objects = new Map<number, [string, number][]>();
  const complete = new Set<number>();
  const ifaceIds = new Set([...ifaces.values()].map((i) => i.id));
  const existing = await sliceAssigned(
    ctx,
    PATHS.ips,
    VM_IFACE,
    ifaceIds,
    IP_FIELDS,
    (ip) => addressKey(String(ip.address)),
    // An interface this run made has no addresses before this stage's first pass writes them;
    // the pass for postponed guests reads them all (the first pass wrote some).
    pending === null ? undefined : madeThisRun(ctx, PATHS.vmInterfaces),
  );
  const desired: Desired[] = [];
  const guestOf = new Map<string, Guest>();
  const postponed = new Set<Guest>();
  const seen = new Set<string>();
  const primaries = new Map<number, { v4: string | null; v6: string | null }>();
  present.forEach((g, i) => {
    const vm = anchors.get(g.vmid)!;
    const first = { v4: null as string | null, v6: null as string | null };
    const { byNic, dns } = perGuest[i];
    const held: [string, number][] = [[LEDGER_MODELS.vm, vm]];
    objects.set(g.vmid, held);
    let whole = true;
    for (const [name, addresses] of byNic) {
      const iface = ifaces.get(`${vm}:${name}`);
      if (!iface) {
        if (addresses.length) whole = false;
        continue; // run vm-interfaces first
      }
      held.push([LEDGER_MODELS.vmInterface, iface.id]);
      for (const address of addresses) {
        const key = `${iface.id}:${addressKey(address)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        guestOf.set(key, g);
        desired.push({
          key,
          label: `IP address ${address} of vmid ${g.vmid}`,
          body: {
            address,
            status: "active",
            // Written only when the hypervisor knows one: an admin's DNS name is kept otherwise.
            ...(dns ? { dns_name: dns } : {}),
            assigned_object_type: VM_IFACE,
            assigned_object_id: iface.id,
            tags: [tags.synced],
          },
        });
        if (isV6(address)) first.v6 ??= key;
        else first.v4 ??= key;
      }
    }
    primaries.set(vm, first);
    if (whole) complete.add(g.vmid);
  });
  const ips = await reconcile(ctx, {
    path: PATHS.ips,
    existing,
    desired,
    managedTags: tags.managed,
    orphan: "keep",
    answer: IP_FIELDS,
    resolveRefused: refusedBy(
      guestOf,
      complete,
      adoptOrReport(ctx, {
        path: PATHS.ips,
        field: "address",
        existing,
        wanted: new Set(desired.map((d) => d.key)),
        managedTags: tags.managed,
        syncedTag: tags.synced,
        released: pending === null ? new Set(moves.released.keys()) : undefined,
        postpone: pending === null ? undefined : (d, holder) => {
          const vm = refId(
            (holder.assigned_object as { virtual_machine?: unknown } | null)
              ?.virtual_machine,
          );
          if (vm === null || !pending.has(vm) || !hasTag(holder, tags.synced)) return false;
          postponed.add(guestOf.get(d.key)!);
          moves.claimed.add(hostOf(String(d.body.address)));
          return true;
        },
      }),
    ),
  });

  // Primary IPs on the VMs (before old addresses go: a primary IP cannot be deleted).
  const vmExisting = new Map<string, InventoryObject>();
  const vmDesired: Desired[] = [];
  const vms = await vmRead;
  for (const g of present) {
    const vm = vms.get(anchors.get(g.vmid)!);
    if (!vm || postponed.has(g)) continue;
    const first = primaries.get(vm.id)!;
    vmExisting.set(String(g.vmid), vm);
    vmDesired.push({
      key: String(g.vmid),
      label: `primary IPs of vmid ${g.vmid}`,
      body: primaryIps(
        ctx.options.primaryIpPreference,
        first.v4 ? ips.objects.get(first.v4)?.id ?? null : null,
        first.v6 ? ips.objects.get(first.v6)?.id ?? null : null,
      ),
    });
  }
  const before = { ...ctx.result };
  const made = createdThisRun(ctx);
  const changed = vmDesired.filter((d) => {
    const vm = vmExisting.get(d.key)!;
    return !made.has(vm.id) && changes(vm, d.body, undefined) !== null;
  }).length;
  await reconcile(ctx, {
    path: PATHS.vms,
    existing: vmExisting,
    desired: vmDesired,
    answer: PRIMARY_IP_FIELDS,
  });
  // VMs are counted by their own stage; here only real changes count, as updates, and a VM
  // this run created is only being completed (its address had to exist first).
  ctx.result.unchanged = before.unchanged;
  ctx.result.updated = before.updated + Math.min(changed, ctx.result.updated - before.updated);
  // An address a guest of an earlier slice claimed is kept to be moved there, not deleted.
  const wanted = new Set(desired.map((d) => d.key));
  for (const [key, ip] of existing) {
    if (wanted.has(key) || !moves.claimed.has(hostOf(String(ip.address)))) continue;
    existing.delete(key);
    moves.released.set(ip.id, ip);
  }
  for (const ip of ips.objects.values()) moves.released.delete(ip.id);
  await deleteOrphans(ctx, PATHS.ips, existing, desired);
  // Each guest's addresses (what its compare found or wrote): someone else's entry forgets it.
  for (const [key, ip] of ips.objects) {
    const g = guestOf.get(key);
    if (g) objects.get(g.vmid)?.push([LEDGER_MODELS.ip, ip.id]);
  }
  const ifaceGuest = new Map<number, number>();
  for (const [vmid, held] of objects) {
    for (const [model, id] of held) {
      if (model === LEDGER_MODELS.vmInterface) ifaceGuest.set(id, vmid);
    }
  }
  for (const [key, ip] of existing) {
    const vmid = ifaceGuest.get(Number(key.split(":")[0]));
    if (vmid !== undefined) objects.get(vmid)!.push([LEDGER_MODELS.ip, ip.id]);
  }
  return { count: desired.length, postponed: [...postponed], objects, complete };
}

/**
 * `resolve`, noting the guests of the addresses it did not write (a conflict reported, or a
 * refusal it could not resolve): the ledger records none of them, so each run tries again and
 * reports the conflict again, as a compare does.
 */
function refusedBy(
  guestOf: Map<string, Guest>,
  complete: Set<number>,
  resolve: ReturnType<typeof adoptOrReport>,
): ReturnType<typeof adoptOrReport> {
  return async (desired, answer) => {
    const resolved = await resolve(desired, answer);
    if (resolved === "conflict" || resolved === null) {
      const g = guestOf.get(desired.key);
      if (g) complete.delete(g.vmid);
    }
    return resolved;
  };
}

/** Addresses moving from a later slice to an earlier one (NetBox's unique IP space). */
interface Moves {
  /** Hosts of the addresses postponed for a holder in a later slice. */
  claimed: Set<string>;
  /** Addresses a later slice gave up that a postponed guest claimed, by id: moved, not deleted. */
  released: Map<number, InventoryObject>;
}

const hostOf = (address: string) => address.split("/")[0].toLowerCase();

function hasTag(o: InventoryObject, tag: number): boolean {
  return Array.isArray(o.tags) && o.tags.some((t) => refId(t) === tag);
}
