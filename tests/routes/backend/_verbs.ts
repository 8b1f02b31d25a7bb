/** Helpers of the verb tests: an endpoint copy pointing at the app's own mock hypervisor. */
import assert from "node:assert/strict";
import type { WholeApp } from "./_whole_app.ts";

export const HYPERVISOR = {
  name: "lab",
  ip: "127.0.0.1",
  port: 8800,
  use_https: false,
  username: "root@pam",
  password: "bridgebox",
};

export async function endpoint(h: WholeApp, extra: Record<string, unknown> = {}) {
  const port = Number(new URL(h.base).port);
  const res = await h.call("/hypervisor/endpoints", {
    method: "POST",
    json: { ...HYPERVISOR, port, allow_writes: true, ...extra },
  });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()).id as number;
}

/** Reads the mock's own state through its wire API, as any Proxmox client would. */
export async function mock(h: WholeApp, path: string) {
  const login = await h.call("/api2/json/access/ticket", {
    method: "POST",
    key: null,
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: "username=root@pam&password=bridgebox",
  });
  const ticket = (await login.json()).data.ticket;
  const res = await h.call(`/api2/json${path}`, {
    key: null,
    headers: { cookie: `PVEAuthCookie=${ticket}` },
  });
  return (await res.json()).data;
}

export async function guest(h: WholeApp, type: "qemu" | "lxc", status: string) {
  const all = await mock(h, "/cluster/resources?type=vm") as {
    vmid: number;
    type: string;
    status: string;
    node: string;
  }[];
  const found = all.find((g) => g.type === type && g.status === status);
  assert.ok(found, `the demo cluster has a ${status} ${type} guest`);
  return found;
}
