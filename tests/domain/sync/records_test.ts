/**
 * The plugin records of the history stages (storage, task-history, vm-backups, vm-snapshots,
 * replications), field by field (docs/sync.md, "What the sync writes"): a fake cluster whose
 * answers cover each branch of each mapping (an offline node, a shared storage on two nodes, an
 * inactive one, a task still running, one of another endpoint, backups of each guest type,
 * snapshots with the "current" entry, replication jobs with and without their optional keys),
 * then the same cluster after removals: what is marked stale and what is written again. Over
 * the in-memory fakes of the two ports.
 */
// deno-lint-ignore-file no-explicit-any
import assert from "node:assert/strict";
import { FakeHypervisor, FakeInventory, runStages } from "./_fakes.ts";
import { TASK_PAGE } from "../../../domain/sync/stages/task_history.ts";

const STAGE_TYPES = [
  "devices",
  "storage",
  "virtual-machines",
  "task-history",
  "vm-backups",
  "vm-snapshots",
  "replications",
];

/** A hypervisor that pages `/nodes/{n}/tasks` by `start` and `limit`, as Proxmox does. */
class PagingHypervisor extends FakeHypervisor {
  readonly pages: string[] = [];
  override get<T>(path: string, params?: Record<string, unknown>): Promise<T> {
    if (/^\/nodes\/[^/]+\/tasks$/.test(path) && params) {
      this.pages.push(`${path}?start=${params.start}&limit=${params.limit}`);
      return super.get<unknown[]>(path).then((all) =>
        all.slice(Number(params.start), Number(params.start) + Number(params.limit)) as T
      );
    }
    return super.get<T>(path);
  }
}

const T0 = 1_700_000_000;

