/**
 * A bulk write spanning several atomics hands atomic k+1 to the store while atomic k commits
 * (domain/netbox/engine/write.ts `commitGroups`, docs/sync.md "Writes: round 8"), and stays all
 * or nothing: a group whose check fails undoes the groups that committed, before or after it.
 * Counted at the store's commit (commits entered and not yet answered), not with timers.
 */
import assert from "node:assert/strict";
import { createKvStorage } from "../../../storage/kv/mod.ts";
import { KvModelStore } from "../../../storage/kv/models.ts";
import type { CommitResult, ObjectWrite } from "../../../storage/ports.ts";
import { setup } from "./_setup.ts";
import { world } from "./_world.ts";

const VMS = "/api/virtualization/virtual-machines/";
const VM_MODEL = "virtualization.virtualmachine";

/** A store counting the commits of VM writes in flight at once, and failing one group on demand. */
class CountingStore extends KvModelStore {
  inFlight = 0;
  most = 0;
  groups = 0;
  /** The VM group (counted from 1 in the next write) whose commit answers a failed check. */
  failGroup = 0;

  override async commit(writes: readonly ObjectWrite[]): Promise<CommitResult> {
    if (!writes.some((w) => w.model === VM_MODEL)) return await super.commit(writes);
    const group = ++this.groups;
    this.inFlight++;
    this.most = Math.max(this.most, this.inFlight);
    try {
      if (group === this.failGroup) return { ok: false };
      return await super.commit(writes);
    } finally {
      this.inFlight--;
    }
  }
}

async function inventory() {
  const kv = await Deno.openKv(":memory:");
  const models = new CountingStore(kv);
  const inv = await setup({}, {
    kv,
    storage: { ...createKvStorage(kv, { now: Date.now }), models },
  });
  return { inv, models };
}

Deno.test("commit overlap: a 500-VM create's atomics are all in flight at once, and every VM is there after", async () => {
  const { inv, models } = await inventory();
  try {
    const w = await world(inv);
    models.groups = 0;
    models.most = 0;
    const made = await inv.created(
      VMS,
      Array.from({ length: 500 }, (_, i) => ({ name: `vm-${i}`, cluster: w.cluster })),
    );
    assert.equal(made.length, 500);
    assert.ok(models.groups >= 5, `${models.groups} atomics`);
    assert.equal(models.most, models.groups, "every atomic handed over before the first answered");
    const page = await inv.call("GET", `${VMS}?name__isw=vm-&limit=1000&fields=id`);
    assert.equal(page.body.count, 500);
  } finally {
    await inv.close();
  }
});

Deno.test("commit overlap: a group refused in the middle of a create undoes the groups before and after it; the request is answered 409 and leaves no VM", async () => {
  const { inv, models } = await inventory();
  try {
    const w = await world(inv);
    models.groups = 0;
    models.failGroup = 3;
    const answer = await inv.call(
      "POST",
      VMS,
      Array.from({ length: 500 }, (_, i) => ({ name: `vm-${i}`, cluster: w.cluster })),
    );
    assert.equal(answer.status, 409, JSON.stringify(answer.body));
    models.failGroup = 0;
    const page = await inv.call("GET", `${VMS}?name__isw=vm-&limit=1000&fields=id`);
    assert.equal(page.body.count, 0);
    // The names are free again: the same create passes.
    const again = await inv.created(
      VMS,
      Array.from({ length: 500 }, (_, i) => ({ name: `vm-${i}`, cluster: w.cluster })),
    );
    assert.equal(again.length, 500);
  } finally {
    await inv.close();
  }
});
