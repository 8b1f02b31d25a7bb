/**
 * What a run may be told (docs/sync.md, "Run options"): query parameters of `/full-update` and
 * every stage path, the plugin job's and the console's choices. Every option has a default that
 * keeps the sync as it always was; an endpoint's policy (its stored copy) comes between the two.
 */
import type { SyncPolicyRecord, TenantRuleRecord } from "../../storage/ports.ts";
import { userPatternProblem } from "../netbox/user_patterns.ts";

export type { TenantRuleRecord as TenantRule } from "../../storage/ports.ts";

/** Field families an admin may own instead of the hypervisor (docs/sync.md, "Who owns a field"). */
export const OVERWRITE_FAMILIES = [
  "names",
  "tags",
  "descriptions",
  "roles",
  "custom_fields",
  "tenants",
] as const;
export type OverwriteFamily = typeof OVERWRITE_FAMILIES[number];

/** Stages a run may leave out; the others every run needs (they anchor the rest). */
export const OPTIONAL_STAGES = ["task-history", "vm-backups", "vm-snapshots", "sdn"] as const;
export type OptionalStage = typeof OPTIONAL_STAGES[number];

export type PrimaryIpPreference = "both" | "v4" | "v6";

export interface SyncOptions {
  /** Nothing is written: the run reports the plan (what it would create, update, mark, delete). */
  dryRun: boolean;
  /**
   * Per field family: true, the hypervisor owns it (each run writes it); false, the admin owns it
   * (written when the object is created, then left as the admin keeps it).
   */
  overwrite: Record<OverwriteFamily, boolean>;
  /** A guest gone upstream is deleted from the inventory instead of marked decommissioning. */
  deleteOrphans: boolean;
  /**
   * `both`: primary IPv4 and IPv6 (the first of each family). `v4`/`v6`: only that family's
   * primary, the other family's when the object has no address of the preferred one.
   */
  primaryIpPreference: PrimaryIpPreference;
  /** Optional stages this run includes. */
  stages: Record<OptionalStage, boolean>;
  /**
   * Device role slugs for QEMU guests and LXC containers; null: the sync's own
   * (`virtual-machine`, `container`, made when missing). A named role must exist.
   */
  roles: { qemu: string | null; lxc: string | null };
  /** Tenant assignment, first match wins; null: the sync never writes a VM's tenant. */
  tenantRules: TenantRuleRecord[] | null;
}

export const DEFAULT_SYNC_OPTIONS: SyncOptions = Object.freeze({
  dryRun: false,
  overwrite: Object.freeze({
    names: true,
    tags: true,
    descriptions: true,
    roles: true,
    custom_fields: true,
    tenants: true,
  }),
  deleteOrphans: false,
  primaryIpPreference: "both",
  stages: Object.freeze({
    "task-history": true,
    "vm-backups": true,
    "vm-snapshots": true,
    sdn: true,
  }),
  roles: Object.freeze({ qemu: null, lxc: null }),
  tenantRules: null,
}) as SyncOptions;

/** The query parameter of an optional stage's switch: `stage_task_history`, `stage_sdn`. */
export const stageParam = (stage: OptionalStage) => `stage_${stage.replace(/-/g, "_")}`;

/** Every run option as a query parameter (`hypervisor_endpoint_ids` is the scope, apart). */
export const OPTION_PARAMS: readonly string[] = [
  "dry_run",
  ...OVERWRITE_FAMILIES.map((f) => `overwrite_${f}`),
  "delete_orphans",
  "primary_ip_preference",
  ...OPTIONAL_STAGES.map(stageParam),
  "qemu_role",
  "lxc_role",
];

/** Options an endpoint's policy may set: every run option but the dry run, plus tenant rules. */
export const POLICY_PARAMS: readonly string[] = [
  ...OPTION_PARAMS.filter((o) => o !== "dry_run"),
  "tenant_rules",
];

/** A slug as NetBox allows one (letters, digits, `-`, `_`), at most 100 characters. */
export const SLUG = /^[-a-zA-Z0-9_]{1,100}$/;

/** Bounds of `tenant_rules` (docs/sync.md, "Roles and tenants"). */
export const MAX_TENANT_RULES = 20;
export const MAX_RULE_PATTERN_LENGTH = 128;
const MATCH_KINDS = ["name", "tag", "cluster"] as const;

