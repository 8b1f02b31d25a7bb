/**
 * `deno task key:create [label]`: creates a backend API key directly in the store and prints it
 * once: the way back in when no key the backend accepts is at hand (the plugin's backend
 * endpoint lost its key, the first key was never written down). Whoever can run this on the
 * backend's host can read its KV file anyway, so it grants nothing new. It reads the same
 * configuration as `deno task start` (SERVICE_KV_PATH, default `./data/bridgebox.kv` relative to
 * the working directory): run it where and how the server runs. stdout carries the key alone,
 * so `KEY=$(deno task key:create)` works; the store it wrote to is named on stderr.
 */
import { ConfigError, parseConfig } from "../config.ts";
import { createKey } from "../domain/api_keys.ts";
import { createKvStorage } from "../storage/kv/mod.ts";
import { describeStore } from "./token_create.ts";

if (import.meta.main) {
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
  const kv = await Deno.openKv(config.kvPath);
  try {
    const storage = createKvStorage(kv, { atRestKey: config.encryptionKey, now: Date.now });
    const label = Deno.args.join(" ").trim() || "created with deno task key:create";
    const key = await createKey(storage.apiKeys, label, Date.now());
    console.error(
      `Created backend API key ${key.id} ("${label}") in ${describeStore(config.kvPath)}.\n` +
        "A server started with a different SERVICE_KV_PATH (or in another directory) will " +
        "answer 401 Invalid API key.\nIt is shown only once; send it as: X-Service-API-Key: <key>",
    );
    console.log(key.raw_key);
  } finally {
    kv.close();
  }
}