function cluster(): Record<string, unknown> {
  return {
    "/cluster/status": [
      { type: "cluster", name: "lab", quorate: 1, nodes: 3, version: 3 },
      // No subscription: Proxmox answers an empty level, which is kept as it is.
      { type: "node", name: "n1", nodeid: 1, online: 1, ip: "10.0.0.1", local: 1, level: "" },
      { type: "node", name: "n2", nodeid: 2, online: 1, ip: "10.0.0.2", local: 0, level: "c" },
      { type: "node", name: "n3", nodeid: 3, online: 0, local: 0 },
    ],
    // n3 is offline: neither its storages nor its tasks are asked for (a read would fail here).
    "/nodes": [
      { node: "n2", status: "online", maxcpu: 8, maxmem: 1024 ** 3, level: "c" },
      { node: "n1", status: "online", maxcpu: 4, maxmem: 2 * 1024 ** 3, level: "" },
      { node: "n3", status: "offline" },
    ],
    "/version": { version: "9.2.0" },
    "/storage": [
      { storage: "nfs", type: "nfs", content: "backup, images", shared: 1, nodes: "n2, n1" },
      { storage: "local", type: "dir", content: "iso,backup,vztmpl", path: "/var/lib/vz" },
      { storage: "iso", type: "dir", content: "iso", disable: 1, path: "/srv/iso" },
      { storage: "old", type: "dir", content: "backup" },
    ],
    "/nodes/n1/storage": [
      {
        storage: "local",
        content: "iso,backup,vztmpl",
        active: 1,
        total: 100,
        used: 10,
        avail: 90,
      },
      { storage: "nfs", content: "backup,images", shared: 1, active: 1, total: 1000, used: 5 },
      // Inactive: its backups are not read.
      { storage: "old", content: "backup", active: 0 },
    ],
    "/nodes/n2/storage": [
      {
        storage: "local",
        content: "iso,backup,vztmpl",
        active: 1,
        total: 200,
        used: 30,
        avail: 170,
      },
      { storage: "nfs", content: "backup,images", shared: 1, active: 1, total: 999, used: 5 },
      { storage: "iso", content: "iso", active: 1 },
    ],
    "/nodes/n1/storage/local/content": [
      {
        volid: "local:backup/vzdump-qemu-101-2026_01_01.vma.zst",
        format: "vma.zst",
        size: 4096,
        ctime: T0,
        vmid: 101,
        subtype: "qemu",
        notes: "nightly",
        protected: 1,
        encrypted: "fp:aa",
        verification: { state: "ok" },
      },
      { volid: "", format: "tar" },
      { volid: "local:backup/vzdump-openvz-999.tar", subtype: "openvz", vmid: 999, size: 0 },
    ],
    "/nodes/n2/storage/local/content": [
      { volid: "local:backup/vzdump-lxc-200-2026_01_02.tar.zst", vmid: 200, subtype: "lxc" },
    ],
    // Shared: read once, on the first node by name; the same volume listed again counts once.
    "/nodes/n1/storage/nfs/content": [
      { volid: "nfs:backup/vzdump-qemu-101-a.vma", vmid: 101, subtype: "qemu", ctime: 0 },
      { volid: "nfs:backup/vzdump-qemu-101-a.vma", vmid: 101, subtype: "qemu", size: 1 },
    ],
    "/nodes/n1/tasks": [
      // Running: no status yet, or "running", or no end time.
      {
        upid: "UPID:n1:1:a:vzdump:101:root@pam:",
        type: "vzdump",
        id: "101",
        user: "root@pam",
        starttime: T0,
        pid: 11,
        pstart: 5,
      },
      {
        upid: "UPID:n1:2:a:qmstart:101:root@pam:",
        type: "qmstart",
        id: "101",
        user: "root@pam",
        status: "OK",
        starttime: T0,
        endtime: T0 + 60,
        pid: 12,
      },
      {
        upid: "UPID:n1:3:a:aptupdate::root@pam:",
        type: "aptupdate",
        id: "",
        user: "root@pam",
        status: "command failed",
        starttime: T0,
        endtime: T0 + 5,
      },
      {
        upid: "UPID:n1:4:a:srvreload:networking:root@pam:",
        type: "srvreload",
        id: "networking",
        status: "OK",
      },
      // Another endpoint (a second copy of this cluster) recorded this one: it stays there.
      {
        upid: "UPID:n1:5:a:qmstop:102:root@pam:",
        type: "qmstop",
        id: "102",
        status: "OK",
        endtime: T0,
      },
      { type: "broken" },
    ],
    "/nodes/n2/tasks": [
      {
        upid: "UPID:n2:6:a:vzstart:200:root@pam:",
        type: "vzstart",
        id: "200",
        user: "root@pam",
        status: "OK",
        starttime: T0,
        endtime: T0 + 1,
      },
    ],
    "/cluster/resources": [
      { vmid: 101, name: "web", node: "n1", type: "qemu", status: "running" },
      { vmid: 102, name: "db", node: "n2", type: "qemu", status: "stopped" },
      { vmid: 200, name: "ct", node: "n2", type: "lxc", status: "running" },
    ],
    "/nodes/n1/qemu/101/config": { name: "web", memory: 2048, cores: 2, parent: "pre" },
    "/nodes/n2/qemu/102/config": { name: "db", memory: 1024, cores: 1 },
    "/nodes/n2/lxc/200/config": { hostname: "ct", memory: 512, cores: 1, parent: "s1" },
    "/nodes/n1/qemu/101/snapshot": [
      { name: "base", snaptime: T0, description: "first" },
      { name: "pre", parent: "base", snaptime: T0 + 10, vmstate: 1 },
      { name: "current", parent: "pre", running: 1 },
    ],
    "/nodes/n2/lxc/200/snapshot": [{ name: "s1" }, { name: "current", parent: "s1" }, { name: "" }],
    "/cluster/replication": [
      {
        id: "101-0",
        type: "local",
        guest: 101,
        jobnum: 0,
        source: "n1",
        target: "n2",
        schedule: "*/5",
        rate: 10,
        comment: "to n2",
        disable: 1,
        remove_job: "full",
      },
      { id: "200-3", type: "local", target: "n1" },
      { id: "102-1", type: "local", guest: 102, source: "n2", target: "n1", remove_job: "soon" },
      { id: "not-a-job", type: "local", target: "n1" },
    ],
  };
}

