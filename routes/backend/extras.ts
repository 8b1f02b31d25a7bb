/**
 * The backend's extras (docs/jobs.md, "Bootstrap"): `GET /extras/bootstrap-status` tells
 * whether the inventory holds what the sync needs; `POST /extras/custom-fields/reconcile`
 * creates or updates it with the stored inventory credential. Both reach the inventory the
 * way the sync does (the inventory endpoint copy, its sealed token opened at call time).
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { BackendEnv, BackendServices } from "./context.ts";
import { backendRouter } from "./errors.ts";
import { ErrorResponses, jsonContent } from "./schemas.ts";
import { CredentialError } from "../../domain/credentials.ts";
import { checkBootstrap, reconcileBootstrap } from "../../domain/extras/bootstrap.ts";
import { InventoryApiClient, InventoryApiError } from "../../clients/inventory_api.ts";

/** Each inventory call of these routes; a status page must answer quickly. */
const CALL_TIMEOUT_MS = 15_000;

const Warning = z.object({ object: z.string(), error: z.string() });

const BootstrapStatus = z.object({
  ok: z.boolean(),
  skipped: z.boolean().openapi({ description: "true when the check could not run at all" }),
  reason: z.string().nullable().openapi({
    description: "no_inventory_endpoint | inventory_unreachable | inventory_auth_failed | " +
      "credential_undecryptable | inventory_error | missing_bootstrap_objects, or null",
  }),
  detail: z.string().optional(),
  warnings: z.array(Warning),
  created: z.number().int().openapi({ description: "Always 0: this check never writes" }),
  patched: z.number().int().openapi({ description: "Always 0: this check never writes" }),
  unchanged: z.number().int().openapi({ description: "Objects found present and current" }),
}).openapi("BootstrapStatus");

const Reconciled = z.object({
  ok: z.literal(true),
  created: z.number().int(),
  updated: z.number().int(),
  unchanged: z.number().int(),
}).openapi("CustomFieldsReconciled");

const ReconcileFailed = z.object({
  ok: z.literal(false),
  reason: z.string(),
  detail: z.string(),
}).openapi("CustomFieldsReconcileFailed");

type Failure = { reason: string; detail: string; status: 409 | 502 };

function classify(error: unknown): Failure {
  if (error instanceof CredentialError) {
    return { reason: "credential_undecryptable", detail: error.message, status: 409 };
  }
  if (error instanceof InventoryApiError) {
    if (error.status === 401 || error.status === 403) {
      return { reason: "inventory_auth_failed", detail: error.message, status: 502 };
    }
    if (error.status === null) {
      return { reason: "inventory_unreachable", detail: error.message, status: 502 };
    }
    return { reason: "inventory_error", detail: error.message, status: 502 };
  }
  throw error;
}

export function extrasRoutes(services: BackendServices) {
  const app = backendRouter<BackendEnv>();

  async function inventory(): Promise<InventoryApiClient | null> {
    const [record] = await services.inventoryEndpoints.list();
    if (!record) return null;
    const label = `inventory endpoint ${record.id} ("${record.name}")`;
    return new InventoryApiClient(record, {
      fetch: services.deps.fetch,
      timeoutMs: CALL_TIMEOUT_MS,
      token: async () => {
        const token = await services.vault.open(record.token, record.key_source, label);
        if (!token) throw new CredentialError(label, "no token is stored");
        return token;
      },
    });
  }

  app.openapi(
    createRoute({
      method: "get",
      path: "/extras/bootstrap-status",
      tags: ["extras"],
      summary: "Does the inventory hold what the sync needs?",
      description: "Checks the ownership tags, the reference objects (cluster type, " +
        "manufacturer, device type, roles) and the service's custom fields. Read-only; " +
        "`ok` is false on any real problem, with `reason` and one warning per missing object.",
      responses: {
        200: jsonContent(BootstrapStatus, "The check's result (also when ok is false)"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const base = { warnings: [], created: 0, patched: 0, unchanged: 0 };
      const inv = await inventory();
      if (!inv) {
        return c.json({
          ok: false,
          skipped: true,
          reason: "no_inventory_endpoint",
          detail: "No inventory endpoint found. Please add an inventory endpoint in the database.",
          ...base,
        }, 200);
      }
      try {
        const report = await checkBootstrap(inv, c.req.raw.signal);
        const ok = report.warnings.length === 0;
        return c.json({
          ok,
          skipped: false,
          reason: ok ? null : "missing_bootstrap_objects",
          warnings: report.warnings,
          created: 0,
          patched: 0,
          unchanged: report.unchanged,
        }, 200);
      } catch (error) {
        const failure = classify(error);
        return c.json({
          ok: false,
          skipped: false,
          reason: failure.reason,
          detail: failure.detail,
          ...base,
        }, 200);
      }
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/extras/custom-fields/reconcile",
      tags: ["extras"],
      summary: "Create or update the service's custom fields (and the sync's bootstrap objects)",
      responses: {
        200: jsonContent(Reconciled, "What was created, updated or already current"),
        400: jsonContent(ReconcileFailed, "No inventory endpoint copy"),
        409: jsonContent(ReconcileFailed, "The stored credential cannot be decrypted"),
        502: jsonContent(
          ReconcileFailed,
          "The inventory refused (inventory_auth_failed: the stored token is stale) or is unreachable",
        ),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const inv = await inventory();
      if (!inv) {
        return c.json({
          ok: false as const,
          reason: "no_inventory_endpoint",
          detail: "No inventory endpoint found. Please add an inventory endpoint in the database.",
        }, 400);
      }
      try {
        const report = await reconcileBootstrap(inv, c.req.raw.signal);
        services.deps.logger.log("info", "custom fields reconciled", { ...report });
        return c.json({ ok: true as const, ...report }, 200);
      } catch (error) {
        const failure = classify(error);
        return c.json(
          { ok: false as const, reason: failure.reason, detail: failure.detail },
          failure.status,
        );
      }
    },
  );

  return app;
}
