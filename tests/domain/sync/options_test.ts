/**
 * Run options and sync policies (domain/sync/options.ts, docs/sync.md "Run options"): what a
 * policy or a run's query may say, the 422 texts for what it may not, which one wins, and what
 * each switch turns into. The routes hand these texts to the client as they are.
 */
import assert from "node:assert/strict";
import {
  checkOptionValue,
  checkPolicy,
  checkTenantRules,
  createOnlyFields,
  DEFAULT_SYNC_OPTIONS,
  MAX_RULE_PATTERN_LENGTH,
  MAX_TENANT_RULES,
  mergeOptions,
  OPTION_PARAMS,
  optionsFromPolicy,
  optionsFromQuery,
  POLICY_PARAMS,
  primaryIps,
} from "../../../domain/sync/options.ts";

Deno.test("options: the run options and the policy options, by name", () => {
  assert.deepEqual(OPTION_PARAMS, [
    "dry_run",
    "overwrite_names",
    "overwrite_tags",
    "overwrite_descriptions",
    "overwrite_roles",
    "overwrite_custom_fields",
    "overwrite_tenants",
    "delete_orphans",
    "primary_ip_preference",
    "stage_task_history",
    "stage_vm_backups",
    "stage_vm_snapshots",
    "stage_sdn",
    "qemu_role",
    "lxc_role",
  ]);
  // A policy is every run option but the dry run, plus tenant rules.
  assert.deepEqual(POLICY_PARAMS, [...OPTION_PARAMS.slice(1), "tenant_rules"]);
});

Deno.test("options: one value of each kind is checked and normalised to its query text", () => {
  assert.deepEqual(checkOptionValue("primary_ip_preference", "v6"), { ok: true, value: "v6" });
  assert.deepEqual(checkOptionValue("primary_ip_preference", "v4"), { ok: true, value: "v4" });
  assert.deepEqual(checkOptionValue("primary_ip_preference", "both"), { ok: true, value: "both" });
  assert.deepEqual(checkOptionValue("primary_ip_preference", "V4"), {
    ok: false,
    message: "primary_ip_preference: one of both, v4, v6.",
  });
  assert.deepEqual(checkOptionValue("primary_ip_preference", true), {
    ok: false,
    message: "primary_ip_preference: one of both, v4, v6.",
  });
  assert.deepEqual(checkOptionValue("qemu_role", "web_servers-2"), {
    ok: true,
    value: "web_servers-2",
  });
  assert.deepEqual(checkOptionValue("lxc_role", "x".repeat(100)), {
    ok: true,
    value: "x".repeat(100),
  });
  for (const bad of ["x".repeat(101), "", "web servers", 7]) {
    assert.deepEqual(checkOptionValue("lxc_role", bad), {
      ok: false,
      message: "lxc_role: the slug of a device role (letters, digits, - and _, at most 100).",
    }, String(bad));
  }
  assert.deepEqual(checkOptionValue("qemu_role", "true").ok, true, "a slug that reads true");
  assert.deepEqual(checkOptionValue("overwrite_names", false), { ok: true, value: "false" });
  assert.deepEqual(checkOptionValue("overwrite_names", true), { ok: true, value: "true" });
  assert.deepEqual(checkOptionValue("stage_sdn", "false"), { ok: true, value: "false" });
  assert.deepEqual(checkOptionValue("stage_sdn", "true"), { ok: true, value: "true" });
  for (const bad of ["yes", "1", 1, null, "TRUE"]) {
    assert.deepEqual(checkOptionValue("delete_orphans", bad), {
      ok: false,
      message: "delete_orphans: true or false.",
    }, String(bad));
  }
});

/** What the pattern matcher says of lookaround (name rules run in a linear-time matcher). */
const LOOKAROUND = "Unsupported regular expression: it must be valid and may not use " +
  "backreferences, lookaround or \\b (patterns run in a linear-time matcher).";

