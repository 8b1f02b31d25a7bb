/**
 * `deno task token:create [description]`: creates a v1 superuser inventory token in the KV
 * store named by the configuration (SERVICE_KV_PATH) and prints it once. The plaintext is
 * kept Fernet-encrypted (see domain/netbox/tokens.ts), and looked up by its SHA-256 digest.
 */
import { parseConfig } from "../config.ts";
import { jsonLogger } from "../domain/logger.ts";
import { createInventoryCore, createSuperuserToken } from "../routes/inventory/mod.ts";

if (import.meta.main) {
  const config = parseConfig(Deno.env.toObject());
  if (config.kvPath && config.kvPath !== ":memory:" && !config.kvPath.includes("://")) {
    const dir = config.kvPath.replace(/\/[^/]*$/, "");
    if (dir && dir !== config.kvPath) await Deno.mkdir(dir, { recursive: true });
  }
  const kv = await Deno.openKv(config.kvPath);
  try {
    const ctx = createInventoryCore({
      config,
      kv,
      fetch: globalThis.fetch,
      now: Date.now,
      logger: jsonLogger(),
    });
    const description = Deno.args.join(" ").trim() || "created with deno task token:create";
    const { id, token } = await createSuperuserToken(ctx, description);
    console.log(`Created superuser token ${id}. It is shown only once:\n`);
    console.log(token);
    console.log(`\nUse it as: Authorization: Token ${token}`);
  } finally {
    kv.close();
  }
}
