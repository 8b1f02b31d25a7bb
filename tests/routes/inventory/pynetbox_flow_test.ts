/**
 * A client written the way pynetbox talks to NetBox (absolute `next` links followed until
 * null, `?limit=1&brief=1` counts, PATCH of changed fields, bulk delete with [{id}]), run
 * against the inventory surface on a real socket.
 */
import assert from "node:assert/strict";
import { createInventoryApp } from "../../../routes/inventory/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { TOKEN } from "./_setup.ts";

type Rec = Record<string, unknown> & { id: number; url: string };

class MiniNetBox {
  version = "";
  constructor(private readonly base: string, private readonly token: string) {}

  async #req(method: string, url: string, body?: unknown): Promise<unknown> {
    const res = await fetch(url, {
      method,
      headers: {
        authorization: `Token ${this.token}`,
        "content-type": "application/json;",
        accept: "application/json;",
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    this.version = res.headers.get("API-Version") ?? "";
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${url} → ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }

  endpoint(app: string, name: string) {
    const root = `${this.base}/api/${app}/${name}/`;
    const self = {
      req: (method: string, url: string, body?: unknown) => this.#req(method, url, body),
    };
    return {
      async filter(params: Record<string, string | string[]> = {}, pageSize = 0): Promise<Rec[]> {
        const url = new URL(root);
        for (const [k, v] of Object.entries(params)) {
          for (const x of [v].flat()) url.searchParams.append(k, x);
        }
        if (pageSize) url.searchParams.set("limit", String(pageSize));
        const out: Rec[] = [];
        let next: string | null = url.toString();
        while (next) {
          const page = await self.req("GET", next) as { next: string | null; results: Rec[] };
          out.push(...page.results);
          next = page.next;
        }
        return out;
      },
      async get(params: Record<string, string>): Promise<Rec | null> {
        const found = await this.filter(params);
        if (found.length > 1) throw new Error("get() returned more than one result");
        return found[0] ?? null;
      },
      async count(params: Record<string, string> = {}): Promise<number> {
        const url = new URL(root);
        for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
        url.searchParams.set("limit", "1");
        url.searchParams.set("brief", "1");
        return (await self.req("GET", url.toString()) as { count: number }).count;
      },
      create: (body: unknown) => self.req("POST", root, body) as Promise<Rec | Rec[]>,
      save: (record: Rec, changes: Record<string, unknown>) =>
        self.req("PATCH", record.url, changes) as Promise<Rec>,
      deleteOne: (record: Rec) => self.req("DELETE", record.url),
      deleteMany: (ids: number[]) => self.req("DELETE", root, ids.map((id) => ({ id }))),
      updateMany: (items: Array<Record<string, unknown>>) =>
        self.req("PATCH", root, items) as Promise<Rec[]>,
    };
  }
}

Deno.test("pynetbox-style client flow over a real socket", async () => {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: TOKEN });
  const app = await createInventoryApp(deps);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
  try {
    const base = `http://127.0.0.1:${server.addr.port}`;
    const nb = new MiniNetBox(base, TOKEN);
    const clusterTypes = nb.endpoint("virtualization", "cluster-types");
    const clusters = nb.endpoint("virtualization", "clusters");
    const vms = nb.endpoint("virtualization", "virtual-machines");

    const ct = await clusterTypes.create({ name: "Proxmox VE", slug: "proxmox-ve" }) as Rec;
    assert.equal(nb.version, "4.6");
    const cl = await clusters.create({ name: "pve-lab", type: ct.id }) as Rec;
    const made = await vms.create(
      Array.from({ length: 130 }, (_, i) => ({
        name: `vm-${String(i).padStart(3, "0")}`,
        cluster: cl.id,
        status: i % 10 === 0 ? "offline" : "active",
      })),
    ) as Rec[];
    assert.equal(made.length, 130);

    // list with filters, following absolute next links across pages of 50
    const all = await vms.filter({ cluster_id: String(cl.id) }, 50);
    assert.equal(all.length, 130);
    assert.equal(new Set(all.map((v) => v.id)).size, 130, "pages neither overlap nor skip");
    assert.ok(all.every((v) => v.url.startsWith(base)));
    const offline = await vms.filter({ cluster: "pve-lab", status: "offline" });
    assert.equal(offline.length, 13);
    assert.equal(await vms.count({ status: "offline" }), 13);

    // get + save (PATCH of the changed fields)
    const one = await vms.get({ name: "vm-007" });
    assert.ok(one);
    const saved = await vms.save(one, { memory: 2048, description: "patched" });
    assert.equal(saved.memory, 2048);
    assert.equal((await vms.get({ name: "vm-007" }))?.description, "patched");

    // brief listing as used for dropdowns / lookups
    const brief = await vms.filter({ brief: "1", q: "vm-12" });
    assert.deepEqual(Object.keys(brief[0]).sort(), ["description", "display", "id", "name", "url"]);
    assert.equal(brief.length, 10);

    // bulk update then bulk delete, then single delete
    const updated = await vms.updateMany(offline.map((v) => ({ id: v.id, status: "active" })));
    assert.equal(updated.length, 13);
    assert.equal(await vms.count({ status: "offline" }), 0);
    await vms.deleteMany(all.slice(0, 100).map((v) => v.id));
    assert.equal(await vms.count(), 30);
    const last = await vms.get({ name: "vm-129" });
    await vms.deleteOne(last!);
    assert.equal(await vms.count(), 29);
    assert.equal(await vms.get({ name: "vm-129" }), null);
  } finally {
    await server.shutdown();
    deps.kv.close();
  }
});
