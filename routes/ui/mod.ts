/**
 * The web console at /ui/ (docs/console.md): server-rendered pages over the app's own REST
 * API. Outside the backend key's authentication; people sign in with an inventory token and
 * hold a session cookie. Every state-changing form carries the session's CSRF token.
 */
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { deleteCookie, getCookie } from "hono/cookie";
import type { AppDeps, ServeEnv } from "../_lib/deps.ts";
import { TokenService } from "../../domain/netbox/tokens.ts";
import { ConsoleApi, type SurfaceFetch } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { ConsoleSessions } from "../../domain/console_sessions.ts";
import { constantTimeEqual, SESSION_COOKIE } from "./session.ts";
import { loginRoutes, logoutRoutes } from "./login.tsx";
import { overviewRoutes } from "./overview.tsx";
import { endpointRoutes } from "./endpoints.tsx";
import { endpointFormRoutes } from "./endpoint_form.tsx";
import { settingsRoutes } from "./settings.tsx";
import { inventoryRoutes } from "./inventory.tsx";
import { vmRoutes } from "./vm.tsx";
import { changeRoutes } from "./changes.tsx";
import { syncRoutes } from "./sync.tsx";
import { jobRoutes } from "./jobs.tsx";
import { actionRoutes } from "./actions.tsx";
import { liveRoutes } from "./live.ts";
import { staticRoutes } from "./static.ts";
import { errorPage } from "./errors.tsx";
import { terminalRoutes } from "./terminal.tsx";
import { DEFAULT_IDLE_TIMEOUT_MS, TerminalSessions } from "../../domain/terminal.ts";
import { sshConnector } from "../../clients/ssh.ts";
import { systemResolve } from "../../clients/outbound.ts";
import { notePattern } from "../_lib/route_pattern.ts";
import { noopMetrics } from "../../infra/metrics.ts";

export interface ConsoleOptions {
  /** The inventory surface (core + plugin REST API) the pages call in-process. */
  inventory?: SurfaceFetch;
}

const FORM_LIMIT_BYTES = 256 * 1024;

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

export function createConsoleApp(
  deps: AppDeps,
  options: ConsoleOptions = {},
): Hono<{ Bindings: ServeEnv }> {
  const ctx: ConsoleServices = {
    deps,
    sessions: new ConsoleSessions(deps.storage.consoleSessions, deps.now),
    tokens: new TokenService({
      store: deps.storage.models,
      encryptionKey: deps.config.encryptionKey,
      now: deps.now,
    }),
    terminals: {
      sessions: new TerminalSessions(deps.storage.terminalSessions, deps.now),
      ssh: deps.ssh ?? sshConnector(),
      hostPolicy: { allowLoopback: deps.config.allowLoopbackTargets, resolve: systemResolve },
      idleTimeoutMs: deps.terminalIdleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      live: new Map(),
      metrics: deps.metrics ?? noopMetrics,
      onRecordFailed: (error) =>
        deps.logger.log("error", "terminal session record not written", { error }),
    },
  };
  const app = new Hono<ConsoleEnv>();
  // First: names the answering route by its pattern for the request metrics (app.ts).
  app.use("*", notePattern);

  app.onError((error, c) => {
    deps.logger.log("error", "console page failed", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      error: error instanceof Error ? error.message : String(error),
    });
    return errorPage(
      c,
      500,
      "Something went wrong",
      "The page could not be shown. Try again; if it keeps failing, the server log has the details.",
    );
  });
  app.notFound((c) =>
    errorPage(c, 404, "Page not found", "There is no console page at this address.")
  );

  app.use("*", async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) {
      if (!c.res.headers.has(k)) c.res.headers.set(k, v);
    }
    if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
  });
  app.use(
    "*",
    bodyLimit({
      maxSize: FORM_LIMIT_BYTES,
      onError: (c) =>
        errorPage(
          c,
          413,
          "Form too large",
          `A form may carry at most ${FORM_LIMIT_BYTES / 1024} KiB.`,
        ),
    }),
  );

  app.get("/ui", (c) => c.redirect("/ui/", 301));
  app.route("/", staticRoutes());
  app.route("/", loginRoutes(ctx));

  // Everything below needs a session.
  app.use("/ui/*", async (c, next) => {
    const url = new URL(c.req.url);
    const session = await ctx.sessions.open(getCookie(c, SESSION_COOKIE));
    const toLogin = (reason?: string) => {
      const params = new URLSearchParams();
      if (c.req.method === "GET") params.set("next", url.pathname + url.search);
      if (reason) params.set("reason", reason);
      return c.redirect(`/ui/login?${params}`, 303);
    };
    if (!session) {
      if (getCookie(c, SESSION_COOKIE)) deleteCookie(c, SESSION_COOKIE, { path: "/ui" });
      if (url.pathname.startsWith("/ui/live/")) {
        return c.json({ detail: "Sign in again." }, 401);
      }
      return toLogin();
    }
    // The token is checked on every request by the inventory's own verification: a token
    // disabled, expired or deleted since sign-in ends the session at once.
    const verified = await ctx.tokens.authenticate(session.authorization);
    if (!verified || !verified.ok) {
      await ctx.sessions.destroy(session.id);
      deleteCookie(c, SESSION_COOKIE, { path: "/ui" });
      return toLogin("token");
    }
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      const origin = c.req.header("origin");
      if (origin && origin !== url.origin && origin !== "null") {
        return errorPage(c, 403, "Request refused", "This form was sent from another site.");
      }
      const form = await c.req.parseBody({ all: true });
      const sent = form["_csrf"];
      if (typeof sent !== "string" || !constantTimeEqual(sent, session.csrf)) {
        return errorPage(
          c,
          403,
          "Form expired",
          "This form is out of date (or came from somewhere else). Reload the page and try again.",
        );
      }
    }
    c.set("session", session);
    c.set("auth", verified.auth);
    c.set(
      "api",
      new ConsoleApi(
        options.inventory,
        session.authorization,
        c.req.raw,
        c.env,
        deps.fetch,
        `console:token-${session.tokenId}`,
      ),
    );
    await next();
  });

  app.route("/", logoutRoutes(ctx));
  app.route("/", overviewRoutes(ctx));
  app.route("/", endpointRoutes(ctx));
  app.route("/", endpointFormRoutes(ctx));
  app.route("/", settingsRoutes(ctx));
  app.route("/", inventoryRoutes(ctx));
  app.route("/", vmRoutes(ctx));
  app.route("/", changeRoutes(ctx));
  app.route("/", syncRoutes(ctx));
  app.route("/", jobRoutes(ctx));
  app.route("/", actionRoutes(ctx));
  app.route("/", liveRoutes(ctx));
  app.route("/", terminalRoutes(ctx));

  return app as unknown as Hono<{ Bindings: ServeEnv }>;
}
