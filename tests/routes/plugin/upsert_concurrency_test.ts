/** Upsert collections (storage, task history): concurrent writers of one new key all succeed. */
import assert from "node:assert/strict";
import { harness, P } from "./_harness.ts";

Deno.test("upserts (storage, task history): concurrent writers of one new key never get a 400", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "x",
    });
    const cluster = await h.call("POST", P + "clusters/", { name: "c", endpoint: ep.body.id });
    assert.equal(cluster.status, 201, JSON.stringify(cluster.body));
    const storage = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h.call("POST", P + "storage/", {
          name: "nfs",
          cluster: cluster.body.id,
          content: i % 2 ? ["iso"] : ["backup"],
        })),
    );
    assert.deepEqual(
      storage.map((r) => r.status).filter((s) => s !== 200 && s !== 201),
      [],
      JSON.stringify(storage.map((r) => r.body)),
    );
    assert.equal((await h.call("GET", P + "storage/?name=nfs")).body.count, 1);
    const upid = "UPID:n1:00002:0001:00000001:qmstart:101:root@pam:";
    const tasks = await Promise.all(
      Array.from(
        { length: 8 },
        () => h.call("POST", P + "task-history/", { endpoint: ep.body.id, upid, status: "OK" }),
      ),
    );
    assert.deepEqual(tasks.map((r) => r.status).filter((s) => s !== 200 && s !== 201), []);
    assert.equal((await h.call("GET", P + "task-history/")).body.count, 1);
  } finally {
    await h.close();
  }
});
