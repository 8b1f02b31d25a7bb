/**
 * Runs that never trip over each other (docs/sync.md, "One run per endpoint"): a second run
 * for an endpoint that is being synced answers 409 naming the running one; a run whose client
 * went away is waited for, not refused; runs of different endpoints go side by side and their
 * shared "ensure" writes (tags, roles, VLANs) read what the other made instead of failing.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { addInventoryCopy, KEY, type SseFrame, syncWorld, WaitingLogger } from "./_sync_harness.ts";
import { createKvStorage } from "../../storage/kv/mod.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };

/** A fetch that holds the first inventory POST to `pathPart` until `release()` is called. */
function gate(pathPart: string) {
  let notify: ((signal: AbortSignal | null) => void) | null = null;
  const reached = new Promise<AbortSignal | null>((resolve) => notify = resolve);
  let open!: () => void;
  const opened = new Promise<void>((resolve) => open = resolve);
  let armed = true;
  const fetchThrough: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (armed && init?.method === "POST" && url.includes(pathPart)) {
      armed = false;
      notify!(init.signal ?? null);
      await opened;
    }
    return fetch(input, init);
  };
  return { fetch: fetchThrough, reached, release: () => open() };
}

const errorsOf = (frames: SseFrame[]) =>
  frames.filter((f) => f.event === "error").map((f) => f.data);
const completeOf = (frames: SseFrame[]) => frames.find((f) => f.event === "complete")!.data;

Deno.test("e2e sync runs: a second run of a busy endpoint is a 409 naming the running one; another endpoint's run goes", async () => {
  const held = gate("/api/virtualization/virtual-machines/");
  const world = await syncWorld("nodes=1,vms=3,cts=1,storages=1", FAST_TASKS, {
    fetch: held.fetch,
  });
  try {
    await addInventoryCopy(world);
    const lab = await world.addHypervisorCopy("lab");
    const other = await world.addHypervisorCopy("other");
    const first = world.stream(`/full-update/stream?hypervisor_endpoint_ids=${lab}`);
    await held.reached;

    for (const path of ["/full-update/stream", "/full-update", "/dcim/devices/create/stream"]) {
      const second = await world.backend("GET", `${path}?hypervisor_endpoint_ids=${lab}`);
      assert.equal(second.status, 409, `${path}: ${JSON.stringify(second.body)}`);
      assert.equal(second.body.reason, "sync_running");
      assert.equal(second.body.running.endpoint_id, lab);
      assert.equal(second.body.running.endpoint_name, "lab");
      assert.equal(second.body.running.what, "full-update");
      assert.match(second.body.detail, /already running for hypervisor endpoint \d+ \("lab"\)/);
    }
    // An unscoped run covers lab too: refused as a whole, nothing half-written.
    assert.equal((await world.backend("GET", "/full-update")).status, 409);
    // The other endpoint is free.
    const side = await world.backend(
      "GET",
      `/dcim/devices/create?hypervisor_endpoint_ids=${other}`,
    );
    assert.equal(side.status, 200, JSON.stringify(side.body));

    held.release();
    const frames = await first;
    assert.deepEqual(errorsOf(frames), []);
    assert.equal(completeOf(frames).ok, true);
    // Once it ended, the endpoint is free again.
    const after = await world.backend("GET", `/full-update?hypervisor_endpoint_ids=${lab}`);
    assert.equal(after.status, 200, JSON.stringify(after.body));
    assert.equal(after.body.result.created, 0);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync runs: a client that drops the stream and starts again gets a clean run (the dropped one is waited for)", async () => {
  const held = gate("/api/virtualization/virtual-machines/");
  const logger = new WaitingLogger();
  const world = await syncWorld(undefined, FAST_TASKS, { fetch: held.fetch, logger });
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const controller = new AbortController();
    const res = await fetch(`${world.base}/full-update/stream`, {
      headers: { "x-service-api-key": KEY },
      signal: controller.signal,
    });
    const reading = res.body!.pipeTo(new WritableStream()).catch(() => {});
    const signal = (await held.reached)!;
    const seenGone = new Promise((resolve) => signal.addEventListener("abort", resolve));
    controller.abort();
    await reading;
    await seenGone;
    // The server knows the client is gone, but the dropped run still has a write in flight: the
    // new run waits for it instead of racing it (or being refused).
    const waiting = logger.next("sync run waits for a cancelled run to end");
    const again = world.stream("/full-update/stream");
    await waiting;
    held.release();
    const frames = await again;
    assert.deepEqual(errorsOf(frames), []);
    assert.equal(completeOf(frames).ok, true);
    const tags = await world.inventory("extras/tags/");
    const slugs = tags.map((t: any) => t.slug);
    assert.deepEqual(slugs, [...new Set(slugs)]);
    const vms = await world.inventory("virtualization/virtual-machines/");
    const names = vms.map((v: any) => v.name);
    assert.deepEqual(names, [...new Set(names)], "no VM made twice");
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync runs: two endpoints synced at the same moment share tags, roles and VLANs without an 'already exists' failure", async () => {
  // Both copies point at one mock: the same guest tags and VLAN ids, made by whichever run
  // comes first, read by the other.
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    const a = await world.addHypervisorCopy("east");
    const b = await world.addHypervisorCopy("west");
    const [one, two] = await Promise.all([
      world.stream(`/full-update/stream?hypervisor_endpoint_ids=${a}`),
      world.stream(`/full-update/stream?hypervisor_endpoint_ids=${b}`),
    ]);
    assert.deepEqual([...errorsOf(one), ...errorsOf(two)], []);
    for (const path of ["extras/tags/", "dcim/device-roles/", "dcim/manufacturers/"]) {
      const slugs = (await world.inventory(path)).map((t: any) => t.slug);
      assert.deepEqual(slugs, [...new Set(slugs)], path);
    }
  } finally {
    await world.close();
  }
});

