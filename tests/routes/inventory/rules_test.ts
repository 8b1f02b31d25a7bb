import assert from "node:assert/strict";
import { appendJobLog, createJob, updateJob } from "../../../domain/netbox/jobs.ts";
import { createInventoryCore } from "../../../routes/inventory/mod.ts";
import { createKvStorage } from "../../../storage/kv/mod.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { ObjectWrite } from "../../../storage/ports.ts";
import { type Inv, setup } from "./_setup.ts";

async function cluster(inv: Inv, name = "c1") {
  let ct = await inv.call("GET", "/api/virtualization/cluster-types/?slug=pve");
  if (ct.body.count === 0) {
    ct = {
      ...ct,
      body: {
        results: [
          (await inv.call("POST", "/api/virtualization/cluster-types/", {
            name: "PVE",
            slug: "pve",
          })).body,
        ],
      },
    };
  }
  const r = await inv.call("POST", "/api/virtualization/clusters/", {
    name,
    type: ct.body.results[0].id,
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id as number;
}

Deno.test("unique constraints: single, case-insensitive, composite, within a bulk request", async () => {
  const inv = await setup();
  try {
    assert.equal(
      (await inv.call("POST", "/api/tenancy/tenants/", { name: "Acme", slug: "acme" })).status,
      201,
    );
    const dup = await inv.call("POST", "/api/tenancy/tenants/", { name: "ACME", slug: "other" });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.body, { name: ["tenant with this name already exists."] });
    const c1 = await cluster(inv, "c1");
    const c2 = await cluster(inv, "c2");
    const vm = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm",
      cluster: c1,
    });
    assert.equal(vm.status, 201);
    const same = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "VM",
      cluster: c1,
    });
    // NetBox's constraint is over Lower(name): its error is not tied to a field (`__all__`).
    assert.deepEqual(same.body, { __all__: ["Virtual machine name must be unique per cluster."] });
    assert.equal(
      (await inv.call("POST", "/api/virtualization/virtual-machines/", { name: "vm", cluster: c2 }))
        .status,
      201,
    );
    // Renaming onto a taken name fails; renaming itself (PUT with the same name) succeeds.
    const other = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "other",
      cluster: c1,
    });
    const clash = await inv.call(
      "PATCH",
      `/api/virtualization/virtual-machines/${other.body.id}/`,
      { name: "vm" },
    );
    assert.equal(clash.status, 400);
    const self = await inv.call("PUT", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      name: "vm",
      cluster: c1,
    });
    assert.equal(self.status, 200);
    // After a rename the old name is free again.
    assert.equal(
      (await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
        name: "vm-renamed",
      })).status,
      200,
    );
    assert.equal(
      (await inv.call("POST", "/api/virtualization/virtual-machines/", { name: "vm", cluster: c1 }))
        .status,
      201,
    );
    // Duplicates inside one bulk create: nothing is written, errors per item.
    const before = (await inv.call("GET", "/api/tenancy/tenants/")).body.count;
    const bulk = await inv.call("POST", "/api/tenancy/tenants/", [
      { name: "B1", slug: "b1" },
      { name: "B1", slug: "b1x" },
    ]);
    assert.equal(bulk.status, 400);
    assert.deepEqual(bulk.body[0], {});
    assert.deepEqual(bulk.body[1], { name: ["tenant with this name already exists."] });
    assert.equal((await inv.call("GET", "/api/tenancy/tenants/")).body.count, before);
  } finally {
    inv.close();
  }
});

