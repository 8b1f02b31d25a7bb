/**
 * Roles and tenants of synced VMs (docs/sync.md, "Roles and tenants"): the device role each
 * guest type gets (the sync's own, or one the policy names) and the tenant a guest gets from
 * the endpoint's tenant rules, first match wins. Roles and tenants a policy names are never
 * made by the sync: a missing one (or a role without VM role) is reported as a stage error
 * naming it, and the field is left as it is for the guests it would have applied to.
 */
import { memo, type StageContext } from "./context.ts";
import { ensureBySlug, PATHS } from "./base.ts";
import type { Guest } from "./guests.ts";
import { guestTags } from "./proxmox.ts";
import type { TenantRule } from "./options.ts";
import { userPattern, WorkBudgetExceeded, type WorkMeter } from "../netbox/user_patterns.ts";

/** The sync's own roles, made when missing. */
const OWN_ROLES = {
  qemu: {
    slug: "virtual-machine",
    body: { name: "Virtual machine", color: "4caf50", vm_role: true },
  },
  lxc: { slug: "container", body: { name: "Container", color: "ff9800", vm_role: true } },
} as const;

/**
 * Matching steps one guest's name may take over all name rules: typical rules take a few
 * hundred each (measured 130–550 per rule on 30-character names), so this leaves ample room
 * and still bounds what an admin's patterns cost per guest (about a millisecond).
 */
export const RULE_WORK_PER_GUEST = 20_000;

/** Guests matched between yields to the event loop (other requests are served meanwhile). */
const YIELD_EVERY = 500;

function configProblem(ctx: StageContext, object: string, message: string): void {
  ctx.itemFailed(object, new Error(message));
}

/** The device role id for `type`'s guests, or null when the one the policy names is unusable. */
export function vmRole(ctx: StageContext, type: "qemu" | "lxc"): Promise<number | null> {
  const named = ctx.options.roles[type];
  if (named === null || named === OWN_ROLES[type].slug) {
    const own = OWN_ROLES[type];
    return ensureBySlug(ctx, PATHS.deviceRoles, own.slug, own.body).then((r) => r.id);
  }
  return memo(ctx, `vm-role:${named}`, async () => {
    const option = `${type}_role`;
    const found = (await ctx.inv.list(PATHS.deviceRoles, { slug: named }, ctx.signal))
      .find((r) => r.slug === named);
    if (!found) {
      configProblem(
        ctx,
        `device role ${named}`,
        `the sync policy's ${option} "${named}" is not a device role in the inventory: create ` +
          `it (with "VM role" on) or change ${option}; ${type} guests keep the role they have`,
      );
      return null;
    }
    if (found.vm_role === false) {
      configProblem(
        ctx,
        `device role ${named}`,
        `the sync policy's ${option} "${named}" cannot be given to virtual machines (its ` +
          `"VM role" is off): turn it on or change ${option}; ${type} guests keep the role they have`,
      );
      return null;
    }
    return found.id;
  });
}

/** What the tenant rules say for each guest: a tenant id, null (no match), or undefined (unknown: leave it). */
export type TenantOf = (vmid: number) => number | null | undefined;

/**
 * Applies the endpoint's tenant rules to `guests` (slices of them). Without rules the tenant is not the sync's
 * (every answer undefined). A rule whose tenant is missing reports it once; guests it matches
 * keep their tenant (undefined), as does a guest whose name took more than the matching budget.
 */
export async function tenantAssignment(
  ctx: StageContext,
  guests: Iterable<Guest[]>,
  names: Map<number, string>,
  clusterName: string,
): Promise<TenantOf> {
  const rules = ctx.options.tenantRules;
  if (!rules?.length) return () => undefined;
  const slugs = [...new Set(rules.map((r) => r.tenant))];
  const found = await ctx.inv.list(PATHS.tenants, { slug: slugs }, ctx.signal);
  const ids = new Map(
    found.filter((t) => slugs.includes(String(t.slug))).map((t) => [
      String(t.slug),
      t.id,
    ]),
  );
  for (const slug of slugs) {
    if (ids.has(slug)) continue;
    configProblem(
      ctx,
      `tenant ${slug}`,
      `the sync policy's tenant_rules name tenant "${slug}", which is not in the inventory: ` +
        `create it or change the rule; guests it matches keep the tenant they have`,
    );
  }
  const compiled = rules.map((rule: TenantRule) => ({
    rule,
    name: rule.match === "name" ? userPattern(rule.pattern) : null,
    value: rule.pattern.toLowerCase(),
  }));
  const cluster = clusterName.toLowerCase();
  const out = new Map<number, number | null | undefined>();
  let overBudget = 0;
  let i = 0;
  for (const g of slices(guests)) {
    if (i > 0 && i % YIELD_EVERY === 0) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      ctx.signal.throwIfAborted();
    }
    i++;
    const name = names.get(g.vmid) ?? "";
    const tags = guestTags(g.config).map((t) => t.toLowerCase());
    const meter: WorkMeter = { remaining: RULE_WORK_PER_GUEST };
    let answer: number | null | undefined = null;
    try {
      for (const c of compiled) {
        const hit = c.rule.match === "cluster"
          ? cluster === c.value
          : c.rule.match === "tag"
          ? tags.includes(c.value)
          : c.name!.ok && c.name!.test(name, meter);
        if (hit) {
          answer = ids.get(c.rule.tenant);
          break;
        }
      }
    } catch (error) {
      if (!(error instanceof WorkBudgetExceeded)) throw error;
      answer = undefined;
      if (overBudget++ === 0) {
        configProblem(
          ctx,
          `virtual machine ${name} (vmid ${g.vmid})`,
          `the sync policy's tenant_rules took more than ${RULE_WORK_PER_GUEST} matching steps ` +
            `on this guest's name: simplify the name patterns; its tenant is left as it is`,
        );
      }
    }
    out.set(g.vmid, answer);
  }
  return (vmid) => out.get(vmid);
}

function* slices(guests: Iterable<Guest[]>): Generator<Guest> {
  for (const slice of guests) yield* slice;
}
