/**
 * The sync's inventory client walking lists of thousands of objects on a real socket while
 * they are written: every object present throughout the walk comes back exactly once.
 */
import assert from "node:assert/strict";
import { createInventoryApp } from "../../routes/inventory/mod.ts";
import { InventoryApiClient } from "../../clients/inventory_api.ts";
import { testDeps } from "../_helpers.ts";

const TOKEN = "0123456789abcdef0123456789abcdef01234567";
const VMS = "virtualization/virtual-machines/";

async function withInventory(
  run: (
    port: number,
    // deno-lint-ignore no-explicit-any
    call: (method: string, path: string, body?: unknown) => Promise<any>,
  ) => Promise<void>,
) {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: TOKEN });
  const app = await createInventoryApp(deps);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/api/${path}`, {
      method,
      headers: { authorization: `Token ${TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
    return text ? JSON.parse(text) : null;
  };
  try {
    await run(server.addr.port, call);
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
}

function clientFor(port: number, send: typeof fetch): InventoryApiClient {
  return new InventoryApiClient({
    ip: "127.0.0.1",
    port,
    use_https: false,
    verify_ssl: false,
    token_version: "v1",
    token_key: null,
  }, { fetch: send, token: () => Promise.resolve(TOKEN) });
}

Deno.test("inventory client: a 5,000-VM tagged list written between its pages comes back whole, once each", async () => {
  await withInventory(async (port, call) => {
    const tag = await call("POST", "extras/tags/", { name: "synced", slug: "bridgebox-synced" });
    const type = await call("POST", "virtualization/cluster-types/", { name: "PVE", slug: "pve" });
    const cluster = await call("POST", "virtualization/clusters/", { name: "c1", type: type.id });
    // Names out of id order (the VM list's default ordering is by name), one in five untagged.
    const total = 5000;
    for (let first = 0; first < total; first += 1000) {
      await call(
        "POST",
        VMS,
        Array.from({ length: 1000 }, (_, k) => {
          const n = first + k;
          return {
            name: `vm-${String((n * 7919) % total).padStart(5, "0")}`,
            cluster: cluster.id,
            tags: n % 5 === 4 ? [] : [tag.id],
          };
        }),
      );
    }
    const all = await clientFor(port, fetch).list(VMS, {});
    // Kept for a run without the API's links; nested objects still say what they are.
    const cl = all[0].cluster as Record<string, unknown>;
    assert.equal("url" in all[0] || "display_url" in all[0] || "url" in cl, false);
    assert.equal(cl.id, cluster.id);
    assert.equal(typeof cl.display, "string");
    const isTagged = (v: Record<string, unknown>) => (v.tags as unknown[]).length > 0;
    const tagged = all.filter(isTagged).map((v) => v.id);
    const untagged = all.filter((v) => !isTagged(v)).map((v) => v.id);
    assert.equal(tagged.length, 4000);

    // After each page is answered and before the client reads it, another writer deletes a
    // tagged VM the walk has passed, tags a VM it has passed, and creates a tagged VM.
    const touched = new Set<number>();
    let pages = 0;
    const writing: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if ((init?.method ?? "GET") === "GET" && String(input).includes(VMS)) {
        pages++;
        // The merged config context is never read by the sync: not rendered for it.
        assert.match(String(input), /[?&]exclude=config_context(&|$)/);
        const gone = tagged[pages * 3];
        const newlyTagged = untagged[pages];
        touched.add(gone).add(newlyTagged);
        await call("DELETE", `${VMS}${gone}/`);
        await call("PATCH", `${VMS}${newlyTagged}/`, { tags: [tag.id] });
        const made = await call("POST", VMS, {
          name: `late-${pages}`,
          cluster: cluster.id,
          tags: [tag.id],
        });
        touched.add(made.id);
      }
      return res;
    };
    const seen = (await clientFor(port, writing).list(VMS, { tag: "bridgebox-synced" })).map((
      v,
    ) => v.id);
    assert.ok(pages >= 5, `the walk crossed ${pages} pages`);
    assert.equal(new Set(seen).size, seen.length, "no object twice");
    const seenSet = new Set(seen);
    const missed = tagged.filter((id) => !touched.has(id) && !seenSet.has(id));
    assert.deepEqual(missed, [], "every VM tagged throughout the walk was returned");
  });
});