async function run(inv: FakeInventory, hv: FakeHypervisor) {
  const { complete } = await runStages(inv, hv, STAGE_TYPES);
  const result = (step: string) => {
    const r = complete.stages.find((s) => s.step === step)!.result;
    return [r.created, r.updated, r.unchanged, r.deleted];
  };
  return { complete, result };
}

/** A record without its id, raw config and timestamps the fake adds: what the stage wrote. */
function fields(o: any, drop: string[] = []) {
  const { id: _id, raw_config: _raw, ...rest } = o;
  for (const k of drop) delete rest[k];
  return rest;
}

function setUp() {
  const inv = new FakeInventory();
  inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
  // The task UPID 5 belongs to the record of another endpoint (8).
  inv.table("plugins/service/task-history/").set(90_000, {
    id: 90_000,
    endpoint: 8,
    upid: "UPID:n1:5:a:qmstop:102:root@pam:",
    status: "OK",
  });
  return inv;
}

Deno.test("records: storage, tasks, backups, snapshots and replications arrive field by field", async () => {
  const inv = setUp();
  const hv = new PagingHypervisor(cluster());
  const { result } = await run(inv, hv);
  const node = (name: string) => inv.all("plugins/service/nodes/").find((n) => n.name === name)!.id;
  const vm = (vmid: number) =>
    inv.all("plugins/service/vm-sync-state/").find((s) => s.vmid === vmid)!.virtual_machine;
  const pluginCluster = inv.all("plugins/service/clusters/")[0].id;
  const byName = (path: string, key: string) =>
    Object.fromEntries(inv.all(path).map((o) => [String(o[key]), o]));

  // plugin nodes: /cluster/status and /nodes together; an offline node without answers.
  const nodes = byName("plugins/service/nodes/", "name");
  const device = (name: string) => inv.all("dcim/devices/").find((d) => d.name === name)!.id;
  assert.deepEqual(fields(nodes.n1, ["last_synced"]), {
    endpoint: 7,
    cluster: pluginCluster,
    name: "n1",
    node_id: 1,
    online: true,
    ip_address: "10.0.0.1",
    local: true,
    level: "",
    version: "9.2.0",
    device: device("n1"),
    maxcpu: 4,
    maxmem: 2 * 1024 ** 3,
  });
  assert.deepEqual(
    [nodes.n2.level, nodes.n2.local, nodes.n2.online, nodes.n2.maxcpu, nodes.n2.device],
    ["c", false, true, 8, device("n2")],
  );
  assert.deepEqual(
    [nodes.n3.level, nodes.n3.online, nodes.n3.ip_address, nodes.n3.maxcpu, nodes.n3.maxmem],
    [null, false, null, null, null],
  );
  assert.equal(nodes.n1.last_synced, "2026-01-01T00:00:00.000Z");
  // The plugin cluster: quorum and nodes online of all; the devices: online active, else offline.
  const [clusterRecord] = inv.all("plugins/service/clusters/");
  assert.deepEqual(
    [
      clusterRecord.mode,
      clusterRecord.version,
      clusterRecord.quorate,
      clusterRecord.nodes_online,
      clusterRecord.nodes_total,
    ],
    ["cluster", "9.2.0", true, 2, 3],
  );
  const devices = byName("dcim/devices/", "name");
  assert.deepEqual(
    ["n1", "n2", "n3"].map((n) => devices[n].status),
    ["active", "active", "offline"],
  );
  assert.deepEqual(["n1", "n3"].map((n) => devices[n].description), [
    "Proxmox VE 9.2.0 node, 4 CPUs, 2.0 GiB RAM",
    "Proxmox VE 9.2.0 node",
  ]);

  // storage: content and nodes as sorted lists; sizes summed over nodes, a shared one once.
  const storage = byName("plugins/service/storage/", "name");
  assert.deepEqual(Object.keys(storage).sort(), ["iso", "local", "nfs", "old"]);
  const stored = (name: string) => fields(storage[name], ["last_synced"]);
  assert.deepEqual(stored("local"), {
    cluster: pluginCluster,
    name: "local",
    storage_type: "dir",
    content: ["backup", "iso", "vztmpl"],
    path: "/var/lib/vz",
    nodes: ["n1", "n2"],
    shared: false,
    enabled: true,
    total: 300,
    used: 40,
    avail: 260,
    status: "active",
  });
  assert.deepEqual(stored("nfs"), {
    cluster: pluginCluster,
    name: "nfs",
    storage_type: "nfs",
    content: ["backup", "images"],
    path: null,
    nodes: ["n1", "n2"],
    shared: true,
    enabled: true,
    total: 1000,
    used: 5,
    avail: null,
    status: "active",
  });
  assert.deepEqual(
    [stored("iso").nodes, stored("iso").enabled, stored("iso").total, stored("iso").content],
    [["n2"], false, null, ["iso"]],
  );
  assert.deepEqual([stored("old").nodes, stored("old").used], [["n1"], null]);
  assert.equal(storage.local.last_synced, "2026-01-01T00:00:00.000Z");

  // task-history: each node's list, another endpoint's UPID left alone, a task without UPID out.
  const tasks = byName("plugins/service/task-history/", "upid");
  assert.equal(Object.keys(tasks).length, 6);
  assert.deepEqual(fields(tasks["UPID:n1:1:a:vzdump:101:root@pam:"]), {
    endpoint: 7,
    node: node("n1"),
    virtual_machine: vm(101),
    upid: "UPID:n1:1:a:vzdump:101:root@pam:",
    node_name: "n1",
    task_type: "vzdump",
    task_id: "101",
    vmid: 101,
    username: "root@pam",
    status: "running",
    exitstatus: null,
    starttime: new Date(T0 * 1000).toISOString(),
    endtime: null,
    pid: 11,
    pstart: 5,
  });
  assert.deepEqual(
    [
      "UPID:n1:2:a:qmstart:101:root@pam:",
      "UPID:n1:3:a:aptupdate::root@pam:",
      "UPID:n1:4:a:srvreload:networking:root@pam:",
      "UPID:n2:6:a:vzstart:200:root@pam:",
    ].map((upid) => {
      const t = tasks[upid];
      return [t.status, t.exitstatus, t.vmid, t.virtual_machine, t.node, t.endtime, t.username];
    }),
    [
      ["OK", "OK", 101, vm(101), node("n1"), new Date((T0 + 60) * 1000).toISOString(), "root@pam"],
      [
        "command failed",
        "command failed",
        null,
        null,
        node("n1"),
        new Date((T0 + 5) * 1000)
          .toISOString(),
        "root@pam",
      ],
      // Finished (a status) but no end time: still counted running.
      ["running", null, null, null, node("n1"), null, ""],
      ["OK", "OK", 200, vm(200), node("n2"), new Date((T0 + 1) * 1000).toISOString(), "root@pam"],
    ],
  );
  assert.deepEqual(fields(tasks["UPID:n1:5:a:qmstop:102:root@pam:"]), {
    endpoint: 8,
    upid: "UPID:n1:5:a:qmstop:102:root@pam:",
    status: "OK",
  });
  assert.deepEqual(
    hv.pages.sort(),
    [`/nodes/n1/tasks?start=0&limit=${TASK_PAGE}`, `/nodes/n2/tasks?start=0&limit=${TASK_PAGE}`],
  );

  // vm-backups: one record per volume; type from the subtype (qemu, lxc, or none).
  const backups = byName("plugins/service/backups/", "volid");
  assert.deepEqual(Object.keys(backups).sort(), [
    "local:backup/vzdump-lxc-200-2026_01_02.tar.zst",
    "local:backup/vzdump-openvz-999.tar",
    "local:backup/vzdump-qemu-101-2026_01_01.vma.zst",
    "nfs:backup/vzdump-qemu-101-a.vma",
  ]);
  const storageId = (name: string) => storage[name].id;
  assert.deepEqual(fields(backups["local:backup/vzdump-qemu-101-2026_01_01.vma.zst"]), {
    endpoint: 7,
    storage: storageId("local"),
    node: node("n1"),
    virtual_machine: vm(101),
    vmid: 101,
    vm_type: "qemu",
    volid: "local:backup/vzdump-qemu-101-2026_01_01.vma.zst",
    format: "vma.zst",
    size: 4096,
    creation_time: new Date(T0 * 1000).toISOString(),
    notes: "nightly",
    protected: true,
    encrypted: true,
    verification_state: "ok",
    status: "active",
  });
  assert.deepEqual(fields(backups["local:backup/vzdump-lxc-200-2026_01_02.tar.zst"]), {
    endpoint: 7,
    storage: storageId("local"),
    node: node("n2"),
    virtual_machine: vm(200),
    vmid: 200,
    vm_type: "lxc",
    volid: "local:backup/vzdump-lxc-200-2026_01_02.tar.zst",
    format: null,
    size: null,
    creation_time: null,
    notes: "",
    protected: false,
    encrypted: false,
    verification_state: null,
    status: "active",
  });
  const odd = backups["local:backup/vzdump-openvz-999.tar"];
  // An empty volume is of size 0, not of no size.
  assert.deepEqual([odd.vm_type, odd.vmid, odd.virtual_machine, odd.size], [null, 999, null, 0]);
  const shared = backups["nfs:backup/vzdump-qemu-101-a.vma"];
  assert.deepEqual(
    [shared.storage, shared.node, shared.size, shared.creation_time],
    [storageId("nfs"), node("n1"), null, null],
  );
  assert.ok(!hv.reads.includes("/nodes/n2/storage/nfs/content"), "a shared storage is read once");

  // vm-snapshots: only guests whose config names a parent are asked; "current" is no snapshot.
  assert.ok(!hv.reads.some((r) => r.startsWith("/nodes/n2/qemu/102/snapshot")));
  const snaps = Object.fromEntries(
    inv.all("plugins/service/snapshots/").map((s) => [`${s.vmid}:${s.name}`, s]),
  );
  assert.deepEqual(Object.keys(snaps).sort(), ["101:base", "101:pre", "200:s1"]);
  assert.deepEqual(fields(snaps["101:pre"]), {
    endpoint: 7,
    virtual_machine: vm(101),
    node: node("n1"),
    vmid: 101,
    vm_type: "qemu",
    name: "pre",
    description: "",
    parent: "base",
    snaptime: new Date((T0 + 10) * 1000).toISOString(),
    vmstate: true,
    status: "active",
  });
  assert.deepEqual(
    [snaps["101:base"].description, snaps["101:base"].parent, snaps["101:base"].vmstate],
    ["first", null, false],
  );
  assert.deepEqual(
    [snaps["200:s1"].vm_type, snaps["200:s1"].node, snaps["200:s1"].snaptime],
    ["lxc", node("n2"), null],
  );

  // replications: `<vmid>-<n>` jobs only; guest and job number from the id when not given.
  const repl = byName("plugins/service/replications/", "replication_id");
  assert.deepEqual(Object.keys(repl).sort(), ["101-0", "102-1", "200-3"]);
  assert.deepEqual(fields(repl["101-0"]), {
    endpoint: 7,
    replication_id: "101-0",
    virtual_machine: vm(101),
    hypervisor_node: node("n1"),
    guest: 101,
    target: "n2",
    job_type: "local",
    schedule: "*/5",
    rate: 10,
    comment: "to n2",
    disable: true,
    source: "n1",
    jobnum: 0,
    remove_job: "full",
    status: "active",
  });
  assert.deepEqual(fields(repl["200-3"]), {
    endpoint: 7,
    replication_id: "200-3",
    virtual_machine: vm(200),
    hypervisor_node: null,
    guest: 200,
    target: "n1",
    job_type: "local",
    schedule: "*/15",
    rate: null,
    comment: "",
    disable: false,
    source: "",
    jobnum: 3,
    remove_job: null,
    status: "active",
  });
  assert.deepEqual(
    [repl["102-1"].hypervisor_node, repl["102-1"].remove_job, repl["102-1"].jobnum],
    [node("n2"), null, 1],
  );

  // Counts: [created, updated, unchanged, deleted] per stage.
  assert.deepEqual(
    ["storage", "task-history", "vm-backups", "vm-snapshots", "replications"].map(result),
    [[4, 0, 0, 0], [5, 0, 0, 0], [4, 0, 0, 0], [3, 0, 0, 0], [3, 0, 0, 0]],
  );

  // ---- Upstream: removals and changes. A second run marks what went, writes what changed. ----
  const data = hv.data as Record<string, any>;
  data["/storage"] = data["/storage"].filter((s: any) => s.storage !== "iso");
  data["/nodes/n2/storage"] = data["/nodes/n2/storage"].filter((s: any) => s.storage !== "iso");
  data["/nodes/n2/storage"][0].used = 31;
  data["/nodes/n1/storage/local/content"] = data["/nodes/n1/storage/local/content"].slice(1);
  data["/nodes/n1/storage/nfs/content"][0].notes = "kept";
  data["/nodes/n1/tasks"] = data["/nodes/n1/tasks"].slice(1);
  data["/nodes/n1/tasks"].unshift({
    ...data["/nodes/n1/tasks"][0],
    upid: "UPID:n1:1:a:vzdump:101:root@pam:",
    status: "OK",
    endtime: T0 + 99,
  });
  data["/nodes/n1/qemu/101/snapshot"] = data["/nodes/n1/qemu/101/snapshot"].filter((
    s: any,
  ) => s.name !== "base");
  data["/cluster/replication"] = data["/cluster/replication"].filter((j: any) => j.id !== "200-3");
  // Guest 200 is gone upstream: its snapshots go stale with it.
  data["/cluster/resources"] = data["/cluster/resources"].filter((r: any) => r.vmid !== 200);
  data["/nodes/n2/tasks"] = [];
  const before = inv.writes.length;
  const again = await run(inv, hv);
  const writes = inv.writes.slice(before).filter((w) => !/vm-sync-state|virtual-machines/.test(w))
    .map((w) => w.replace(/\d+$/, ""));
  assert.deepEqual(writes.sort(), [
    "PATCH plugins/service/backups/", // the gone volume: stale
    "PATCH plugins/service/backups/", // the notes
    "PATCH plugins/service/backups/", // guest 200's: its guest went, no VM linked any more
    "PATCH plugins/service/replications/", // 200-3 stale
    "PATCH plugins/service/snapshots/", // 101:base stale
    "PATCH plugins/service/snapshots/", // 200:s1 stale (its guest went)
    "PATCH plugins/service/storage/", // iso stale
    "PATCH plugins/service/storage/", // local: the used size
    "PATCH plugins/service/task-history/", // the task that ended
  ]);
  const after = (path: string, key: string) => byName(path, key);
  assert.equal(after("plugins/service/storage/", "name").iso.status, "stale");
  assert.equal(after("plugins/service/storage/", "name").local.used, 41);
  assert.equal(
    after("plugins/service/backups/", "volid")["local:backup/vzdump-qemu-101-2026_01_01.vma.zst"]
      .status,
    "stale",
  );
  assert.equal(
    after("plugins/service/backups/", "volid")["nfs:backup/vzdump-qemu-101-a.vma"].notes,
    "kept",
  );
  const ctBackup = after("plugins/service/backups/", "volid")[
    "local:backup/vzdump-lxc-200-2026_01_02.tar.zst"
  ];
  assert.deepEqual([ctBackup.status, ctBackup.vmid, ctBackup.virtual_machine], [
    "active",
    200,
    null,
  ]);
  const task = after("plugins/service/task-history/", "upid")["UPID:n1:1:a:vzdump:101:root@pam:"];
  assert.deepEqual([task.status, task.exitstatus, task.endtime], [
    "OK",
    "OK",
    new Date((T0 + 99) * 1000).toISOString(),
  ]);
  // Tasks are history: the node's empty list marks nothing.
  assert.equal(
    after("plugins/service/task-history/", "upid")["UPID:n2:6:a:vzstart:200:root@pam:"].status,
    "OK",
  );
  const snapsAfter = inv.all("plugins/service/snapshots/");
  assert.deepEqual(
    snapsAfter.map((s) => [`${s.vmid}:${s.name}`, s.status]).sort(),
    [["101:base", "stale"], ["101:pre", "active"], ["200:s1", "stale"]],
  );
  assert.equal(after("plugins/service/replications/", "replication_id")["200-3"].status, "stale");
  assert.deepEqual(
    ["storage", "task-history", "vm-backups", "vm-snapshots", "replications"].map(again.result),
    [[0, 2, 2, 0], [0, 1, 3, 0], [0, 3, 1, 0], [0, 2, 1, 0], [0, 1, 2, 0]],
  );
});

