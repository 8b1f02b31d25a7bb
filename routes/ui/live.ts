/**
 * The console's live parts, as Server-Sent Events for the pages' EventSource:
 * - `/ui/live/status?ids=1,2`: each hypervisor endpoint's keepalive as it answers;
 * - `/ui/live/jobs/{id}`: the durable job's stream, relayed from the plugin API;
 * - `/ui/live/stages?sync_types=..&endpoint_ids=..&_csrf=..`: a live, non-durable run of the
 *   backend's stage streams (for servers without the job API). The sync page's run options ride
 *   along as the same form fields (`options_form`, `overwrite_*`, `delete_orphans`,
 *   `primary_ip_preference`, `stage_*`) and reach every stream as the query parameters a plugin
 *   job sends (docs/sync.md, "Run options"). Chosen endpoints without a backend copy are a 409
 *   naming them, before anything runs; `Accept: application/json` only checks (docs/console.md).
 * A closed page closes the stream, which cancels the relayed request.
 */
import { Hono } from "hono";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { can } from "../../domain/netbox/tokens.ts";
import { STAGES } from "../../domain/sync/runner.ts";
import { detailOf, type Json } from "./api.ts";
import type { ConsoleEnv, ConsoleServices } from "./context.ts";
import { constantTimeEqual } from "./session.ts";
import { formOptions } from "./sync.tsx";
import { type Metrics, noopMetrics } from "../../infra/metrics.ts";

const encoder = new TextEncoder();
const MAX_STATUS_IDS = 200;

export function sseFrame(event: string, data: unknown): Uint8Array {
  return encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
};

type LiveRun = (
  send: (event: string, data: unknown) => void,
  signal: AbortSignal,
) => Promise<void>;

function sseStream(metrics: Metrics, run: LiveRun, outer: AbortSignal): Response {
  const abort = new AbortController();
  outer.addEventListener("abort", () => abort.abort(), { once: true });
  // Open until the run ends or the page goes (docs/metrics.md).
  const closed = metrics.streamOpened("sse");
  abort.signal.addEventListener("abort", closed, { once: true });
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      const send = (event: string, data: unknown) => {
        if (!abort.signal.aborted) controller.enqueue(sseFrame(event, data));
      };
      try {
        await run(send, abort.signal);
      } catch (error) {
        send("failure", { detail: error instanceof Error ? error.message : String(error) });
      }
      closed();
      if (!abort.signal.aborted) controller.close();
    },
    cancel() {
      abort.abort();
    },
  });
  return new Response(body, { headers: SSE_HEADERS });
}

