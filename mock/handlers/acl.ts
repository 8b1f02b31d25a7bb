/** ACL handlers: `GET`/`PUT /access/acl` over the mock's ACL collection. */
import { fieldError } from "../errors.ts";
import { collection } from "../state.ts";
import { type HandlerContext, type HandlerTable } from "./context.ts";

const ACL_KEY = "/access/acl";

function aclList(ctx: HandlerContext): unknown[] {
  return [...(ctx.state.collections.get(ACL_KEY)?.values() ?? [])].map((r) => ({ ...r }));
}

function aclUpdate(ctx: HandlerContext): null {
  const acl = collection(ctx.state, ACL_KEY);
  const path = String(ctx.values.path);
  const roles = String(ctx.values.roles).split(/[,;\s]+/).filter(Boolean);
  const who: Array<["user" | "group" | "token", string]> = [];
  const split = (v: unknown) => String(v ?? "").split(/[,;\s]+/).filter(Boolean);
  for (const u of split(ctx.values.users)) {
    if (!ctx.state.users.has(u)) throw fieldError("users", `user '${u}' does not exist`);
    who.push(["user", u]);
  }
  for (const g of split(ctx.values.groups)) {
    if (!ctx.state.collections.get("/access/groups")?.has(g)) {
      throw fieldError("groups", `group '${g}' does not exist`);
    }
    who.push(["group", g]);
  }
  for (const t of split(ctx.values.tokens)) who.push(["token", t]);
  if (!who.length) throw fieldError("users", "no user, group or token given");
  const known = ctx.state.collections.get("/access/roles");
  for (const roleid of roles) {
    if (known && !known.has(roleid)) throw fieldError("roles", `role '${roleid}' does not exist`);
    for (const [type, ugid] of who) {
      const key = `${path}|${type}|${ugid}|${roleid}`;
      if (ctx.values.delete === 1) acl.delete(key);
      else {acl.set(key, {
          path,
          type,
          ugid,
          roleid,
          propagate: ctx.values.propagate === 0 ? 0 : 1,
        });}
    }
  }
  return null;
}

export const aclHandlers: HandlerTable = {
  "GET /access/acl": aclList,
  "PUT /access/acl": aclUpdate,
};
