/** The Allow header's methods: read from the route table, compiled once, growing with it. */
import assert from "node:assert/strict";
import { allowedMethods, type RouteEntry } from "../../routes/_lib/allowed_methods.ts";

Deno.test("allowed methods: a route added after the first lookup is seen; params and middleware", () => {
  const routes: RouteEntry[] = [
    { method: "ALL", path: "*" },
    { method: "GET", path: "/endpoints/:id{[0-9]+}" },
    { method: "DELETE", path: "/endpoints/:id{[0-9]+}" },
    { method: "POST", path: "/endpoints" },
  ];
  assert.deepEqual(allowedMethods(routes, "/endpoints/7"), ["DELETE", "GET", "HEAD"]);
  assert.deepEqual(allowedMethods(routes, "/endpoints/x"), []);
  assert.deepEqual(allowedMethods(routes, "/endpoints/"), ["POST"]);
  assert.deepEqual(allowedMethods(routes, "/nothing"), []);
  routes.push({ method: "PATCH", path: "/endpoints/:id{[0-9]+}" });
  routes.push({ method: "PUT", path: "/:anything/sub" });
  assert.deepEqual(allowedMethods(routes, "/endpoints/7"), ["DELETE", "GET", "HEAD", "PATCH"]);
  assert.deepEqual(allowedMethods(routes, "/nothing/sub"), ["PUT"]);
});
