/** The path-template trie: literal before parameter, backtracking, decoding, no match. */
import assert from "node:assert/strict";
import { Router } from "../../../domain/hypervisor_schema/router.ts";
import type { Operation } from "../../../domain/hypervisor_schema/schema.ts";

const op = (name: string): Operation => ({ method: "GET", name });

function router(): Router {
  const r = new Router([]);
  r.add("/nodes", "GET", op("nodes"));
  r.add("/nodes/{node}", "GET", op("node"));
  r.add("/nodes/{node}/qemu", "GET", op("qemu"));
  r.add("/nodes/{node}/qemu/{vmid}/config", "GET", op("config"));
  r.add("/nodes/{node}/tasks/{upid}/status", "GET", op("task"));
  r.add("/nodes/status/special", "GET", op("literal"));
  r.add("/nodes/{node}/qemu", "POST", { method: "POST", name: "create" });
  return r;
}

Deno.test("router: literal segments win over parameters, with backtracking", () => {
  const r = router();
  assert.equal(r.match("/nodes/status/special")?.route.operations.GET?.name, "literal");
  // "status" is a literal child of /nodes, but /nodes/status/qemu only exists via {node}.
  const m = r.match("/nodes/status/qemu");
  assert.equal(m?.route.template, "/nodes/{node}/qemu");
  assert.deepEqual(m?.params, { node: "status" });
  assert.equal(r.match("/nodes/pve1/qemu")?.route.operations.POST?.name, "create");
  assert.equal(r.routes.length, 6);
});

Deno.test("router: parameters are percent-decoded; trailing slash tolerated; unknown paths miss", () => {
  const r = router();
  const upid = "UPID:pve1:00001000:00100000:69559F00:qmstart:100:root@pam!ci:";
  const m = r.match(`/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`);
  assert.deepEqual(m?.params, { node: "pve1", upid });
  assert.deepEqual(r.match("/nodes/pve1/qemu/100/config/")?.params, { node: "pve1", vmid: "100" });
  assert.equal(r.match("/nodes/pve1/qemu/100"), undefined);
  assert.equal(r.match("/nodes//qemu"), undefined);
  assert.equal(r.match("/nothing"), undefined);
  assert.equal(r.match("/nodes/%E0%A4%A/qemu"), undefined); // malformed escape
});

Deno.test("router: different parameter names at one position both route", () => {
  const r = router();
  r.add("/nodes/{name}/other", "GET", op("other"));
  assert.deepEqual(r.match("/nodes/x/other")?.params, { name: "x" });
  assert.deepEqual(r.match("/nodes/x/qemu")?.params, { node: "x" });
});

Deno.test("router: an unencoded volume id takes the rest of a leaf path", () => {
  const r = router();
  r.add("/nodes/{node}/storage/{storage}/content/{volume}", "GET", op("volume"));
  const m = r.match("/nodes/pve1/storage/local/content/local:backup/vzdump-qemu-100.vma.zst");
  assert.deepEqual(m?.params, {
    node: "pve1",
    storage: "local",
    volume: "local:backup/vzdump-qemu-100.vma.zst",
  });
  // Only that parameter: other paths with extra segments still miss.
  assert.equal(r.match("/nodes/pve1/qemu/100/config/extra"), undefined);
});