Deno.test("concurrent creates of one unique name: exactly one wins", async () => {
  const inv = await setup();
  try {
    const results = await Promise.all(
      Array.from(
        { length: 8 },
        () => inv.call("POST", "/api/tenancy/tenants/", { name: "Race", slug: "race" }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 201).length, 1);
    for (const r of results.filter((r) => r.status !== 201)) assert.equal(r.status, 400);
    assert.equal((await inv.call("GET", "/api/tenancy/tenants/?slug=race")).body.count, 1);
  } finally {
    inv.close();
  }
});

Deno.test("foreign keys: PROTECT (409 NetBox body), CASCADE, SET_NULL, m2m detach", async () => {
  const inv = await setup();
  try {
    const c1 = await cluster(inv);
    const vm = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm1",
      cluster: c1,
    });
    const blocked = await inv.call("DELETE", `/api/virtualization/clusters/${c1}/`);
    assert.equal(blocked.status, 409);
    assert.equal(
      blocked.body.detail,
      `Unable to delete object. 1 dependent objects were found: vm1 (${vm.body.id})`,
    );
    // CASCADE: interfaces (with their IPs), disks, journal entries go with the VM.
    const eth0 = await inv.call("POST", "/api/virtualization/interfaces/", {
      virtual_machine: vm.body.id,
      name: "eth0",
    });
    const disk = await inv.call("POST", "/api/virtualization/virtual-disks/", {
      virtual_machine: vm.body.id,
      name: "d0",
      size: 1,
    });
    const ip = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "10.0.0.1/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.body.id,
    });
    await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      primary_ip4: ip.body.id,
    });
    const journal = await inv.call("POST", "/api/extras/journal-entries/", {
      assigned_object_type: "virtualization.virtualmachine",
      assigned_object_id: vm.body.id,
      comments: "note",
    });
    assert.equal(journal.status, 201);
    // Deleting the IP nulls the VM's primary_ip4 (SET_NULL).
    const ip2 = await inv.call("POST", "/api/ipam/ip-addresses/", {
      address: "10.0.0.2/24",
      assigned_object_type: "virtualization.vminterface",
      assigned_object_id: eth0.body.id,
    });
    const primary = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      primary_ip6: null,
      primary_ip4: ip2.body.id,
    });
    assert.equal(primary.status, 200, JSON.stringify(primary.body));
    assert.equal((await inv.call("DELETE", `/api/ipam/ip-addresses/${ip2.body.id}/`)).status, 204);
    assert.equal(
      (await inv.call("GET", `/api/virtualization/virtual-machines/${vm.body.id}/`)).body
        .primary_ip4,
      null,
    );

    assert.equal(
      (await inv.call("DELETE", `/api/virtualization/virtual-machines/${vm.body.id}/`)).status,
      204,
    );
    assert.equal(
      (await inv.call("GET", `/api/virtualization/interfaces/${eth0.body.id}/`)).status,
      404,
    );
    assert.equal(
      (await inv.call("GET", `/api/virtualization/virtual-disks/${disk.body.id}/`)).status,
      404,
    );
    assert.equal(
      (await inv.call("GET", `/api/extras/journal-entries/${journal.body.id}/`)).status,
      404,
    );
    // As in NetBox (GenericRelation), the interface's IP addresses go with it.
    const gone = await inv.call("GET", `/api/ipam/ip-addresses/${ip.body.id}/`);
    assert.equal(gone.status, 404);
    // The index followed the change: nothing is found by the old interface.
    assert.equal(
      (await inv.call("GET", `/api/ipam/ip-addresses/?assigned_object_id=${eth0.body.id}`)).body
        .count,
      0,
    );
    // m2m: deleting a tag detaches it from tagged objects.
    const tag = await inv.call("POST", "/api/extras/tags/", { name: "x", slug: "x" });
    const t = await inv.call("POST", "/api/tenancy/tenants/", {
      name: "T",
      slug: "t",
      tags: [tag.body.id],
    });
    assert.equal(t.body.tags[0].slug, "x");
    assert.equal((await inv.call("DELETE", `/api/extras/tags/${tag.body.id}/`)).status, 204);
    const after = await inv.call("GET", `/api/tenancy/tenants/${t.body.id}/`);
    assert.deepEqual(after.body.tags, []);
    assert.equal((await inv.call("DELETE", `/api/virtualization/clusters/${c1}/`)).status, 204);
  } finally {
    inv.close();
  }
});

