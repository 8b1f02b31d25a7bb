/**
 * What Proxmox allocates when a guest gains a NIC or a disk: a MAC address in its `BC:24:11`
 * prefix (and, for containers, `type=veth`), and the next free `vm-<vmid>-disk-<n>` volume on
 * the storage a `storage:size` spec names.
 */
import { fieldError } from "../errors.ts";
import { macFor } from "../seed.ts";
import { type ConfigValue, type GuestType, type MockState, volumesOn } from "../state.ts";
import { GiB } from "./context.ts";

/** QEMU NIC models (the default key of `net<n>`). */
export const QEMU_NIC_MODELS = [
  "e1000",
  "e1000-82540em",
  "e1000-82544gc",
  "e1000-82545em",
  "e1000e",
  "i82551",
  "i82557b",
  "i82559er",
  "ne2k_isa",
  "ne2k_pci",
  "pcnet",
  "rtl8139",
  "virtio",
  "vmxnet3",
];

const MAC = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i;

/**
 * A `net<n>` value with Proxmox's defaults filled in: `virtio,bridge=vmbr0` →
 * `virtio=BC:24:11:..,bridge=vmbr0`; a container's `name=eth0,bridge=vmbr0` gains `hwaddr=`
 * and `type=veth`. A QEMU NIC without a model, or with a malformed MAC, is refused.
 */
export function withNicDefaults(
  type: GuestType,
  vmid: number,
  key: string,
  value: string,
): string {
  const index = Number(key.slice(3));
  const parts = value.split(",").filter((p) => p !== "");
  if (type === "qemu") {
    const at = parts.findIndex((p) => {
      const [k] = p.split("=");
      return QEMU_NIC_MODELS.includes(k) || k === "model" || k === "macaddr";
    });
    const model = parts.find((p) => QEMU_NIC_MODELS.includes(p.split("=")[0]));
    const named = parts.find((p) => p.startsWith("model="));
    if (at < 0 || (!model && !named)) {
      throw fieldError(key, "property is missing and it is not optional");
    }
    if (named && !QEMU_NIC_MODELS.includes(named.slice(6))) {
      throw fieldError(
        key,
        `invalid format - value '${named.slice(6)}' does not have a value in the enumeration '${
          QEMU_NIC_MODELS.join(", ")
        }'`,
      );
    }
    if (model) {
      const [m, mac] = model.split("=");
      if (mac !== undefined && mac !== "" && !MAC.test(mac)) {
        throw fieldError(key, `invalid format - value does not look like a valid MAC address`);
      }
      if (!mac) parts[parts.indexOf(model)] = `${m}=${macFor(vmid, index)}`;
    } else if (!parts.some((p) => p.startsWith("macaddr="))) {
      parts.push(`macaddr=${macFor(vmid, index)}`);
    }
    return parts.join(",");
  }
  const has = (k: string) => parts.some((p) => p.startsWith(`${k}=`));
  if (!has("name")) throw fieldError(key, "property is missing and it is not optional");
  const hw = parts.find((p) => p.startsWith("hwaddr="));
  if (hw && !MAC.test(hw.slice(7))) {
    throw fieldError(key, "invalid format - value does not look like a valid MAC address");
  }
  if (!hw) parts.push(`hwaddr=${macFor(vmid, index)}`);
  if (!has("type")) parts.push("type=veth");
  return parts.join(",");
}

/** Fill in every `net<n>` of a config (create, or the keys an update sets). */
export function fillNicDefaults(
  type: GuestType,
  vmid: number,
  config: Record<string, ConfigValue>,
  keys: Iterable<string> = Object.keys(config),
): void {
  for (const k of keys) {
    const v = config[k];
    if (/^net\d+$/.test(k) && typeof v === "string") config[k] = withNicDefaults(type, vmid, k, v);
  }
}

/** The first `vm-<vmid>-disk-<n>` not on the storage (nor handed out in this request). */
function freeDiskName(volids: Set<string>, storage: string, vmid: number): string {
  for (let n = 0;; n++) {
    const name = `vm-${vmid}-disk-${n}`;
    if (!volids.has(`${storage}:${name}`)) return name;
  }
}

/**
 * Turn `storage:size` disk specs into new volumes, as Proxmox allocates them: each gets the
 * next free `vm-<vmid>-disk-<n>` on its storage, so `scsi1` never reuses `scsi0`'s volume.
 */
export function allocateDisks(
  state: MockState,
  node: string,
  vmid: number,
  config: Record<string, ConfigValue>,
  keys: RegExp,
): void {
  for (const [key, value] of Object.entries(config)) {
    if (!keys.test(key) || typeof value !== "string") continue;
    const m = /^([a-z][a-z0-9\-_.]*):(\d+(?:\.\d+)?)(,.*)?$/i.exec(value);
    if (!m) continue;
    const storage = state.storages.get(m[1]);
    if (!storage) throw fieldError(key, `storage '${m[1]}' does not exist`);
    if (Number(m[2]) <= 0) throw fieldError(key, `invalid size '${m[2]}'`);
    const content = key === "rootfs" || key.startsWith("mp") ? "rootdir" : "images";
    if (!String(storage.config.content ?? "").split(",").includes(content)) {
      throw fieldError(key, `storage '${m[1]}' does not support content-type '${content}'`);
    }
    const volumes = volumesOn(storage, node);
    const taken = new Set(volumes.map((v) => v.volid));
    // Volumes the config already names count as taken even if the storage lost them.
    for (const v of Object.values(config)) {
      if (typeof v === "string") taken.add(v.split(",")[0]);
    }
    const name = freeDiskName(taken, m[1], vmid);
    volumes.push({
      volid: `${m[1]}:${name}`,
      content,
      format: "raw",
      size: Math.round(Number(m[2]) * GiB),
      ctime: 0,
      vmid,
    });
    const size = Number.isInteger(Number(m[2]))
      ? `${m[2]}G`
      : `${Math.round(Number(m[2]) * 1024)}M`;
    config[key] = `${m[1]}:${name}${m[3] ?? ""},size=${size}`;
  }
}
