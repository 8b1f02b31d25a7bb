/** @jsxImportSource hono/jsx */
/**
 * Sign-in with an inventory token (v1 or v2), verified by the inventory's own token service;
 * sign-out ends the session server-side. Failed sign-ins count toward the per-address lockout
 * the backend uses for its keys.
 */
import { endTerminals } from "./terminal.tsx";
import { Hono } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import { Lockout } from "../../domain/lockout.ts";
import { loginEvents } from "../../infra/metrics.ts";
import { clientIp, isHttps } from "../_lib/client_ip.ts";
import type { ConsoleEnv, ConsoleServices, Ctx } from "./context.ts";
import { Layout, Notice } from "./layout.tsx";
import {
  authorizationFor,
  constantTimeEqual,
  LOGIN_CSRF_COOKIE,
  randomToken,
  SESSION_COOKIE,
  SESSION_TTL_MS,
} from "./session.ts";
import { safeNext } from "./session.ts";

const REASONS: Record<string, string> = {
  token: "Your token is no longer valid (disabled, expired or deleted). Sign in with another.",
  signedout: "You are signed out.",
};

function LoginPage(
  props: { csrf: string; next: string; error?: string; info?: string },
) {
  return (
    <Layout title="Sign in">
      <div class="login">
        <h1>Sign in to Bridgebox</h1>
        <p class="sub">
          Use an inventory API token: the one <code>deno task token:create</code>{" "}
          printed, the bootstrap token, or any token from <code>/api/users/tokens/</code>{" "}
          (v1, or v2 as{" "}
          <code>nbt_&lt;key&gt;.&lt;secret&gt;</code>). The console shows and allows exactly what
          the token may do through the API.
        </p>
        {props.info && <Notice kind="info">{props.info}</Notice>}
        {props.error && <Notice kind="error">{props.error}</Notice>}
        <form method="post" action="/ui/login" class="stack">
          <input type="hidden" name="_login_csrf" value={props.csrf} />
          <input type="hidden" name="next" value={props.next} />
          <label for="token">Inventory API token</label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            autofocus
            aria-invalid={props.error ? "true" : undefined}
          />
          <button type="submit" class="primary">Sign in</button>
        </form>
      </div>
    </Layout>
  );
}

export function loginRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  const lockout = new Lockout(ctx.deps.now, undefined, loginEvents(ctx.deps.metrics, "console"));

  const form = (c: Ctx, status: number, extra: {
    error?: string;
    info?: string;
    next?: string;
  }) => {
    const csrf = randomToken();
    setCookie(c, LOGIN_CSRF_COOKIE, csrf, {
      path: "/ui",
      httpOnly: true,
      sameSite: "Strict",
      secure: isHttps(c, ctx.deps.config.trustedProxies),
      maxAge: 3600,
    });
    return c.html(
      <LoginPage csrf={csrf} next={safeNext(extra.next)} error={extra.error} info={extra.info} />,
      status as 200,
    );
  };

  app.get("/ui/login", async (c) => {
    const session = await ctx.sessions.open(getCookie(c, SESSION_COOKIE));
    if (session) {
      const verified = await ctx.tokens.authenticate(session.authorization);
      if (verified?.ok) return c.redirect(safeNext(c.req.query("next")), 303);
    }
    return form(c, 200, {
      next: c.req.query("next"),
      info: REASONS[c.req.query("reason") ?? ""],
    });
  });

  app.post("/ui/login", async (c) => {
    const ip = clientIp(c, ctx.deps.config.trustedProxies);
    const body = await c.req.parseBody();
    const next = typeof body.next === "string" ? body.next : undefined;
    const locked = lockout.secondsLocked(ip);
    if (locked > 0) {
      c.header("retry-after", String(locked));
      return form(c, 429, {
        next,
        error: `Too many failed sign-ins from this address. Try again in ${
          Math.ceil(locked / 60)
        } min.`,
      });
    }
    const sent = typeof body._login_csrf === "string" ? body._login_csrf : "";
    const expected = getCookie(c, LOGIN_CSRF_COOKIE) ?? "";
    if (!expected || !constantTimeEqual(sent, expected)) {
      return form(c, 403, {
        next,
        error: "The sign-in form expired (or came from another site). Please try again.",
      });
    }
    const authorization = authorizationFor(typeof body.token === "string" ? body.token : "");
    const verified = authorization ? await ctx.tokens.authenticate(authorization) : null;
    if (!authorization || !verified || !verified.ok) {
      lockout.recordFailure(ip);
      const why = verified && !verified.ok && verified.detail === "Token expired"
        ? "That token has expired."
        : "That token is not valid. Check it and try again.";
      return form(c, 401, { next, error: why });
    }
    lockout.clear(ip);
    const { cookie } = await ctx.sessions.create(authorization, verified.record.id);
    deleteCookie(c, LOGIN_CSRF_COOKIE, { path: "/ui" });
    setCookie(c, SESSION_COOKIE, cookie, {
      path: "/ui",
      httpOnly: true,
      sameSite: "Strict",
      secure: isHttps(c, ctx.deps.config.trustedProxies),
      maxAge: Math.floor(SESSION_TTL_MS / 1000),
    });
    return c.redirect(safeNext(next), 303);
  });

  return app;
}

/** Registered behind the session check (so the CSRF token is verified first). */
export function logoutRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  app.post("/ui/logout", async (c) => {
    await ctx.sessions.destroy(c.get("session").id);
    endTerminals(ctx.terminals, c.get("session").id);
    deleteCookie(c, SESSION_COOKIE, { path: "/ui" });
    return c.redirect("/ui/login?reason=signedout", 303);
  });
  return app;
}
