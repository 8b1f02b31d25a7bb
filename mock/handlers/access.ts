/** Access handlers: login tickets, users, API tokens and password changes (`/access/...`). */
import { AuthError, checkLogin, newTokenSecret } from "../auth.ts";
import { fieldError, MockError } from "../errors.ts";
import { collection, type MockState } from "../state.ts";
import { type HandlerContext, type HandlerTable } from "./context.ts";

function login(ctx: HandlerContext) {
  try {
    const userid = checkLogin(
      ctx.state,
      ctx.sessions,
      String(ctx.values.username),
      String(ctx.values.password),
      ctx.values.realm as string | undefined,
      ctx.nowS,
    );
    return { ...ctx.sessions.issue(userid), clustername: ctx.state.clusterName };
  } catch (err) {
    if (err instanceof AuthError) throw new MockError(401, err.message);
    throw err;
  }
}

function userEntry(state: MockState, userid: string, full: boolean) {
  const u = state.users.get(userid)!;
  const e: Record<string, unknown> = {
    userid,
    enable: u.enable,
    expire: u.expire,
    "realm-type": userid.split("@")[1] ?? "pve",
  };
  for (const k of ["firstname", "lastname", "email", "comment"] as const) {
    if (u[k] !== undefined) e[k] = u[k];
  }
  if (u.groups.length) e.groups = full ? u.groups : u.groups.join(",");
  if (full) {
    e.tokens = [...u.tokens.values()].map((t) => ({
      tokenid: t.tokenid,
      privsep: t.privsep,
      expire: t.expire,
      ...(t.comment ? { comment: t.comment } : {}),
    }));
  }
  return e;
}

function usersList(ctx: HandlerContext) {
  const out: unknown[] = [];
  for (const [id, u] of ctx.state.users) {
    if (ctx.values.enabled === 1 && u.enable !== 1) continue;
    out.push(userEntry(ctx.state, id, ctx.values.full === 1));
  }
  return out;
}

function userCreate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  if (ctx.state.users.has(userid)) throw fieldError("userid", `user '${userid}' already exists`);
  ctx.state.users.set(userid, {
    userid,
    password: ctx.values.password as string | undefined,
    enable: ctx.values.enable === 0 ? 0 : 1,
    expire: Number(ctx.values.expire ?? 0),
    firstname: ctx.values.firstname as string | undefined,
    lastname: ctx.values.lastname as string | undefined,
    email: ctx.values.email as string | undefined,
    comment: ctx.values.comment as string | undefined,
    groups: String(ctx.values.groups ?? "").split(/[,;\s]+/).filter(Boolean),
    tokens: new Map(),
  });
  return null;
}

function userGet(ctx: HandlerContext) {
  const e = userEntry(ctx.state, String(ctx.values.userid), true);
  delete e.userid;
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  e.tokens = Object.fromEntries(
    [...u.tokens.values()].map((
      t,
    ) => [t.tokenid, { privsep: t.privsep, expire: t.expire, comment: t.comment }]),
  );
  return e;
}

function userUpdate(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  for (const k of ["firstname", "lastname", "email", "comment"] as const) {
    if (ctx.values[k] !== undefined) u[k] = String(ctx.values[k]);
  }
  if (ctx.values.enable !== undefined) u.enable = ctx.values.enable === 1 ? 1 : 0;
  if (ctx.values.expire !== undefined) u.expire = Number(ctx.values.expire);
  if (ctx.values.groups !== undefined) {
    const groups = String(ctx.values.groups).split(/[,;\s]+/).filter(Boolean);
    u.groups = ctx.values.append === 1 ? [...new Set([...u.groups, ...groups])] : groups;
  }
  return null;
}

function userDelete(ctx: HandlerContext) {
  ctx.state.users.delete(String(ctx.values.userid));
  return null;
}

function passwordChange(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid));
  if (!u) throw fieldError("userid", `no such user ('${ctx.values.userid}')`);
  u.password = String(ctx.values.password);
  return null;
}

function tokenList(ctx: HandlerContext) {
  const u = ctx.state.users.get(String(ctx.values.userid))!;
  return [...u.tokens.values()].map((t) => ({
    tokenid: t.tokenid,
    privsep: t.privsep,
    expire: t.expire,
    comment: t.comment ?? "",
  }));
}

function tokenInfo(t: { privsep: number; expire: number; comment?: string }) {
  return { privsep: t.privsep, expire: t.expire, ...(t.comment ? { comment: t.comment } : {}) };
}

function tokenCreate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  const tokenid = String(ctx.values.tokenid);
  const u = ctx.state.users.get(userid)!;
  if (u.tokens.has(tokenid)) throw fieldError("tokenid", `Token already exists.`);
  const token = {
    tokenid,
    secret: newTokenSecret(),
    privsep: ctx.values.privsep === 0 ? 0 as const : 1 as const,
    expire: Number(ctx.values.expire ?? 0),
    comment: ctx.values.comment as string | undefined,
  };
  u.tokens.set(tokenid, token);
  return { "full-tokenid": `${userid}!${tokenid}`, info: tokenInfo(token), value: token.secret };
}

function tokenGet(ctx: HandlerContext) {
  const t = ctx.state.users.get(String(ctx.values.userid))!.tokens.get(String(ctx.values.tokenid))!;
  return tokenInfo(t);
}

function tokenUpdate(ctx: HandlerContext) {
  const userid = String(ctx.values.userid);
  const t = ctx.state.users.get(userid)!.tokens.get(String(ctx.values.tokenid))!;
  if (ctx.values.comment !== undefined) t.comment = String(ctx.values.comment);
  if (ctx.values.expire !== undefined) t.expire = Number(ctx.values.expire);
  if (ctx.values.privsep !== undefined) t.privsep = ctx.values.privsep === 1 ? 1 : 0;
  const out: Record<string, unknown> = {
    ...tokenInfo(t),
    "full-tokenid": `${userid}!${t.tokenid}`,
  };
  if (ctx.values.regenerate === 1) {
    t.secret = newTokenSecret();
    out.value = t.secret;
  }
  return out;
}

function tokenDelete(ctx: HandlerContext) {
  ctx.state.users.get(String(ctx.values.userid))!.tokens.delete(String(ctx.values.tokenid));
  return null;
}

/** The realms (seeded pam and pve, plus any created), as the login form and clients list them. */
function domainsList(ctx: HandlerContext) {
  return [...collection(ctx.state, "/access/domains").values()];
}

export const accessHandlers: HandlerTable = {
  "POST /access/ticket": login,
  "GET /access/domains": domainsList,
  "GET /access/ticket": () => null,
  "GET /access/users": usersList,
  "POST /access/users": userCreate,
  "GET /access/users/{userid}": userGet,
  "PUT /access/users/{userid}": userUpdate,
  "DELETE /access/users/{userid}": userDelete,
  "GET /access/users/{userid}/token": tokenList,
  "POST /access/users/{userid}/token/{tokenid}": tokenCreate,
  "GET /access/users/{userid}/token/{tokenid}": tokenGet,
  "PUT /access/users/{userid}/token/{tokenid}": tokenUpdate,
  "DELETE /access/users/{userid}/token/{tokenid}": tokenDelete,
  "PUT /access/password": passwordChange,
};
