/**
 * `deno task demo`: the whole product in one command. Starts the app on its embedded defaults
 * with an in-memory KV of its own (nothing is written to ./data/; stopping the demo forgets
 * everything), wires the loop against itself the way an operator would (an inventory superuser
 * token, the plugin's encryption key, the backend endpoint, which registers a backend API key,
 * the inventory copy and the hypervisor copy, both pointing at this very app), runs a full sync
 * with live progress (the `deno task sync` module) and keeps serving until Ctrl-C.
 */
import { createApp } from "../app.ts";
import { outboundForConfig } from "../clients/outbound.ts";
import { APP_NAME, APP_VERSION, type Config, parseConfig } from "../config.ts";
import { jsonLogger, type Logger } from "../infra/logger.ts";
import { prometheusMetrics } from "../infra/prometheus.ts";
import { openTelemetryTracer } from "../infra/tracing.ts";
import { timedKv } from "../storage/kv/timed_kv.ts";
import {
  createInventoryCore,
  createSuperuserToken,
  type NewSuperuserToken,
} from "../routes/inventory/mod.ts";
import type { AppDeps } from "../routes/_lib/deps.ts";
import { createKvStorage } from "../storage/kv/mod.ts";
import { runSync, type SyncIo, type SyncOutcome } from "./sync/run.ts";
import { interruptSignal, processIo } from "./sync/terminal.ts";
import { watchLauncher } from "../launcher_watch.ts";

export interface DemoOptions {
  /** The process environment; the demo overrides the KV path, the mode and the surfaces. */
  env: Readonly<Record<string, string | undefined>>;
  io: SyncIo;
  /** Where the app's own log lines go (JSON lines; stderr by default). */
  logLine?: (line: string) => void;
}

export interface Demo {
  /** Base URL as the user types it (localhost). */
  url: string;
  port: number;
  /** The address the server listens on (127.0.0.1 unless SERVICE_LISTEN_HOST says otherwise). */
  hostname: string;
  backendKey: string;
  inventoryToken: string;
  /** Outcome of the first full sync. */
  sync: SyncOutcome;
  /** True when the server has no sync routes (404 on /full-update/stream). */
  syncMissing: boolean;
  deps: AppDeps;
  finished: Promise<void>;
  close(): Promise<void>;
}

/** How every command we print runs Deno: users have only Node/npm (README, The commands). */
const DENO = "npx -y deno@2.9.6";

/** The shell line the README's demo tour begins with: its address, backend key, inventory token. */
export function tourLine(port: number, backendKey: string, token: string, https = false): string {
  const base = https ? `https://localhost:${port}` : `http://127.0.0.1:${port}`;
  return `export B=${base} KEY=${backendKey} INV=${token}`;
}

export class DemoError extends Error {
  override name = "DemoError";
}

const SHOWN_LEVELS = new Set(["warning", "error", "critical"]);

/**
 * The app's log lines from warning up (the demo's own output tells the story), held while the
 * progress bars are drawn so they do not tear the block.
 */
function holdingLogger(write: (line: string) => void) {
  let held: string[] | undefined;
  const json = jsonLogger((line) => held ? held.push(line) : write(line));
  const logger: Logger = {
    log: (level, message, fields) => {
      if (SHOWN_LEVELS.has(level)) json.log(level, message, fields);
    },
  };
  return {
    logger,
    hold: () => void (held ??= []),
    release: () => {
      const lines = held ?? [];
      held = undefined;
      for (const line of lines) write(line);
    },
  };
}

function demoConfig(env: DemoOptions["env"]): Config {
  return parseConfig({
    // Secrets at rest are sealed even in memory; a key for this run only, unless one is set.
    SERVICE_ENCRYPTION_KEY: crypto.getRandomValues(new Uint8Array(32)).toHex(),
    // The host-agent mock always wants a bearer token; the demo makes one and says it below.
    HOST_AGENT_MOCK_TOKEN: crypto.getRandomValues(new Uint8Array(24)).toHex(),
    ...env,
    SERVICE_KV_PATH: ":memory:",
    SERVICE_SURFACES: "",
    HYPERVISOR_MODE: "mock",
  });
}

