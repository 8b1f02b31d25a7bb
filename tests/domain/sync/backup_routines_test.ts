/**
 * The backup-routines stage field by field (docs/sync.md, "What the sync writes"): every key of
 * a `/cluster/backup` job and its fallbacks (retention from `prune-backups`, the selection from
 * `vmid`, node and storage by name, fleecing, the change-detection mode), values Proxmox would
 * not send read as none; then a re-run with nothing changed, and one after a job changed and
 * one went. Over the in-memory fakes of the two ports.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, runStages, smallCluster } from "./_fakes.ts";

const ROUTINES = "plugins/service/backup-routines/";

function cluster(): Record<string, any> {
  const data: Record<string, any> = {
    ...smallCluster(),
    "/storage": [
      { storage: "local", type: "dir", content: "images,backup", shared: 0 },
      { storage: "pbs", type: "pbs", content: "backup", shared: 1 },
    ],
    "/nodes/n1/storage": [
      { storage: "local", total: 100, used: 10, avail: 90 },
      { storage: "pbs", total: 1000, used: 100, avail: 900 },
    ],
    "/cluster/backup": [
      {
        id: "backup-full",
        enabled: 1,
        schedule: "sat 02:00",
        node: "n1",
        storage: "pbs",
        vmid: "101, 102,abc,0,-3,200",
        comment: "weekly",
        "prune-backups": "keep-last=3,keep-daily=7,keep-weekly=4,keep-monthly=6,keep-yearly=1",
        "notes-template": "{{guestname}}",
        bwlimit: 0,
        zstd: "2",
        performance: "max-workers=4,pbs-entries-max=1000",
        fleecing: "enabled=1,storage=local",
        "repeat-missed": 1,
        "pbs-change-detection-mode": "data",
        mode: "snapshot",
      },
      {
        id: "backup-old",
        enabled: "0",
        starttime: "03:30",
        node: "gone-node",
        storage: "nowhere",
        "prune-backups": "keep-all=1,keep-last=-1,keep-daily=1.5,keep-weekly=,keep-monthly=x",
        fleecing: "enabled=1,storage=unknown",
        "pbs-change-detection-mode": "bogus",
        bwlimit: "",
      },
      // No enabled key (enabled), no schedule at all, keep-all off.
      { id: "backup-min", "prune-backups": "keep-all=0,keep-last=0" },
      { id: "", schedule: "daily" }, // no id: not a job
      { schedule: "daily" },
    ],
  };
  return data;
}

async function run(inv: FakeInventory, hv: FakeHypervisor) {
  const { complete } = await runStages(inv, hv, ["devices", "storage", "backup-routines"]);
  const r = complete.stages.find((s) => s.step === "backup-routines")!.result;
  return [r.created, r.updated, r.unchanged, r.deleted, r.failed];
}

const NONE = {
  keep_last: null,
  keep_daily: null,
  keep_weekly: null,
  keep_monthly: null,
  keep_yearly: null,
  keep_all: null,
};

Deno.test("backup routines: every key of a backup job and its fallbacks; a re-run writes nothing; a changed job is patched, a gone one stale", async () => {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  const data = cluster();
  const hv = new FakeHypervisor(data);
  assert.deepEqual(await run(inv, hv), [3, 0, 0, 0, 0]);

  const node = inv.all("plugins/service/nodes/").find((n) => n.name === "n1")!.id;
  const storage = (name: string) =>
    inv.all("plugins/service/storage/").find((s) => s.name === name)!.id;
  const jobs = () =>
    Object.fromEntries(
      inv.all(ROUTINES).map(({ id: _id, raw_config: _raw, ...r }) => [r.job_id, r]),
    );
  const [full, old, min] = data["/cluster/backup"];
  assert.deepEqual(
    Object.fromEntries(inv.all(ROUTINES).map((r) => [r.job_id, r.raw_config])),
    { "backup-full": full, "backup-old": old, "backup-min": min },
  );
  assert.deepEqual(jobs(), {
    "backup-full": {
      endpoint: 7,
      job_id: "backup-full",
      enabled: true,
      schedule: "sat 02:00",
      node,
      storage: storage("pbs"),
      selection: [101, 102, 200],
      comment: "weekly",
      status: "active",
      keep_last: 3,
      keep_daily: 7,
      keep_weekly: 4,
      keep_monthly: 6,
      keep_yearly: 1,
      keep_all: null,
      notes_template: "{{guestname}}",
      bwlimit: 0,
      zstd: 2,
      io_workers: 4,
      fleecing: "enabled=1,storage=local",
      fleecing_storage: storage("local"),
      repeat_missed: true,
      pbs_change_detection_mode: "data",
    },
    "backup-old": {
      endpoint: 7,
      job_id: "backup-old",
      enabled: false,
      schedule: "03:30",
      node: null,
      storage: null,
      selection: [],
      comment: "",
      status: "active",
      ...NONE,
      keep_all: true,
      notes_template: "",
      bwlimit: null,
      zstd: null,
      io_workers: null,
      fleecing: "enabled=1,storage=unknown",
      fleecing_storage: null,
      repeat_missed: false,
      pbs_change_detection_mode: "default",
    },
    "backup-min": {
      endpoint: 7,
      job_id: "backup-min",
      enabled: true,
      schedule: "",
      node: null,
      storage: null,
      selection: [],
      comment: "",
      status: "active",
      ...NONE,
      keep_last: 0,
      keep_all: false,
      notes_template: "",
      bwlimit: null,
      zstd: null,
      io_workers: null,
      fleecing: "",
      fleecing_storage: null,
      repeat_missed: false,
      pbs_change_detection_mode: "default",
    },
  });

  // Nothing changed: nothing written.
  let before = inv.writes.length;
  assert.deepEqual(await run(inv, hv), [0, 0, 3, 0, 0]);
  assert.deepEqual(inv.writes.slice(before).filter((w) => w.includes(ROUTINES)), []);

  // backup-full: retention and selection changed, turned off; backup-old gone upstream.
  const ids = Object.fromEntries(inv.all(ROUTINES).map((r) => [r.job_id, r.id]));
  data["/cluster/backup"] = [
    { ...full, enabled: 0, vmid: "101", "prune-backups": "keep-last=5" },
    min,
  ];
  before = inv.writes.length;
  assert.deepEqual(await run(inv, hv), [0, 2, 1, 0, 0]);
  assert.deepEqual(inv.writes.slice(before).filter((w) => w.includes(ROUTINES)).sort(), [
    `PATCH ${ROUTINES}${ids["backup-full"]}`,
    `PATCH ${ROUTINES}${ids["backup-old"]}`,
  ]);
  const after = jobs();
  assert.deepEqual(after["backup-full"], {
    ...after["backup-full"],
    enabled: false,
    selection: [101],
    ...NONE,
    keep_last: 5,
  });
  assert.equal(after["backup-full"].comment, "weekly");
  assert.equal(after["backup-old"].status, "stale");
  assert.equal(after["backup-old"].schedule, "03:30");
  assert.equal(after["backup-min"].status, "active");
});