Deno.test("options: tenant rules are a bounded list; every fault of every rule is named at once", () => {
  const rule = { match: "name", pattern: "^web-", tenant: "web-team" };
  assert.deepEqual(checkTenantRules([rule, { match: "tag", pattern: "db", tenant: "dba" }]), {
    ok: true,
    value: [rule, { match: "tag", pattern: "db", tenant: "dba" }],
  });
  assert.deepEqual(checkTenantRules([]), { ok: true, value: [] });
  const shape = 'a list of {"match": "name"|"tag"|"cluster", "pattern": "…", "tenant": "<slug>"}';
  assert.deepEqual(checkTenantRules({ rule }), {
    ok: false,
    messages: [`tenant_rules: ${shape}.`],
  });
  assert.deepEqual(checkTenantRules(Array(MAX_TENANT_RULES).fill(rule)).ok, true);
  assert.deepEqual(checkTenantRules(Array(MAX_TENANT_RULES + 1).fill(rule)), {
    ok: false,
    messages: ["tenant_rules: at most 20 rules."],
  });
  assert.deepEqual(
    checkTenantRules([
      rule,
      [rule],
      null,
      { ...rule, owner: "x", extra: 1 },
      { match: "site", pattern: "", tenant: "Web Team" },
      { match: "cluster", pattern: "p".repeat(MAX_RULE_PATTERN_LENGTH + 1), tenant: "t" },
      { match: "name", pattern: "(?=web)", tenant: "t" },
      { match: "tag", pattern: 5, tenant: 5 },
    ]),
    {
      ok: false,
      messages: [
        `tenant_rules[1]: ${shape}.`,
        `tenant_rules[2]: ${shape}.`,
        `tenant_rules[3]: unknown key "owner"; ${shape}.`,
        "tenant_rules[4].match: one of name, tag, cluster.",
        "tenant_rules[4].pattern: a string of 1 to 128 characters.",
        "tenant_rules[4].tenant: the slug of a tenant (letters, digits, - and _).",
        "tenant_rules[5].pattern: a string of 1 to 128 characters.",
        `tenant_rules[6].pattern: ${LOOKAROUND}`,
        "tenant_rules[7].pattern: a string of 1 to 128 characters.",
        "tenant_rules[7].tenant: the slug of a tenant (letters, digits, - and _).",
      ],
    },
  );
  // A pattern of the longest length is fine; a tag or cluster value is no pattern (not checked
  // as one).
  const longest = "p".repeat(MAX_RULE_PATTERN_LENGTH);
  assert.equal(checkTenantRules([{ match: "cluster", pattern: longest, tenant: "t" }]).ok, true);
  assert.equal(checkTenantRules([{ match: "tag", pattern: "(?=web)", tenant: "t" }]).ok, true);
});

Deno.test("options: a policy reads back as JSON (yes/no as booleans); unknown and bad options are named", () => {
  assert.deepEqual(checkPolicy(undefined), { ok: true, value: null });
  assert.deepEqual(checkPolicy(null), { ok: true, value: null });
  assert.deepEqual(checkPolicy({}), { ok: true, value: null }, "an empty policy is none");
  const object = 'An object of run options, e.g. {"overwrite_names": false}.';
  assert.deepEqual(checkPolicy([]), { ok: false, messages: [object] });
  assert.deepEqual(checkPolicy("overwrite_names=false"), { ok: false, messages: [object] });
  assert.deepEqual(
    checkPolicy({
      overwrite_names: "false",
      overwrite_tags: true,
      delete_orphans: "true",
      stage_sdn: false,
      primary_ip_preference: "v4",
      qemu_role: "servers",
      tenant_rules: [{ match: "tag", pattern: "db", tenant: "dba" }],
    }),
    {
      ok: true,
      value: {
        overwrite_names: false,
        overwrite_tags: true,
        delete_orphans: true,
        stage_sdn: false,
        primary_ip_preference: "v4",
        qemu_role: "servers",
        tenant_rules: [{ match: "tag", pattern: "db", tenant: "dba" }],
      },
    },
  );
  const known = `Known: ${POLICY_PARAMS.join(", ")}.`;
  assert.deepEqual(
    checkPolicy({
      dry_run: true,
      overwrite_names: "no",
      ["x".repeat(80)]: 1,
      tenant_rules: "web",
      lxc_role: "a b",
    }),
    {
      ok: false,
      messages: [
        `Unknown run option "dry_run". ${known}`,
        "overwrite_names: true or false.",
        `Unknown run option "${"x".repeat(60)}". ${known}`,
        'tenant_rules: a list of {"match": "name"|"tag"|"cluster", "pattern": "…", ' +
        '"tenant": "<slug>"}.',
        "lxc_role: the slug of a device role (letters, digits, - and _, at most 100).",
      ],
    },
  );
});