export async function startDemo(options: DemoOptions): Promise<Demo> {
  const { io } = options;
  const config = demoConfig(options.env);
  const kv = await Deno.openKv(":memory:");
  const logs = holdingLogger(options.logLine ?? ((line) => console.error(line)));
  // As main.ts: GET /metrics and, with OTEL_DENO=true, spans (README, Metrics and tracing).
  const metrics = prometheusMetrics({ version: APP_VERSION });
  const deps: AppDeps = {
    config,
    storage: createKvStorage(timedKv(kv, metrics), {
      atRestKey: config.encryptionKey,
      now: Date.now,
    }),
    fetch: globalThis.fetch,
    now: Date.now,
    logger: logs.logger,
    metrics,
    tracer: openTelemetryTracer(APP_NAME.toLowerCase(), APP_VERSION),
  };
  // As main.ts: every outbound call goes through the guard, and the copies, which point at this
  // app's own port, are answered in-process (bound once the server listens).
  deps.fetch = outboundForConfig(config, () => deps.self);
  let server: Deno.HttpServer<Deno.NetAddr>;
  // SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE serve HTTPS, as `task start` does (README,
  // Configuration): HTTPS-only clients such as proxmoxer can then be pointed at the demo.
  let tls: { cert: string; key: string } | undefined;
  if (config.tls) {
    try {
      tls = {
        cert: await Deno.readTextFile(config.tls.certFile),
        key: await Deno.readTextFile(config.tls.keyFile),
      };
    } catch (error) {
      kv.close();
      throw new DemoError(
        `SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE: ${(error as Error).message}`,
      );
    }
  }
  try {
    const app = await createApp(deps);
    server = Deno.serve(
      {
        port: config.port,
        // Loopback unless told otherwise: the demo's superuser token, backend key and mock login
        // are printed to the terminal and must not be reachable from the network.
        hostname: config.listenHost ?? "127.0.0.1",
        ...(tls ?? {}),
        onListen() {},
      },
      (request, info) => app.fetch(request, info),
    );
    deps.self = {
      port: server.addr.port,
      fetch: (request) => app.fetch(request, { internal: true }),
    };
  } catch (error) {
    kv.close();
    if (error instanceof Deno.errors.AddrInUse) {
      throw new DemoError(
        `port ${config.port} is in use (is \`${DENO} task start\` or another demo running?); ` +
          `stop it (Ctrl-C in its terminal) or choose another port, e.g. ` +
          `PORT=${config.port + 1} ${DENO} task demo`,
      );
    }
    throw error;
  }
  const port = server.addr.port;
  const scheme = tls ? "https" : "http";
  const url = `${scheme}://localhost:${port}`;
  // The demo's own calls (wiring, the first sync, the console probe) are answered in-process, so
  // they need no certificate trust, whichever scheme the port speaks.
  const self: typeof fetch = (input, init) =>
    Promise.resolve(deps.self!.fetch(new Request(input, init)));
  const close = async () => {
    await server.shutdown();
    kv.close();
  };
  try {
    io.out(
      `Bridgebox demo on ${url}/ (in-memory data: it is gone when the demo stops; ` +
        `\`${DENO} task start\` keeps data in ./data/)\n\n`,
    );
    const made = await inventoryToken(deps);
    const token = made.token;
    const backendKey = await wire(self, `http://127.0.0.1:${port}`, port, made, config);
    io.out(
      "Wired against itself (the key and the token are shown only in this output):\n" +
        `  backend API key     ${backendKey}\n` +
        `  inventory token     ${token}   (v2 superuser: Authorization: Bearer …)\n` +
        `  inventory copy      http://127.0.0.1:${port}/api/ (this app's inventory)\n` +
        `  hypervisor copy     http://127.0.0.1:${port}/api2/json (this app's mock, ` +
        `${config.hypervisor.mockUser}; writes allowed, so start/stop/snapshot work)\n\n` +
        "Running a full update (13 stages):\n",
    );
    logs.hold();
    let sync: SyncOutcome;
    try {
      sync = await runSync({
        url: `http://127.0.0.1:${port}`,
        key: backendKey,
        stages: [],
        endpointIds: [],
        plain: false,
        caFile: undefined,
        dryRun: false,
      }, { ...io, fetch: self });
    } finally {
      logs.release();
    }
    const syncMissing = sync.refusedStatus === 404;
    if (syncMissing) {
      io.out(
        "\nThis build has no sync routes yet (GET /full-update/stream answered 404), so the " +
          "inventory stays empty. Everything else is wired and serving.\n",
      );
    }
    io.out(
      await whereToLook(self, url, port, config.hostAgentMock.token, backendKey, token, !!tls),
    );
    return {
      url,
      port,
      hostname: server.addr.hostname,
      backendKey,
      inventoryToken: token,
      sync,
      syncMissing,
      deps,
      finished: server.finished,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** A v2 superuser token, made the way `deno task token:create` makes one. */
function inventoryToken(deps: AppDeps): Promise<NewSuperuserToken> {
  return createSuperuserToken(createInventoryCore(deps), "deno task demo");
}

/**
 * Through the plugin API, as an operator would: the plugin keeps its secrets under its own
 * encryption key, and saving each endpoint pushes the copy to the backend (the backend
 * endpoint first, which generates and registers the backend's API key).
 */
async function wire(
  fetch: typeof globalThis.fetch,
  base: string,
  port: number,
  made: NewSuperuserToken,
  config: Config,
): Promise<string> {
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${base}/api/plugins/service/${path}`, {
      method,
      headers: { authorization: made.header, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await res.json().catch(() => ({}));
    if (!res.ok) {
      throw new DemoError(
        `${method} /api/plugins/service/${path}: ${res.status} ${JSON.stringify(json)}`,
      );
    }
    const push = (json as { last_push?: { ok?: boolean; error?: string } }).last_push;
    if (push && push.ok === false) {
      throw new DemoError(
        `${method} /api/plugins/service/${path}: saved, but the push to the ` +
          `backend failed: ${push.error ?? JSON.stringify(push)}`,
      );
    }
    return json as Record<string, unknown>;
  };
  const here = { domain: "127.0.0.1", port, use_https: false };
  const randomKey = crypto.getRandomValues(new Uint8Array(32)).toBase64({ alphabet: "base64url" });
  await call("PATCH", "settings/", { encryption_key: randomKey });
  const backend = await call("POST", "endpoints/backend/", { name: "this app", ...here });
  const key = backend.token;
  if (typeof key !== "string" || key.length < 32) {
    throw new DemoError("the backend endpoint was saved without a generated API key");
  }
  await call("POST", "endpoints/inventory/", {
    name: "this app",
    ...here,
    // A v2 token: the plugin keeps its key and secret (a v1 token would be referenced by id).
    token_version: "v2",
    token_key: made.key,
    token_secret: made.secret,
  });
  await call("POST", "endpoints/hypervisor/", {
    name: "demo mock",
    ...here,
    username: config.hypervisor.mockUser,
    password: config.hypervisor.mockPassword,
    // The mock's state lives in memory: let the demo try the verbs (console and API).
    allow_writes: true,
  });
  // The custom fields the sync fills in, made as the console's Repair makes them, so the demo
  // ends healthy (the overview's bootstrap card would otherwise say "needs repair").
  const reconcile = await fetch(`${base}/extras/custom-fields/reconcile`, {
    method: "POST",
    headers: { "X-Service-API-Key": key },
  });
  const reconciled = await reconcile.json().catch(() => ({}));
  if (!reconcile.ok || reconciled.ok !== true) {
    throw new DemoError(
      `POST /extras/custom-fields/reconcile: ${reconcile.status} ${JSON.stringify(reconciled)}`,
    );
  }
  return key;
}

async function whereToLook(
  fetch: typeof globalThis.fetch,
  url: string,
  port: number,
  hostAgentToken: string | undefined,
  backendKey: string,
  token: string,
  https: boolean,
): Promise<string> {
  // The console ships with a later build; it is listed only when it answers (an unknown path
  // is a 401 from the backend, which authenticates before routing).
  const ui = await fetch(`http://127.0.0.1:${port}/ui/`, { redirect: "manual" });
  await ui.body?.cancel();
  const lines = [
    "",
    "Where to look:",
    `  backend docs        ${url}/docs`,
    `  inventory API       ${url}/api/   (docs ${url}/api/docs; Authorization: Bearer …)`,
    `  hypervisor (mock)   ${url}/pve/docs   (Proxmox wire format at ${url}/api2/json)`,
    `  host-agent (mock)   ${url}/host-agent/docs   (Authorization: Bearer ${hostAgentToken})`,
  ];
  if (ui.status < 400) lines.push(`  console             ${url}/ui/   (sign in with the token)`);
  lines.push(
    "",
    "From another terminal (the README's demo tour starts here): paste",
    `  ${tourLine(port, backendKey, token, https)}`,
    ...(https
      ? [
        "(HTTPS with your certificate: give curl --cacert <SERVICE_TLS_CERT_FILE>, the sync --ca-file)",
      ]
      : []),
    "then sync again with",
    `  BRIDGEBOX_API_KEY=$KEY ${DENO} task sync --url $B`,
    "",
    "The README's two-minute tour starts from a clean app instead: stop the demo (Ctrl-C), then",
    `  ${DENO} task start`,
    "Serving until Ctrl-C.",
    "",
  );
  return lines.join("\n");
}

if (import.meta.main) {
  const stop = interruptSignal();
  // Under `npx deno task demo`, a SIGTERM to npx must not leave the demo serving.
  const launcherGone = new AbortController();
  await watchLauncher(() => launcherGone.abort());
  try {
    Deno.addSignalListener("SIGTERM", () => launcherGone.abort());
  } catch {
    // No signals on this platform.
  }
  let demo: Demo;
  try {
    demo = await startDemo({ env: Deno.env.toObject(), io: processIo(stop) });
  } catch (error) {
    console.error(`deno task demo: ${(error as Error).message}`);
    Deno.exit(1);
  }
  const ended = AbortSignal.any([stop, launcherGone.signal]);
  if (!ended.aborted) {
    await new Promise<void>((resolve) => ended.addEventListener("abort", () => resolve()));
  }
  await demo.close();
  Deno.exit(0);
}