/** One run option's value, normalised to its query string, or what is wrong with it. */
export function checkOptionValue(
  key: string,
  value: unknown,
): { ok: true; value: string } | { ok: false; message: string } {
  if (key === "primary_ip_preference") {
    return value === "both" || value === "v4" || value === "v6"
      ? { ok: true, value }
      : { ok: false, message: "primary_ip_preference: one of both, v4, v6." };
  }
  if (key === "qemu_role" || key === "lxc_role") {
    return typeof value === "string" && SLUG.test(value) ? { ok: true, value } : {
      ok: false,
      message: `${key}: the slug of a device role (letters, digits, - and _, at most 100).`,
    };
  }
  if (typeof value === "boolean") return { ok: true, value: String(value) };
  if (value === "true" || value === "false") return { ok: true, value };
  return { ok: false, message: `${key}: true or false.` };
}

/** `tenant_rules`: a bounded list of {match, pattern, tenant}; name patterns must be safe. */
export function checkTenantRules(
  raw: unknown,
): { ok: true; value: TenantRuleRecord[] } | { ok: false; messages: string[] } {
  const shape = 'a list of {"match": "name"|"tag"|"cluster", "pattern": "…", "tenant": "<slug>"}';
  if (!Array.isArray(raw)) return { ok: false, messages: [`tenant_rules: ${shape}.`] };
  if (raw.length > MAX_TENANT_RULES) {
    return { ok: false, messages: [`tenant_rules: at most ${MAX_TENANT_RULES} rules.`] };
  }
  const messages: string[] = [];
  const out: TenantRuleRecord[] = [];
  raw.forEach((rule, i) => {
    const at = `tenant_rules[${i}]`;
    if (typeof rule !== "object" || rule === null || Array.isArray(rule)) {
      messages.push(`${at}: ${shape}.`);
      return;
    }
    const { match, pattern, tenant, ...rest } = rule as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length) {
      messages.push(`${at}: unknown key ${JSON.stringify(extra[0].slice(0, 60))}; ${shape}.`);
    }
    if (!MATCH_KINDS.includes(match as typeof MATCH_KINDS[number])) {
      messages.push(`${at}.match: one of name, tag, cluster.`);
    }
    if (typeof pattern !== "string" || !pattern || pattern.length > MAX_RULE_PATTERN_LENGTH) {
      messages.push(`${at}.pattern: a string of 1 to ${MAX_RULE_PATTERN_LENGTH} characters.`);
    } else if (match === "name") {
      const problem = userPatternProblem(pattern);
      if (problem) messages.push(`${at}.pattern: ${problem}`);
    }
    if (typeof tenant !== "string" || !SLUG.test(tenant)) {
      messages.push(`${at}.tenant: the slug of a tenant (letters, digits, - and _).`);
    }
    if (!messages.length) {
      out.push({
        match: match as TenantRuleRecord["match"],
        pattern: pattern as string,
        tenant: tenant as string,
      });
    }
  });
  return messages.length ? { ok: false, messages } : { ok: true, value: out };
}

/**
 * An endpoint's sync policy (docs/sync.md, "Run options"): an object of run options (booleans
 * or "true"/"false", `primary_ip_preference` one of both/v4/v6, role slugs) and
 * `tenant_rules`. Normalised: options to their query strings, rules as given.
 */
export function checkPolicy(
  raw: unknown,
): { ok: true; value: SyncPolicyRecord | null } | { ok: false; messages: string[] } {
  if (raw === undefined || raw === null) return { ok: true, value: null };
  if (typeof raw !== "object" || Array.isArray(raw)) {
    return { ok: false, messages: ['An object of run options, e.g. {"overwrite_names": false}.'] };
  }
  const out: SyncPolicyRecord = {};
  const messages: string[] = [];
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!POLICY_PARAMS.includes(key)) {
      messages.push(
        `Unknown run option ${JSON.stringify(key.slice(0, 60))}. Known: ${
          POLICY_PARAMS.join(", ")
        }.`,
      );
    } else if (key === "tenant_rules") {
      const rules = checkTenantRules(value);
      if (rules.ok) out[key] = rules.value;
      else messages.push(...rules.messages);
    } else {
      const checked = checkOptionValue(key, value);
      // A yes/no option is kept as a JSON boolean (also when sent as "true"/"false"), so a
      // policy reads back as the JSON it is documented as and a client re-sending what it
      // read sees no change.
      if (checked.ok) {
        out[key] = checked.value === "true"
          ? true
          : checked.value === "false"
          ? false
          : checked.value;
      } else messages.push(checked.message);
    }
  }
  if (messages.length) return { ok: false, messages };
  return { ok: true, value: Object.keys(out).length ? out : null };
}

