/** What every area of the mock's handlers shares: the context type and small helpers. */
import { type Route } from "../../domain/hypervisor_schema/router.ts";
import { type HttpMethod, type Operation } from "../../domain/hypervisor_schema/schema.ts";
import { type Principal } from "../auth.ts";
import type { Sessions } from "../auth.ts";
import type { TaskRunner } from "../tasks.ts";
import { failed } from "../errors.ts";
import { type Guest, type MockState } from "../state.ts";

/** The mock's services a handler may use (the engine provides them; handlers never see it). */
export interface MockServices {
  tasks: TaskRunner;
  sessions: Sessions;
  /** The engine's clock (epoch ms): task effects read it when they run, after `nowMs`. */
  clock: () => number;
  /** GET /version's answer. */
  versionInfo: { version: string; release: string; repoid: string };
}

/** One request as a handler sees it: the mock's services, its state and the parameters. */
export interface HandlerContext extends MockServices {
  state: MockState;
  method: HttpMethod;
  template: string;
  route: Route;
  operation: Operation;
  /** Raw path parameters. */
  path: Record<string, string>;
  /** Validated, normalised parameters (path + query + body). */
  values: Record<string, unknown>;
  principal: Principal | undefined;
  user: string;
  nowMs: number;
  nowS: number;
  /** Set when the handler started a task. */
  task: string | undefined;
  /** Files of a multipart body by field name. */
  files: Record<string, { name: string; size: number }>;
}

export type Handler = (ctx: HandlerContext) => unknown;

/** `METHOD /template` → handler. */
export type HandlerTable = Record<string, Handler>;

export const GiB = 1024 ** 3;

export function firstNode(state: MockState): string {
  return state.nodes.keys().next().value ?? "pve1";
}

export function looksLikeTask(op: Operation): boolean {
  const text = `${op.description ?? ""} ${op.returns?.description ?? ""}`;
  return /\b(task|worker|UPID)\b/i.test(text);
}

export function startTask(
  ctx: HandlerContext,
  t: { node: string; type: string; id: string; log?: string[]; effect?: () => void },
): string {
  const task = ctx.tasks.start(
    { ...t, user: ctx.principal?.tokenid ?? ctx.user },
    ctx.nowMs,
  );
  ctx.task = task.upid;
  return task.upid;
}

export function guestOf(ctx: HandlerContext): Guest {
  return ctx.state.guests.get(Number(ctx.values.vmid))!;
}

export function failThrow(message: string): never {
  throw failed(message);
}

/**
 * The last digest of each config object, with the values it was computed from: configs are
 * flat and often changed in place, so a hit is checked value by value (far cheaper than
 * serialising, sorting and hashing on every GET of a config).
 */
const digests = new WeakMap<object, { values: Map<string, unknown>; digest: string }>();

function unchangedSince(config: Record<string, unknown>, values: Map<string, unknown>): boolean {
  let count = 0;
  for (const key in config) {
    if (!Object.hasOwn(config, key)) continue;
    count++;
    if (!values.has(key) || values.get(key) !== config[key]) return false;
  }
  return count === values.size;
}

export function digestOf(config: Record<string, unknown>): string {
  const hit = digests.get(config);
  if (hit && unchangedSince(config, hit.values)) return hit.digest;
  const digest = computeDigest(config);
  const entries = Object.entries(config);
  // A nested object could change behind an unchanged reference: such configs are not kept.
  if (entries.every(([, v]) => v === null || typeof v !== "object")) {
    digests.set(config, { values: new Map(entries), digest });
  }
  return digest;
}

function computeDigest(config: Record<string, unknown>): string {
  let h = 0x811c9dc5;
  const text = JSON.stringify(Object.entries(config).filter(([k]) => k !== "digest").sort());
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return (h >>> 0).toString(16).padStart(8, "0").repeat(5);
}
