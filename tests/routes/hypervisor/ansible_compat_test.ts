/**
 * What Ansible's Proxmox modules (community.general proxmox_kvm, proxmox, proxmox_nic,
 * proxmox_disk, proxmox_snap) and proxmoxer tools rely on: the built-in catalogue takes every
 * parameter Proxmox takes, and the mock allocates what Proxmox allocates (MACs in BC:24:11,
 * the next free disk volume, vmids, UPIDs) and applies its defaults.
 */
import assert from "node:assert/strict";
import { builtinCatalogue } from "../../../domain/hypervisor_schema/catalogue.ts";
import type { SchemaNode } from "../../../domain/hypervisor_schema/schema.ts";
import { call, type Harness, harness, login, SCHEMA_92, type Session } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

/** The built-in catalogue (null) always runs; the 9.2 schema variant needs the schema files. */
const needs = (schemaUrl: null | undefined) => schemaUrl === null ? {} : NEEDS_SCHEMAS;

function* walk(nodes: SchemaNode[] | undefined): Generator<SchemaNode> {
  for (const n of nodes ?? []) {
    yield n;
    yield* walk(n.children);
  }
}

Deno.test(
  "built-in catalogue: every operation takes exactly the parameters Proxmox VE 9.2 takes there, with its types",
  NEEDS_SCHEMAS,
  async () => {
    const pve: SchemaNode[] = JSON.parse(await Deno.readTextFile(SCHEMA_92));
    const real = new Map<string, Record<string, { type?: string }>>();
    for (const n of walk(pve)) {
      for (const [m, o] of Object.entries(n.info ?? {})) {
        real.set(`${m} ${n.path}`, o!.parameters?.properties ?? {});
      }
    }
    let checked = 0;
    for (const n of walk(builtinCatalogue())) {
      for (const [m, o] of Object.entries(n.info ?? {})) {
        const key = `${m} ${n.path}`;
        const theirs = real.get(key);
        assert.ok(theirs, `${key} is not a Proxmox VE 9.2 operation`);
        const mine = o!.parameters?.properties ?? {};
        const missing = Object.keys(theirs).filter((k) => !(k in mine));
        const extra = Object.keys(mine).filter((k) => !(k in theirs));
        const retyped = Object.keys(theirs).filter((k) =>
          k in mine && mine[k].type !== theirs[k].type
        );
        assert.deepEqual({ key, missing, extra, retyped }, {
          key,
          missing: [],
          extra: [],
          retyped: [],
        });
        checked++;
      }
    }
    assert.ok(checked >= 180, `only ${checked} operations`);
  },
);

/** Waits for a task (taskDelayMs 0: it finishes on the next status read). */
async function done(h: Harness, s: Session, upid: string) {
  const node = upid.split(":")[1];
  for (let i = 0; i < 20; i++) {
    const st = await call(
      h,
      s,
      "GET",
      `/api2/json/nodes/${node}/tasks/${encodeURIComponent(upid)}/status`,
    );
    if (st.body.data.status === "stopped") return st.body.data;
  }
  throw new Error(`task ${upid} did not finish`);
}

const UPID = /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmcreate:\d+:root@pam:$/;
const MAC = "BC:24:11(:[0-9A-F]{2}){3}";

