/**
 * An admin edits an object between the sync's read and its write (docs/sync.md, "Edits made
 * while a run writes"): the sync notices (the object's `last_updated` moved; a single PATCH
 * with If-Match answered 412), re-reads it, applies the owner policy to what it holds now and
 * reports the object. The edit is ordered by a hook on the sync's own outbound requests, never
 * by a sleep.
 */
import assert from "node:assert/strict";
import { addInventoryCopy, ROOT, type SseFrame, syncWorld } from "./_sync_harness.ts";

const FAST_TASKS = { HYPERVISOR_MOCK_TASK_DELAY_MS: "0" };
const VMS = "/api/virtualization/virtual-machines/";

const completeOf = (frames: SseFrame[]) => frames.find((f) => f.event === "complete")!.data;

/**
 * The sync's outbound transport with one hook: `before` runs (once, awaited) just before the
 * first request `when` picks is sent, so an edit lands exactly between two steps of the sync.
 */
function hookedFetch() {
  const hook: {
    when: ((method: string, url: URL) => boolean) | null;
    before: () => Promise<void>;
    sent: string[];
  } = { when: null, before: async () => {}, sent: [] };
  const fetcher: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.pathname.startsWith(VMS)) {
      hook.sent.push(
        `${request.method} ${url.pathname}${request.headers.get("if-match") ? " If-Match" : ""}`,
      );
    }
    if (hook.when?.(request.method, url)) {
      hook.when = null;
      await hook.before();
    }
    return await fetch(request);
  };
  return { hook, fetcher };
}

/**
 * The sync's next write of the VMs, or the check just before it (ids and `last_updated` only:
 * the stage's own read of a slice's VMs by id asks for whole objects).
 */
const beforeVmWrite = (method: string, url: URL) =>
  (method === "GET" && url.pathname === VMS && url.searchParams.has("id") &&
    url.searchParams.get("fields") === "id,last_updated") ||
  (method === "PATCH" && url.pathname.startsWith(VMS));

/** A world with one guest synced once; the guest's memory then changed on the hypervisor. */
async function editedWorld() {
  const { hook, fetcher } = hookedFetch();
  const world = await syncWorld("nodes=1,vms=1,cts=0,storages=1", FAST_TASKS, { fetch: fetcher });
  await addInventoryCopy(world);
  await world.addHypervisorCopy("lab");
  assert.equal(completeOf(await world.stream("/full-update/stream")).ok, true);
  const [guest] = await world.hypervisor("GET", "/cluster/resources", { type: "vm" });
  await world.hypervisor("PUT", `/nodes/${guest.node}/qemu/${guest.vmid}/config`, {
    memory: "3072",
  });
  const [vm] = await world.inventory("virtualization/virtual-machines/");
  return { world, hook, vm, guest };
}