export function liveRoutes(ctx: ConsoleServices): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  const sse = (run: LiveRun, outer: AbortSignal) =>
    sseStream(ctx.deps.metrics ?? noopMetrics, run, outer);

  app.get("/ui/live/status", (c) => {
    const api = c.get("api");
    const ids = [
      ...new Set(
        (c.req.query("ids") ?? "").split(",").map(Number).filter((n) =>
          Number.isInteger(n) && n > 0
        ),
      ),
    ].slice(0, MAX_STATUS_IDS);
    return sse(async (send) => {
      await Promise.all(ids.map(async (id) => {
        const answer = await api.get(`/api/plugins/service/endpoints/hypervisor/${id}/status/`);
        if (answer.status === 200) send("status", { id, ...answer.body });
        else send("status", { id, status: "error", detail: detailOf(answer) });
      }));
      send("done", { count: ids.length });
    }, c.req.raw.signal);
  });

  app.get("/ui/live/jobs/:id{[0-9]+}", async (c) => {
    const response = await c.get("api").raw(
      "GET",
      `/api/plugins/service/jobs/${c.req.param("id")}/stream`,
    );
    if (response.status === 200 && response.body) {
      return new Response(response.body, { headers: SSE_HEADERS });
    }
    await response.body?.cancel();
    const gone = response.status === 404 &&
      (await c.get("api").get(`/api/core/jobs/${c.req.param("id")}/`)).status === 404;
    const reason = gone
      ? "This job no longer exists."
      : response.status === 404
      ? "The live job stream is not available on this server yet; reload the page to see progress."
      : `The job stream could not be opened (HTTP ${response.status}).`;
    return sse((send) => {
      send("unavailable", { status: response.status, detail: reason });
      return Promise.resolve();
    }, c.req.raw.signal);
  });

  app.get("/ui/live/stages", async (c) => {
    const api = c.get("api");
    const session = c.get("session");
    const sent = c.req.query("_csrf") ?? "";
    // Starting a run is a state change: the page's CSRF token rides along in the URL.
    if (!constantTimeEqual(sent, session.csrf)) {
      return c.json({ detail: "Reload the page and try again." }, 403);
    }
    const wanted = new Set(c.req.queries("sync_types") ?? []);
    const all = wanted.size === 0 || wanted.has("all");
    const stages = all ? [] : STAGES.filter((s) => wanted.has(s.type));
    const auth = c.get("auth");
    // The console's own check first (console.js asks with `Accept: application/json` before it
    // opens the stream, since an EventSource cannot read a refusal's body): the answer says
    // what the run would cover, and starts nothing.
    const checkOnly = !(c.req.header("accept") ?? "").includes("text/event-stream") &&
      (c.req.header("accept") ?? "").includes("application/json");
    if (!can(auth, "core.add_job")) {
      const refusal = "Starting a sync needs core.add_job.";
      if (checkOnly) return c.json({ detail: refusal }, 403);
      return sse((send) => {
        send("complete", { ok: false, message: refusal });
        return Promise.resolve();
      }, c.req.raw.signal);
    }
    const rawIds = c.req.queries("endpoint_ids") ?? [];
    const pluginIds = [...new Set(rawIds.map(Number))];
    if (pluginIds.some((id) => !Number.isSafeInteger(id) || id < 1)) {
      return c.json({
        detail: `endpoint_ids must be hypervisor endpoint ids (positive integers), not ` +
          `${
            JSON.stringify(
              rawIds.filter((r) => !(Number(r) >= 1 && Number.isSafeInteger(Number(r)))).slice(
                0,
                5,
              ),
            )
          }.`,
      }, 400);
    }
    // The same reading of the form as a durable job's (routes/ui/sync.tsx formOptions).
    const query = new URLSearchParams(formOptions(c.req.query()));
    if (pluginIds.length > 0) {
      // Chosen endpoints run on their backend copies only. One without a copy (never pushed, or
      // its push failed) is refused by name: running every endpoint instead, or the others
      // without saying so, is not what was asked (docs/console.md, "Live parts").
      const copies = await api.backend("GET", "/hypervisor/endpoints");
      if (copies.status !== 200 || !Array.isArray(copies.body)) {
        return c.json({
          detail: "The backend's hypervisor endpoint copies could not be read, so the run " +
            `cannot be scoped to the chosen endpoints: ${copies.reason ?? detailOf(copies)}`,
        }, 502);
      }
      const list = copies.body as Json[];
      const copyOf = (p: number) => list.find((e) => String(e.name ?? "").endsWith(`(inv:${p})`));
      const missing = pluginIds.filter((p) => !copyOf(p));
      if (missing.length > 0) {
        // Named for the first few (one read each); the rest by id.
        const names = await Promise.all(missing.map(async (p, i) => {
          if (i >= 5) return `id ${p}`;
          const record = await api.get(`/api/plugins/service/endpoints/hypervisor/${p}/`);
          return record.status === 200 ? `"${record.body.name}" (id ${p})` : `id ${p}`;
        }));
        return c.json({
          detail: `The chosen hypervisor endpoints have no backend copy: ${names.join(", ")}. ` +
            "Push them first (save each endpoint, or start a durable sync job, which pushes " +
            "them), then run again.",
          reason: "no_backend_copy",
          endpoint_ids: missing,
        }, 409);
      }
      query.set("hypervisor_endpoint_ids", pluginIds.map((p) => copyOf(p)!.id).join(","));
    }
    const scope = query.size > 0 ? `?${query}` : "";
    const paths = all ? ["/full-update/stream"] : stages.map((s) => `${s.path}/stream`);
    if (checkOnly) {
      return c.json({
        detail: "Ready to run.",
        streams: paths.map((path) => path + scope),
      });
    }
    return sse(async (send, signal) => {
      let ok = true;
      const errors: Json[] = [];
      for (const path of paths) {
        if (signal.aborted) return;
        const response = await api.backendRaw("GET", path + scope, undefined, signal);
        if (!(response instanceof Response)) {
          send("complete", {
            ok: false,
            message: response.reason,
            errors: [{ detail: response.reason }],
          });
          return;
        }
        if (response.status !== 200 || !response.body) {
          let detail: unknown = `HTTP ${response.status}`;
          try {
            detail = (await response.json()).detail ?? detail;
          } catch {
            // keep the status
          }
          send("complete", { ok: false, message: String(detail), errors: [{ detail }] });
          return;
        }
        const events = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
          new EventSourceParserStream(),
        );
        for await (const event of events) {
          if (event.event === "complete") {
            let body: Json = {};
            try {
              body = JSON.parse(event.data);
            } catch {
              // an unreadable complete still ends the stage
            }
            if (body.ok === false) {
              ok = false;
              errors.push(...(body.errors ?? [{ detail: body.message }]));
            }
            continue;
          }
          send(event.event ?? "message", safeJson(event.data));
        }
      }
      send("complete", {
        ok,
        message: ok ? "Sync finished." : "Sync finished with errors.",
        errors,
      });
    }, c.req.raw.signal);
  });

  return app;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}
