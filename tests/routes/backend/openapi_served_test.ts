/**
 * The backend's OpenAPI document promises only what is served: every operation it lists is
 * routed (never the router's own 404 "Not Found", never 405/501), asked with a valid key. Run
 * against the whole app, so operations added by any feature are held to it too.
 */
import assert from "node:assert/strict";
import { wholeApp } from "./_whole_app.ts";
import { KEY } from "./_setup.ts";

Deno.test("backend OpenAPI: every listed operation is served (no route-level 404/405/501)", async () => {
  await using app = await wholeApp();
  const doc = await (await app.call("/openapi.json")).json();
  const operations: [string, string][] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, object>)) {
    for (const method of Object.keys(item)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) {
        operations.push([method.toUpperCase(), path]);
      }
    }
  }
  assert.ok(operations.length >= 15, `only ${operations.length} operations`);
  const unserved: string[] = [];
  for (const [method, template] of operations) {
    const path = template.replace(/\{[^}]+\}/g, "1");
    const res = await app.call(path, {
      method,
      key: KEY,
      ...(["POST", "PUT", "PATCH"].includes(method) ? { json: {} } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = res.headers.get("content-type")?.includes("event-stream")
      ? (await res.body?.cancel(), "")
      : await res.text();
    const routeMissing = res.status === 404 && /^\{"detail":"Not Found"\}$/.test(text);
    if (routeMissing || res.status === 405 || res.status === 501) {
      unserved.push(`${method} ${template} → ${res.status} ${text.slice(0, 120)}`);
    }
  }
  assert.deepEqual(unserved, [], "listed in /openapi.json but not served");
});

Deno.test("backend OpenAPI: the description names nothing the document does not list", async () => {
  await using app = await wholeApp();
  const doc = await (await app.call("/openapi.json")).json();
  const tags = new Set<string>();
  for (
    const item of Object.values(doc.paths as Record<string, Record<string, { tags?: string[] }>>)
  ) {
    for (const op of Object.values(item)) for (const tag of op.tags ?? []) tags.add(tag);
  }
  for (
    const [word, tag] of [["sync", /sync/], ["verbs", /verb|action/], [
      "provisioning",
      /provision|micro/,
    ]] as const
  ) {
    if (doc.info.description.toLowerCase().includes(word)) {
      assert.ok(
        [...tags].some((t) => tag.test(t)),
        `description promises ${word}; tags: ${[...tags]}`,
      );
    }
  }
});
