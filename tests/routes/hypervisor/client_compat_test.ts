/**
 * What real Proxmox clients send (proxmoxer, the `proxmox-api` npm client, curl, the bpg
 * Terraform provider, the ExtJS UI) and how the mock must take it: HEAD, URL-encoded token
 * headers, `_dc` cache busters, multipart uploads, oversized bodies, index endpoints.
 */
import assert from "node:assert/strict";
import { call, harness, login } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

Deno.test(
  "client compat: HEAD answers like GET without a body on both mounts",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      for (const path of ["/api2/json/nodes", "/pve/nodes", "/api2/json/version"]) {
        const res = await h.app.request(path, { method: "HEAD", headers: s.headers });
        assert.equal(res.status, 200, path);
        assert.match(res.headers.get("content-type") ?? "", /application\/json/);
        assert.equal(await res.text(), "");
      }
      // Still authenticated and still 501 for what the schema lacks.
      assert.equal((await h.app.request("/api2/json/nodes", { method: "HEAD" })).status, 401);
      const unknown = await h.app.request("/api2/json/nodes/pve1/nothing", {
        method: "HEAD",
        headers: s.headers,
      });
      assert.equal(unknown.status, 501);
      await unknown.body?.cancel();
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: a URL-encoded PVEAPIToken value is accepted (Proxmox unescapes it)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const made = await call(h, s, "POST", "/api2/json/access/users/root@pam/token/ci", {
        privsep: 0,
      });
      assert.equal(made.status, 200);
      const secret = made.body.data.value as string;
      const variants = [
        `PVEAPIToken=root@pam!ci=${secret}`,
        `PVEAPIToken=root%40pam!ci=${secret}`,
        `PVEAPIToken=root%40pam%21ci%3D${secret}`,
        `PVEAPIToken root@pam!ci=${secret}`,
      ];
      for (const authorization of variants) {
        const res = await call(h, { authorization }, "GET", "/api2/json/nodes");
        assert.equal(res.status, 200, authorization);
      }
      const bad = await call(
        h,
        { authorization: "PVEAPIToken=root%40pam!ci=%E0%A4%A" },
        "GET",
        "/api2/json/nodes",
      );
      assert.equal(bad.status, 401);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: the ExtJS `_dc` cache buster is ignored, not a validation error",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const res = await call(h, s, "GET", "/api2/json/nodes?_dc=1767225600000");
      assert.equal(res.status, 200);
      assert.ok(Array.isArray(res.body.data));
      const pve = await call(h, s, "GET", "/pve/nodes/pve1/qemu?_dc=1");
      assert.equal(pve.status, 200);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: an oversized body is 413 in the mount's format, before it is buffered",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const big = "a".repeat(2 * 1024 * 1024);
      const wire = await h.app.request("/api2/json/access/ticket", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `username=root@pam&password=${big}`,
      });
      assert.equal(wire.status, 413);
      const wb = await wire.json();
      assert.equal(wb.data, null);
      assert.match(wb.message, /too large/);
      const pve = await h.app.request("/pve/access/ticket", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: "root@pam", password: big }),
      });
      assert.equal(pve.status, 413);
      const pb = await pve.json();
      assert.match(pb.detail, /too large/);
      assert.deepEqual(pb.errors, []);
      // A streamed body without Content-Length is cut off the same way.
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
          for (let i = 0; i < 40; i++) controller.enqueue(chunk);
          controller.close();
        },
      });
      const chunked = await h.app.request("/api2/json/access/ticket", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: stream,
      });
      assert.equal(chunked.status, 413);
      await chunked.body?.cancel();
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: multipart upload (proxmoxer, bpg) stores the file on the storage",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const form = new FormData();
      form.append("content", "iso");
      form.append("filename", new File([new Uint8Array(300_000)], "alpine-3.22.iso"));
      const res = await h.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: s.headers,
        body: form,
      });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.match(body.data, /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:imgcopy:/);
      const list = await call(
        h,
        s,
        "GET",
        "/api2/json/nodes/pve1/storage/local/content?content=iso",
      );
      const vol = list.body.data.find((v: { volid: string }) =>
        v.volid === "local:iso/alpine-3.22.iso"
      );
      assert.ok(vol, JSON.stringify(list.body.data));
      assert.equal(vol.size, 300_000);
      assert.equal(vol.format, "iso");

      // Field errors are checked like any other parameter.
      const bad = new FormData();
      bad.append("content", "backup");
      bad.append("filename", new File([new Uint8Array(10)], "x.iso"));
      const rejected = await h.app.request("/pve/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: s.headers,
        body: bad,
      });
      assert.equal(rejected.status, 400);
      const rb = await rejected.json();
      assert.equal(rb.errors[0].field, "content");

      // A wrong extension for the content type, as Proxmox refuses it.
      const ext = new FormData();
      ext.append("content", "iso");
      ext.append("filename", new File([new Uint8Array(10)], "notes.txt"));
      const wrong = await h.app.request("/pve/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: s.headers,
        body: ext,
      });
      assert.equal(wrong.status, 400);
      assert.equal((await wrong.json()).errors[0].field, "filename");

      // A broken multipart body is a 400, never a 500.
      const broken = await h.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: { ...s.headers, "content-type": "multipart/form-data; boundary=XYZ" },
        body: '--XYZ\r\nContent-Disposition: form-data; name="content"\r\n\r\niso',
      });
      assert.equal(broken.status, 400);
      await broken.body?.cancel();
      const noBoundary = await h.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: { ...s.headers, "content-type": "multipart/form-data" },
        body: "whatever",
      });
      assert.equal(noBoundary.status, 400);
      await noBoundary.body?.cancel();
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: multipart bodies split anywhere (tiny chunks) parse the same",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const boundary = "----bbx7MA4YWxkTrZu0gW";
      // File content that almost looks like a boundary, then the real one.
      const file = `abc\r\n--${boundary.slice(0, -1)}X\r\n--\r\nend`;
      const text = `preamble\r\n--${boundary}\r\n` +
        `Content-Disposition: form-data; name="content"\r\n\r\nvztmpl\r\n` +
        `--${boundary}\r\n` +
        `Content-Disposition: form-data; name="filename"; filename="debian-13-standard.tar.zst"\r\n` +
        `Content-Type: application/octet-stream\r\n\r\n${file}\r\n` +
        `--${boundary}--\r\nepilogue`;
      for (const size of [1, 7, 64]) {
        const name = `debian-13-standard-${size}.tar.zst`;
        const body = new TextEncoder().encode(text.replace("debian-13-standard.tar.zst", name));
        let at = 0;
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (at >= body.length) return controller.close();
            controller.enqueue(body.slice(at, at + size));
            at += size;
          },
        });
        const res = await h.app.request("/api2/json/nodes/pve2/storage/local/upload", {
          method: "POST",
          headers: { ...s.headers, "content-type": `multipart/form-data; boundary=${boundary}` },
          body: stream,
        });
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        const list = await call(
          h,
          s,
          "GET",
          "/pve/nodes/pve2/storage/local/content?content=vztmpl",
        );
        const vol = list.body.find((v: { volid: string }) => v.volid === `local:vztmpl/${name}`);
        assert.ok(vol, `${size}: ${JSON.stringify(list.body)}`);
        assert.equal(vol.size, new TextEncoder().encode(file).length);
        assert.equal(vol.format, "tzst");
      }
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: index endpoints list their child directories (tree walkers, API browsers)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const names = async (path: string, key: string) => {
        const res = await call(h, s, "GET", `/api2/json${path}`);
        assert.equal(res.status, 200, path);
        return res.body.data.map((e: Record<string, string>) => e[key]);
      };
      const sdn = await names("/cluster/sdn", "id");
      for (const child of ["vnets", "zones", "controllers"]) {
        assert.ok(sdn.includes(child), `${sdn}`);
      }
      const vm = await names("/nodes/pve1/qemu/100", "subdir");
      for (const child of ["config", "status", "snapshot", "firewall"]) {
        assert.ok(vm.includes(child), `${vm}`);
      }
      const status = await names("/nodes/pve1/qemu/100/status", "subdir");
      for (const child of ["current", "start", "stop"]) {
        assert.ok(status.includes(child), `${status}`);
      }
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: the task archive is bounded per node; running tasks are never dropped",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({}, { maxTasksPerNode: 20, taskDelayMs: 1000 });
    try {
      const s = await login(h);
      const backup = async () => {
        const r = await call(h, s, "POST", "/api2/json/nodes/pve1/vzdump", {
          vmid: 100,
          storage: "local",
        });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r.body.data as string;
      };
      // 30 tasks at the same instant: all running, none may be dropped.
      const concurrent: string[] = [];
      for (let i = 0; i < 30; i++) concurrent.push(await backup());
      const active = await call(
        h,
        s,
        "GET",
        "/api2/json/nodes/pve1/tasks?source=active&limit=1000",
      );
      assert.equal(active.body.data.length, 30);
      // Then many that finish one after the other: the oldest finished ones go.
      const upids: string[] = [];
      for (let i = 0; i < 60; i++) {
        h.clock.now += 1500;
        upids.push(await backup());
      }
      h.clock.now += 1500;
      const list = await call(h, s, "GET", "/api2/json/nodes/pve1/tasks?limit=1000");
      assert.ok(list.body.total <= 22, `kept ${list.body.total}`);
      assert.equal(list.body.data[0].upid, upids[59], "the newest task is kept");
      for (const upid of [concurrent[0], upids[0]]) {
        const gone = await call(
          h,
          s,
          "GET",
          `/api2/json/nodes/pve1/tasks/${encodeURIComponent(upid)}/status`,
        );
        assert.equal(gone.status, 500);
      }
      const kept = await call(
        h,
        s,
        "GET",
        `/pve/nodes/pve1/tasks/${encodeURIComponent(upids[59])}/status`,
      );
      assert.equal(kept.body.exitstatus, "OK");
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: schema patterns are checked in linear time and with Perl's meaning",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      // The OCI reference pattern backtracks exponentially in JavaScript's engine: this request
      // used to freeze the whole process.
      const oci = await call(
        h,
        s,
        "POST",
        "/api2/json/nodes/pve1/storage/local/oci-registry-pull",
        {
          reference: "a".repeat(64),
        },
      );
      assert.equal(oci.status, 400);
      assert.ok(oci.body.errors.reference);
      // `{,16}` is `{0,16}` for Perl 5.34+ (scsi vendor/product): a valid value passes.
      const scsi = await call(h, s, "PUT", "/api2/json/nodes/pve1/qemu/100/config", {
        scsi1: "local-lvm:vm-100-disk-1,vendor=ACME,product=Disk 1",
      });
      assert.equal(scsi.status, 200, JSON.stringify(scsi.body));
      // `(?^i:...)` groups are case-insensitive, and now checked at all (JavaScript cannot
      // compile them, so they used to be skipped).
      const tags = await call(h, s, "PUT", "/api2/json/cluster/options", {
        "registered-tags": "Prod;Web_1",
      });
      assert.equal(tags.status, 200, JSON.stringify(tags.body));
      const badTags = await call(h, s, "PUT", "/pve/cluster/options", {
        "registered-tags": "bad tag!",
      });
      assert.equal(badTags.status, 400);
      assert.equal(badTags.body.errors[0].field, "registered-tags");
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: a write body is not read before the request is authenticated",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      let pulled = 0;
      const chunk = new Uint8Array(64 * 1024);
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (++pulled > 200) return controller.close();
          controller.enqueue(chunk);
        },
      });
      const res = await h.app.request("/api2/json/nodes/pve1/storage/local/upload", {
        method: "POST",
        headers: { "content-type": "multipart/form-data; boundary=XYZ" },
        body: stream,
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
      assert.ok(pulled < 10, `read ${pulled} chunks of an unauthenticated upload`);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: destroy with purge removes the guest from HA, replication and backup jobs",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      assert.equal(
        (await call(h, s, "POST", "/api2/json/cluster/ha/resources", { sid: "vm:101" })).status,
        200,
      );
      assert.equal(
        (await call(h, s, "POST", "/api2/json/cluster/ha/resources", { sid: "ct:112" })).status,
        200,
      );
      const before = await call(h, s, "GET", "/pve/cluster/backup/backup-9b03d5e1");
      assert.equal(before.body.vmid, "100,101,102");
      const guest = (await call(h, s, "GET", "/pve/cluster/resources?type=vm")).body
        .find((g: { vmid: number }) => g.vmid === 101);
      const del = await call(h, s, "DELETE", `/api2/json/nodes/${guest.node}/qemu/101?purge=1`);
      assert.equal(del.status, 200, JSON.stringify(del.body));
      const ha = (await call(h, s, "GET", "/pve/cluster/ha/resources")).body;
      assert.equal(
        JSON.stringify(ha.map((r: { sid: string }) => r.sid)),
        JSON.stringify(["ct:112"]),
      );
      const repl = (await call(h, s, "GET", "/pve/cluster/replication")).body;
      assert.ok(!repl.some((r: { guest: number }) => r.guest === 101));
      const after = await call(h, s, "GET", "/pve/cluster/backup/backup-9b03d5e1");
      assert.equal(after.body.vmid, "100,102");
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "client compat: a guest being migrated cannot be destroyed (locked), as on a cluster",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({}, { taskDelayMs: 1000 });
    try {
      const s = await login(h);
      const mig = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu/100/migrate", {
        target: "pve2",
      });
      assert.equal(mig.status, 200, JSON.stringify(mig.body));
      const del = await call(h, s, "DELETE", "/api2/json/nodes/pve1/qemu/100");
      assert.equal(del.status, 500);
      assert.match(del.body.message, /locked \(migrate\)/);
      h.clock.now += 1500;
      const moved = await call(h, s, "GET", "/pve/nodes/pve2/qemu/100/config");
      assert.equal(moved.status, 200);
      assert.equal((await call(h, s, "DELETE", "/pve/nodes/pve2/qemu/100")).status, 200);
    } finally {
      h.close();
    }
  },
);