Deno.test("bulk create, bulk update (PUT/PATCH lists), bulk delete", async () => {
  const inv = await setup();
  try {
    const c1 = await cluster(inv);
    const created = await inv.call(
      "POST",
      "/api/virtualization/virtual-machines/",
      Array.from({ length: 250 }, (_, i) => ({ name: `vm${i}`, cluster: c1 })),
    );
    assert.equal(created.status, 201);
    assert.equal(created.body.length, 250);
    assert.equal(
      (await inv.call("GET", `/api/virtualization/virtual-machines/?cluster_id=${c1}&limit=1`)).body
        .count,
      250,
    );
    const ids: number[] = created.body.map((v: { id: number }) => v.id);
    const patched = await inv.call(
      "PATCH",
      "/api/virtualization/virtual-machines/",
      ids.slice(0, 120).map((id) => ({ id, status: "offline" })),
    );
    assert.equal(patched.status, 200);
    assert.equal(patched.body.length, 120);
    assert.ok(
      patched.body.every((v: { status: { value: string } }) => v.status.value === "offline"),
    );
    assert.equal(
      (await inv.call("GET", "/api/virtualization/virtual-machines/?status=offline")).body.count,
      120,
    );
    const put = await inv.call("PUT", "/api/virtualization/virtual-machines/", [{
      id: ids[0],
      name: "renamed",
      cluster: c1,
    }]);
    assert.equal(put.status, 200);
    assert.equal(put.body[0].name, "renamed");
    const putMissing = await inv.call("PUT", "/api/virtualization/virtual-machines/", [{
      id: ids[1],
      cluster: c1,
    }]);
    assert.equal(putMissing.status, 400);
    assert.deepEqual(putMissing.body, { name: ["This field is required."] });
    const noId = await inv.call("PATCH", "/api/virtualization/virtual-machines/", [{
      status: "active",
    }]);
    assert.equal(noId.status, 400);
    assert.deepEqual(noId.body, [{ id: ["This field is required."] }]);
    const notList = await inv.call("PATCH", "/api/virtualization/virtual-machines/", {
      id: ids[0],
    });
    assert.equal(notList.status, 400);
    const unknown = await inv.call("PATCH", "/api/virtualization/virtual-machines/", [{
      id: 999999,
      status: "active",
    }]);
    // An id no object has is passed over, as NetBox's bulk views do (bulk_unknown_ids_test.ts).
    assert.equal(unknown.status, 200);
    assert.deepEqual(unknown.body, []);
    const del = await inv.call(
      "DELETE",
      "/api/virtualization/virtual-machines/",
      ids.slice(0, 200).map((id) => ({ id })),
    );
    assert.equal(del.status, 204);
    assert.equal((await inv.call("GET", "/api/virtualization/virtual-machines/")).body.count, 50);
    // A failed item in a bulk create writes nothing.
    const mixed = await inv.call("POST", "/api/virtualization/virtual-machines/", [
      { name: "ok1", cluster: c1 },
      { name: "bad", cluster: 424242 },
    ]);
    assert.equal(mixed.status, 400);
    assert.deepEqual(mixed.body[1], {
      cluster: ["Related object not found using the provided numeric ID: 424242"],
    });
    assert.equal(
      (await inv.call("GET", "/api/virtualization/virtual-machines/?name=ok1")).body.count,
      0,
    );
  } finally {
    inv.close();
  }
});

