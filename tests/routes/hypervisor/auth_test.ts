/** Ticket (+CSRF) and API-token auth on both mounts, as Proxmox does it. */
import assert from "node:assert/strict";
import { call, harness, login } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

Deno.test(
  "hypervisor auth: missing or invalid credentials are 401 on both mounts",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const pve = await call(h, {}, "GET", "/pve/nodes");
      assert.equal(pve.status, 401);
      assert.deepEqual(pve.body, { detail: "No ticket", errors: [] });
      const wire = await call(h, {}, "GET", "/api2/json/nodes");
      assert.equal(wire.status, 401);
      assert.deepEqual(wire.body, { data: null });
      const forged = await call(
        h,
        { cookie: "PVEAuthCookie=PVE:root@pam:00000000::forged" },
        "GET",
        "/api2/json/nodes",
      );
      assert.equal(forged.status, 401);
      // Only /access/ticket needs no credentials; /version is `user: "all"` (a login).
      const version = await call(h, {}, "GET", "/api2/json/version");
      assert.equal(version.status, 401);
      const bad = await call(h, {}, "POST", "/api2/json/access/ticket", {
        username: "root@pam",
        password: "nope",
      });
      assert.equal(bad.status, 401);
      assert.deepEqual(bad.body, { data: null });
      const badPve = await call(h, {}, "POST", "/pve/access/ticket", {
        username: "root@pam",
        password: "nope",
      });
      assert.equal(badPve.status, 401);
      assert.equal(badPve.body.detail, "authentication failure");
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor auth: ticket reads freely, writes need the CSRF token; tickets expire after 2 h",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({
      HYPERVISOR_MOCK_USER: "admin@pve",
      HYPERVISOR_MOCK_PASSWORD: "s3cret-pass",
    });
    try {
      const s = await login(h, "admin@pve", "s3cret-pass");
      assert.match(s.ticket, /^PVE:admin@pve:[0-9A-F]{8}::/);
      const cookieOnly = { cookie: s.headers.cookie };
      assert.equal((await call(h, cookieOnly, "GET", "/pve/nodes")).status, 200);
      const noCsrf = await call(h, cookieOnly, "POST", "/pve/nodes/pve1/qemu/100/status/start");
      assert.equal(noCsrf.status, 401);
      assert.equal(noCsrf.body.detail, "Permission denied - invalid csrf token");
      const wrongCsrf = await call(
        h,
        { ...cookieOnly, CSRFPreventionToken: "x" },
        "POST",
        "/api2/json/nodes/pve1/qemu/100/status/start",
      );
      assert.equal(wrongCsrf.status, 401);
      const ok = await call(h, s, "POST", "/api2/json/nodes/pve1/qemu/100/status/start");
      assert.equal(ok.status, 200);
      assert.match(ok.body.data, /^UPID:pve1:/);
      // The same credentials work on the /pve mount.
      assert.equal((await call(h, s, "GET", "/pve/cluster/status")).status, 200);

      // Renewal: the ticket as password gives a fresh ticket.
      const renew = await call(h, {}, "POST", "/api2/json/access/ticket", {
        username: "admin@pve",
        password: s.ticket,
      });
      assert.equal(renew.status, 200);
      assert.notEqual(renew.body.data.ticket, s.ticket);

      h.clock.now += 2 * 3600 * 1000;
      const expired = await call(h, s, "GET", "/api2/json/nodes");
      assert.equal(expired.status, 401);
      // The default root@pam is not configured here.
      const root = await call(h, {}, "POST", "/api2/json/access/ticket", {
        username: "root@pam",
        password: "bridgebox",
      });
      assert.equal(root.status, 401);
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor auth: API tokens created through /access/users/{userid}/token/{tokenid}",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      const s = await login(h);
      const created = await call(h, s, "POST", "/api2/json/access/users/root@pam/token/ci", {
        privsep: 0,
        comment: "CI",
      });
      assert.equal(created.status, 200);
      assert.equal(created.body.data["full-tokenid"], "root@pam!ci");
      assert.deepEqual(created.body.data.info, { privsep: 0, expire: 0, comment: "CI" });
      const secret = created.body.data.value as string;
      assert.match(secret, /^[0-9a-f-]{36}$/);
      const dup = await call(h, s, "POST", "/pve/access/users/root@pam/token/ci");
      assert.equal(dup.status, 400);
      assert.equal(dup.body.errors[0].field, "tokenid");

      const auth = { authorization: `PVEAPIToken=root@pam!ci=${secret}` };
      assert.equal((await call(h, auth, "GET", "/api2/json/nodes")).status, 200);
      // Tokens need no CSRF token for writes; tasks record the token as user.
      const start = await call(h, auth, "POST", "/pve/nodes/pve1/qemu/100/status/start");
      assert.equal(start.status, 200);
      assert.match(start.body.task, /:root@pam!ci:$/);
      const wrong = await call(
        h,
        { authorization: `PVEAPIToken=root@pam!ci=${secret.replace(/.$/, "0")}x` },
        "GET",
        "/api2/json/nodes",
      );
      assert.equal(wrong.status, 401);
      const list = await call(h, auth, "GET", "/pve/access/users/root@pam/token");
      assert.deepEqual(list.body.map((t: { tokenid: string }) => t.tokenid), ["ci"]);

      assert.equal(
        (await call(h, s, "DELETE", "/api2/json/access/users/root@pam/token/ci")).status,
        200,
      );
      assert.equal((await call(h, auth, "GET", "/api2/json/nodes")).status, 401);
      assert.equal((await call(h, s, "GET", "/pve/access/users/root@pam/token/ci")).status, 404);

      // A user created through /access/users can log in.
      const user = await call(h, s, "POST", "/api2/json/access/users", {
        userid: "ops@pve",
        password: "opspass1",
      });
      assert.equal(user.status, 200);
      await login(h, "ops@pve", "opspass1");
      const dupUser = await call(h, s, "POST", "/api2/json/access/users", { userid: "ops@pve" });
      assert.deepEqual(dupUser.body.errors, { userid: "user 'ops@pve' already exists" });
    } finally {
      h.close();
    }
  },
);
