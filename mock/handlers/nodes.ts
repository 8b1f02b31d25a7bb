/** Nodes: `GET /nodes` and a node's status. */
import { type MockState } from "../state.ts";
import { GiB, type HandlerContext, type HandlerTable } from "./context.ts";

export function nodeEntry(state: MockState, node: string, nowS: number) {
  const n = state.nodes.get(node)!;
  let mem = 2 * GiB;
  let cpu = 0.01;
  for (const vmid of state.guestsByNode.get(node) ?? []) {
    const g = state.guests.get(vmid)!;
    if (g.status !== "running") continue;
    mem += Number(g.config.memory ?? 512) * 1024 * 1024 * 0.5;
    cpu += 0.002;
  }
  return {
    node,
    id: `node/${node}`,
    type: "node",
    status: n.status,
    cpu: Math.min(1, Math.round(cpu * 1000) / 1000),
    maxcpu: n.maxcpu,
    mem: Math.min(n.maxmem, Math.round(mem)),
    maxmem: n.maxmem,
    disk: Math.round(n.maxdisk * 0.18),
    maxdisk: n.maxdisk,
    uptime: Math.max(0, nowS - n.bootedAt),
    level: "",
    ssl_fingerprint: fingerprint(node),
  };
}

function fingerprint(node: string): string {
  const bytes: string[] = [];
  let h = 7;
  for (let i = 0; i < 32; i++) {
    h = (Math.imul(h, 31) + node.charCodeAt(i % node.length) + i) >>> 0;
    bytes.push((h & 0xff).toString(16).toUpperCase().padStart(2, "0"));
  }
  return bytes.join(":");
}

function nodeStatus(ctx: HandlerContext) {
  const e = nodeEntry(ctx.state, String(ctx.values.node), ctx.nowS);
  const n = ctx.state.nodes.get(String(ctx.values.node))!;
  return {
    cpu: e.cpu,
    uptime: e.uptime,
    loadavg: ["0.42", "0.37", "0.31"],
    wait: 0.001,
    idle: 0,
    pveversion: "pve-manager/9.2.0/mock",
    kversion: "Linux 6.17.2-1-pve #1 SMP PREEMPT_DYNAMIC PMX 6.17.2-1 x86_64",
    "current-kernel": {
      sysname: "Linux",
      release: "6.17.2-1-pve",
      version: "#1 SMP",
      machine: "x86_64",
    },
    "boot-info": { mode: "efi", secureboot: 0 },
    cpuinfo: {
      cpus: n.maxcpu,
      cores: n.maxcpu / 2,
      sockets: 1,
      model: "Mock CPU @ 3.00GHz",
      mhz: "3000.000",
      hvm: "1",
      flags: "fpu vme de pse tsc msr pae mce cx8 apic sep",
      user_hz: 100,
    },
    memory: { total: e.maxmem, used: e.mem, free: e.maxmem - e.mem, available: e.maxmem - e.mem },
    swap: { total: 8 * GiB, used: 0, free: 8 * GiB },
    rootfs: { total: e.maxdisk, used: e.disk, free: e.maxdisk - e.disk, avail: e.maxdisk - e.disk },
    ksm: { shared: 0 },
  };
}

export const nodeHandlers: HandlerTable = {
  "GET /nodes": (ctx) => [...ctx.state.nodes.keys()].map((n) => nodeEntry(ctx.state, n, ctx.nowS)),
  "GET /nodes/{node}/status": nodeStatus,
};