Deno.test("custom fields: apply to the named object types, validate types, defaults, required, filters", async () => {
  const inv = await setup();
  try {
    const c1 = await cluster(inv);
    const cf = async (body: Record<string, unknown>) => {
      const r = await inv.call("POST", "/api/extras/custom-fields/", body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    await cf({
      name: "vmid",
      type: "integer",
      object_types: ["virtualization.virtualmachine"],
      validation_minimum: 100,
    });
    await cf({
      name: "owner",
      type: "text",
      object_types: ["virtualization.virtualmachine"],
      default: "ops",
    });
    await cf({
      name: "managed",
      type: "boolean",
      object_types: ["virtualization.virtualmachine", "tenancy.tenant"],
    });
    await cf({
      name: "tier",
      type: "select",
      object_types: ["virtualization.virtualmachine"],
      choices: ["gold", "silver"],
    });
    const badType = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "x",
      object_types: ["nope.model"],
    });
    assert.equal(badType.status, 400);
    assert.ok(badType.body.object_types);
    const badDefault = await inv.call("POST", "/api/extras/custom-fields/", {
      name: "y",
      type: "integer",
      object_types: ["tenancy.tenant"],
      default: "abc",
    });
    assert.equal(badDefault.status, 400);
    const vm = await inv.call("POST", "/api/virtualization/virtual-machines/", {
      name: "vm1",
      cluster: c1,
      custom_fields: { vmid: 101, managed: true },
    });
    assert.equal(vm.status, 201, JSON.stringify(vm.body));
    assert.deepEqual(vm.body.custom_fields, { managed: true, owner: "ops", tier: null, vmid: 101 });
    const wrong = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      custom_fields: { vmid: "one hundred" },
    });
    assert.equal(wrong.status, 400);
    assert.match(wrong.body.custom_fields[0], /vmid/);
    const low = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      custom_fields: { vmid: 5 },
    });
    assert.equal(low.status, 400);
    const badChoice = await inv.call(
      "PATCH",
      `/api/virtualization/virtual-machines/${vm.body.id}/`,
      {
        custom_fields: { tier: "bronze" },
      },
    );
    assert.equal(badChoice.status, 400);
    const unknown = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      custom_fields: { nope: 1 },
    });
    assert.equal(unknown.status, 400);
    // PATCH merges: other values stay.
    const merged = await inv.call("PATCH", `/api/virtualization/virtual-machines/${vm.body.id}/`, {
      custom_fields: { tier: "gold" },
    });
    assert.deepEqual(merged.body.custom_fields, {
      managed: true,
      owner: "ops",
      tier: "gold",
      vmid: 101,
    });
    // Other object types get only their own fields.
    const tenant = await inv.call("POST", "/api/tenancy/tenants/", { name: "T", slug: "t" });
    assert.deepEqual(tenant.body.custom_fields, { managed: null });
    assert.equal(
      (await inv.call("GET", "/api/virtualization/virtual-machines/?cf_tier=gold")).body.count,
      1,
    );
    assert.equal(
      (await inv.call("GET", "/api/virtualization/virtual-machines/?cf_tier=silver")).body.count,
      0,
    );
    // A required field must be set on new objects.
    await cf({
      name: "cost_center",
      type: "text",
      object_types: ["tenancy.tenant"],
      required: true,
    });
    const missing = await inv.call("POST", "/api/tenancy/tenants/", { name: "U", slug: "u" });
    assert.equal(missing.status, 400);
    assert.ok(missing.body.custom_fields);
    const given = await inv.call("POST", "/api/tenancy/tenants/", {
      name: "U",
      slug: "u",
      custom_fields: { cost_center: "42" },
    });
    assert.equal(given.status, 201);
  } finally {
    inv.close();
  }
});

Deno.test("read-only resources answer 405 with NetBox's text; jobs are written by code", async () => {
  const inv = await setup();
  try {
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      const r = await inv.call(method, "/api/core/jobs/", method === "DELETE" ? [] : {});
      assert.equal(r.status, 405);
      assert.deepEqual(r.body, { detail: `Method "${method}" not allowed.` });
    }
    const ctx = createInventoryCore(inv.deps);
    const job = await createJob(ctx.engine, { name: "sync all", data: null });
    assert.equal(job.status, "pending");
    // Running, and owned as the job runner owns a run (its lease): the app's recovery check,
    // which runs at start and every lease period, errors a running job nobody holds and logs
    // why. Held here by the test, the job is left alone whenever that check runs (a loaded
    // machine ran it after this job turned running: a sixth line, the recovery's).
    const lease = await inv.deps.storage.jobs.takeLease(job.id, "rules-test", 3_600_000);
    assert.deepEqual(lease, { ok: true });
    await updateJob(ctx.engine, job.id, { status: "running" });
    await Promise.all(
      Array.from({ length: 5 }, (_, i) => appendJobLog(ctx.engine, job.id, "info", `line ${i}`)),
    );
    await updateJob(ctx.engine, job.id, { status: "completed", data: [{ sync_type: "devices" }] });
    const got = await inv.call("GET", `/api/core/jobs/${job.id}/`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.status, { value: "completed", label: "Completed" });
    assert.deepEqual(
      got.body.log.map((l: { message: string }) => l.message).sort(),
      ["line 0", "line 1", "line 2", "line 3", "line 4"],
      "concurrent appends keep every line, once",
    );
    assert.deepEqual(got.body.log, got.body.log_entries);
    assert.ok(got.body.started && got.body.completed);
    assert.match(got.body.job_id, /^[0-9a-f-]{36}$/);
    const put = await inv.call("PUT", `/api/core/jobs/${job.id}/`, { name: "x" });
    assert.equal(put.status, 405);
    assert.equal((await inv.call("POST", `/api/tenancy/tenants/1/`, {})).status, 405);
  } finally {
    inv.close();
  }
});