Deno.test("records: a node's task archive is read page by page until a short page, 20 pages at most", async () => {
  const inv = setUp();
  const data = cluster();
  const many = (n: number, node: string) =>
    Array.from({ length: n }, (_, i) => ({
      upid: `UPID:${node}:${i}:b:qmstart:101:root@pam:`,
      type: "qmstart",
      id: "101",
      status: "OK",
      starttime: T0 + i,
      endtime: T0 + i + 1,
    }));
  data["/nodes/n1/tasks"] = many(TASK_PAGE + 1, "n1");
  data["/nodes/n2/tasks"] = many(TASK_PAGE, "n2");
  const hv = new PagingHypervisor(data);
  await run(inv, hv);
  assert.deepEqual(hv.pages.sort(), [
    `/nodes/n1/tasks?start=0&limit=${TASK_PAGE}`,
    `/nodes/n1/tasks?start=${TASK_PAGE}&limit=${TASK_PAGE}`,
    `/nodes/n2/tasks?start=0&limit=${TASK_PAGE}`,
    `/nodes/n2/tasks?start=${TASK_PAGE}&limit=${TASK_PAGE}`,
  ]);
  // Every task of both nodes is recorded once, the other endpoint's one aside.
  const upids = inv.all("plugins/service/task-history/").map((t) => t.upid);
  assert.equal(upids.length, 2 * TASK_PAGE + 1 + 1);
  assert.equal(new Set(upids).size, upids.length);
  // A second run asks the inventory 100 UPIDs at a time and writes nothing.
  const before = inv.writes.length;
  await run(inv, hv);
  assert.deepEqual(inv.writes.slice(before).filter((w) => w.includes("task-history")), []);

  // A node whose archive never ends stops after 20 pages.
  const endless = new PagingHypervisor(cluster());
  endless.data["/nodes/n1/tasks"] = many(TASK_PAGE * 25, "n1");
  await run(setUp(), endless);
  assert.equal(endless.pages.filter((p) => p.startsWith("/nodes/n1/")).length, 20);
});