Deno.test("client compat: the built-in catalogue routes uploads too", async () => {
  const h = await harness({}, { schemaUrl: null });
  try {
    const s = await login(h);
    const form = new FormData();
    form.append("content", "iso");
    form.append("filename", new File([new Uint8Array(1234)], "tiny.iso"));
    const res = await h.app.request("/pve/nodes/pve1/storage/local/upload", {
      method: "POST",
      headers: s.headers,
      body: form,
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.match(body.task, /:imgcopy:/);
    const list = await call(h, s, "GET", "/pve/nodes/pve1/storage/local/content?content=iso");
    assert.ok(
      list.body.some((v: { volid: string; size: number }) =>
        v.volid === "local:iso/tiny.iso" && v.size === 1234
      ),
    );
  } finally {
    h.close();
  }
});

Deno.test(
  "client compat: parameter names that are Object.prototype members are plain unknown parameters",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      for (const name of ["toString", "__proto__", "constructor", "hasOwnProperty"]) {
        const q = await call(h, s, "GET", `/api2/json/nodes?${name}=1&${name}=2`);
        assert.equal(q.status, 400, name);
        assert.ok(Object.hasOwn(q.body.errors, name), `${name}: ${JSON.stringify(q.body)}`);
        const f = await call(h, s, "POST", "/pve/nodes/pve1/qemu", { vmid: 990, [name]: "x" });
        assert.equal(f.status, 400, `${name}: ${JSON.stringify(f.body)}`);
        assert.ok(f.body.errors.some((e: { field: string }) => e.field === name), name);
        // Inside property strings too.
        const ps = await call(h, s, "PUT", "/pve/nodes/pve1/qemu/100/config", {
          net5: `virtio,bridge=vmbr0,${name}=1`,
        });
        assert.equal(ps.status, 400, `${name}: ${JSON.stringify(ps.body)}`);
        assert.match(ps.body.errors[0].message, /unknown key/);
      }
    } finally {
      h.close();
    }
  },
);
