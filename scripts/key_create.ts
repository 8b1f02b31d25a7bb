/**
 * `deno task key:create [label]`: creates a backend API key directly in the store and prints it
 * once: the way back in when no key the backend accepts is at hand (the plugin's backend
 * endpoint lost its key, the first key was never written down). Whoever can run this on the
 * backend's host can read its KV file anyway, so it grants nothing new. It reads the same
 * configuration as `deno task start` (SERVICE_KV_PATH, default `./data/bridgebox.kv` relative to
 * the working directory): run it where and how the server runs. stdout carries the key alone,
 * so `KEY=$(deno task key:create)` works; the store it wrote to is named on stderr.
 */
import { createKey } from "../domain/api_keys.ts";
import { createKvStorage } from "../storage/kv/mod.ts";
import { describeStore, openConfiguredStore } from "./token_create.ts";

if (import.meta.main) {
  const { config, kv } = await openConfiguredStore();
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