Deno.test("two job-log appends racing at the commit: the one that lost the race is written again on the fresh record, each line once", async () => {
  // The first append is held after reading the job, at its commit; the second commits meanwhile.
  const kv = await Deno.openKv(":memory:");
  let holding = false;
  let reached!: () => void;
  const held = new Promise<void>((r) => reached = r);
  let release!: () => void;
  const released = new Promise<void>((r) => release = r);
  const commits: string[][] = [];
  const models = new KvModelStore(kv, {
    beforeCommit: async (writes: readonly ObjectWrite[]) => {
      // Appends only: a replacement of the job (its creation is no append).
      const log = writes.find((w) => w.model === "core.job" && w.prev)?.next?.record.log_entries;
      if (!Array.isArray(log)) return;
      commits.push(log.map((l: { message: string }) => l.message));
      if (!holding) return;
      holding = false;
      reached();
      await released;
    },
  });
  const inv = await setup({}, {
    kv,
    storage: { ...createKvStorage(kv, { now: Date.now }), models },
  });
  try {
    const ctx = createInventoryCore(inv.deps);
    const job = await createJob(ctx.engine, { name: "sync all", data: null });
    await appendJobLog(ctx.engine, job.id, "info", "first");
    holding = true;
    const slow = appendJobLog(ctx.engine, job.id, "info", "slow");
    await held;
    await appendJobLog(ctx.engine, job.id, "info", "fast");
    release();
    await slow;
    const got = await inv.call("GET", `/api/core/jobs/${job.id}/`);
    assert.deepEqual(got.body.log.map((l: { message: string }) => l.message), [
      "first",
      "fast",
      "slow",
    ]);
    // The held commit was refused (the job had changed) and made again from the fresh record.
    assert.deepEqual(commits, [["first"], ["first", "slow"], ["first", "fast"], [
      "first",
      "fast",
      "slow",
    ]]);
  } finally {
    inv.close();
  }
});

