/** The mock behind a real socket, used the way Proxmox clients use a cluster. */
import assert from "node:assert/strict";
import { harness } from "./_hv.ts";
import { NEEDS_SCHEMAS } from "../../_schemas.ts";

Deno.test(
  "hypervisor mock over HTTP: form login, cookie + CSRF, token client, reason phrases",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness({}, { taskDelayMs: 0 });
    const server = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      (req) => h.app.request(req.url.replace(/^http:\/\/[^/]+/, ""), req),
    );
    const base = `http://127.0.0.1:${server.addr.port}/api2/json`;
    try {
      const login = await fetch(`${base}/access/ticket`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "username=root%40pam&password=bridgebox",
      });
      assert.equal(login.status, 200);
      const { data } = await login.json();
      const headers = {
        cookie: `PVEAuthCookie=${data.ticket}`, // raw, as some clients send it
        CSRFPreventionToken: data.CSRFPreventionToken,
      };
      const create = await fetch(`${base}/nodes/pve1/qemu`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ vmid: "321", name: "sock", net0: "virtio,bridge=vmbr0" }),
      });
      assert.equal(create.status, 200);
      assert.match(
        (await create.json()).data,
        /^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmcreate:321:root@pam:$/,
      );

      const token = await fetch(`${base}/access/users/root%40pam/token/sock`, {
        method: "POST",
        headers,
      });
      const secret = (await token.json()).data.value;
      const auth = { authorization: `PVEAPIToken=root@pam!sock=${secret}` };
      const list = await fetch(`${base}/nodes/pve1/qemu`, { headers: auth });
      assert.equal(list.status, 200);
      assert.ok((await list.json()).data.some((v: { vmid: number }) => v.vmid === 321));

      const unknown = await fetch(`${base}/nodes/pve1/nope`, { headers: auth });
      assert.equal(unknown.status, 501);
      assert.deepEqual(await unknown.json(), {
        data: null,
        message: "Method 'GET /nodes/pve1/nope' not implemented\n",
      });
      const noAuth = await fetch(`${base}/nodes`);
      assert.equal(noAuth.status, 401);
      await noAuth.body?.cancel();
    } finally {
      await server.shutdown();
      h.close();
    }
  },
);