Deno.test("records: recorded tasks are looked up 100 UPIDs a request; no task, no look-up (an empty filter would list the whole history)", async () => {
  class CountingInventory extends FakeInventory {
    readonly lookups: number[] = [];
    override list(path: string, query: Record<string, string | string[]>) {
      if (path === "plugins/service/task-history/") {
        assert.ok("upid" in query, `a task-history read without upids: ${JSON.stringify(query)}`);
        this.lookups.push([query.upid].flat().length);
      }
      return super.list(path, query);
    }
  }
  const lookups = async (n1: number, n2: number) => {
    const inv = new CountingInventory();
    inv.table("plugins/service/endpoints/hypervisor/").set(7, { id: 7, name: "lab" });
    const data = cluster();
    const tasks = (n: number, node: string) =>
      Array.from({ length: n }, (_, i) => ({
        upid: `UPID:${node}:${i}:c:qmstart:101:root@pam:`,
        type: "qmstart",
        status: "OK",
        starttime: T0 + i,
        endtime: T0 + i + 1,
      }));
    data["/nodes/n1/tasks"] = tasks(n1, "n1");
    data["/nodes/n2/tasks"] = tasks(n2, "n2");
    await run(inv, new PagingHypervisor(data));
    assert.equal(inv.all("plugins/service/task-history/").length, n1 + n2);
    return inv.lookups;
  };
  assert.deepEqual(await lookups(0, 0), []);
  assert.deepEqual(await lookups(60, 40), [100]);
  assert.deepEqual(await lookups(150, 50), [100, 100]);
  assert.deepEqual(await lookups(1, 0), [1]);
});
