/** Cluster-wide views: `/version`, `/cluster/status`, `/cluster/resources`, `/cluster/nextid`. */
import { fieldError } from "../errors.ts";
import { storageOnNode } from "../state.ts";
import { type HandlerContext, type HandlerTable } from "./context.ts";
import { listEntry } from "./guests.ts";
import { nodeEntry } from "./nodes.ts";
import { storageEntry } from "./storage.ts";

function clusterStatus(ctx: HandlerContext): unknown[] {
  const nodes = [...ctx.state.nodes.values()];
  const online = nodes.filter((n) => n.status === "online").length;
  const out: unknown[] = [{
    type: "cluster",
    id: "cluster",
    name: ctx.state.clusterName,
    nodes: nodes.length,
    quorate: online * 2 > nodes.length ? 1 : 0,
    version: nodes.length + 2,
  }];
  nodes.forEach((n, i) =>
    out.push({
      type: "node",
      id: `node/${n.node}`,
      name: n.node,
      nodeid: n.nodeid,
      ip: n.ip,
      online: n.status === "online" ? 1 : 0,
      local: i === 0 ? 1 : 0,
      level: "",
    })
  );
  return out;
}

function clusterResources(ctx: HandlerContext): unknown[] {
  const type = ctx.values.type as string | undefined;
  const out: unknown[] = [];
  const state = ctx.state;
  if (!type || type === "node") {
    for (const node of state.nodes.keys()) out.push(nodeEntry(state, node, ctx.nowS));
  }
  if (!type || type === "vm") {
    for (const g of state.guests.values()) {
      const e = listEntry(g, ctx.nowS, state);
      out.push({
        id: `${g.type}/${g.vmid}`,
        type: g.type,
        vmid: g.vmid,
        name: e.name,
        node: g.node,
        status: g.status,
        cpu: e.cpu,
        maxcpu: e.maxcpu,
        mem: e.mem,
        maxmem: e.maxmem,
        disk: e.disk,
        maxdisk: e.maxdisk,
        uptime: e.uptime,
        netin: e.netin,
        netout: e.netout,
        diskread: e.diskread,
        diskwrite: e.diskwrite,
        template: e.template,
        hastate: undefined,
        ...(e.tags ? { tags: e.tags } : {}),
        ...(e.pool ? { pool: e.pool } : {}),
        ...(e.lock ? { lock: e.lock } : {}),
      });
      delete (out[out.length - 1] as Record<string, unknown>).hastate;
    }
  }
  if (!type || type === "storage") {
    for (const node of state.nodes.keys()) {
      for (const [id, s] of state.storages) {
        if (!storageOnNode(s, node)) continue;
        const e = storageEntry(state, id, s, node);
        out.push({
          id: `storage/${node}/${id}`,
          type: "storage",
          storage: id,
          node,
          status: "available",
          plugintype: e.type,
          content: e.content,
          shared: e.shared,
          disk: e.used,
          maxdisk: e.total,
        });
      }
    }
  }
  if (!type || type === "sdn") {
    for (const node of state.nodes.keys()) {
      for (const zone of state.collections.get("/cluster/sdn/zones")?.keys() ?? []) {
        out.push({ id: `sdn/${node}/${zone}`, type: "sdn", sdn: zone, zone, node, status: "ok" });
      }
    }
  }
  if (!type || type === "pool") {
    for (const p of state.pools.values()) {
      out.push({ id: `/pool/${p.poolid}`, type: "pool", pool: p.poolid, comment: p.comment ?? "" });
    }
  }
  return out;
}

function nextId(ctx: HandlerContext): number {
  if (ctx.values.vmid !== undefined) {
    const vmid = Number(ctx.values.vmid);
    if (ctx.state.guests.has(vmid)) throw fieldError("vmid", `VM ${vmid} already exists`);
    return vmid;
  }
  let id = 100;
  while (ctx.state.guests.has(id)) id++;
  return id;
}

export const clusterHandlers: HandlerTable = {
  "GET /version": (ctx) => ({ ...ctx.versionInfo, console: "xtermjs" }),
  "GET /cluster/status": clusterStatus,
  "GET /cluster/resources": clusterResources,
  "GET /cluster/nextid": nextId,
};
