// deno-lint-ignore-file no-explicit-any
/**
 * Scale-out: three main.ts processes share one KV file; clients spread their calls round robin.
 * Uniqueness rules hold across processes under contention (first key, the inventory copy, endpoint
 * names, inventory slugs), writes add up whichever process serves them, and a retired key stops
 * working on every process the moment the retiring call answers. (One sync job between two
 * processes: tests/e2e/jobs_test.ts.)
 */
import assert from "node:assert/strict";
import { baseEnv, call, type Child, startMain } from "./_process.ts";

const KEY = "scaleout-key-0123456789abcdef0123456789abcdef";
const ROOT = "5ca1e0123456789abcdef0123456789abcdef012";
const inventoryHeaders = { authorization: `Token ${ROOT}` };

Deno.test({
  name: "scale-out: three processes on one KV file stay consistent under round-robin contention",
  sanitizeResources: false,
  sanitizeOps: false,
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-scaleout-" });
  const env = {
    ...baseEnv(dir),
    INVENTORY_BOOTSTRAP_TOKEN: ROOT,
    SERVICE_ENCRYPTION_KEY: "scale-out-encryption-key-0123456789",
  };
  delete (env as Record<string, string>).SERVICE_TEST_TRACE_REQUESTS;
  const children: Child[] = [];
  try {
    children.push(await startMain(env));
    children.push(...await Promise.all([startMain(env), startMain(env)]));
    const errors = () => children.flatMap((c) => c.lines.filter((l) => l.level === "error"));
    const at = (i: number) => children[i % children.length].base;
    const counted = (answers: { status: number }[]) => {
      const byStatus: Record<number, number> = {};
      for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
      return byStatus;
    };

    // The first key: 30 racing registrations over three processes, exactly one wins.
    const registrations = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        call(at(i), "POST", "/auth/register-key", {}, {
          api_key: i === 7 ? KEY : `${KEY}-${i}`,
        })),
    );
    assert.equal(counted(registrations)[201], 1, JSON.stringify(counted(registrations)));
    const winner = registrations.findIndex((r) => r.status === 201);
    const key = winner === 7 ? KEY : `${KEY}-${winner}`;
    const backend = { "x-service-api-key": key };

    // The inventory copy is a singleton across processes.
    const copies = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        call(at(i), "POST", "/inventory/endpoint", backend, {
          name: `inv-${i}`,
          ip: "10.1.1.1",
          port: 443,
          token_version: "v1",
          token: ROOT,
        })),
    );
    assert.deepEqual(counted(copies), { 201: 1, 409: 14 });

    // Hypervisor endpoint names are unique across processes.
    const named = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        call(at(i), "POST", "/hypervisor/endpoints", backend, {
          name: "contended",
          ip: "10.1.1.2",
          username: "root@pam",
          password: "pw",
          enabled: false,
        })),
    );
    assert.deepEqual(
      counted(named),
      { 201: 1, 409: 14 },
      JSON.stringify(children.flatMap((c) => c.lines.filter((l) => l.level === "error"))),
    );
    for (let i = 0; i < 3; i++) {
      const listed = await call(at(i), "GET", "/hypervisor/endpoints", backend);
      assert.equal(listed.body.filter((e: any) => e.name === "contended").length, 1);
    }

    // Inventory: one slug, many writers; and 300 distinct writes that all count.
    const slugs = await Promise.all(
      Array.from(
        { length: 15 },
        (_, i) =>
          call(at(i), "POST", "/api/dcim/sites/", inventoryHeaders, { name: "same", slug: "same" }),
      ),
    );
    assert.equal(counted(slugs)[201], 1, JSON.stringify([counted(slugs), errors()]));
    assert.ok(
      slugs.every((r) => r.status === 201 || r.status === 400),
      JSON.stringify([counted(slugs), errors(), slugs.filter((r) => r.status >= 500)]),
    );
    const writes = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) =>
          call(at(i), "POST", "/api/dcim/sites/", inventoryHeaders, {
            name: `s${i}`,
            slug: `s${i}`,
          }),
      ),
    );
    assert.deepEqual(counted(writes), { 201: 300 });
    for (let i = 0; i < 3; i++) {
      const r = await call(at(i), "GET", "/api/dcim/sites/?limit=1", inventoryHeaders);
      assert.equal(r.body.count, 301, `process ${i} counts ${r.body.count}`);
      for (const w of writes.slice(0, 30)) {
        const read = await call(at(i), "GET", `/api/dcim/sites/${w.body.id}/`, inventoryHeaders);
        assert.equal(read.body.slug, w.body.slug);
      }
    }

    // A key made on one process works on all; retired on one, it fails on all at once.
    const made = await call(at(0), "POST", "/auth/keys", backend, { label: "roaming" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const roaming = { "x-service-api-key": made.body.raw_key };
    for (let i = 0; i < 3; i++) {
      assert.equal((await call(at(i), "GET", "/auth/keys", roaming)).status, 200);
    }
    const retired = await call(at(1), "DELETE", `/auth/keys/${made.body.id}`, backend);
    assert.ok(retired.status === 200 || retired.status === 204, JSON.stringify(retired.body));
    // The retiring process refuses it at once; the others within their poll of the shared file
    // (Deno KV watches do not cross processes on a local file), bounded here at 1 s.
    const retiredAt = performance.now();
    assert.equal((await call(at(1), "GET", "/auth/keys", roaming)).status, 401);
    let propagation = 0;
    for (const i of [0, 2]) {
      while ((await call(at(i), "GET", "/auth/keys", roaming)).status !== 401) {
        assert.ok(performance.now() - retiredAt < 1000, `process ${i} accepts a retired key`);
      }
      propagation = Math.max(propagation, performance.now() - retiredAt);
    }
    console.log(
      `scale-out: 3 processes, ${30 + 15 + 15 + 15 + 300} contended writes, no rule broken, ` +
        `a retired key refused everywhere after ${propagation.toFixed(0)} ms`,
    );
  } catch (error) {
    const lines = children.flatMap((c) => c.lines.filter((l) => /error|warn/.test(l.level ?? "")));
    console.error(JSON.stringify(lines.slice(0, 5), null, 1));
    throw error;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