Deno.test("sync run holds: two processes on one KV file never both take an endpoint; an expired hold is free", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/kv.sqlite3`;
  const kvA = await Deno.openKv(path);
  const kvB = await Deno.openKv(path);
  let now = 1_000_000;
  try {
    const a = createKvStorage(kvA, { now: () => now }).syncRuns;
    const b = createKvStorage(kvB, { now: () => now }).syncRuns;
    const hold = (run: string, owner: string) => ({ run_id: run, owner, what: "x", started_at: 1 });
    for (let round = 0; round < 10; round++) {
      const results = await Promise.all([
        a.take([1, 2], hold(`a${round}`, "A"), 1000),
        b.take([2, 3], hold(`b${round}`, "B"), 1000),
      ]);
      assert.equal(results.filter((r) => r.ok).length, 1, JSON.stringify(results));
      const lost = results.find((r) => !r.ok) as { held: any };
      assert.equal(lost.held.endpoint_id, 2);
      await a.release([1, 2], `a${round}`);
      await b.release([2, 3], `b${round}`);
    }
    assert.deepEqual(await a.take([5], hold("r1", "A"), 1000), { ok: true });
    assert.equal((await b.take([5], hold("r2", "B"), 1000)).ok, false);
    assert.equal(await a.renew([5], "r1", 1000), true);
    now += 1001;
    assert.deepEqual(await b.take([5], hold("r2", "B"), 1000), { ok: true }, "expired: free");
    assert.equal(await a.renew([5], "r1", 1000), false, "taken over: the old run learns it");
  } finally {
    kvA.close();
    kvB.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("e2e sync runs: an endpoint that cannot connect or log in is reported once and skipped for the rest of the run", async () => {
  // A port that accepts and closes every connection, counting them.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        connections++;
        conn.close();
      }
    } catch { /* closed */ }
  })();
  const world = await syncWorld("nodes=1,vms=2,cts=1,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const deadPort = (listener.addr as Deno.NetAddr).port;
    const dead = await world.addHypervisorCopy("dead", { port: deadPort });
    const wrong = await world.addHypervisorCopy("wrong", { password: "not-the-password" });
    const logins = () => world.seen.filter((s) => s === "POST /api2/json/access/ticket").length;
    const loginsBefore = logins();

    const frames = await world.stream("/full-update/stream");
    const errors = errorsOf(frames);
    assert.deepEqual(errors.map((e) => [e.endpoint_id, e.step]), [
      [dead, "devices"],
      [wrong, "devices"],
    ]);
    assert.match(errors[0].hint, new RegExp(`127\\.0\\.0\\.1:${deadPort} closed the connection`));
    assert.match(errors[0].detail, /skipped for the rest of this run: storage, virtual-machines/);
    assert.match(errors[1].hint, /rejected the username\/password/);
    assert.equal(connections, 1, "one connection attempt to the dead endpoint in 13 stages");
    // The good endpoint logs in once; the wrong password is tried once, not once per stage.
    assert.ok(logins() - loginsBefore <= 2, `${logins() - loginsBefore} logins`);
    const done = completeOf(frames);
    assert.equal(done.ok, false);
    assert.equal(done.result.failed, 2);
    const byStage = new Map<string, any>(done.stages.map((s: any) => [s.step, s.result]));
    assert.equal(byStage.get("devices").failed, 2);
    assert.equal(byStage.get("storage").failed, 0, "later stages do not fail again");
    // The good endpoint's guests all arrived.
    assert.equal((await world.inventory("virtualization/virtual-machines/")).length, 3);
  } finally {
    listener.close();
    await accepting;
    await world.close();
  }
});

Deno.test("e2e sync runs: a first run on an empty inventory counts each object once as created, none as updated", async () => {
  const world = await syncWorld(undefined, FAST_TASKS);
  try {
    await addInventoryCopy(world);
    await world.addHypervisorCopy("lab");
    const frames = await world.stream("/full-update/stream");
    assert.deepEqual(errorsOf(frames), []);
    const done = completeOf(frames);
    const updated = done.stages.filter((s: any) => s.result.updated > 0);
    assert.deepEqual(updated, [], "nothing is updated on a first run");
    // Objects written equal objects made: count what the inventory holds now.
    const vms = await world.inventory("virtualization/virtual-machines/");
    assert.ok(vms.some((v: any) => v.primary_ip4), "primary IPs are set");
    const vmStage = done.stages.find((s: any) => s.step === "virtual-machines").result;
    assert.ok(vmStage.created >= vms.length);
    // The VM writes: one bulk create, then only the primary-IP link (the address must exist on
    // the VM's interface first), one bulk PATCH for all of them.
    const vmWrites = world.seen.filter((s) =>
      /^(POST|PATCH|PUT) \/api\/virtualization\/virtual-machines\/$/.test(s)
    );
    assert.deepEqual(vmWrites, [
      "POST /api/virtualization/virtual-machines/",
      "PATCH /api/virtualization/virtual-machines/",
    ]);
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync runs: a run over more endpoints than one hold can take is a 422 saying how to scope it, before any frame or write", async () => {
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS);
  try {
    await addInventoryCopy(world);
    for (let i = 0; i < 101; i++) await world.addHypervisorCopy(`lab-${i}`);
    const writes = () => world.seen.filter((s) => /^(POST|PATCH|PUT|DELETE) \/api\//.test(s));
    const before = writes().length;
    for (const path of ["/full-update", "/full-update/stream", "/dcim/devices/create/stream"]) {
      const r = await world.backend("GET", path);
      assert.equal(r.status, 422, `${path}: ${JSON.stringify(r.body)}`);
      assert.match(
        r.body.detail,
        /at most 100 hypervisor endpoints and this one would cover 101: scope it with \?hypervisor_endpoint_ids=/,
      );
    }
    assert.equal(writes().length, before, "nothing written");
    // Scoped, it runs (and no hold was left behind by the refused runs).
    const ids = (await world.backend("GET", "/hypervisor/endpoints")).body.map((e: any) => e.id);
    const scoped = await world.backend(
      "GET",
      `/dcim/devices/create?hypervisor_endpoint_ids=${ids.slice(0, 2).join(",")}`,
    );
    assert.equal(scoped.status, 200, JSON.stringify(scoped.body));
  } finally {
    await world.close();
  }
});
