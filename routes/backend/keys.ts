import { createRoute, z } from "@hono/zod-openapi";
import { createKey, describeChange, registerFirstKey } from "../../domain/api_keys.ts";
import { backendRouter, fail, KEY_CHANGE_STATUS, REGISTER_STATUS } from "./errors.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import {
  Detail,
  ErrorResponses,
  jsonBody,
  jsonContent,
  KeyRecord,
  LastActiveConflict,
  pathId,
} from "./schemas.ts";

const KeyId = z.object({ id: pathId() });

const KeyChangeResponses = {
  200: jsonContent(KeyRecord, "The key record"),
  404: jsonContent(Detail, "Unknown key id"),
  409: jsonContent(LastActiveConflict, "Retiring the last active key"),
  ...ErrorResponses,
} as const;

export function keyRoutes(services: BackendServices) {
  const { keys, deps, authCache } = services;
  const app = backendRouter<BackendEnv>();

  app.openapi(
    createRoute({
      method: "get",
      path: "/auth/bootstrap-status",
      tags: ["auth"],
      summary: "Whether the first key still has to be registered (exempt)",
      security: [],
      responses: {
        200: jsonContent(
          z.object({ needs_bootstrap: z.boolean(), has_db_keys: z.boolean() }),
          "Bootstrap status",
        ),
      },
    }),
    async (c) => {
      const claimed = await keys.isClaimed();
      return c.json({ needs_bootstrap: !claimed, has_db_keys: claimed }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/auth/register-key",
      tags: ["auth"],
      summary: "Register the first API key (exempt; only while no key was ever registered)",
      security: [],
      request: jsonBody(
        z.object({
          api_key: z.string().max(4096).openapi({
            description: "At least 32 characters, 64 recommended",
          }),
          label: z.string().max(200).optional(),
        }).strict(),
      ),
      responses: {
        201: jsonContent(Detail, "Registered"),
        400: jsonContent(Detail, "Key shorter than 32 characters"),
        409: jsonContent(Detail, "A key is already configured"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { api_key, label } = c.req.valid("json");
      const outcome = await registerFirstKey(keys, api_key, label ?? "", deps.now());
      return c.json({ detail: outcome.detail }, REGISTER_STATUS[outcome.outcome]);
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/auth/keys",
      tags: ["auth"],
      summary: "List API keys, newest first (never a hash or a key)",
      responses: {
        200: jsonContent(z.object({ keys: z.array(KeyRecord) }), "Keys"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const records = await keys.list();
      return c.json({ keys: records.map(({ digest: _d, ...rest }) => rest) }, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/auth/keys",
      tags: ["auth"],
      summary: "Create a key; its raw_key is shown once, in this response",
      request: {
        body: {
          required: false,
          content: {
            "application/json": {
              schema: z.object({ label: z.string().max(200).optional() }).strict(),
            },
          },
        },
      },
      responses: {
        201: jsonContent(KeyRecord.extend({ raw_key: z.string() }), "The new key, with raw_key"),
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const body = c.req.valid("json") as { label?: string } | undefined;
      return c.json(await createKey(keys, body?.label ?? "", deps.now()), 201);
    },
  );

  for (const action of ["deactivate", "activate"] as const) {
    app.openapi(
      createRoute({
        method: "post",
        path: `/auth/keys/{id}/${action}`,
        tags: ["auth"],
        summary: action === "activate" ? "Activate a key" : "Deactivate a key",
        request: { params: KeyId },
        responses: KeyChangeResponses,
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const change = describeChange(await keys.setActive(id, action === "activate"));
        authCache.clear();
        if (!change.ok) throw fail(KEY_CHANGE_STATUS[change.reason], change.detail);
        return c.json(change.record, 200);
      },
    );
  }

  app.openapi(
    createRoute({
      method: "delete",
      path: "/auth/keys/{id}",
      tags: ["auth"],
      summary: "Delete a key",
      request: { params: KeyId },
      responses: {
        204: { description: "Deleted" },
        404: KeyChangeResponses[404],
        409: KeyChangeResponses[409],
        ...ErrorResponses,
      },
    }),
    async (c) => {
      const { id } = c.req.valid("param");
      const change = describeChange(await keys.delete(id));
      authCache.clear();
      if (!change.ok) throw fail(KEY_CHANGE_STATUS[change.reason], change.detail);
      return c.body(null, 204);
    },
  );

  return app;
}