Deno.test("bad input is a 4xx, never a 500", async () => {
  const inv = await setup();
  try {
    const c1 = await cluster(inv);
    const base = "/api/virtualization/virtual-machines/";
    const malformed = await inv.call("POST", base, "{not json");
    assert.equal(malformed.status, 400);
    assert.match(malformed.body.detail, /^JSON parse error - /);
    const checks: Array<[unknown, string]> = [
      [{ name: "a", cluster: c1, memory: 1e300 }, "memory"],
      [{ name: "a", cluster: c1, memory: 2 ** 53 + 10 }, "memory"],
      [{ name: "a", cluster: c1, memory: "12abc" }, "memory"],
      [{ name: "a", cluster: c1, memory: true }, "memory"],
      [{ name: "a", cluster: c1, vcpus: "many" }, "vcpus"],
      [{ name: { nested: 1 }, cluster: c1 }, "name"],
      [{ name: "x".repeat(65), cluster: c1 }, "name"],
      [{ name: "", cluster: c1 }, "name"],
      [{ name: null, cluster: c1 }, "name"],
      [{ cluster: c1 }, "name"],
      [{ name: "a", cluster: "abc" }, "cluster"],
      [{ name: "a", cluster: [1] }, "cluster"],
      [{ name: "a", cluster: { name: "nope" } }, "cluster"],
      [{ name: "a", cluster: 99999999999999999999 }, "cluster"],
      [{ name: "a", cluster: c1, status: "exploded" }, "status"],
      [{ name: "a", cluster: c1, tags: "prod" }, "tags"],
      [{ name: "a", cluster: c1, tags: [12345] }, "tags"],
      [{ name: "a", cluster: c1, custom_fields: [] }, "custom_fields"],
    ];
    for (const [body, field] of checks) {
      const r = await inv.call("POST", base, body);
      assert.equal(
        r.status,
        400,
        `${JSON.stringify(body)} → ${r.status} ${JSON.stringify(r.body)}`,
      );
      assert.ok(Array.isArray(r.body[field]), `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
    }
    for (const raw of ["[1, 2]", "42", '"text"', "null"]) {
      const r = await inv.call("POST", base, raw);
      assert.ok(r.status >= 400 && r.status < 500, `${raw} → ${r.status}`);
    }
    // Unknown and read-only fields are ignored, as DRF does.
    const ok = await inv.call("POST", base, {
      name: "fine",
      cluster: c1,
      bogus: 1,
      id: 777,
      created: "1999-01-01",
    });
    assert.equal(ok.status, 201);
    assert.notEqual(ok.body.id, 777);
    assert.notEqual(ok.body.created, "1999-01-01");
    // Nested attribute lookups for FKs work like NetBox's.
    const byAttrs = await inv.call("POST", base, { name: "attrs", cluster: { name: "c1" } });
    assert.equal(byAttrs.status, 201);
    assert.equal(byAttrs.body.cluster.id, c1);
    const huge = await inv.app.request("http://inv.test" + base, {
      method: "POST",
      headers: {
        authorization: "Token 0123456789abcdef0123456789abcdef01234567",
        "content-type": "application/json",
      },
      body: JSON.stringify({ name: "big", cluster: c1, comments: "x".repeat(1024 * 1024 + 10) }),
    });
    assert.equal(huge.status, 413);
    await huge.body?.cancel();
    const tooBigRecord = await inv.call("POST", base, {
      name: "big",
      cluster: c1,
      comments: "x".repeat(70_000),
    });
    assert.equal(tooBigRecord.status, 400);
    const form = await inv.app.request("http://inv.test" + base, {
      method: "POST",
      headers: {
        authorization: "Token 0123456789abcdef0123456789abcdef01234567",
        "content-type": "text/plain",
      },
      body: "name=x",
    });
    assert.equal(form.status, 415);
    await form.body?.cancel();
    const badDate = await inv.call("POST", "/api/users/tokens/", { expires: "tomorrow" });
    assert.equal(badDate.status, 400);
    assert.ok(badDate.body.expires);
  } finally {
    inv.close();
  }
});

Deno.test("records stay under the KV value limit: wide characters and long job logs", async () => {
  const inv = await setup();
  try {
    const wide = await inv.call("POST", "/api/tenancy/tenants/", {
      name: "wide",
      slug: "wide",
      comments: "漢".repeat(40_000),
    });
    assert.equal(wide.status, 400, "40,000 two-byte characters exceed one KV value");
    assert.ok(wide.body.non_field_errors);
    const ctx = createInventoryCore(inv.deps);
    const job = await createJob(ctx.engine, { name: "long" });
    for (let i = 0; i < 150; i++) {
      await appendJobLog(ctx.engine, job.id, "info", `${i} ${"ü".repeat(400)}`);
    }
    const got = await inv.call("GET", `/api/core/jobs/${job.id}/`);
    assert.equal(got.status, 200);
    const log = got.body.log_entries as Array<{ message: string }>;
    assert.ok(log.length > 10 && log.length < 150, `kept ${log.length}`);
    assert.match(log[log.length - 1].message, /^149 /, "the newest lines are kept");
  } finally {
    inv.close();
  }
});