Deno.test("inventory: an id-ordered page after an id counts what is left under the filter", async () => {
  await withInventory(async (_port, call) => {
    const tag = await call("POST", "extras/tags/", { name: "synced", slug: "bridgebox-synced" });
    const sites = await call(
      "POST",
      "dcim/sites/",
      Array.from({ length: 30 }, (_, i) => ({
        name: `s${i}`,
        slug: `s${i}`,
        tags: i % 3 === 0 ? [] : [tag.id],
      })),
    );
    const tagged = (sites as { id: number; tags: unknown[] }[]).filter((s) => s.tags.length)
      .map((s) => s.id);
    let after = 0;
    const walked: number[] = [];
    for (;;) {
      const page = await call(
        "GET",
        `dcim/sites/?tag=bridgebox-synced&ordering=id&id__gt=${after}&limit=7`,
      );
      const left = tagged.filter((id) => id > after);
      assert.equal(page.count, left.length, `count after id ${after}`);
      assert.deepEqual(page.results.map((s: { id: number }) => s.id), left.slice(0, 7));
      if (page.results.length === 0) break;
      walked.push(...page.results.map((s: { id: number }) => s.id));
      after = walked[walked.length - 1];
    }
    assert.deepEqual(walked, tagged);
    // id__gte and no filter at all: the same walk over every object.
    const gte = await call("GET", `dcim/sites/?ordering=id&id__gte=${sites[10].id}&limit=5`);
    assert.equal(gte.count, 20);
    assert.deepEqual(
      gte.results.map((s: { id: number }) => s.id),
      sites.slice(10, 15).map((s: { id: number }) => s.id),
    );
  });
});

Deno.test("inventory client: pages come one at a time and make the list; its own writes are told from someone else's by last_updated", async () => {
  await withInventory(async (port, call) => {
    const sites: { id: number }[] = [];
    for (let first = 0; first < 2500; first += 500) {
      sites.push(
        ...await call(
          "POST",
          "dcim/sites/",
          Array.from({ length: 500 }, (_, i) => ({ name: `s${first + i}`, slug: `s${first + i}` })),
        ),
      );
    }
    const client = clientFor(port, fetch);
    const sizes: number[] = [];
    const ids: number[] = [];
    for await (const page of client.pages("dcim/sites/", {})) {
      sizes.push(page.length);
      ids.push(...page.map((s) => s.id));
    }
    assert.deepEqual(sizes, [1000, 1000, 500]);
    assert.deepEqual(ids, sites.map((s) => s.id));
    assert.deepEqual((await client.list("dcim/sites/", {})).map((s) => s.id), ids);

    const [mine] = await client.update("dcim/sites/", [{ id: ids[0], description: "sync" }]);
    assert.equal(client.isOwnWrite("dcim/sites/", ids[0], mine.last_updated), true);
    assert.equal(client.isOwnWrite("dcim/sites/", ids[1], mine.last_updated), false, "other id");
    assert.equal(client.isOwnWrite("dcim/regions/", ids[0], mine.last_updated), false);
    // Someone else writes the site afterwards: its new version is not the client's.
    const theirs = await call("PATCH", `dcim/sites/${ids[0]}/`, { description: "admin" });
    assert.notEqual(theirs.last_updated, mine.last_updated);
    assert.equal(client.isOwnWrite("dcim/sites/", ids[0], theirs.last_updated), false);
  });
});

Deno.test("inventory client: a refused bulk create names each item; a refused bulk update carries the one error object NetBox answers", async () => {
  await withInventory(async (port, call) => {
    const type = await call("POST", "virtualization/cluster-types/", { name: "T", slug: "t" });
    const cluster = await call("POST", "virtualization/clusters/", { name: "c", type: type.id });
    const client = clientFor(port, fetch);
    const created = await client.create(VMS, [
      { name: "b", cluster: cluster.id },
      { name: "a", cluster: cluster.id },
    ]);
    const refusal = async (write: Promise<unknown>) => {
      try {
        await write;
      } catch (error) {
        const e = error as { refused?: boolean; itemErrors?: unknown; fieldErrors?: unknown };
        return { refused: e.refused, itemErrors: e.itemErrors, fieldErrors: e.fieldErrors };
      }
      assert.fail("the write was not refused");
    };
    assert.deepEqual(
      await refusal(client.create(VMS, [{ name: "ok", cluster: cluster.id }, { name: "" }])),
      {
        refused: true,
        itemErrors: [{}, { name: ["This field may not be blank."] }],
        fieldErrors: undefined,
      },
    );
    assert.deepEqual(
      await refusal(client.update(VMS, [
        { id: created[0].id, memory: -1 },
        { id: created[1].id, memory: 5 },
      ])),
      {
        refused: true,
        itemErrors: undefined,
        fieldErrors: { memory: ["Ensure this value is greater than or equal to 0."] },
      },
    );
    // The answer of an update that passes is in the model's ordering: a before b.
    const done = await client.update(VMS, [
      { id: created[0].id, memory: 2 },
      { id: created[1].id, memory: 1 },
    ]);
    assert.deepEqual(done.map((o) => [o.name, o.memory]), [["a", 1], ["b", 2]]);
  });
});
