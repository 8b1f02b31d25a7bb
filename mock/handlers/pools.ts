/** Resource pools: `/pools` and `/pools/{poolid}`, with their members. */
import { fieldError, missing } from "../errors.ts";
import { type MockState } from "../state.ts";
import { failThrow, type HandlerContext, type HandlerTable } from "./context.ts";
import { listEntry } from "./guests.ts";

function poolMembers(state: MockState, poolid: string, type: unknown, nowS: number) {
  const members: unknown[] = [];
  if (type === undefined || type === "qemu" || type === "lxc") {
    for (const [vmid, p] of state.poolOf) {
      if (p !== poolid) continue;
      const g = state.guests.get(vmid);
      if (!g || (type !== undefined && g.type !== type)) continue;
      const e = listEntry(g, nowS, state);
      members.push({
        id: `${g.type}/${vmid}`,
        type: g.type,
        vmid,
        node: g.node,
        name: e.name,
        status: g.status,
        maxmem: e.maxmem,
        maxcpu: e.maxcpu,
      });
    }
  }
  if (type === undefined || type === "storage") {
    for (const id of state.pools.get(poolid)!.storage) {
      for (const node of state.nodes.keys()) {
        members.push({ id: `storage/${node}/${id}`, type: "storage", storage: id, node });
      }
    }
  }
  return members;
}

function poolsList(ctx: HandlerContext) {
  const out: unknown[] = [];
  for (const p of ctx.state.pools.values()) {
    if (ctx.values.poolid !== undefined && p.poolid !== ctx.values.poolid) continue;
    const e: Record<string, unknown> = { poolid: p.poolid };
    if (p.comment) e.comment = p.comment;
    if (ctx.values.poolid !== undefined) {
      e.members = poolMembers(ctx.state, p.poolid, ctx.values.type, ctx.nowS);
    }
    out.push(e);
  }
  if (ctx.values.poolid !== undefined && !out.length) {
    throw missing(`pool '${ctx.values.poolid}' does not exist`);
  }
  return out;
}

function poolCreate(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  if (ctx.state.pools.has(poolid)) throw fieldError("poolid", `pool '${poolid}' already exists`);
  ctx.state.pools.set(poolid, {
    poolid,
    comment: ctx.values.comment as string | undefined,
    storage: new Set(),
  });
  return null;
}

function poolGet(ctx: HandlerContext) {
  const p = ctx.state.pools.get(String(ctx.values.poolid))!;
  return {
    comment: p.comment ?? "",
    members: poolMembers(ctx.state, p.poolid, ctx.values.type, ctx.nowS),
  };
}

function poolUpdate(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  const p = ctx.state.pools.get(poolid);
  if (!p) throw missing(`pool '${poolid}' does not exist`);
  if (ctx.values.comment !== undefined) p.comment = String(ctx.values.comment);
  const remove = ctx.values.delete === 1;
  if (ctx.values.vms !== undefined) {
    const ids = String(ctx.values.vms).split(/[,;\s]+/).filter(Boolean).map(Number);
    for (const id of ids) {
      if (!ctx.state.guests.has(id)) throw fieldError("vms", `VM ${id} does not exist`);
      const current = ctx.state.poolOf.get(id);
      if (remove) {
        if (current === poolid) ctx.state.poolOf.delete(id);
      } else {
        if (current && current !== poolid && ctx.values["allow-move"] !== 1) {
          throw fieldError("vms", `VM ${id} is already a pool member of '${current}'`);
        }
        ctx.state.poolOf.set(id, poolid);
      }
    }
  }
  if (ctx.values.storage !== undefined) {
    for (const id of String(ctx.values.storage).split(/[,;\s]+/).filter(Boolean)) {
      if (!ctx.state.storages.has(id)) {
        throw fieldError("storage", `storage '${id}' does not exist`);
      }
      if (remove) p.storage.delete(id);
      else p.storage.add(id);
    }
  }
  return null;
}

function poolDelete(ctx: HandlerContext) {
  const poolid = String(ctx.values.poolid);
  const p = ctx.state.pools.get(poolid);
  if (!p) throw missing(`pool '${poolid}' does not exist`);
  if (p.storage.size || [...ctx.state.poolOf.values()].includes(poolid)) {
    failThrow("pool is not empty");
  }
  ctx.state.pools.delete(poolid);
  return null;
}

export const poolHandlers: HandlerTable = {
  "GET /pools": poolsList,
  "POST /pools": poolCreate,
  "PUT /pools": poolUpdate,
  "DELETE /pools": poolDelete,
  "GET /pools/{poolid}": poolGet,
  "PUT /pools/{poolid}": poolUpdate,
  "DELETE /pools/{poolid}": poolDelete,
};
