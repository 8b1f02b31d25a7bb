/**
 * `deno task token:create [--v1] [description]`: creates a superuser inventory token and prints
 * it once: a v2 token (`nbt_<key>.<secret>`, sent as `Authorization: Bearer nbt_…`) by default,
 * as NetBox 4.5+ makes them; `--v1` makes a deprecated v1 token (40 hex characters, sent as
 * `Authorization: Token …`). It reads the same configuration as `deno task start`
 * (SERVICE_KV_PATH, default `./data/bridgebox.kv` relative to the working directory;
 * SERVICE_ENCRYPTION_KEY), so run it where and how the server runs, or the server will not know
 * the token. The store it wrote to is named on stderr; stdout carries the token alone, so
 * `T=$(deno task token:create)` works and errors stay visible. A v2 secret is kept only as a
 * keyed HMAC, a v1 plaintext Fernet-encrypted (see domain/netbox/tokens.ts).
 */
import { type Config, ConfigError, parseConfig } from "../config.ts";
import { jsonLogger } from "../infra/logger.ts";
import { createInventoryCore, createSuperuserToken } from "../routes/inventory/mod.ts";
import { createKvStorage } from "../storage/kv/mod.ts";

/** Where a KV path points, in words a user can compare with the server's start-up line. */
export function describeStore(kvPath: string | undefined, cwd = Deno.cwd()): string {
  if (kvPath === undefined) return "the platform KV (Deno Deploy)";
  if (kvPath === ":memory:") return ":memory: (gone when this command ends; useless for a server)";
  if (kvPath.includes("://")) return kvPath;
  return kvPath.startsWith("/")
    ? kvPath
    : `${cwd.replace(/\/$/, "")}/${kvPath.replace(/^\.\//, "")}`;
}

/**
 * The configuration and the KV store `deno task start` would open, for the commands that write
 * into that store (token:create, key:create): a configuration error exits 2, and a file store's
 * directory is created as the server would.
 */
export async function openConfiguredStore(): Promise<{ config: Config; kv: Deno.Kv }> {
  let config;
  try {
    config = parseConfig(Deno.env.toObject());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`Configuration error: ${error.message}`);
    Deno.exit(2);
  }
  if (config.kvPath && config.kvPath !== ":memory:" && !config.kvPath.includes("://")) {
    const dir = config.kvPath.replace(/\/[^/]*$/, "");
    if (dir && dir !== config.kvPath) await Deno.mkdir(dir, { recursive: true });
  }
  return { config, kv: await Deno.openKv(config.kvPath) };
}

if (import.meta.main) {
  const { config, kv } = await openConfiguredStore();
  try {
    const ctx = createInventoryCore({
      config,
      storage: createKvStorage(kv, { atRestKey: config.encryptionKey, now: Date.now }),
      fetch: globalThis.fetch,
      now: Date.now,
      logger: jsonLogger(),
    });
    const v1 = Deno.args.includes("--v1");
    const words = Deno.args.filter((a) => a !== "--v1");
    const description = words.join(" ").trim() || "created with deno task token:create";
    const { id, token } = await createSuperuserToken(ctx, description, v1 ? 1 : 2);
    console.error(
      `Created ${v1 ? "v1 (deprecated)" : "v2"} superuser token ${id} in ` +
        `${describeStore(config.kvPath)}.\n` +
        "A server started with a different SERVICE_KV_PATH (or in another directory) will " +
        "answer 403 Invalid token.\nIt is shown only once; use it as: " +
        (v1
          ? "Authorization: Token <token>"
          : "Authorization: Bearer <token> (clients that send `Token <token>`, such as pynetbox " +
            "7.0 and Ansible's netbox.netbox, work too: the nbt_ prefix tells the version)"),
    );
    console.log(token);
  } finally {
    kv.close();
  }
}