const admin = (world: Awaited<ReturnType<typeof syncWorld>>, id: number, body: unknown) =>
  fetch(`${world.base}${VMS}${id}/`, {
    method: "PATCH",
    headers: { authorization: `Token ${ROOT}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  }).then(async (r) => assert.equal(r.status, 200, await r.text()));

Deno.test("e2e sync edits: an edit between the read and the bulk write is re-read; the admin's field stays where the admin owns it, the hypervisor's is put back, the run reports it", async () => {
  const { world, hook, vm } = await editedWorld();
  try {
    // Just before the sync writes the VM (its pre-write check), an admin renames it (names are
    // the admin's in this run) and sets vCPUs (the hypervisor's).
    hook.when = beforeVmWrite;
    hook.before = () => admin(world, vm.id, { name: "web-by-hand", vcpus: 7 });
    // `plan=true`: the run's record of what it wrote comes with its complete frame.
    const done = completeOf(
      await world.stream("/full-update/stream?overwrite_names=false&plan=true"),
    );
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(hook.when, null, `the hook ran: ${hook.sent.join("\n")}`);

    const after =
      (await world.inventoryCall("GET", `virtualization/virtual-machines/${vm.id}/`)).body;
    assert.equal(after.name, "web-by-hand", "names are the admin's: the rename stays");
    assert.equal(after.memory, 3072, "the hypervisor's change is written");
    assert.equal(Number(after.vcpus), Number(vm.vcpus), "vCPUs are the hypervisor's: put back");
    // Written singly, with the ETag of the object as re-read.
    assert.ok(hook.sent.includes(`PATCH ${VMS}${vm.id}/ If-Match`), hook.sent.join("\n"));
    assert.equal(done.edited?.length, 1, JSON.stringify(done));
    const [report] = done.edited;
    assert.equal(report.step, "virtual-machines");
    assert.match(report.object, /vmid /);
    assert.match(report.detail, /edited in the inventory while the sync ran \(name, vcpus\)/);
    assert.match(report.detail, /wrote memory, vcpus; kept the edit of name/);
    assert.match(done.message, /1 edited during the run \(see edited\)/);
    // The record has the guarded write, its old values those of the object as re-read.
    const written = done.plan.filter((i: { path: string; id: number }) =>
      i.path === "virtualization/virtual-machines/" && i.id === vm.id
    );
    assert.deepEqual(
      written.map((
        i: { action: string; changes: Record<string, { old: unknown; new: unknown }> },
      ) => [
        i.action,
        Object.keys(i.changes).sort(),
        Number(i.changes.vcpus?.old),
        Number(i.changes.vcpus?.new),
        i.changes.memory?.new,
      ]),
      [["update", ["memory", "vcpus"], 7, Number(vm.vcpus), 3072]],
    );
  } finally {
    await world.close();
  }
});

Deno.test("e2e sync edits: a 412 on the guarded write re-reads and applies the policy again", async () => {
  const { world, hook, vm } = await editedWorld();
  try {
    // First edit: before the pre-write check, so the VM is written singly. Second edit: just
    // before that single PATCH, so its If-Match no longer matches (412).
    hook.when = beforeVmWrite;
    hook.before = async () => {
      await admin(world, vm.id, { comments: "first edit" });
      hook.when = (method, url) => method === "PATCH" && url.pathname === `${VMS}${vm.id}/`;
      hook.before = () => admin(world, vm.id, { vcpus: 9, description: "second edit" });
    };
    // plan=true: the run's record lists what it wrote, the refused (412) attempt not.
    const done = completeOf(
      await world.stream("/full-update/stream?overwrite_descriptions=false&plan=true"),
    );
    assert.equal(done.ok, true, JSON.stringify(done));
    assert.equal(hook.when, null, "both hooks ran");
    const after =
      (await world.inventoryCall("GET", `virtualization/virtual-machines/${vm.id}/`)).body;
    assert.equal(after.memory, 3072);
    assert.equal(Number(after.vcpus), Number(vm.vcpus), "the second edit's vCPUs are put back");
    assert.equal(after.description, "second edit", "descriptions are the admin's");
    assert.equal(after.comments, "first edit", "a field the sync never writes is kept");
    const patches = hook.sent.filter((s) => s === `PATCH ${VMS}${vm.id}/ If-Match`);
    assert.equal(patches.length, 2, hook.sent.join("\n"));
    assert.equal(done.edited?.length, 1, JSON.stringify(done));
    assert.match(done.edited[0].detail, /\(comments, description, vcpus\)/);
    assert.match(
      done.edited[0].detail,
      /wrote memory, vcpus; kept the edit of comments, description/,
    );
    const written = done.plan.filter((i: { path: string; id: number }) =>
      i.path === "virtualization/virtual-machines/" && i.id === vm.id
    );
    assert.deepEqual(
      written.map((i: { action: string; changes: Record<string, { new: unknown }> }) => [
        i.action,
        Number(i.changes.vcpus?.new),
        i.changes.memory?.new,
      ]),
      [["update", Number(vm.vcpus), 3072]],
    );
  } finally {
    await world.close();
  }
});