Deno.test("options: defaults, then the endpoint's policy, then the run's query; each switch lands where it says", () => {
  assert.deepEqual(mergeOptions(), DEFAULT_SYNC_OPTIONS);
  assert.deepEqual(DEFAULT_SYNC_OPTIONS, {
    dryRun: false,
    overwrite: {
      names: true,
      tags: true,
      descriptions: true,
      roles: true,
      custom_fields: true,
      tenants: true,
    },
    deleteOrphans: false,
    primaryIpPreference: "both",
    stages: { "task-history": true, "vm-backups": true, "vm-snapshots": true, sdn: true },
    roles: { qemu: null, lxc: null },
    tenantRules: null,
  });
  const rules = [{ match: "tag" as const, pattern: "db", tenant: "dba" }];
  const policy = optionsFromPolicy({
    overwrite_names: false,
    overwrite_tenants: false,
    delete_orphans: true,
    primary_ip_preference: "v6",
    stage_sdn: false,
    stage_vm_backups: false,
    qemu_role: "servers",
    lxc_role: "boxes",
    tenant_rules: rules,
  });
  const query = optionsFromQuery({
    overwrite_names: "true",
    overwrite_tags: "0",
    stage_vm_backups: "1",
    stage_task_history: "false",
    primary_ip_preference: "v4",
    lxc_role: "containers",
    dry_run: "1",
  });
  const merged = mergeOptions(policy, query);
  assert.deepEqual(merged, {
    dryRun: true,
    overwrite: {
      names: true, // the query wins
      tags: false, // "0" is false
      descriptions: true,
      roles: true,
      custom_fields: true,
      tenants: false, // the policy's, the query says nothing
    },
    deleteOrphans: true,
    primaryIpPreference: "v4",
    stages: { "task-history": false, "vm-backups": true, "vm-snapshots": true, sdn: false },
    roles: { qemu: "servers", lxc: "containers" },
    tenantRules: rules,
  });
  // No policy (null) and no query (undefined) are nothing to merge.
  assert.deepEqual(mergeOptions(null, policy, undefined, query), merged);
  // Merging never changes the defaults another run starts from.
  assert.equal(DEFAULT_SYNC_OPTIONS.overwrite.names, true);
  assert.equal(DEFAULT_SYNC_OPTIONS.stages.sdn, true);
  assert.equal(DEFAULT_SYNC_OPTIONS.roles.lxc, null);
  // A query that says nothing leaves the policy whole; a bad preference is no preference.
  assert.deepEqual(mergeOptions(policy, optionsFromQuery({ primary_ip_preference: "v5" })), {
    ...mergeOptions(policy),
  });
  assert.equal(mergeOptions(policy).primaryIpPreference, "v6");
  assert.equal(mergeOptions(optionsFromQuery({ delete_orphans: "false" })).deleteOrphans, false);
  assert.equal(
    mergeOptions(policy, optionsFromQuery({ delete_orphans: "false" })).deleteOrphans,
    false,
  );
  assert.equal(mergeOptions(optionsFromQuery({ dry_run: "true" })).dryRun, true);
  assert.equal(mergeOptions(optionsFromQuery({ dry_run: "yes" })).dryRun, false);
  // A policy's rules that are not a list are no rules; another value kind is ignored.
  assert.equal(optionsFromPolicy({ tenant_rules: "web" as never }).tenantRules, undefined);
  assert.deepEqual(mergeOptions(optionsFromPolicy(null)), DEFAULT_SYNC_OPTIONS);
  assert.deepEqual(
    mergeOptions(optionsFromPolicy({ qemu_role: 5 as never })).roles,
    { qemu: null, lxc: null },
  );
});

Deno.test("options: the fields an admin owns are written on create only, per family", () => {
  const families = {
    name: "names",
    description: "descriptions",
    tags: "tags",
    role: "roles",
  } as const;
  assert.deepEqual([...createOnlyFields(mergeOptions(), families)], []);
  const options = mergeOptions(
    optionsFromQuery({ overwrite_names: "false", overwrite_roles: "false" }),
  );
  assert.deepEqual([...createOnlyFields(options, families)].sort(), ["name", "role"]);
});

Deno.test("options: primary IPs by preference; one family only, the other when the guest has none of it", () => {
  assert.deepEqual(primaryIps("both", 4, 6), { primary_ip4: 4, primary_ip6: 6 });
  assert.deepEqual(primaryIps("both", null, 6), { primary_ip4: null, primary_ip6: 6 });
  assert.deepEqual(primaryIps("v4", 4, 6), { primary_ip4: 4, primary_ip6: null });
  assert.deepEqual(primaryIps("v4", null, 6), { primary_ip4: null, primary_ip6: 6 });
  assert.deepEqual(primaryIps("v4", null, null), { primary_ip4: null, primary_ip6: null });
  assert.deepEqual(primaryIps("v6", 4, 6), { primary_ip4: null, primary_ip6: 6 });
  assert.deepEqual(primaryIps("v6", 4, null), { primary_ip4: 4, primary_ip6: null });
});
