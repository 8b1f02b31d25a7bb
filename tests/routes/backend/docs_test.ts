import assert from "node:assert/strict";
import { backend } from "./_setup.ts";

Deno.test("docs: Scalar and Redoc pages load their scripts from this server, never a CDN", async () => {
  await using h = await backend();
  const scalar = await (await h.call("/docs")).text();
  assert.match(scalar, /src="\/static\/scalar\.js"/);
  const redoc = await (await h.call("/redoc")).text();
  assert.match(redoc, /src="\/static\/redoc\.js"/);
  for (const page of [scalar, redoc]) {
    assert.ok(!/https?:\/\/(cdn|unpkg|fonts)\./.test(page), "no external script or font host");
  }
  for (const asset of ["/static/scalar.js", "/static/redoc.js"]) {
    const res = await h.call(asset);
    assert.equal(res.status, 200, asset);
    assert.match(res.headers.get("content-type") ?? "", /javascript/);
    const text = await res.text();
    assert.ok(text.length > 100_000, `${asset} is the real bundle`);
    // Redoc's footer logo came from its CDN on every page (a failed request offline).
    assert.doesNotMatch(text, /https:\/\/cdn\.redoc\.ly/, asset);
  }
  assert.equal(
    (await h.call("/static/../deno.json")).status,
    401,
    "nothing else is served unauthenticated",
  );
  assert.equal((await h.call("/static/other.js")).status, 404);
});

Deno.test("docs: /openapi.json documents real schemas and the API key scheme", async () => {
  await using h = await backend();
  const doc = await (await h.call("/openapi.json")).json();
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual(doc.components.securitySchemes.ApiKey, {
    type: "apiKey",
    in: "header",
    name: "X-Service-API-Key",
  });
  assert.deepEqual(doc.security, [{ ApiKey: [] }]);
  for (
    const path of [
      "/",
      "/health",
      "/meta",
      "/auth/bootstrap-status",
      "/auth/register-key",
      "/auth/keys",
      "/auth/keys/{id}/deactivate",
      "/auth/keys/{id}/activate",
      "/auth/keys/{id}",
      "/inventory/endpoint",
      "/inventory/endpoint/{id}",
      "/hypervisor/endpoints",
      "/hypervisor/endpoints/{id}",
    ]
  ) assert.ok(doc.paths[path], path);
  assert.deepEqual(doc.paths["/auth/register-key"].post.security, [], "exempt routes say so");
  const body =
    doc.paths["/hypervisor/endpoints"].post.requestBody.content["application/json"].schema;
  assert.ok(body.$ref || body.properties, "request body schema is documented");
  assert.ok(doc.components.schemas.HypervisorEndpointInput.properties.allow_writes);
  assert.ok(
    !("password" in doc.components.schemas.HypervisorEndpoint.properties),
    "secrets never in responses",
  );
});