for (
  const [label, schemaUrl] of [["built-in catalogue", null], ["9.2 schema", undefined]] as const
) {
  Deno.test(
    `${label}: next free vmid, a UPID, a MAC for a NIC added without one, the next free disk volume, clones on new volumes`,
    needs(schemaUrl),
    async () => {
      const h = await harness({}, { schemaUrl });
      try {
        const s = await login(h);
        const next = await call(h, s, "GET", "/api2/json/cluster/nextid");
        const vmid = Number(next.body.data);
        const taken = await call(h, s, "GET", "/api2/json/cluster/resources?type=vm");
        assert.ok(!taken.body.data.some((g: { vmid: number }) => g.vmid === vmid));
        const created = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu", {
          vmid,
          name: "web1",
          scsi0: "local-lvm:8",
          net0: "virtio,bridge=vmbr0",
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        assert.match(created.body.data, UPID);
        assert.equal((await done(h, s, created.body.data)).exitstatus, "OK");
        assert.notEqual(
          Number((await call(h, s, "GET", "/api2/json/cluster/nextid")).body.data),
          vmid,
        );

        // proxmox_nic: add net1 without a MAC, read it back, send it again with the MAC.
        const add = await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/config`, {
          net1: "virtio,bridge=vmbr0,tag=20",
        });
        assert.equal(add.status, 200, JSON.stringify(add.body));
        let config =
          (await call(h, s, "GET", `/api2/json/nodes/pve1/qemu/${vmid}/config`)).body.data;
        assert.match(config.net0, new RegExp(`^virtio=${MAC},bridge=vmbr0$`));
        // Proxmox's own additions on create; unset settings keep their defaults.
        assert.match(config.smbios1, /^uuid=[0-9a-f-]{36}$/);
        assert.match(config.vmgenid, /^[0-9a-f-]{36}$/);
        assert.match(config.meta, /^creation-qemu=[\d.]+,ctime=\d+$/);
        assert.equal(config.memory, undefined);
        assert.equal(config.cores, undefined);
        const current = await call(
          h,
          s,
          "GET",
          `/api2/json/nodes/pve1/qemu/${vmid}/status/current`,
        );
        assert.equal(current.body.data.maxmem, 512 * 1024 * 1024);
        assert.match(config.net1, new RegExp(`^virtio=${MAC},bridge=vmbr0,tag=20$`));
        assert.notEqual(config.net0, config.net1.replace(",tag=20", ""));
        const again = await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/config`, {
          net1: config.net1.replace("tag=20", "tag=30"),
        });
        assert.equal(again.status, 200);
        const noModel = await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/config`, {
          net2: "bridge=vmbr0",
        });
        assert.equal(noModel.status, 400);
        assert.ok(noModel.body.errors.net2, JSON.stringify(noModel.body));

        // proxmox_disk: scsi1 gets its own volume.
        const disk = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/${vmid}/config`, {
          scsi1: "local-lvm:4",
        });
        assert.equal(disk.status, 200, JSON.stringify(disk.body));
        await done(h, s, disk.body.data);
        config = (await call(h, s, "GET", `/api2/json/nodes/pve1/qemu/${vmid}/config`)).body.data;
        assert.equal(config.scsi0, `local-lvm:vm-${vmid}-disk-0,size=8G`);
        assert.equal(config.scsi1, `local-lvm:vm-${vmid}-disk-1,size=4G`);
        const content = await call(h, s, "GET", "/api2/json/nodes/pve1/storage/local-lvm/content");
        const volids = content.body.data.map((v: { volid: string }) => v.volid);
        assert.ok(volids.includes(`local-lvm:vm-${vmid}-disk-0`));
        assert.ok(volids.includes(`local-lvm:vm-${vmid}-disk-1`));

        // proxmox_kvm clone (full, with `format`): new volumes under the new vmid.
        const newid = Number((await call(h, s, "GET", "/api2/json/cluster/nextid")).body.data);
        const clone = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/${vmid}/clone`, {
          newid,
          name: "web2",
          full: 1,
          format: "raw",
          storage: "local-lvm",
        });
        assert.equal(clone.status, 200, JSON.stringify(clone.body));
        await done(h, s, clone.body.data);
        const copy = (await call(h, s, "GET", `/api2/json/nodes/pve1/qemu/${newid}/config`)).body
          .data;
        assert.equal(copy.scsi0, `local-lvm:vm-${newid}-disk-0,size=8G`);
        assert.notEqual(copy.net0, config.net0);
        const after = await call(h, s, "GET", "/api2/json/nodes/pve1/storage/local-lvm/content");
        const afterIds = after.body.data.map((v: { volid: string }) => v.volid);
        assert.ok(afterIds.includes(`local-lvm:vm-${newid}-disk-0`));
        assert.ok(afterIds.includes(`local-lvm:vm-${vmid}-disk-0`));
      } finally {
        h.close();
      }
    },
  );

  Deno.test(
    `${label}: a container gets Proxmox's NIC defaults (hwaddr, type=veth); force is taken on create`,
    needs(schemaUrl),
    async () => {
      const h = await harness({}, { schemaUrl });
      try {
        const s = await login(h);
        const vmid = Number((await call(h, s, "GET", "/api2/json/cluster/nextid")).body.data);
        const created = await call(h, s, "POST", "/api2/json/nodes/pve1/lxc", {
          vmid,
          ostemplate: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
          hostname: "ct1",
          net0: "name=eth0,bridge=vmbr0,ip=dhcp",
          force: 1,
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        await done(h, s, created.body.data);
        const config = (await call(h, s, "GET", `/api2/json/nodes/pve1/lxc/${vmid}/config`)).body
          .data;
        assert.match(
          config.net0,
          new RegExp(`^name=eth0,bridge=vmbr0,ip=dhcp,hwaddr=${MAC},type=veth$`),
        );
        assert.match(config.rootfs, new RegExp(`^local-lvm:vm-${vmid}-disk-0,size=8G$`));
        const nameless = await call(h, s, "PUT", `/api2/json/nodes/pve1/lxc/${vmid}/config`, {
          net1: "bridge=vmbr0",
        });
        assert.equal(nameless.status, 400);
      } finally {
        h.close();
      }
    },
  );
}

Deno.test("proxmox_disk: a detached disk stays as unused<n>, unlink with force destroys it, move_disk copies to the other storage", async () => {
  const h = await harness({ HYPERVISOR_MOCK_SEED: "nodes=1,vms=1,cts=0,storages=3" }, {
    schemaUrl: null,
  });
  try {
    const s = await login(h);
    const vmid = Number((await call(h, s, "GET", "/api2/json/cluster/nextid")).body.data);
    await done(
      h,
      s,
      (await call(h, s, "POST", "/api2/json/nodes/pve1/qemu", {
        vmid,
        scsi0: "local-lvm:8",
        scsi1: "local-lvm:2",
        scsi2: "local-lvm:1",
      })).body.data,
    );
    const cfg = async () =>
      (await call(h, s, "GET", `/api2/json/nodes/pve1/qemu/${vmid}/config`)).body.data;
    const volids = async (storage: string) =>
      (await call(h, s, "GET", `/api2/json/nodes/pve1/storage/${storage}/content`)).body.data
        .map((v: { volid: string }) => v.volid);
    // delete=scsi1 on the config: Proxmox keeps the volume as unused0.
    await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/config`, { delete: "scsi1" });
    let config = await cfg();
    assert.equal(config.scsi1, undefined);
    assert.equal(config.unused0, `local-lvm:vm-${vmid}-disk-1`);
    assert.ok((await volids("local-lvm")).includes(`local-lvm:vm-${vmid}-disk-1`));
    // unlink with force (proxmox_disk state=absent): gone from config and storage.
    const unlink = await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/unlink`, {
      idlist: "scsi2,unused0",
      force: 1,
    });
    assert.equal(unlink.status, 200, JSON.stringify(unlink.body));
    config = await cfg();
    assert.equal(config.scsi2, undefined);
    assert.equal(config.unused0, undefined);
    const left = await volids("local-lvm");
    assert.ok(!left.includes(`local-lvm:vm-${vmid}-disk-1`));
    assert.ok(!left.includes(`local-lvm:vm-${vmid}-disk-2`));
    const wrong = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/${vmid}/move_disk`, {
      disk: "scsi0",
      storage: "local",
    });
    assert.equal(wrong.status, 400);
    assert.match(wrong.body.errors.storage, /does not support content-type 'images'/);
    const onIsoStore = await call(h, s, "PUT", `/api2/json/nodes/pve1/qemu/${vmid}/config`, {
      scsi5: "local:4",
    });
    assert.equal(onIsoStore.status, 400);
    // move_disk to the shared storage, deleting the source.
    const move = await call(h, s, "POST", `/api2/json/nodes/pve1/qemu/${vmid}/move_disk`, {
      disk: "scsi0",
      storage: "nfs1",
      delete: 1,
    });
    assert.equal(move.status, 200, JSON.stringify(move.body));
    await done(h, s, move.body.data);
    config = await cfg();
    assert.equal(config.scsi0, `nfs1:vm-${vmid}-disk-0,size=8G`);
    assert.ok((await volids("nfs1")).includes(`nfs1:vm-${vmid}-disk-0`));
    assert.ok(!(await volids("local-lvm")).includes(`local-lvm:vm-${vmid}-disk-0`));
  } finally {
    h.close();
  }
});

Deno.test("built-in catalogue: GET /access/domains lists the realms (Ansible's proxmox_domain_info, the login form)", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    const s = await login(h);
    const r = await call(h, s, "GET", "/api2/json/access/domains");
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.data.map((d: { realm: string }) => d.realm).sort(), ["pam", "pve"]);
    assert.equal((await call(h, {}, "GET", "/api2/json/access/domains")).status, 200);
  } finally {
    h.close();
  }
});

for (
  const [label, schemaUrl] of [["built-in catalogue", null], ["9.2 schema", undefined]] as const
) {
  Deno.test(
    `${label}: /version tests a token as clients use it: a forged ticket or a wrong token is 401, a right one 200`,
    needs(schemaUrl),
    async () => {
      const h = await harness({}, { schemaUrl });
      try {
        const s = await login(h);
        const made = await call(h, s, "POST", "/api2/json/access/users/root@pam/token/ci", {
          privsep: 0,
        });
        const secret = made.body.data.value as string;
        const forged = s.ticket.replace(/::[^:]+$/, "::AAAA");
        for (
          const headers of [
            {},
            { cookie: `PVEAuthCookie=${encodeURIComponent(forged)}` },
            { authorization: "PVEAPIToken=root@pam!ci=00000000-0000-0000-0000-000000000000" },
            { authorization: `PVEAPIToken=root@pam!nope=${secret}` },
          ] as Record<string, string>[]
        ) {
          const r = await call(h, headers, "GET", "/api2/json/version");
          assert.equal(r.status, 401, JSON.stringify(headers));
        }
        const ok = await call(
          h,
          { authorization: `PVEAPIToken=root@pam!ci=${secret}` },
          "GET",
          "/api2/json/version",
        );
        assert.equal(ok.status, 200);
        assert.match(ok.body.data.version, /^9\./);
      } finally {
        h.close();
      }
    },
  );
}
