/**
 * An endpoint's save answers with the push that save made: the push-on-save hook records its
 * outcome (`last_push`) on the object after the write, so the answer of a PATCH and of a bulk
 * PATCH is the object as stored after the hook, never the draft as it was before it
 * (docs/api-behaviour.md, Push on save). Endpoint records are the models whose save hook changes
 * the object it saved.
 */
import assert from "node:assert/strict";
import { NO_BACKEND } from "../../../domain/plugin/service.ts";
import { refusingListener } from "../../_net.ts";
import { harness, P } from "./_harness.ts";

const HV = P + "endpoints/hypervisor/";

Deno.test("a PATCH and a bulk PATCH of endpoints answer with the push their save made", async () => {
  const h = await harness();
  const refusing = refusingListener();
  try {
    // Saved before any backend endpoint exists: each push fails for want of one.
    const ids: number[] = [];
    for (const name of ["pve-a", "pve-b", "pve-c"]) {
      const r = await h.call("POST", HV, { name, domain: `${name}.example.com`, password: "x" });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.deepEqual([r.body.last_push.ok, r.body.last_push.error], [false, NO_BACKEND]);
      ids.push(r.body.id);
    }
    // A backend endpoint where every connection is closed at once: the next pushes fail there.
    const backend = await h.call("POST", P + "endpoints/backend/", {
      name: "backend",
      domain: "127.0.0.1",
      port: refusing.port,
      use_https: false,
    });
    assert.equal(backend.status, 201, JSON.stringify(backend.body));

    const single = await h.call("PATCH", `${HV}${ids[0]}/`, { name: "lab-a" });
    assert.equal(single.status, 200, JSON.stringify(single.body));
    assert.equal(single.body.name, "lab-a");
    assert.equal(single.body.last_push.ok, false);
    assert.match(single.body.last_push.error, /unreachable/, JSON.stringify(single.body));
    const readSingle = await h.call("GET", `${HV}${ids[0]}/`);
    assert.deepEqual(single.body, readSingle.body, "the answer is the object as stored");

    const bulk = await h.call("PATCH", HV, [
      { id: ids[1], name: "lab-b" },
      { id: ids[2], name: "lab-c" },
    ]);
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
    assert.deepEqual(bulk.body.map((e: { id: number }) => e.id), [ids[1], ids[2]]);
    for (const [i, answer] of bulk.body.entries()) {
      assert.equal(answer.name, ["lab-b", "lab-c"][i]);
      assert.match(answer.last_push.error, /unreachable/, JSON.stringify(answer));
      const read = await h.call("GET", `${HV}${answer.id}/`);
      assert.deepEqual(answer, read.body, "each bulk answer is the object as stored");
    }
  } finally {
    refusing.close();
    await h.close();
  }
});
