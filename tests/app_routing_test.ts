/**
 * Which surface answers a path when several share one port: prefixes match whole path
 * segments ("/apix" and "/pvex" are not theirs), and a surface served alone answers at "/".
 */
import assert from "node:assert/strict";
import { createApp } from "../app.ts";
import { testDeps } from "./_helpers.ts";

const NO_KEY =
  "No API key configured. Register a key via POST /auth/register-key or use an existing key.";

/** Names the surface behind an answer from its unauthenticated fingerprint. */
async function answeredBy(res: Response): Promise<string> {
  const text = await res.text();
  let body: { detail?: unknown; data?: unknown; ok?: unknown; status?: unknown } = {};
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  if (res.status === 401 && body.detail === NO_KEY) return "backend";
  if (res.status === 200 && body.status === "ready" && "init_ok" in body) return "backend";
  if (res.status === 403 && body.detail === "Authentication credentials were not provided.") {
    return "plugin";
  }
  if (res.status === 200 && "dcim" in body) return "plugin"; // the inventory API root
  if (res.status === 200 && body.ok === true && body.status === "ready") return "host-agent";
  // The host-agent mock always wants its bearer token (a generated one when none is set).
  if (
    res.status === 401 && (body as { error?: unknown }).error === "Missing or invalid bearer token"
  ) {
    return "host-agent";
  }
  if (res.status === 200 && typeof body.data === "object" && body.data && "release" in body.data) {
    return "hypervisor";
  }
  if (res.status === 200 && "release" in body) return "hypervisor";
  // The hypervisor wants a login for everything but the login itself (/version included).
  if (res.status === 401 && text === '{"data":null}') return "hypervisor";
  if (res.status === 401 && body.detail === "No ticket" && "errors" in body) return "hypervisor";
  if (res.status === 404 && body.detail === "Not Found") return "none";
  return `unknown ${res.status} ${text.slice(0, 80)}`;
}

async function routes(env: Record<string, string>, paths: Record<string, string>) {
  const deps = await testDeps(env);
  try {
    const app = await createApp(deps);
    for (const [path, surface] of Object.entries(paths)) {
      assert.equal(
        await answeredBy(await app.request(path)),
        surface,
        `${path} (${env.SERVICE_SURFACES ?? "all"})`,
      );
    }
  } finally {
    deps.kv.close();
  }
}

Deno.test("routing: prefixes match whole segments; everything else is the backend's (authenticated)", async () => {
  await routes({ SERVICE_SURFACES: "backend,plugin,hypervisor,host-agent" }, {
    "/api": "plugin",
    "/api/": "plugin",
    "/api/status/": "plugin",
    "/apix": "backend",
    "/apix/status/": "backend",
    "/api2": "backend",
    "/api2/json/version": "hypervisor",
    "/pve/version": "hypervisor",
    "/pvex": "backend",
    "/pvex/version": "backend",
    "/host-agent/health": "host-agent",
    "/host-agentx/health": "backend",
    "/health": "backend",
    "/nope": "backend",
  });
});

Deno.test("routing: without the backend, unclaimed paths are a plain 404 (no surface guesses)", async () => {
  await routes({ SERVICE_SURFACES: "plugin,hypervisor" }, {
    "/api/status/": "plugin",
    "/api2/json/version": "hypervisor",
    "/pve/version": "hypervisor",
    "/apix": "none",
    "/pvex": "none",
    "/api2": "none",
    "/health": "none",
  });
});

Deno.test("routing: a surface served alone also answers at '/' (the host-agent as a stand-alone agent)", async () => {
  await routes({ SERVICE_SURFACES: "host-agent" }, {
    "/health": "host-agent",
    "/host-agent/health": "host-agent",
  });
  await routes({ SERVICE_SURFACES: "hypervisor" }, {
    "/api2/json/version": "hypervisor",
    "/pve/version": "hypervisor",
  });
});
