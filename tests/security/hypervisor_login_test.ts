/**
 * The mock hypervisor's login (SECURITY.md "Hypervisor mock"): failed logins are throttled per
 * client address, and every operation but the login itself needs a ticket or a token.
 */
import assert from "node:assert/strict";
import { harness } from "../routes/hypervisor/_hv.ts";
import { NEEDS_SCHEMAS } from "../_schemas.ts";

const from = (hostname: string) => ({ remoteAddr: { hostname } });

function login(
  h: Awaited<ReturnType<typeof harness>>,
  password: string,
  ip: string,
  mount = "/api2/json",
) {
  return (h.app as unknown as {
    request: (p: string, i: RequestInit, e: unknown) => Promise<Response>;
  }).request(`${mount}/access/ticket`, {
    method: "POST",
    body: new URLSearchParams({ username: "root@pam", password }),
  }, from(ip));
}

Deno.test(
  "hypervisor login: the fifth failure locks the address for 300 s (429 + Retry-After)",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      for (let i = 0; i < 5; i++) {
        const res = await login(h, `guess-${i}`, "198.51.100.20");
        assert.equal(res.status, 401, `attempt ${i + 1}`);
        await res.body?.cancel();
      }
      const locked = await login(h, "bridgebox", "198.51.100.20");
      assert.equal(locked.status, 429);
      assert.equal(locked.headers.get("retry-after"), "300");
      assert.deepEqual(await locked.json(), {
        data: null,
        message: "Too many failed login attempts\n",
      });
      const pve = await login(h, "bridgebox", "198.51.100.20", "/pve");
      assert.equal(pve.status, 429);
      assert.deepEqual(await pve.json(), { detail: "Too many failed login attempts", errors: [] });
      // Another address is not affected; the lock ends after 300 s.
      const other = await login(h, "bridgebox", "198.51.100.21");
      assert.equal(other.status, 200);
      await other.body?.cancel();
      h.clock.now += 300_000;
      const later = await login(h, "bridgebox", "198.51.100.20");
      assert.equal(later.status, 200);
      await later.body?.cancel();
    } finally {
      h.close();
    }
  },
);

Deno.test(
  "hypervisor auth: /version and every non-world operation need a ticket or token",
  NEEDS_SCHEMAS,
  async () => {
    const h = await harness();
    try {
      for (
        const path of [
          "/api2/json/version",
          "/pve/version",
          "/api2/json/nodes",
          "/pve/cluster/status",
        ]
      ) {
        const res = await h.app.request(path);
        assert.equal(res.status, 401, path);
        await res.body?.cancel();
      }
      const ok = await login(h, "bridgebox", "198.51.100.30");
      const { data } = await ok.json();
      const version = await h.app.request("/api2/json/version", {
        headers: { cookie: `PVEAuthCookie=${data.ticket}` },
      });
      assert.equal(version.status, 200);
      assert.match((await version.json()).data.version, /^9\./);
    } finally {
      h.close();
    }
  },
);
