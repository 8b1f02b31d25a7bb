/**
 * The only module with side effects: configuration → KV → storage → deps → Deno.serve, graceful
 * stop.
 */
import { type AppDeps, createApp } from "./app.ts";
import { outboundForConfig } from "./clients/outbound.ts";
import { prepareKvFile } from "./storage/kv/kv_file.ts";
import { createKvStorage } from "./storage/kv/mod.ts";
import { APP_NAME, APP_VERSION, ConfigError, parseConfig } from "./config.ts";
import { jsonLogger } from "./infra/logger.ts";
import { prometheusMetrics } from "./infra/prometheus.ts";
import { openTelemetryTracer } from "./infra/tracing.ts";
import { timedKv } from "./storage/kv/timed_kv.ts";
import { watchLauncher } from "./launcher_watch.ts";

const logger = jsonLogger();

/** The docs page of each surface that has one, for the start-up line. */
function docsPages(surfaces: ReadonlySet<string>): string[] {
  const pages: Record<string, string> = {
    backend: "/docs",
    plugin: "/api/docs",
    hypervisor: "/pve/docs",
  };
  return Object.keys(pages).filter((s) => surfaces.has(s)).map((s) => pages[s]);
}

let config;
try {
  config = parseConfig(Deno.env.toObject());
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  Deno.exit(2);
}

/** The PEM files of SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE, read before anything starts. */
async function readTls(files: { certFile: string; keyFile: string }) {
  const read = async (variable: string, path: string) => {
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      throw new ConfigError(variable, `cannot read "${path}": ${(error as Error).message}`);
    }
  };
  const cert = await read("SERVICE_TLS_CERT_FILE", files.certFile);
  const key = await read("SERVICE_TLS_KEY_FILE", files.keyFile);
  if (!cert.includes("-----BEGIN CERTIFICATE-----")) {
    throw new ConfigError("SERVICE_TLS_CERT_FILE", `"${files.certFile}" holds no PEM certificate`);
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) {
    throw new ConfigError("SERVICE_TLS_KEY_FILE", `"${files.keyFile}" holds no PEM private key`);
  }
  return { cert, key };
}

