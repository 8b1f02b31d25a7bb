/** Storage: the cluster's storage config, per-node status, content volumes and uploads. */
import { fieldError, missing } from "../errors.ts";
import {
  type ConfigValue,
  type MockState,
  storageOnNode,
  type StorageState,
  storageUsed,
  volumesOn,
} from "../state.ts";
import {
  digestOf,
  failThrow,
  GiB,
  type HandlerContext,
  type HandlerTable,
  startTask,
} from "./context.ts";

export function storageEntry(_state: MockState, id: string, s: StorageState, node: string) {
  const used = storageUsed(s, node);
  return {
    storage: id,
    type: String(s.config.type),
    content: String(s.config.content ?? ""),
    shared: Number(s.config.shared ?? 0),
    active: 1,
    enabled: s.config.disable === 1 ? 0 : 1,
    total: s.total,
    used,
    avail: Math.max(0, s.total - used),
    used_fraction: s.total ? Math.round((used / s.total) * 10000) / 10000 : 0,
  };
}

function storageConfigList(ctx: HandlerContext): unknown[] {
  const out: unknown[] = [];
  for (const [id, s] of ctx.state.storages) {
    if (ctx.values.type !== undefined && s.config.type !== ctx.values.type) continue;
    out.push({ ...s.config, storage: id, digest: digestOf(s.config) });
  }
  return out;
}

