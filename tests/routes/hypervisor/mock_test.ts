/** The stateful mock through HTTP: CRUD, tasks, paging, validation, both wire formats, reset. */
import assert from "node:assert/strict";
import { call, harness, login } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

const UPID =
  /^UPID:([a-z0-9-]+):([0-9A-F]{8}):([0-9A-F]{8}):([0-9A-F]{8}):([a-z]+):(\d*):([^:]+):$/;

Deno.test(
  "hypervisor mock: qemu CRUD, duplicate vmid, delete then 404 (pve) / Proxmox error (api2)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      // Spec format, JSON body.
      const res = await h.app.request("/pve/nodes/pve2/qemu", {
        method: "POST",
        headers: { ...s.headers, "content-type": "application/json" },
        body: JSON.stringify({
          vmid: 900,
          name: "web-900",
          memory: 4096,
          cores: 2,
          sockets: 1,
          ostype: "l26",
          net0: "virtio,bridge=vmbr0,firewall=1",
          scsi0: "local-lvm:32",
          ide2: "none,media=cdrom",
          start: true,
        }),
      });
      assert.equal(res.status, 200);
      const created = await res.json();
      assert.equal(created.success, true);
      assert.equal(created.vmid, 900);
      assert.match(created.task, UPID);

      const list = await call(h, s, "GET", "/pve/nodes/pve2/qemu");
      const vm = list.body.find((v: { vmid: number }) => v.vmid === 900);
      assert.equal(vm.name, "web-900");
      assert.equal(vm.status, "running"); // start=1 landed when the create task finished
      assert.equal(vm.maxmem, 4096 * 1024 * 1024);

      const config = await call(h, s, "GET", "/api2/json/nodes/pve2/qemu/900/config");
      assert.equal(String(config.body.data.memory), "4096"); // a property string in 9.x
      assert.match(config.body.data.net0, /^virtio=BC:24:11:[0-9A-F:]{8},bridge=vmbr0,firewall=1$/);
      assert.equal(config.body.data.scsi0, "local-lvm:vm-900-disk-0,size=32G");
      assert.match(config.body.data.digest, /^[0-9a-f]{40}$/);

      const put = await call(h, s, "PUT", "/api2/json/nodes/pve2/qemu/900/config", {
        memory: 8192,
        delete: "ide2",
      });
      assert.equal(put.status, 200);
      assert.deepEqual(put.body, { data: null });
      const after = (await call(h, s, "GET", "/pve/nodes/pve2/qemu/900/config")).body;
      assert.equal(String(after.memory), "8192");
      assert.equal(after.ide2, undefined);

      const dup = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu", { vmid: 900 });
      assert.equal(dup.status, 400);
      assert.deepEqual(dup.body.errors, { vmid: "VM 900 already exists on node 'pve2'" });
      const dupPve = await call(h, s, "POST", "/pve/nodes/pve1/qemu", { vmid: 900 });
      assert.equal(dupPve.status, 400);
      assert.deepEqual(dupPve.body, {
        detail: "Parameter verification failed.",
        errors: [{ field: "vmid", message: "VM 900 already exists on node 'pve2'" }],
      });

      // A running guest cannot be destroyed.
      const busy = await call(h, s, "DELETE", "/pve/nodes/pve2/qemu/900");
      assert.equal(busy.status, 400);
      assert.equal(busy.body.detail, "VM 900 is running - destroy failed");
      assert.equal((await call(h, s, "POST", "/pve/nodes/pve2/qemu/900/status/stop")).status, 200);
      const del = await call(h, s, "DELETE", "/api2/json/nodes/pve2/qemu/900");
      assert.equal(del.status, 200);
      assert.match(del.body.data, /:qmdestroy:900:/);
      const gone = await call(h, s, "GET", "/pve/nodes/pve2/qemu");
      assert.ok(!gone.body.some((v: { vmid: number }) => v.vmid === 900));
      const missing = await call(h, s, "GET", "/pve/nodes/pve2/qemu/900/config");
      assert.equal(missing.status, 404);
      assert.deepEqual(missing.body, {
        detail: "Configuration file 'nodes/pve2/qemu-server/900.conf' does not exist",
        errors: [],
      });
      const wire = await call(h, s, "GET", "/api2/json/nodes/pve2/qemu/900/status/current");
      assert.equal(wire.status, 500);
      assert.equal(
        wire.res.statusText,
        "Configuration file 'nodes/pve2/qemu-server/900.conf' does not exist",
      );
      assert.equal(wire.body.data, null);
      // A guest addressed on the wrong node does not exist there either.
      assert.equal((await call(h, s, "GET", "/pve/nodes/pve2/qemu/100/config")).status, 404);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: task lifecycle with a delay — running, then stopped/OK, effect lands",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({}, { taskDelayMs: 3000 });
    try {
      const s = await login(h);
      const vm = [...h.engine.state.guests.values()].find((g) =>
        g.type === "qemu" && g.status === "stopped" && g.node === "pve1"
      )!;
      const start = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/${vm.vmid}/status/start`);
      assert.equal(start.status, 200);
      const upid: string = start.body.data;
      const m = UPID.exec(upid)!;
      assert.ok(m, upid);
      assert.equal(m[1], "pve1");
      assert.equal(m[5], "qmstart");
      assert.equal(m[6], String(vm.vmid));
      assert.equal(m[7], "root@pam");
      assert.equal(parseInt(m[4], 16), Math.floor(h.clock.now / 1000));

      const enc = encodeURIComponent(upid);
      let st = await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${enc}/status`);
      assert.equal(st.body.data.status, "running");
      assert.equal(st.body.data.exitstatus, undefined);
      const listed = await call(h, s, "GET", "/pve/nodes/pve1/tasks");
      assert.equal(listed.body[0].upid, upid);
      assert.equal(listed.body[0].status, "running");
      let cur = await call(h, s, "GET", `/pve/nodes/pve1/qemu/${vm.vmid}/status/current`);
      assert.equal(cur.body.status, "stopped");

      h.clock.now += 3000;
      st = await call(h, s, "GET", `/pve/nodes/pve1/tasks/${enc}/status`);
      assert.equal(st.body.status, "stopped");
      assert.equal(st.body.exitstatus, "OK");
      cur = await call(h, s, "GET", `/pve/nodes/pve1/qemu/${vm.vmid}/status/current`);
      assert.equal(cur.body.status, "running");
      const log = await call(h, s, "GET", `/api2/json/nodes/pve1/tasks/${enc}/log`);
      assert.deepEqual(log.body.data.at(-1), { n: log.body.data.length, t: "TASK OK" });
      // Starting a running VM fails as in Proxmox.
      const again = await call(h, s, "POST", `/pve/nodes/pve1/qemu/${vm.vmid}/status/start`);
      assert.equal(again.status, 400);
      assert.equal(again.body.detail, `VM ${vm.vmid} already running`);
      // Unknown task → 404.
      assert.equal(
        (await call(
          h,
          s,
          "GET",
          `/pve/nodes/pve1/tasks/${
            encodeURIComponent("UPID:pve1:00000001:00000001:00000001:x::root@pam:")
          }/status`,
        )).status,
        404,
      );
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: migrate moves the guest, clone creates one, nested records follow",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({}, { taskDelayMs: 1000 });
    try {
      const s = await login(h);
      const vm = [...h.engine.state.guests.values()].find((g) =>
        g.type === "qemu" && g.status === "stopped" && g.node === "pve1"
      )!;
      const id = vm.vmid;
      const rule = await call(h, s, "POST", `/pve/nodes/pve1/qemu/${id}/firewall/rules`, {
        type: "in",
        action: "ACCEPT",
        dport: "22",
        proto: "tcp",
        enable: 1,
      });
      assert.equal(rule.status, 200);
      const badTarget = await call(h, s, "POST", `/pve/nodes/pve1/qemu/${id}/migrate`, {
        target: "pve1",
      });
      assert.equal(badTarget.status, 400);
      assert.equal(badTarget.body.errors[0].field, "target");
      const mig = await call(h, s, "POST", `/pve/nodes/pve1/qemu/${id}/migrate`, {
        target: "pve2",
      });
      assert.match(mig.body.task, /:qmigrate:/);
      // While the task runs the guest is locked and still on pve1.
      assert.equal(
        (await call(h, s, "GET", `/pve/nodes/pve1/qemu/${id}/config`)).body.lock,
        "migrate",
      );
      h.clock.now += 1000;
      assert.equal((await call(h, s, "GET", `/pve/nodes/pve1/qemu/${id}/config`)).status, 404);
      const moved = await call(h, s, "GET", `/pve/nodes/pve2/qemu/${id}/config`);
      assert.equal(moved.status, 200);
      assert.equal(moved.body.lock, undefined);
      const rules = await call(h, s, "GET", `/pve/nodes/pve2/qemu/${id}/firewall/rules`);
      assert.equal(rules.body.length, 1);
      assert.equal(rules.body[0].dport, "22");
      const res = await call(h, s, "GET", "/pve/cluster/resources?type=vm");
      assert.equal(res.body.find((r: { vmid: number }) => r.vmid === id).node, "pve2");

      const clone = await call(h, s, "POST", `/api2/json/nodes/pve2/qemu/${id}/clone`, {
        newid: 4000,
        name: "copy",
        target: "pve3",
      });
      assert.equal(clone.status, 200);
      h.clock.now += 1000;
      const copy = await call(h, s, "GET", "/pve/nodes/pve3/qemu/4000/config");
      assert.equal(copy.body.name, "copy");
      assert.equal(copy.body.lock, undefined);
      const dupClone = await call(h, s, "POST", `/pve/nodes/pve2/qemu/${id}/clone`, {
        newid: 4000,
      });
      assert.deepEqual(dupClone.body.errors, [{
        field: "newid",
        message: "VM 4000 already exists on node 'pve3'",
      }]);

      // Destroy takes the guest's nested records with it.
      assert.equal((await call(h, s, "DELETE", `/pve/nodes/pve2/qemu/${id}`)).status, 200);
      assert.equal((await call(h, s, "POST", "/pve/nodes/pve2/qemu", { vmid: id })).status, 200);
      const fresh = await call(h, s, "GET", `/pve/nodes/pve2/qemu/${id}/firewall/rules`);
      assert.deepEqual(fresh.body, []);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: snapshots create/rollback/delete and vzdump backups",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const base = "/pve/nodes/pve1/qemu/100";
      const before = (await call(h, s, "GET", `${base}/snapshot`)).body;
      assert.deepEqual(before.map((x: { name: string }) => x.name), ["before-upgrade", "current"]);
      const snap = await call(h, s, "POST", `${base}/snapshot`, {
        snapname: "pre-change",
        description: "x",
      });
      assert.match(snap.body.task, /:qmsnapshot:100:/);
      const dup = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/100/snapshot`, {
        snapname: "pre-change",
      });
      assert.deepEqual(dup.body.errors, { snapname: "snapshot name 'pre-change' already used" });
      await call(h, s, "PUT", `${base}/config`, { memory: 512 });
      const rb = await call(h, s, "POST", `${base}/snapshot/pre-change/rollback`);
      assert.equal(rb.status, 200);
      const cfg = (await call(h, s, "GET", `${base}/config`)).body;
      assert.notEqual(cfg.memory, 512);
      assert.equal(cfg.parent, "pre-change");
      assert.equal((await call(h, s, "DELETE", `${base}/snapshot/pre-change`)).status, 200);
      assert.equal((await call(h, s, "GET", `${base}/snapshot/pre-change/config`)).status, 404);
      const after = (await call(h, s, "GET", `${base}/snapshot`)).body;
      assert.deepEqual(after.map((x: { name: string }) => x.name), ["before-upgrade", "current"]);

      const backups = async () =>
        (await call(
          h,
          s,
          "GET",
          "/api2/json/nodes/pve1/storage/local/content?content=backup&vmid=103",
        )).body.data;
      const n = (await backups()).length;
      const dump = await call(h, s, "POST", "/api2/json/nodes/pve1/vzdump", {
        vmid: "103",
        storage: "local",
        mode: "snapshot",
      });
      assert.match(dump.body.data, /:vzdump:103:/);
      const list = await backups();
      assert.equal(list.length, n + 1);
      // Clients that join path segments send the volume id unencoded; both forms work.
      const volid: string = list.at(-1).volid;
      const raw = await call(h, s, "GET", `/api2/json/nodes/pve1/storage/local/content/${volid}`);
      assert.equal(raw.status, 200);
      assert.equal(raw.body.data.format, "vma.zst");
      const enc = `/pve/nodes/pve1/storage/local/content/${encodeURIComponent(volid)}`;
      assert.equal((await call(h, s, "DELETE", enc)).status, 200);
      assert.equal((await call(h, s, "GET", enc)).status, 404);
      assert.match(
        list.at(-1).volid,
        /^local:backup\/vzdump-qemu-103-\d{4}_\d{2}_\d{2}-\d{2}_\d{2}_\d{2}\.vma\.zst$/,
      );
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: limit/start page every list; /api2/json adds total",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({ HYPERVISOR_MOCK_SEED: "nodes=2,vms=40,cts=6,storages=3" });
    try {
      const s = await login(h);
      const all = (await call(h, s, "GET", "/pve/nodes/pve1/qemu")).body;
      assert.equal(all.length, 20);
      const page = await call(h, s, "GET", "/pve/nodes/pve1/qemu?limit=5&start=3");
      assert.deepEqual(page.body, all.slice(3, 8));
      assert.equal(page.res.headers.get("x-total-count"), "20");
      const wire = await call(
        h,
        s,
        "GET",
        "/api2/json/cluster/resources?type=vm&limit=10&start=40",
      );
      assert.equal(wire.body.data.length, 6);
      assert.equal(wire.body.total, 46);
      // Lists whose schema has no paging parameters page too (generic collections, storage).
      const st = await call(h, s, "GET", "/api2/json/storage?limit=1&start=2");
      assert.deepEqual(st.body.data.map((x: { storage: string }) => x.storage), ["nfs1"]);
      const bad = await call(h, s, "GET", "/pve/nodes?limit=-1");
      assert.equal(bad.status, 400);
      assert.equal(bad.body.errors[0].field, "limit");
      // The task list defaults to 50 entries, as Proxmox.
      for (let i = 0; i < 50; i++) {
        await call(h, s, "POST", "/pve/nodes/pve1/qemu/100/status/stop");
      }
      const tasks = await call(h, s, "GET", "/api2/json/nodes/pve1/tasks");
      assert.equal(tasks.body.data.length, 50);
      assert.ok(tasks.body.total > 50);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: validation on both mounts (type, enum, range, pattern, property strings, unknown)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const form = {
        vmid: "abc",
        ostype: "plan9",
        cores: "0",
        net0: "virtio=ZZ:00",
        bootdisk: "floppy0",
        bogus: "1",
      };
      const wire = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu", form);
      assert.equal(wire.status, 400);
      assert.equal(wire.res.statusText, "Parameter verification failed.");
      const e = wire.body.errors;
      assert.equal(wire.body.data, null);
      assert.match(e.vmid, /type check \('integer'\) failed - got 'abc'/);
      assert.match(e.ostype, /does not have a value in the enumeration/);
      assert.equal(e.cores, "value must have a minimum value of 1");
      assert.match(e.net0, /macaddr/);
      assert.equal(e.bootdisk, "value does not match the regex pattern");
      assert.equal(
        e.bogus,
        "property is not defined in schema and the schema does not allow additional properties",
      );

      const pve = await call(h, s, "POST", "/pve/nodes/pve1/qemu", { name: "x" });
      assert.equal(pve.status, 400);
      assert.deepEqual(pve.body, {
        detail: "Parameter verification failed.",
        errors: [{ field: "vmid", message: "property is missing and it is not optional" }],
      });
      // Booleans accept true/false/1/0 as Proxmox does; bad ones are rejected.
      const okBool = await call(h, s, "GET", "/pve/nodes/pve1/qemu?full=true");
      assert.equal(okBool.status, 200);
      const badBool = await call(h, s, "GET", "/pve/nodes/pve1/qemu?full=maybe");
      assert.deepEqual(badBool.body.errors, [{
        field: "full",
        message: "type check ('boolean') failed - got 'maybe'",
      }]);
      // Path parameters are validated too.
      const badPath = await call(h, s, "GET", "/api2/json/nodes/pve1/qemu/12/config");
      assert.equal(badPath.status, 400);
      assert.equal(badPath.body.errors.vmid, "value must have a minimum value of 100");
      // A body that is not JSON.
      const res = await h.app.request("/pve/nodes/pve1/qemu", {
        method: "POST",
        headers: { ...s.headers, "content-type": "application/json" },
        body: "{nope",
      });
      assert.equal(res.status, 400);
      assert.deepEqual((await res.json()).errors, [{
        field: "body",
        message: "request body is not valid JSON",
      }]);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: wire format — {data}, booleans 0/1, JSON and form bodies accepted",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const res = await h.app.request("/api2/json/nodes/pve1/network", {
        method: "POST",
        headers: { ...s.headers, "content-type": "application/json" },
        body: JSON.stringify({
          iface: "vmbr9",
          type: "bridge",
          autostart: true,
          bridge_vlan_aware: false,
        }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { data: null });
      const one = await call(h, s, "GET", "/api2/json/nodes/pve1/network/vmbr9");
      assert.equal(one.body.data.autostart, 1);
      assert.equal(one.body.data.bridge_vlan_aware, 0);
      const dup = await call(h, s, "POST", "/api2/json/nodes/pve1/network", {
        iface: "vmbr9",
        type: "bridge",
      });
      assert.deepEqual(dup.body.errors, { iface: "iface 'vmbr9' already exists" });
      // Bare payloads on /pve.
      const bare = await call(h, s, "GET", "/pve/nodes/pve1/network/vmbr9");
      assert.equal(bare.body.iface, "vmbr9");
      assert.equal((await call(h, s, "DELETE", "/pve/nodes/pve1/network/vmbr9")).status, 200);
      assert.equal((await call(h, s, "GET", "/pve/nodes/pve1/network/vmbr9")).status, 404);
      // Proxmox 501 for unknown routes, with the reason text.
      const unknown = await call(h, s, "GET", "/api2/json/nodes/pve1/nothing");
      assert.equal(unknown.status, 501);
      assert.equal(unknown.res.statusText, "Method 'GET /nodes/pve1/nothing' not implemented");
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: generic collections (backup jobs) and pools behave like a cluster",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const n = (await call(h, s, "GET", "/pve/cluster/backup")).body.length;
      const mk = await call(h, s, "POST", "/api2/json/cluster/backup", {
        id: "nightly",
        schedule: "02:00",
        storage: "local",
        all: 1,
      });
      assert.equal(mk.status, 200);
      const dup = await call(h, s, "POST", "/api2/json/cluster/backup", {
        id: "nightly",
        schedule: "02:00",
      });
      assert.deepEqual(dup.body.errors, { id: "id 'nightly' already exists" });
      assert.equal((await call(h, s, "GET", "/pve/cluster/backup")).body.length, n + 1);
      await call(h, s, "PUT", "/pve/cluster/backup/nightly", { schedule: "03:00" });
      assert.equal((await call(h, s, "GET", "/pve/cluster/backup/nightly")).body.schedule, "03:00");
      assert.equal((await call(h, s, "DELETE", "/pve/cluster/backup/nightly")).status, 200);
      assert.equal((await call(h, s, "GET", "/pve/cluster/backup/nightly")).status, 404);

      assert.equal((await call(h, s, "POST", "/pve/pools", { poolid: "lab" })).status, 200);
      assert.equal((await call(h, s, "POST", "/pve/pools", { poolid: "lab" })).status, 400);
      await call(h, s, "PUT", "/pve/pools/lab", { vms: "101,102", "allow-move": 1 });
      const pool = await call(h, s, "GET", "/pve/pools/lab");
      assert.deepEqual(pool.body.members.map((m: { vmid: number }) => m.vmid), [101, 102]);
      const notEmpty = await call(h, s, "DELETE", "/pve/pools/lab");
      assert.equal(notEmpty.status, 400);
      assert.equal(notEmpty.body.detail, "pool is not empty");
      await call(h, s, "PUT", "/pve/pools/lab", { vms: "101,102", delete: 1 });
      assert.equal((await call(h, s, "DELETE", "/pve/pools/lab")).status, 200);
      assert.equal((await call(h, s, "GET", "/pve/pools/lab")).status, 404);
      // Pool members follow their guest.
      await call(h, s, "POST", "/pve/pools", { poolid: "p2" });
      await call(h, s, "PUT", "/pve/pools/p2", { vms: "101", "allow-move": 1 });
      await call(h, s, "POST", "/pve/nodes/pve2/qemu/101/status/stop");
      await call(h, s, "DELETE", "/pve/nodes/pve2/qemu/101");
      assert.deepEqual((await call(h, s, "GET", "/pve/pools/p2")).body.members, []);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: derived cluster views and POST /pve/mock/reset",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({ HYPERVISOR_MOCK_SEED: "nodes=4,vms=8,cts=4,storages=2" });
    try {
      const s = await login(h);
      const status = (await call(h, s, "GET", "/pve/cluster/status")).body;
      assert.deepEqual(status[0], {
        type: "cluster",
        id: "cluster",
        name: "bridgebox",
        nodes: 4,
        quorate: 1,
        version: 6,
      });
      assert.equal(status.filter((x: { type: string }) => x.type === "node").length, 4);
      const nodes = (await call(h, s, "GET", "/api2/json/cluster/resources?type=node")).body.data;
      assert.deepEqual(nodes.map((n: { node: string }) => n.node), [
        "pve1",
        "pve2",
        "pve3",
        "pve4",
      ]);
      const storage =
        (await call(h, s, "GET", "/api2/json/cluster/resources?type=storage")).body.data;
      assert.equal(storage.length, 8);
      await call(h, s, "POST", "/pve/nodes/pve1/lxc", {
        vmid: 777,
        ostemplate: "local:vztmpl/debian-13-standard_13.1-1_amd64.tar.zst",
        hostname: "ct777",
      });
      const vms = (await call(h, s, "GET", "/pve/cluster/resources?type=vm")).body;
      assert.equal(vms.length, 13);
      assert.ok(vms.some((v: { id: string }) => v.id === "lxc/777"));

      assert.equal((await call(h, {}, "POST", "/pve/mock/reset")).status, 401);
      const reset = await call(h, s, "POST", "/pve/mock/reset");
      assert.equal(reset.status, 200);
      assert.equal(reset.body.guests, 12);
      assert.equal((await call(h, s, "GET", "/pve/nodes/pve1/lxc/777/config")).status, 404);
      // The seed is deterministic: the same data after reset.
      const again = (await call(h, s, "GET", "/pve/cluster/resources?type=vm")).body;
      assert.deepEqual(
        again.map((v: { id: string }) => v.id),
        vms.map((v: { id: string }) => v.id).filter((id: string) => id !== "lxc/777"),
      );
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: cached GET bodies stay correct (writes, time) and large ones are gzip-able",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({ HYPERVISOR_MOCK_SEED: "nodes=1,vms=200,cts=0,storages=2" });
    try {
      const s = await login(h);
      const path = "/api2/json/nodes/pve1/qemu";
      const plain = await call(h, s, "GET", path);
      const res = await h.app.request(path, {
        headers: { ...s.headers, "accept-encoding": "gzip, br" },
      });
      assert.equal(res.headers.get("content-encoding"), "gzip");
      const unzipped = await new Response(res.body!.pipeThrough(new DecompressionStream("gzip")))
        .json();
      assert.deepEqual(unzipped, plain.body);

      const running = plain.body.data.find((v: { status: string }) => v.status === "running");
      h.clock.now += 5000;
      const later = (await call(h, s, "GET", path)).body.data.find((v: { vmid: number }) =>
        v.vmid === running.vmid
      );
      assert.equal(later.uptime, running.uptime + 5);
      await call(h, s, "POST", `/pve/nodes/pve1/qemu/${running.vmid}/status/stop`);
      const stopped = (await call(h, s, "GET", path)).body.data.find((v: { vmid: number }) =>
        v.vmid === running.vmid
      );
      assert.equal(stopped.status, "stopped");
      // Auth is checked before any cached answer.
      assert.equal((await call(h, {}, "GET", path)).status, 401);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: the seed follows HYPERVISOR_MOCK_SEED and each app has its own state",
  NEEDS_SCHEMAS,
  async () => {
    const env = { HYPERVISOR_MOCK_SEED: "nodes=3,vms=50,cts=10,storages=3" };
    const a = await harness(env);
    const b = await harness(env);
    try {
      const sa = await login(a);
      const sb = await login(b);
      const res = (await call(a, sa, "GET", "/pve/cluster/resources")).body;
      const count = (t: string) => res.filter((r: { type: string }) => r.type === t).length;
      assert.equal(count("node"), 3);
      assert.equal(count("qemu"), 50);
      assert.equal(count("lxc"), 10);
      assert.equal((await call(a, sa, "GET", "/pve/storage")).body.length, 3);
      // Every sync stage has data: jobs, SDN, snapshots, backups, networks, tasks.
      assert.ok((await call(a, sa, "GET", "/pve/cluster/replication")).body.length > 0);
      assert.ok((await call(a, sa, "GET", "/pve/nodes/pve2/tasks")).body.length > 0);
      assert.deepEqual(
        (await call(b, sb, "GET", "/pve/cluster/resources")).body.map((r: { id: string }) => r.id),
        res.map((r: { id: string }) => r.id),
      );
      await call(a, sa, "POST", "/pve/nodes/pve1/qemu", { vmid: 5000 });
      assert.equal((await call(a, sa, "GET", "/pve/nodes/pve1/qemu/5000/config")).status, 200);
      assert.equal((await call(b, sb, "GET", "/pve/nodes/pve1/qemu/5000/config")).status, 404);
      // A ticket of one app means nothing to the other.
      assert.equal((await call(b, sa, "GET", "/pve/nodes")).status, 401);
    } finally {
      a.close();
      b.close();
    }
  },
);

Deno.test(
  "hypervisor mock: resize, template and the cluster-wide task list",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const base = "/api2/json/nodes/pve1/qemu/103";
      const before = (await call(h, s, "GET", `${base}/config`)).body.data.scsi0 as string;
      const size = Number(/size=(\d+)G/.exec(before)![1]);
      const grow = await call(h, s, "PUT", `${base}/resize`, { disk: "scsi0", size: "+10G" });
      assert.match(grow.body.data, /:resize:103:/);
      const after = (await call(h, s, "GET", `${base}/config`)).body.data.scsi0 as string;
      assert.ok(after.includes(`size=${size + 10}G`), after);
      const shrink = await call(h, s, "PUT", `${base}/resize`, { disk: "scsi0", size: "1G" });
      assert.deepEqual(shrink.body.errors, { size: "shrinking disks is not supported" });
      assert.equal(
        (await call(h, s, "PUT", `${base}/resize`, { disk: "scsi9", size: "+1G" })).status,
        400,
      );

      await call(h, s, "POST", `${base}/status/stop`);
      assert.equal((await call(h, s, "POST", `${base}/template`)).status, 200);
      const list = (await call(h, s, "GET", "/pve/nodes/pve1/qemu")).body;
      assert.equal(list.find((v: { vmid: number }) => v.vmid === 103).template, 1);

      const tasks = (await call(h, s, "GET", "/api2/json/cluster/tasks")).body.data;
      assert.equal(tasks[0].type, "qmtemplate");
      assert.ok(tasks.some((t: { node: string }) => t.node === "pve2"));
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: realms and built-in roles are listed (login pages read /access/domains)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const realms = await call(h, {}, "GET", "/api2/json/access/domains");
      assert.equal(realms.status, 200); // world-readable, as in Proxmox
      assert.deepEqual(realms.body.data.map((d: { realm: string }) => d.realm), ["pam", "pve"]);
      const s = await login(h);
      const roles = (await call(h, s, "GET", "/pve/access/roles")).body;
      assert.ok(roles.some((r: { roleid: string }) => r.roleid === "PVEAuditor"));
      assert.deepEqual((await call(h, s, "GET", "/pve/access/acl")).body, []);
      await call(h, s, "PUT", "/pve/access/acl", {
        path: "/vms/100",
        roles: "PVEAuditor",
        users: "root@pam",
      });
      assert.deepEqual((await call(h, s, "GET", "/api2/json/access/acl")).body.data, [
        { path: "/vms/100", type: "user", ugid: "root@pam", roleid: "PVEAuditor", propagate: 1 },
      ]);
      const badRole = await call(h, s, "PUT", "/pve/access/acl", {
        path: "/",
        roles: "Nope",
        users: "root@pam",
      });
      assert.deepEqual(badRole.body.errors, [{
        field: "roles",
        message: "role 'Nope' does not exist",
      }]);
      await call(h, s, "PUT", "/pve/access/acl", {
        path: "/vms/100",
        roles: "PVEAuditor",
        users: "root@pam",
        delete: 1,
      });
      assert.deepEqual((await call(h, s, "GET", "/pve/access/acl")).body, []);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor mock: a task about a volume id still has a well-formed UPID",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const vols =
        (await call(h, s, "GET", "/pve/nodes/pve1/storage/local/content?content=iso")).body;
      const volid: string = vols[0].volid;
      const path = `/api2/json/nodes/pve1/storage/local/content/${encodeURIComponent(volid)}`;
      const del = await call(h, s, "DELETE", path);
      assert.match(
        del.body.data,
        /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:imgdel:local\\x3aiso\/[^:]+:root@pam:$/,
      );
      const st = await call(
        h,
        s,
        "GET",
        `/pve/nodes/pve1/tasks/${encodeURIComponent(del.body.data)}/status`,
      );
      assert.equal(st.body.exitstatus, "OK");
    } finally {
      h.close();
    }
  },
);
