/** Guest interface reports: the QEMU guest agent's view and a container's interfaces. */
import type { GuestType } from "../state.ts";
import { parsePropertyString } from "../../domain/hypervisor_schema/validate.ts";
import { type AgentInterface, type Guest } from "../state.ts";
import { failThrow, guestOf, type HandlerContext, type HandlerTable } from "./context.ts";
import { agentEnabled } from "./guests.ts";

export function agentInterfaces(ctx: HandlerContext) {
  const g = guestOf(ctx);
  if (!agentEnabled(g)) {
    failThrow("No QEMU guest agent configured");
  }
  if (g.status !== "running") failThrow(`VM ${g.vmid} is not running`);
  return { result: g.agentInterfaces ?? agentView(g) };
}

/** The guest's host name as its agent reports it (the seeded one, else the guest's name). */
function agentHostName(ctx: HandlerContext) {
  const g = guestOf(ctx);
  if (!agentEnabled(g)) failThrow("No QEMU guest agent configured");
  if (g.status !== "running") failThrow(`VM ${g.vmid} is not running`);
  return { result: { "host-name": g.agentHostName ?? String(g.config.name ?? `vm-${g.vmid}`) } };
}

/** What the guest agent reports for a guest without seeded data: its NICs and cloud-init IPs. */
function agentView(g: Guest): AgentInterface[] {
  const out: AgentInterface[] = [{
    name: "lo",
    "hardware-address": "00:00:00:00:00:00",
    "ip-addresses": [{ "ip-address-type": "ipv4", "ip-address": "127.0.0.1", prefix: 8 }],
  }];
  for (const [k, v] of Object.entries(g.config)) {
    const m = /^net(\d+)$/.exec(k);
    if (!m) continue;
    const mac = /([0-9A-F]{2}:){5}[0-9A-F]{2}/i.exec(String(v))?.[0] ?? "00:00:00:00:00:00";
    const ipcfg = parsePropertyString(String(g.config[`ipconfig${m[1]}`] ?? ""));
    const ips: AgentInterface["ip-addresses"] = [];
    const cidr = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(ipcfg.ip ?? "");
    if (cidr) {
      ips.push({ "ip-address-type": "ipv4", "ip-address": cidr[1], prefix: Number(cidr[2]) });
    }
    out.push({ name: `eth${m[1]}`, "hardware-address": mac.toLowerCase(), "ip-addresses": ips });
  }
  return out;
}

function lxcInterfaces(ctx: HandlerContext) {
  const g = guestOf(ctx);
  if (g.status !== "running") failThrow(`CT ${g.vmid} not running`);
  const out: Record<string, unknown>[] = [{
    name: "lo",
    hwaddr: "00:00:00:00:00:00",
    inet: "127.0.0.1/8",
    inet6: "::1/128",
  }];
  for (const [k, v] of Object.entries(g.config)) {
    if (!/^net\d+$/.test(k)) continue;
    const p = parsePropertyString(String(v));
    const e: Record<string, unknown> = {
      name: p.name ?? `eth${k.slice(3)}`,
      hwaddr: (p.hwaddr ?? "").toLowerCase(),
    };
    if (p.ip && p.ip !== "dhcp" && p.ip !== "manual") e.inet = p.ip;
    out.push(e);
  }
  return out;
}

/** The interfaces a guest reports: the QEMU agent's view, or a container's own. */
export function agentHandlers(type: GuestType): HandlerTable {
  const item = `/nodes/{node}/${type}/{vmid}`;
  return type === "qemu"
    ? {
      [`GET ${item}/agent/network-get-interfaces`]: agentInterfaces,
      [`GET ${item}/agent/get-host-name`]: agentHostName,
    }
    : { [`GET ${item}/interfaces`]: lxcInterfaces };
}