/** A partial set of options (an endpoint's policy, or what a run was asked for). */
export interface SyncOptionsPatch {
  dryRun?: boolean;
  overwrite?: Partial<Record<OverwriteFamily, boolean>>;
  deleteOrphans?: boolean;
  primaryIpPreference?: PrimaryIpPreference;
  stages?: Partial<Record<OptionalStage, boolean>>;
  roles?: { qemu?: string; lxc?: string };
  tenantRules?: TenantRuleRecord[];
}

/** Later patches win: defaults, then the endpoint's policy, then the run's query. */
export function mergeOptions(...patches: (SyncOptionsPatch | null | undefined)[]): SyncOptions {
  const out: SyncOptions = {
    ...DEFAULT_SYNC_OPTIONS,
    overwrite: { ...DEFAULT_SYNC_OPTIONS.overwrite },
    stages: { ...DEFAULT_SYNC_OPTIONS.stages },
    roles: { ...DEFAULT_SYNC_OPTIONS.roles },
  };
  for (const p of patches) {
    if (!p) continue;
    if (p.dryRun !== undefined) out.dryRun = p.dryRun;
    if (p.deleteOrphans !== undefined) out.deleteOrphans = p.deleteOrphans;
    if (p.primaryIpPreference !== undefined) out.primaryIpPreference = p.primaryIpPreference;
    for (const [k, v] of Object.entries(p.overwrite ?? {})) {
      if (v !== undefined) out.overwrite[k as OverwriteFamily] = v;
    }
    for (const [k, v] of Object.entries(p.stages ?? {})) {
      if (v !== undefined) out.stages[k as OptionalStage] = v;
    }
    if (p.roles?.qemu !== undefined) out.roles.qemu = p.roles.qemu;
    if (p.roles?.lxc !== undefined) out.roles.lxc = p.roles.lxc;
    if (p.tenantRules !== undefined) out.tenantRules = p.tenantRules;
  }
  return out;
}

/** Query values (already checked by the route's schema) → a patch. */
export function optionsFromQuery(query: Record<string, string | undefined>): SyncOptionsPatch {
  const flag = (name: string) => {
    const v = query[name];
    return v === undefined ? undefined : v === "true" || v === "1";
  };
  const patch: SyncOptionsPatch = { overwrite: {}, stages: {} };
  patch.dryRun = flag("dry_run");
  patch.deleteOrphans = flag("delete_orphans");
  const pref = query.primary_ip_preference;
  if (pref === "both" || pref === "v4" || pref === "v6") patch.primaryIpPreference = pref;
  for (const f of OVERWRITE_FAMILIES) patch.overwrite![f] = flag(`overwrite_${f}`);
  for (const s of OPTIONAL_STAGES) patch.stages![s] = flag(stageParam(s));
  patch.roles = { qemu: query.qemu_role, lxc: query.lxc_role };
  return patch;
}

/** An endpoint's stored policy → a patch (its options, and its tenant rules). */
export function optionsFromPolicy(policy: SyncPolicyRecord | null | undefined): SyncOptionsPatch {
  const query: Record<string, string> = {};
  let rules: TenantRuleRecord[] | undefined;
  for (const [key, value] of Object.entries(policy ?? {})) {
    if (key === "tenant_rules") rules = Array.isArray(value) ? value : undefined;
    else if (typeof value === "string" || typeof value === "boolean") query[key] = String(value);
  }
  return { ...optionsFromQuery(query), tenantRules: rules };
}

/**
 * The fields (of `families`: field → family) the admin owns in this run: written when the
 * object is created, never on an update.
 */
export function createOnlyFields(
  options: SyncOptions,
  families: Record<string, OverwriteFamily>,
): Set<string> {
  return new Set(Object.entries(families).filter(([, f]) => !options.overwrite[f]).map(([k]) => k));
}

/** Which primary IPs to set, given the first address of each family (ids or null). */
export function primaryIps<T>(
  preference: PrimaryIpPreference,
  v4: T | null,
  v6: T | null,
): { primary_ip4: T | null; primary_ip6: T | null } {
  if (preference === "v4") return { primary_ip4: v4, primary_ip6: v4 === null ? v6 : null };
  if (preference === "v6") return { primary_ip4: v6 === null ? v4 : null, primary_ip6: v6 };
  return { primary_ip4: v4, primary_ip6: v6 };
}
