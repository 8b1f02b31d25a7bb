import assert from "node:assert/strict";
import { createInventoryApp } from "../../../routes/inventory/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { P, ROOT_TOKEN } from "./_harness.ts";

Deno.test("plugin routes: a chunked body over 1 MiB is refused with 413 like every inventory route", async () => {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: ROOT_TOKEN });
  try {
    const app = await createInventoryApp(deps);
    const chunk = new TextEncoder().encode(" ".repeat(64 * 1024));
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ >= 20) return controller.close();
        controller.enqueue(chunk);
      },
    });
    const res = await app.request(`http://inventory.test${P}storage/`, {
      method: "POST",
      body,
      headers: { authorization: `Token ${ROOT_TOKEN}`, "content-type": "application/json" },
    });
    assert.equal(res.status, 413);
    assert.match((await res.json()).detail, /too large/);
  } finally {
    deps.kv.close();
  }
});
