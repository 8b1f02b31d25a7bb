import { createRoute, z } from "@hono/zod-openapi";
import { rekeyAll } from "../../domain/rekey.ts";
import { backendRouter } from "./errors.ts";
import type { BackendEnv, BackendServices } from "./context.ts";
import { ErrorResponses, jsonContent } from "./schemas.ts";

const RekeyReport = z.object({
  resealed: z.number().int().openapi({ description: "Records whose secrets were sealed again" }),
  unchanged: z.number().int().openapi({
    description: "Records already under the current key, with no secret, or with no key to use",
  }),
  failed: z.array(z.object({ endpoint: z.string(), reason: z.string() })).openapi({
    description: "Records that could not be re-sealed (left exactly as they were)",
  }),
}).openapi("RekeyReport");

export function rekeyRoutes(services: BackendServices) {
  const app = backendRouter<BackendEnv>();
  app.openapi(
    createRoute({
      method: "post",
      path: "/credentials/rekey",
      tags: ["credentials"],
      summary: "Re-seal every stored endpoint secret under the current key",
      description: "Secrets stored before a key existed, or under an older key, are sealed " +
        "again with the key a save would use now (SERVICE_ENCRYPTION_KEY, else the plugin " +
        "setting encryption_key for hypervisor secrets). One atomic write per record; a record " +
        "edited meanwhile is read again. Never downgrades a sealed secret to plaintext.",
      responses: { 200: jsonContent(RekeyReport, "What changed"), ...ErrorResponses },
    }),
    async (c) =>
      c.json(
        await rekeyAll(
          services.vault,
          services.inventoryEndpoints,
          services.hypervisorEndpoints,
        ),
        200,
      ),
  );
  return app;
}
