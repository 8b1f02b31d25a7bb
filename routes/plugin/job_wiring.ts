/**
 * The sync jobs' view of the plugin (domain/jobs/ports.ts PluginSide): the backend endpoint
 * record's URL and key through the plugin's backend client (the guarded transport; the app's
 * own port is answered in-process), the endpoint records, push-on-save, `last_sync`.
 */
import type { EngineApi } from "../../domain/netbox/types.ts";
import type {
  Answer,
  BackendLink,
  PluginSide,
  PushReport,
  Refusal,
} from "../../domain/jobs/ports.ts";
import { MODELS } from "../../domain/plugin/models.ts";
import type { BackendApi } from "../../domain/plugin/ports.ts";
import { hypervisorCopyName, registerBackendKey } from "../../domain/plugin/push.ts";
import { generateBackendToken } from "../../domain/plugin/secrets.ts";
import { NO_BACKEND, type PluginServices } from "../../domain/plugin/service.ts";

/** Health checks are quick; a stage stream may take a while to open on a big cluster. */
const HEALTH_TIMEOUT_MS = 5_000;
const STREAM_CONNECT_TIMEOUT_MS = 60_000;

/**
 * What the runner does with a failed backend call (docs/jobs.md): a key the backend does not
 * accept is renewed, no answer or a server-side failure is retried, any other answer is final.
 */
export function refusalOf(status: number | null): Refusal {
  if (status === 401) return "unauthorized";
  if (status === null || status >= 500) return "retryable";
  return "refused";
}

function classified<T extends { ok: boolean; status: number | null }>(out: T): T & Answer {
  return (out.ok ? out : { ...out, reason: refusalOf(out.status) }) as T & Answer;
}

export function link(client: BackendApi): BackendLink {
  return {
    url: client.baseUrl,
    socketUrl: client.socketUrl ?? null,
    async health() {
      const out = classified(await client.health(HEALTH_TIMEOUT_MS));
      const ready = (out.body as { status?: unknown } | undefined)?.status;
      if (out.ok && ready !== "ready") {
        return {
          ...out,
          ok: false,
          reason: "retryable" as const,
          error: `GET ${client.baseUrl}/health: not ready (${
            JSON.stringify(out.body)?.slice(0, 200)
          })`,
        };
      }
      return out;
    },
    async stream(path, signal) {
      const out = await client.openStream(path, {
        signal,
        connectTimeoutMs: STREAM_CONNECT_TIMEOUT_MS,
      });
      if (out.ok) return out;
      // Another run holds an endpoint (docs/sync.md, "One run per endpoint"): it ends by itself,
      // so the job tries again with backoff instead of failing.
      const busy = out.status === 409 &&
        (out.body as { reason?: unknown } | undefined)?.reason === "sync_running";
      return { ...out, reason: busy ? "retryable" : refusalOf(out.status) };
    },
    reconcile: async () => classified(await client.reconcileCustomFields()),
    async copies() {
      const out = classified(await client.listHypervisorEndpoints());
      return {
        ...out,
        copies: out.ok
          ? out.body!.map((c) => ({ id: Number(c.id), name: String(c.name ?? "") }))
          : undefined,
      };
    },
  };
}

export function pluginSide(services: PluginServices, engine: EngineApi): PluginSide {
  async function ready(register: boolean): Promise<BackendLink | { error: string }> {
    let backend = await services.backendEndpoint(engine);
    if (!backend) return { error: NO_BACKEND };
    const blocked = await services.backendBlocked(engine, backend, true);
    if (blocked) return { error: blocked };
    if (typeof backend.token !== "string" || backend.token === "") {
      backend = await engine.patchStored(MODELS.backend, backend.id, {
        token: await services.sealBackendKey(generateBackendToken()),
      }) ?? backend;
      register = true;
    }
    const client = await services.backendClient(engine, backend);
    if (!client) return { error: "backend endpoint has no host" };
    if (register) {
      const key = await services.backendKey(backend);
      if (!key) return { error: "backend endpoint has no key" };
      const out = await registerBackendKey(client, key, { verify: true });
      if (!out.ok) return { error: out.error ?? `HTTP ${out.status}` };
    }
    return link(client);
  }

  return {
    backend: () => ready(false),
    renewBackendKey: () => ready(true),
    async endpoints() {
      const all = await engine.find(MODELS.hypervisor);
      return all.sort((a, b) => a.id - b.id).map((r) => ({
        id: r.id,
        name: String(r.name),
        enabled: r.enabled !== false,
        copyName: hypervisorCopyName(String(r.name), r.id),
      }));
    },
    async pushAll(endpointIds) {
      const out: PushReport[] = [];
      for (const inv of await engine.find(MODELS.inventory)) {
        const p = await services.pushInventory(engine, inv);
        out.push({ what: `inventory endpoint "${inv.name}"`, ...p });
      }
      for (const id of endpointIds) {
        const record = await engine.get(MODELS.hypervisor, id);
        if (!record) continue;
        const p = await services.pushHypervisor(engine, record);
        if (p) out.push({ what: `hypervisor endpoint "${record.name}"`, ...p });
      }
      return out;
    },
    async recordLastSync(endpointId, last) {
      await engine.patchStored(MODELS.hypervisor, endpointId, { last_sync: last });
    },
    async secrets() {
      const out: string[] = [];
      const backend = await services.backendEndpoint(engine);
      const key = backend ? await services.backendKey(backend).catch(() => null) : null;
      if (key) out.push(key);
      for (const inv of await engine.find(MODELS.inventory)) {
        if (typeof inv.token === "number") {
          const t = await services.deps.tokenPlaintext(engine, inv.token).catch(() => null);
          if (t) out.push(t);
        }
        if (typeof inv.token_secret === "string" && inv.token_secret) {
          const o = await services.open(inv.token_secret).catch(() => null);
          if (o?.ok && o.value) out.push(o.value);
        }
      }
      for (const hv of await engine.find(MODELS.hypervisor)) {
        for (const field of ["password", "token_value", "ssh_password", "ssh_private_key"]) {
          const stored = hv[field];
          if (typeof stored !== "string" || !stored) continue;
          const o = await services.open(stored).catch(() => null);
          if (o?.ok && o.value) out.push(o.value);
        }
      }
      return out;
    },
  };
}
