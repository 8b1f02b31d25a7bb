/**
 * Reading Proxmox VE answers: property strings (`virtio=BC:24:..,bridge=vmbr0,tag=10`), disk
 * keys and sizes, network keys, static addresses. Pure functions, no I/O.
 */

export type GuestType = "qemu" | "lxc";

export interface ClusterResource {
  vmid: number;
  name?: string;
  node: string;
  type: GuestType;
  status?: string;
  maxmem?: number;
  maxcpu?: number;
  maxdisk?: number;
  template?: number;
  tags?: string;
}

export type GuestConfig = Record<string, unknown>;

/** `a=1,b=2,plain` → {a:"1", b:"2", plain:""}; the first bare value lands under `""`. */
export function propertyString(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof value !== "string") return out;
  for (const part of value.split(",")) {
    const at = part.indexOf("=");
    if (at < 0) {
      if (!("" in out)) out[""] = part.trim();
      else out[part.trim()] = "";
    } else out[part.slice(0, at).trim()] = part.slice(at + 1).trim();
  }
  return out;
}

const UNITS: Record<string, number> = { K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 };

/** A Proxmox size (`32G`, `512M`, `1T`, bare bytes) in MB (MiB), as NetBox counts disk. */
export function sizeInMb(value: string | undefined): number {
  if (!value) return 0;
  const m = /^(\d+(?:\.\d+)?)([KMGT])?$/i.exec(value.trim());
  if (!m) return 0;
  const n = Number(m[1]);
  if (!m[2]) return Math.round(n / (1024 * 1024));
  return Math.round(n * UNITS[m[2].toUpperCase()]);
}

const QEMU_DISK = /^(ide|sata|scsi|virtio)\d+$|^(efidisk|tpmstate)\d+$/;
const LXC_DISK = /^(rootfs|mp\d+)$/;

export interface GuestDisk {
  name: string;
  sizeMb: number;
  volume: string;
  /** A CD-ROM drive: recorded as a size-0 disk (its volume is the ISO, or `none`). */
  cdrom?: boolean;
}

/** The guest's disks (CD-ROM drives as size-0 disks; no unused volumes), in key order. */
export function guestDisks(type: GuestType, config: GuestConfig): GuestDisk[] {
  const out: GuestDisk[] = [];
  const pattern = type === "qemu" ? QEMU_DISK : LXC_DISK;
  const keys = Object.keys(config).filter((k) => pattern.test(k)).sort(naturalOrder);
  // A container's root disk first, then its mount points.
  keys.sort((a, b) => Number(b === "rootfs") - Number(a === "rootfs"));
  for (const key of keys) {
    const props = propertyString(config[key]);
    const volume = props[""] ?? props.volume ?? "";
    if (props.media === "cdrom" || volume === "cdrom") {
      out.push({ name: key, sizeMb: 0, volume, cdrom: true });
      continue;
    }
    if (volume === "none") continue;
    out.push({ name: key, sizeMb: sizeInMb(props.size), volume });
  }
  return out;
}

const QEMU_NIC_MODELS = new Set([
  "virtio",
  "e1000",
  "e1000e",
  "rtl8139",
  "vmxnet3",
  "i82551",
  "i82557b",
  "i82559er",
  "ne2k_isa",
  "ne2k_pci",
  "pcnet",
  "e1000-82540em",
  "e1000-82544gc",
  "e1000-82545em",
]);

export interface GuestNic {
  /** netN */
  key: string;
  /**
   * The inventory interface name: always the Proxmox key (`net0`), for QEMU and LXC alike. The
   * key is what the hypervisor identifies the NIC by; a container's `name=` (`eth0`) is what the
   * guest calls it and may be changed inside the config without it being another NIC.
   */
  name: string;
  /** The guest-side name (LXC `name=`), or null. */
  guestName: string | null;
  mac: string | null;
  bridge: string | null;
  vlan: number | null;
  /** Static addresses from the config (LXC `ip=`/`ip6=`, QEMU `ipconfigN`), CIDR form. */
  addresses: string[];
}

/** `net2` before `net10`: letters, then the trailing number (localeCompare is far slower). */
export function naturalOrder(a: string, b: string): number {
  const ma = /^(.*?)(\d*)$/.exec(a)!;
  const mb = /^(.*?)(\d*)$/.exec(b)!;
  if (ma[1] !== mb[1]) return ma[1] < mb[1] ? -1 : 1;
  return (Number(ma[2]) || 0) - (Number(mb[2]) || 0);
}