let tls: { cert: string; key: string } | undefined;
try {
  tls = config.tls ? await readTls(config.tls) : undefined;
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Configuration error: ${error.message}`);
  Deno.exit(2);
}

const kvPath = config.kvPath;
// Owner-only: the file holds every stored secret (storage/kv/kv_file.ts).
await prepareKvFile(kvPath);
const kv = await Deno.openKv(kvPath);
// One registry per process, scraped at GET /metrics (docs/metrics.md); spans go to Deno's
// built-in OpenTelemetry when OTEL_DENO=true (README, Metrics and tracing).
const metrics = prometheusMetrics({
  version: APP_VERSION,
  onCollectError: (error) =>
    logger.log("warning", "metrics: reading the job counts failed", { error: String(error) }),
});
const tracer = openTelemetryTracer(APP_NAME.toLowerCase(), APP_VERSION);

// Every store is built here, once; surfaces receive ports, never the KV handle. Each KV call is
// timed for the metrics.
const storage = createKvStorage(timedKv(kv, metrics), {
  atRestKey: config.encryptionKey,
  now: Date.now,
  // Several processes may share a local KV file (README, Reliability): key changes are polled.
  sharedFilePollMs: kvPath && kvPath !== ":memory:" && !/^https?:/.test(kvPath) ? 50 : undefined,
  inventoryCache: config.inventoryCache,
});
const deps: AppDeps = {
  config,
  storage,
  fetch: globalThis.fetch,
  now: Date.now,
  logger,
  metrics,
  tracer,
};
// Every outbound call goes through the guard; calls to our own port are answered in-process
// (bound below, once the server listens).
deps.fetch = outboundForConfig(config, () => deps.self);
const app = await createApp(deps);

// Under `npx deno task start`, a SIGTERM to npx must not leave this server running. Armed
// before serving, so the launcher is known before anyone can see the server up.
await watchLauncher((reason) => {
  logger.log("info", `Stopping: ${reason}`);
  void stop("launcher exited");
});

let server: Deno.HttpServer<Deno.NetAddr>;
try {
  server = Deno.serve({
    port: config.port,
    hostname: config.listenHost ?? "0.0.0.0",
    // Several processes on one port (README "Several processes"): each answers the calls it
    // makes to that port itself, in-process (clients/outbound.ts).
    ...(config.reusePort ? { reusePort: true } : {}),
    ...(tls ?? {}),
    onListen: ({ hostname, port }) => {
      const url = `${tls ? "https" : "http"}://${
        hostname === "0.0.0.0" ? "localhost" : hostname
      }:${port}/`;
      const docs = docsPages(config.surfaces).map((path) => url + path.slice(1));
      // The console is served wherever the inventory is; a first start should say where it is.
      const consoleUrl = config.surfaces.has("plugin") ? `${url}ui/` : undefined;
      logger.log(
        "info",
        `${APP_NAME} ${APP_VERSION} listening on ${url} (docs: ${docs.join(", ")}` +
          `${consoleUrl ? `; console: ${consoleUrl}` : ""})`,
        {
          url,
          docs,
          ...(consoleUrl ? { console: consoleUrl } : {}),
          surfaces: [...config.surfaces],
          storage: kvPath ?? "platform KV",
        },
      );
    },
  }, handle);
} catch (error) {
  kv.close();
  if (error instanceof Deno.errors.AddrInUse) {
    // One line, as the demo says it (scripts/demo.ts), not a stack trace.
    console.error(
      `port ${config.port} is in use (is \`npx -y deno@2.9.6 task demo\` or another start ` +
        "running?); stop it (Ctrl-C in its terminal) or choose another port, e.g. " +
        `PORT=${config.port + 1} npx -y deno@2.9.6 task start`,
    );
    Deno.exit(1);
  }
  // A certificate and key that do not match (or a key Deno cannot use) fail here.
  if (!tls) throw error;
  console.error(`Configuration error: SERVICE_TLS_CERT_FILE / SERVICE_TLS_KEY_FILE: ${error}`);
  Deno.exit(2);
}
deps.self = {
  port: server.addr.port,
  fetch: (request) => app.fetch(request, { internal: true }),
};

/**
 * Graceful stop: new requests get 503 while the ones in flight finish (bodies still arriving
 * included, which Deno's own shutdown would cut), then the server and KV close.
 */
let inFlight = 0;
let stopping = false;
// Tests only: a log line as each request starts, so a test can act once a request is in flight.
const traceRequests = Deno.env.get("SERVICE_TEST_TRACE_REQUESTS") === "1";
let drained: () => void = () => {};

async function handle(
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
): Promise<Response> {
  if (stopping) {
    return Response.json({ detail: "Server is shutting down" }, {
      status: 503,
      headers: { "retry-after": "1", connection: "close" },
    });
  }
  inFlight++;
  if (traceRequests) {
    logger.log("debug", "request started", { path: new URL(request.url).pathname });
  }
  try {
    return await app.fetch(request, info);
  } finally {
    if (--inFlight === 0) drained();
  }
}

const DRAIN_LIMIT_MS = 10_000;

async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  logger.log("info", "Stopping: finishing in-flight requests", { signal, in_flight: inFlight });
  if (inFlight > 0) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      drained = resolve;
      timer = setTimeout(resolve, DRAIN_LIMIT_MS);
    });
    clearTimeout(timer);
  }
  await server.shutdown();
  kv.close();
  logger.log("info", "Stopped");
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  try {
    Deno.addSignalListener(signal, () => void stop(signal));
  } catch {
    // Platforms without signals (Deno Deploy) stop the isolate themselves.
  }
}

await server.finished;
