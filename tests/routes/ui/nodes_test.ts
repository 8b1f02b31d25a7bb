/**
 * The nodes page: a synced node record carries its size (maxcpu, maxmem) but no load, and the
 * page shows that size instead of dashes; a record with a load shows both.
 */
import assert from "node:assert/strict";
import { consoleHarness, ROOT } from "./_console.ts";

Deno.test("console nodes: size without a load reads as cores and memory, not dashes", async () => {
  const h = await consoleHarness();
  try {
    const endpoint = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "lab",
      domain: "pve.example",
      port: 8006,
      username: "root@pam",
      enabled: false,
    });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const cluster = await h.api("POST", "/api/plugins/service/clusters/", {
      endpoint: endpoint.body.id,
      name: "lab",
    });
    assert.equal(cluster.status, 201, JSON.stringify(cluster.body));
    const node = (name: string, extra: Record<string, unknown>) =>
      h.api("POST", "/api/plugins/service/nodes/", {
        endpoint: endpoint.body.id,
        cluster: cluster.body.id,
        name,
        maxcpu: 16,
        maxmem: 64 * 1024 ** 3,
        ...extra,
      });
    assert.equal((await node("pve1", {})).status, 201);
    assert.equal((await node("pve2", { cpu: 0.25, mem: 8 * 1024 ** 3 })).status, 201);
    const c = h.client();
    await c.signIn(ROOT);
    const page = await c.get("/ui/nodes");
    assert.equal(page.status, 200);
    assert.match(page.text, /pve1 .*16 cores 64 GiB/);
    assert.match(page.text, /pve2 .*25 % of 16 8\.0 GiB \/ 64 GiB/);
    assert.doesNotMatch(page.text, /— \/ 64 GiB/);
  } finally {
    h.close();
  }
});