function staticAddress(value: string | undefined): string | null {
  if (!value || value === "dhcp" || value === "auto" || value === "manual") return null;
  return value.includes("/") ? value : null;
}

export function guestNics(type: GuestType, config: GuestConfig): GuestNic[] {
  const out: GuestNic[] = [];
  for (const key of Object.keys(config).filter((k) => /^net\d+$/.test(k)).sort(naturalOrder)) {
    const props = propertyString(config[key]);
    let mac: string | null = props.hwaddr ?? props.macaddr ?? null;
    if (type === "qemu" && !mac) {
      for (const [k, v] of Object.entries(props)) {
        if (QEMU_NIC_MODELS.has(k) && v) mac = v;
      }
    }
    const addresses: string[] = [];
    const ipProps = type === "lxc" ? props : propertyString(config[`ipconfig${key.slice(3)}`]);
    for (const v of [ipProps.ip, ipProps.ip6]) {
      const a = staticAddress(v);
      if (a) addresses.push(a);
    }
    const vlan = props.tag ? Number(props.tag) : null;
    out.push({
      key,
      name: key,
      guestName: type === "lxc" && props.name ? props.name : null,
      mac: mac ? mac.toUpperCase() : null,
      bridge: props.bridge ?? null,
      vlan: vlan !== null && Number.isInteger(vlan) && vlan >= 1 && vlan <= 4094 ? vlan : null,
      addresses,
    });
  }
  return out;
}

/** Guest tags: Proxmox separates them with `;` (also `,` and spaces in older versions). */
export function guestTags(config: GuestConfig): string[] {
  const raw = typeof config.tags === "string" ? config.tags : "";
  return [...new Set(raw.split(/[;, ]+/).map((t) => t.trim()).filter(Boolean))].sort();
}

/** vCPUs as NetBox counts them: cores × sockets (QEMU), cores (LXC; unlimited → the node's). */
export function guestVcpus(type: GuestType, config: GuestConfig, fallback?: number): number | null {
  const cores = Number(config.cores ?? (type === "qemu" ? 1 : fallback ?? 0));
  const sockets = type === "qemu" ? Number(config.sockets ?? 1) : 1;
  const total = cores * sockets;
  if (Number.isFinite(total) && total > 0) {
    const vcpus = Number(config.vcpus);
    return type === "qemu" && Number.isFinite(vcpus) && vcpus > 0 ? vcpus : total;
  }
  return fallback && fallback > 0 ? fallback : null;
}

export function guestMemoryMb(config: GuestConfig, maxmem?: number): number | null {
  const mem = Number(config.memory);
  if (Number.isFinite(mem) && mem > 0) return Math.round(mem);
  return maxmem ? Math.round(maxmem / (1024 * 1024)) : null;
}

/** Lowercase slug as NetBox wants it (letters, digits, -, _). */
export function slugify(text: string): string {
  const slug = text.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "");
  return (slug || "x").slice(0, 100);
}

/** A stable short digest of a config (key order does not matter). */
export async function configDigest(config: GuestConfig): Promise<string> {
  const sorted = Object.keys(config).sort().map((k) => [k, config[k]]);
  const bytes = new TextEncoder().encode(JSON.stringify(sorted));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(hash.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** NetBox's rule for `dns_name`: labels of letters, digits, `-` and `_`, dot-separated. */
const DNS_NAME = /^([0-9A-Za-z_-]+|\*)(\.[0-9A-Za-z_-]+)*\.?$/;

/** A DNS name as NetBox accepts it, or null (too long, or characters it refuses). */
export function dnsName(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const name = value.trim().toLowerCase();
  return name && name.length <= 255 && DNS_NAME.test(name) ? name : null;
}

/** A container's DNS name: `hostname`, with `searchdomain` when the hostname has no dot. */
export function containerDnsName(config: GuestConfig): string | null {
  const host = typeof config.hostname === "string" ? config.hostname.trim() : "";
  const domain = typeof config.searchdomain === "string"
    ? config.searchdomain.trim().split(/[\s,;]+/)[0]
    : "";
  if (!host) return null;
  return dnsName(host.includes(".") || !domain ? host : `${host}.${domain}`);
}

export function epochToIso(seconds: unknown): string | null {
  const n = Number(seconds);
  return Number.isFinite(n) && n > 0 ? new Date(n * 1000).toISOString() : null;
}