function storageCreate(ctx: HandlerContext) {
  const id = String(ctx.values.storage);
  if (ctx.state.storages.has(id)) {
    throw fieldError("storage", `storage ID '${id}' already defined`);
  }
  const config: Record<string, ConfigValue> = {};
  for (const [k, v] of Object.entries(ctx.values)) {
    if (k === "password" || k === "encryption-key" || k === "keyring") continue;
    config[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
  }
  config.content ??= config.type === "dir" ? "images,rootdir,iso,vztmpl,backup" : "images,rootdir";
  config.shared ??= ["nfs", "cifs", "cephfs", "rbd", "pbs", "iscsi"].includes(String(config.type))
    ? 1
    : 0;
  ctx.state.storages.set(id, { config, total: 1024 * GiB, volumes: new Map() });
  return { storage: id, type: String(config.type) };
}

function storageGet(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  return { ...s.config, digest: digestOf(s.config) };
}

function storageUpdate(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  for (const [k, v] of Object.entries(ctx.values)) {
    if (["storage", "digest", "delete", "password", "encryption-key", "keyring"].includes(k)) {
      continue;
    }
    s.config[k] = typeof v === "number" || typeof v === "string" ? v : String(v);
  }
  if (typeof ctx.values.delete === "string") {
    for (const k of ctx.values.delete.split(/[,;\s]+/).filter(Boolean)) delete s.config[k];
  }
  return { storage: String(ctx.values.storage), type: String(s.config.type) };
}

function storageDelete(ctx: HandlerContext) {
  ctx.state.storages.delete(String(ctx.values.storage));
  return null;
}

function nodeStorageList(ctx: HandlerContext): unknown[] {
  const node = String(ctx.values.node);
  const out: unknown[] = [];
  for (const [id, s] of ctx.state.storages) {
    if (!storageOnNode(s, node)) continue;
    if (ctx.values.storage !== undefined && id !== ctx.values.storage) continue;
    if (ctx.values.enabled === 1 && s.config.disable === 1) continue;
    if (typeof ctx.values.content === "string") {
      const have = String(s.config.content).split(",");
      if (!ctx.values.content.split(",").every((c) => have.includes(c))) continue;
    }
    out.push(storageEntry(ctx.state, id, s, node));
  }
  return out;
}

function nodeStorageStatus(ctx: HandlerContext) {
  const id = String(ctx.values.storage);
  return storageEntry(ctx.state, id, ctx.state.storages.get(id)!, String(ctx.values.node));
}

function volumeId(ctx: HandlerContext): string {
  const v = String(ctx.values.volume);
  return v.includes(":") ? v : `${ctx.values.storage}:${v}`;
}

function contentList(ctx: HandlerContext): unknown[] {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const out: unknown[] = [];
  for (const v of volumesOn(s, String(ctx.values.node))) {
    if (ctx.values.content !== undefined && v.content !== ctx.values.content) continue;
    if (ctx.values.vmid !== undefined && v.vmid !== ctx.values.vmid) continue;
    const e: Record<string, unknown> = {
      volid: v.volid,
      content: v.content,
      format: v.format,
      size: v.size,
      ctime: v.ctime,
    };
    if (v.vmid !== undefined) e.vmid = v.vmid;
    if (v.notes !== undefined) e.notes = v.notes;
    if (v.protected !== undefined) e.protected = v.protected;
    if (v.subtype !== undefined) e.subtype = v.subtype;
    if (v.content === "images" || v.content === "rootdir") e.used = Math.round(v.size * 0.4);
    out.push(e);
  }
  return out;
}

function findVolume(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const list = volumesOn(s, String(ctx.values.node));
  const volid = volumeId(ctx);
  const v = list.find((x) => x.volid === volid);
  if (!v) throw missing(`volume '${volid}' does not exist`);
  return { s, list, v };
}

function contentGet(ctx: HandlerContext) {
  const { v } = findVolume(ctx);
  return {
    path: `/var/lib/vz/${v.volid.split(":")[1]}`,
    size: v.size,
    used: Math.round(v.size * 0.4),
    format: v.format,
    notes: v.notes ?? "",
    protected: v.protected ?? 0,
  };
}

function contentUpdate(ctx: HandlerContext) {
  const { v } = findVolume(ctx);
  if (ctx.values.notes !== undefined) v.notes = String(ctx.values.notes);
  if (ctx.values.protected !== undefined) v.protected = ctx.values.protected === 1 ? 1 : 0;
  return null;
}

function contentDelete(ctx: HandlerContext) {
  const { s, v } = findVolume(ctx);
  if (v.protected === 1) failThrow(`volume '${v.volid}' is protected`);
  const key = s.config.shared ? "" : String(ctx.values.node);
  s.volumes.set(key, volumesOn(s, String(ctx.values.node)).filter((x) => x !== v));
  return startTask(ctx, {
    node: String(ctx.values.node),
    type: "imgdel",
    id: v.volid,
    log: [`delete ${v.volid}`],
  });
}

function contentAlloc(ctx: HandlerContext) {
  const s = ctx.state.storages.get(String(ctx.values.storage))!;
  const filename = String(ctx.values.filename);
  const volid = `${ctx.values.storage}:${filename}`;
  const list = volumesOn(s, String(ctx.values.node));
  if (list.some((v) => v.volid === volid)) {
    throw fieldError("filename", `volume '${volid}' already exists`);
  }
  const m = /^(\d+)([KMG]?)$/.exec(String(ctx.values.size));
  const mult = m ? ({ "": 1024, K: 1024, M: 1024 ** 2, G: GiB }[m[2]] ?? 1) : 1024;
  list.push({
    volid,
    content: "images",
    format: String(ctx.values.format ?? "raw"),
    size: m ? Number(m[1]) * mult : 0,
    ctime: ctx.nowS,
    vmid: Number(ctx.values.vmid),
  });
  return volid;
}

/** File name rules of `pvesm upload` per content type. */
const UPLOAD_NAMES: Record<string, { re: RegExp; format: (name: string) => string }> = {
  iso: { re: /\.(iso|img)$/i, format: () => "iso" },
  vztmpl: {
    re: /\.tar\.(gz|xz|zst|bz2)$/i,
    format: (n) => `t${/\.tar\.(\w+)$/i.exec(n)![1].toLowerCase()}`,
  },
  import: {
    re: /\.(ova|ovf|qcow2|raw|vmdk|img)$/i,
    format: (n) => /\.(\w+)$/.exec(n)![1].toLowerCase(),
  },
};

/** POST /nodes/{node}/storage/{storage}/upload: the file lands as `<storage>:<content>/<name>`. */
function upload(ctx: HandlerContext) {
  const storageId = String(ctx.values.storage);
  const s = ctx.state.storages.get(storageId)!;
  const content = String(ctx.values.content);
  if (!String(s.config.content ?? "").split(",").includes(content)) {
    throw fieldError(
      "content",
      `storage '${storageId}' does not support content type '${content}'`,
    );
  }
  // Proxmox normalises the name (anything unusual becomes `_`).
  const name = String(ctx.values.filename).split(/[\\/]/).pop()!.replace(/[^\w.+-]/g, "_");
  const rule = UPLOAD_NAMES[content];
  if (!name || (rule && !rule.re.test(name))) {
    throw fieldError("filename", `wrong file extension for content type '${content}'`);
  }
  const volid = `${storageId}:${content}/${name}`;
  const node = String(ctx.values.node);
  const list = volumesOn(s, node);
  if (list.some((v) => v.volid === volid)) {
    throw fieldError("filename", `volume '${volid}' already exists`);
  }
  const size = ctx.files.filename?.size ?? 0;
  return startTask(ctx, {
    node,
    type: "imgcopy",
    id: "",
    log: [`starting file import from: /var/tmp/pveupload-${name}`, `target file: ${volid}`],
    effect: () => {
      const now = volumesOn(s, node);
      if (now.some((v) => v.volid === volid)) return;
      now.push({
        volid,
        content,
        format: rule ? rule.format(name) : "raw",
        size,
        ctime: Math.floor(ctx.clock() / 1000),
      });
    },
  });
}

export const storageHandlers: HandlerTable = {
  "GET /storage": storageConfigList,
  "POST /storage": storageCreate,
  "GET /storage/{storage}": storageGet,
  "PUT /storage/{storage}": storageUpdate,
  "DELETE /storage/{storage}": storageDelete,
  "GET /nodes/{node}/storage": nodeStorageList,
  "GET /nodes/{node}/storage/{storage}/status": nodeStorageStatus,
  "GET /nodes/{node}/storage/{storage}/content": contentList,
  "POST /nodes/{node}/storage/{storage}/content": contentAlloc,
  "GET /nodes/{node}/storage/{storage}/content/{volume}": contentGet,
  "PUT /nodes/{node}/storage/{storage}/content/{volume}": contentUpdate,
  "DELETE /nodes/{node}/storage/{storage}/content/{volume}": contentDelete,
  "POST /nodes/{node}/storage/{storage}/upload": upload,
};
