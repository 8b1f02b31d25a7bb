/**
 * The inventory plugin's models (docs/api-behaviour.md, Inventory), declared for the inventory
 * model engine (domain/netbox). App label `service`, so permissions read
 * `service.view_backendendpoint`.
 *
 * Endpoint hooks: validation of the documented rules, sealing of write-only secrets with the plugin
 * encryption key, token generation for the backend endpoint, and push-on-save to the backend
 * (best-effort, outcome kept as `last_push`).
 */
import type { HookContext, ModelDef, StoredObject } from "../netbox/types.ts";
import type { PluginServices } from "./service.ts";
import {
  checkDomainOrIp,
  checkInventoryToken,
  checkNodeFingerprints,
  checkSsh,
  mergeErrors,
} from "./validation.ts";
import { generateBackendToken } from "./secrets.ts";
import { followDestination } from "./destination.ts";
import {
  addressFields,
  bool,
  checkSecretsAreText,
  choice,
  datetime,
  endpointDisplay,
  fk,
  lastPush,
  lastSync,
  nullInt,
  nullStr,
  optStr,
  port,
  present,
  raw,
  secret,
  sshFacts,
  str,
} from "./fields.ts";
import { APP, CORE, MODELS, SECRET_FIELDS, SSH_SECRET_FIELDS } from "./names.ts";
import { checkReuseSwitch, sshReadiness } from "./ssh.ts";
import { checkPolicy } from "../sync/options.ts";

/** The hypervisor endpoint's sync policy, checked as the backend checks it; normalised. */
function checkSyncPolicy(draft: Record<string, unknown>): Record<string, string[]> {
  const checked = checkPolicy(draft.sync_policy);
  if (!checked.ok) return { sync_policy: checked.messages };
  draft.sync_policy = checked.value;
  return {};
}

/** The per-node pinned host keys of the browser terminal; normalised. */
function checkNodePins(draft: Record<string, unknown>): Record<string, string[]> {
  const checked = checkNodeFingerprints(draft.ssh_node_host_fingerprints);
  if (!checked.ok) return { ssh_node_host_fingerprints: checked.messages };
  draft.ssh_node_host_fingerprints = checked.value;
  return {};
}

export { APP, CORE, MODELS, SECRET_FIELDS, SSH_SECRET_FIELDS, sshFacts };

const STATUS_CHOICES = [["active", "Active"], ["stale", "Stale"]] as const;
const VM_TYPE_CHOICES = [["qemu", "QEMU"], ["lxc", "LXC"]] as const;

// ------------------------------------------------------------------ the models

/**
 * Builds every plugin model. `services` carries what the hooks need beyond the engine
 * (settings, outbound fetch, clock); it is injected, never a module singleton.
 */
export function pluginModels(services: PluginServices): ModelDef[] {
  const endpointBase = {
    app: APP,
    brief: ["name"],
    search: ["name", "domain"],
    ordering: ["name", "id"],
    naturalKey: "name",
  };

  /**
   * Resolves `_host`, clears the secrets a move did not re-send (domain/plugin/destination.ts)
   * and seals the secrets sent in this write.
   */
  async function prepareEndpoint(
    model: string,
    draft: StoredObject,
    ctx: HookContext,
    secrets: readonly string[],
  ) {
    draft._host = await services.ipHost(ctx.engine, draft.ip_address);
    followDestination(model, draft, ctx);
    await services.sealInput(draft, ctx, secrets);
  }

  const hypervisor: ModelDef = {
    ...endpointBase,
    model: "hypervisorendpoint",
    verbose: "hypervisor endpoint",
    path: "plugins/service/endpoints/hypervisor/",
    display: endpointDisplay,
    fields: {
      ...addressFields(8006),
      // The backend copy's name adds " (inv:<pk>)" and the backend caps names at 200.
      name: str({ required: true, index: true, maxLength: 180 }),
      mode: choice([["undefined", "Undefined"], ["standalone", "Standalone"], [
        "cluster",
        "Cluster",
      ]], "undefined"),
      version: nullStr({ description: "Set on sync." }),
      repoid: nullStr({ description: "Repository/release id." }),
      username: str({ default: "root@pam", allowBlank: true }),
      password: secret("Write-only; stored encrypted with the plugin encryption key."),
      token_name: nullStr(),
      token_value: secret("Write-only API token secret."),
      // Whether a write-only secret is stored, so a form can say "set" / "not set".
      has_password: { type: "bool", compute: (r) => present(r.password) },
      has_token_value: { type: "bool", compute: (r) => present(r.token_value) },
      use_https: bool(true),
      verify_ssl: bool(false),
      enabled: bool(true, { index: true }),
      allowed_tenants: { type: "m2m", model: CORE.tenant },
      allow_writes: bool(false),
      sync_policy: {
        type: "json",
        nullable: true,
        filter: false,
        description: "Sync policy: the run options this endpoint's syncs default to " +
          '(docs/sync.md, Run options), e.g. {"overwrite_names": false, "stage_sdn": false, ' +
          '"primary_ip_preference": "v4", "qemu_role": "server", "tenant_rules": [{"match": ' +
          '"name", "pattern": "^web-", "tenant": "web"}]} (docs/sync.md, Roles and tenants); ' +
          "pushed to the backend copy; a run's options win.",
      },
      ssh_credential_source: choice([["dedicated", "Dedicated"], [
        "reuse_endpoint",
        "Reuse endpoint credentials",
      ]], "dedicated"),
      ssh_username: nullStr(),
      ssh_port: port(22),
      ssh_auth_method: choice([["password", "Password"], ["key", "Private key"]], "password"),
      ssh_known_host_fingerprint: nullStr({ description: "Pinned host key, SHA256:<base64>." }),
      ssh_node_host_fingerprints: {
        type: "json",
        nullable: true,
        filter: false,
        description: "Pinned host key of each cluster node the browser terminal may open, " +
          '{"<node name>": "SHA256:<base64>"}; a node without one is refused unless its address ' +
          "is the endpoint's own (README, Browser terminal). Same SSH credentials and ssh_port.",
      },
      ssh_password: secret("Write-only; needs the plugin encryption key."),
      ssh_private_key: secret("Write-only; needs the plugin encryption key."),
      has_ssh_password: {
        type: "bool",
        compute: (r) => sshReadiness(sshFacts(r)).has_ssh_password,
      },
      has_ssh_private_key: {
        type: "bool",
        compute: (r) => sshReadiness(sshFacts(r)).has_ssh_private_key,
      },
      has_ssh_terminal_credentials: {
        type: "bool",
        compute: (r) => sshReadiness(sshFacts(r)).has_ssh_terminal_credentials,
      },
      last_push: lastPush,
      last_sync: lastSync,
    },
    filters: { ...services.endpointFilters, ...services.hypervisorFilters },
    validate: async (draft, ctx) => {
      const errors = mergeErrors(
        checkDomainOrIp(draft),
        checkSsh(draft),
        checkSecretsAreText(draft, SECRET_FIELDS[MODELS.hypervisor]),
        await services.sshSecretsNeedKey(draft, ctx),
        checkReuseSwitch(draft, ctx),
        checkSyncPolicy(draft),
        checkNodePins(draft),
      );
      return Object.keys(errors).length ? errors : null;
    },
    beforeSave: (draft, ctx) =>
      prepareEndpoint("hypervisorendpoint", draft, ctx, SECRET_FIELDS[MODELS.hypervisor]),
    afterSave: (record, ctx) => services.afterHypervisorSave(record, ctx),
    afterDelete: (record, ctx) => services.afterHypervisorDelete(record, ctx.engine),
  };

  const inventory: ModelDef = {
    ...endpointBase,
    model: "inventoryendpoint",
    verbose: "inventory endpoint",
    path: "plugins/service/endpoints/inventory/",
    filters: services.endpointFilters,
    display: (r) => String(r.name),
    fields: {
      ...addressFields(443),
      use_https: bool(true),
      verify_ssl: bool(true),
      token_version: choice([["v1", "v1"], ["v2", "v2"]], "v1"),
      token: fk(CORE.token, {
        description: "v1 only: the inventory token whose plaintext is pushed.",
      }),
      token_key: nullStr({ description: "v2 key id." }),
      token_secret: secret("Write-only v2 secret."),
      has_token_secret: { type: "bool", compute: (r) => present(r.token_secret) },
      last_push: lastPush,
    },
    validate: async (draft, ctx) => {
      const effective = clearOtherTokenVersion({ ...draft }, ctx);
      const errors = mergeErrors(
        checkDomainOrIp(draft),
        checkInventoryToken({ ...effective, hasSecret: present(effective.token_secret) }),
        checkSecretsAreText(draft, SECRET_FIELDS[MODELS.inventory]),
        await services.checkV1TokenReadable(effective, ctx),
      );
      return Object.keys(errors).length ? errors : null;
    },
    beforeSave: async (draft, ctx) => {
      clearOtherTokenVersion(draft, ctx);
      await prepareEndpoint("inventoryendpoint", draft, ctx, SECRET_FIELDS[MODELS.inventory]);
    },
    afterSave: (record, ctx) => services.afterInventorySave(record, ctx),
  };

  const backend: ModelDef = {
    ...endpointBase,
    model: "backendendpoint",
    verbose: "backend endpoint",
    path: "plugins/service/endpoints/backend/",
    filters: services.endpointFilters,
    display: (r) => String(r.name),
    fields: {
      ...addressFields(8800),
      use_https: bool(true, {
        description: "true: https, false: http; independent of verify_ssl.",
      }),
      verify_ssl: bool(true, { description: "Meaningful only when use_https is true." }),
      token: {
        type: "string",
        readOnly: true,
        nullable: true,
        filter: false,
        description: "X-Service-API-Key for the backend; generated (64 URL-safe chars) when " +
          "absent and kept when the endpoint moves; POST endpoints/backend/{id}/token/ replaces it.",
      },
      use_websocket: bool(false),
      websocket_domain: nullStr(),
      websocket_port: port(8800),
      server_side_websocket: bool(false),
      last_push: lastPush,
      /** Constant; its unique constraint makes the backend endpoint a singleton. */
      _singleton: { type: "bool", hidden: true, default: true },
    },
    unique: [{
      fields: ["_singleton"],
      errorField: "name",
      message: "Only one backend endpoint is allowed; edit the existing one.",
    }],
    validate: (draft) => {
      const errors = checkDomainOrIp(draft);
      return Object.keys(errors).length ? errors : null;
    },
    // The token is the backend's master key: only those who may change this endpoint see it.
    redact: async (rendered, auth) => {
      if (!("token" in rendered)) return;
      const mayChange = auth !== null &&
        (auth.isSuperuser ||
          (auth.writeEnabled && auth.permissions.has(`${APP}.change_backendendpoint`)));
      if (mayChange) {
        // Stored sealed with SERVICE_ENCRYPTION_KEY; shown in plaintext to those allowed.
        rendered.token = await services.backendKey(rendered as StoredObject);
        return;
      }
      rendered.has_token = typeof rendered.token === "string" && rendered.token !== "";
      delete rendered.token;
    },
    beforeSave: async (draft, ctx) => {
      draft._singleton = true;
      await prepareEndpoint("backendendpoint", draft, ctx, []);
      // A move keeps the key (destination.ts, DESTINATION_SECRETS); a new record gets one.
      if (!present(draft.token)) draft.token = generateBackendToken();
      draft.token = await services.sealBackendKey(draft.token as string);
    },
    afterSave: (record, ctx) => services.afterBackendSave(record, ctx),
  };

  const nodeBrief = ["name", "node_id", "online"];

  const cluster: ModelDef = {
    app: APP,
    model: "cluster",
    verbose: "cluster",
    path: "plugins/service/clusters/",
    brief: ["name"],
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      name: str({ required: true, index: true }),
      cluster: fk(CORE.cluster, { description: "The virtualization cluster it maps to." }),
      mode: choice([["undefined", "Undefined"], ["standalone", "Standalone"], [
        "cluster",
        "Cluster",
      ]], "undefined"),
      version: nullStr(),
      quorate: { type: "bool", nullable: true },
      nodes_online: nullInt({ min: 0 }),
      nodes_total: nullInt({ min: 0 }),
      last_synced: datetime(),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "name"] }],
    search: ["name"],
    ordering: ["name", "id"],
    naturalKey: "name",
  };

  const node: ModelDef = {
    app: APP,
    model: "node",
    verbose: "node",
    path: "plugins/service/nodes/",
    brief: nodeBrief,
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      cluster: fk(MODELS.cluster),
      name: str({ required: true, index: true }),
      node_id: nullInt({ min: 0, index: true, description: "Hypervisor node id (nodeid)." }),
      online: bool(false, { index: true }),
      ip_address: nullStr({ description: "Address reported by the cluster status." }),
      local: { type: "bool", nullable: true },
      level: nullStr({ description: "Support level." }),
      version: nullStr(),
      device: fk(CORE.device),
      cpu: { type: "float", nullable: true, min: 0 },
      maxcpu: nullInt({ min: 0 }),
      mem: { type: "float", nullable: true, min: 0 },
      maxmem: { type: "float", nullable: true, min: 0 },
      uptime: nullInt({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      last_synced: datetime(),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "name"] }],
    search: ["name"],
    ordering: ["name", "id"],
    naturalKey: "name",
  };

  const storage: ModelDef = {
    app: APP,
    model: "storage",
    verbose: "storage",
    path: "plugins/service/storage/",
    brief: ["cluster", "name"],
    fields: {
      cluster: fk(MODELS.cluster, { required: true, nullable: false, onDelete: "cascade" }),
      name: str({ required: true, index: true }),
      storage_type: nullStr({ index: true, description: "dir, lvmthin, zfspool, nfs, pbs..." }),
      content: { type: "list", of: "string", default: () => [], filter: false },
      path: nullStr(),
      nodes: { type: "list", of: "string", default: () => [], filter: false },
      shared: bool(false),
      enabled: bool(true, { index: true }),
      total: { type: "float", nullable: true, min: 0 },
      used: { type: "float", nullable: true, min: 0 },
      avail: { type: "float", nullable: true, min: 0 },
      status: choice(STATUS_CHOICES, "active"),
      last_synced: datetime(),
      raw_config: raw,
    },
    unique: [{ fields: ["cluster", "name"] }],
    search: ["name"],
    ordering: ["name", "id"],
    naturalKey: "name",
  };

  const vmRef = fk(CORE.virtualMachine);
  /**
   * The VM of a per-guest record (a guest's sync state, its backups, its snapshots): a VM holds
   * one or a few, so the index keeps no ordered twin or counter for it (docs/sync.md, "Writes:
   * mutations per object"); its vmid likewise (one guest per endpoint).
   */
  const guestVmRef = fk(CORE.virtualMachine, { fewPerValue: true });
  const guestVmid = { fewPerValue: true } as const;

  const backupRoutine: ModelDef = {
    app: APP,
    model: "backuproutine",
    verbose: "backup routine",
    path: "plugins/service/backup-routines/",
    brief: ["job_id"],
    display: (r) => String(r.job_id),
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      job_id: str({ required: true, index: true }),
      enabled: bool(true, { index: true }),
      schedule: optStr(),
      next_run: datetime(),
      node: fk(MODELS.node),
      storage: fk(MODELS.storage),
      selection: { type: "list", of: "int", default: () => [], min: 0, filter: false },
      comment: optStr({ maxLength: 4096 }),
      status: choice(STATUS_CHOICES, "active"),
      keep_last: nullInt({ min: 0, index: true }),
      keep_daily: nullInt({ min: 0, index: true }),
      keep_weekly: nullInt({ min: 0, index: true }),
      keep_monthly: nullInt({ min: 0, index: true }),
      keep_yearly: nullInt({ min: 0 }),
      keep_all: { type: "bool", nullable: true },
      notes_template: optStr({ maxLength: 4096 }),
      bwlimit: nullInt({ min: 0 }),
      zstd: nullInt({ min: 0 }),
      io_workers: nullInt({ min: 0 }),
      fleecing: {
        type: "json",
        default: "",
        filter: false,
        description: "Options string; empty = disabled.",
      },
      fleecing_storage: fk(MODELS.storage),
      repeat_missed: bool(false),
      // A plain string in the plugin API (not a choice object), limited to the three modes.
      pbs_change_detection_mode: str({
        default: "default",
        index: true,
        pattern: /^(default|legacy|data)$/,
        patternMessage: "Use default, legacy or data.",
      }),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "job_id"] }],
    search: ["job_id", "comment"],
    ordering: ["job_id", "id"],
    naturalKey: "job_id",
  };

  const replication: ModelDef = {
    app: APP,
    model: "replication",
    verbose: "replication",
    path: "plugins/service/replications/",
    brief: ["replication_id"],
    display: (r) => String(r.replication_id),
    fields: {
      endpoint: fk(MODELS.hypervisor, { onDelete: "cascade" }),
      replication_id: str({
        required: true,
        index: true,
        pattern: /^\d+-\d+$/,
        patternMessage: "Use the form <vmid>-<n>.",
      }),
      virtual_machine: vmRef,
      hypervisor_node: fk(MODELS.node),
      guest: nullInt({ min: 0, index: true }),
      target: optStr({ index: true }),
      job_type: choice([["local", "Local"]], "local"),
      schedule: optStr({ index: true }),
      rate: { type: "float", nullable: true, min: 0 },
      comment: optStr({ maxLength: 4096 }),
      disable: bool(false, { index: true }),
      source: optStr({ index: true }),
      jobnum: nullInt({ min: 0, index: true }),
      remove_job: choice([["local", "Local"], ["full", "Full"]], null),
      status: choice(STATUS_CHOICES, "active"),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "replication_id"] }],
    search: ["replication_id", "virtual_machine__name", "target", "comment", "source"],
    filters: services.replicationFilters,
    ordering: ["replication_id", "id"],
    naturalKey: "replication_id",
  };

  const deletionRequest: ModelDef = {
    app: APP,
    model: "deletionrequest",
    verbose: "deletion request",
    path: "plugins/service/deletion-requests/",
    readOnly: true,
    brief: ["name", "status"],
    display: (r) => `${r.name ?? `VM ${r.vmid}`} (${r.status})`,
    fields: {
      endpoint: fk(MODELS.hypervisor, { onDelete: "cascade" }),
      virtual_machine: vmRef,
      vmid: nullInt({ min: 0, index: true }),
      vm_type: choice(VM_TYPE_CHOICES, "qemu"),
      name: optStr(),
      status: choice([
        ["pending", "Pending"],
        ["approved", "Approved"],
        ["rejected", "Rejected"],
        ["completed", "Completed"],
        ["failed", "Failed"],
      ], "pending"),
      reason: optStr({ maxLength: 4096 }),
      requested_by: optStr(),
      decided_by: optStr(),
      decided_at: datetime(),
      result: { type: "json", nullable: true, filter: false },
    },
    search: ["name", "reason", "requested_by"],
    ordering: ["-id"],
  };

  const applyJob: ModelDef = {
    app: APP,
    model: "applyjob",
    verbose: "apply job",
    path: "plugins/service/apply-jobs/",
    readOnly: true,
    brief: ["branch", "status"],
    display: (r) => `${r.branch || "apply"} #${r.id}`,
    fields: {
      endpoint: fk(MODELS.hypervisor, { onDelete: "cascade" }),
      branch: optStr({ index: true }),
      status: choice([
        ["pending", "Pending"],
        ["running", "Running"],
        ["completed", "Completed"],
        ["failed", "Failed"],
      ], "pending"),
      actor: optStr(),
      started_at: datetime(),
      finished_at: datetime(),
      summary: { type: "json", default: () => ({}), filter: false },
      error: optStr({ maxLength: 8192 }),
    },
    search: ["branch", "actor"],
    ordering: ["-id"],
  };

  const snapshot: ModelDef = {
    app: APP,
    model: "snapshot",
    verbose: "snapshot",
    path: "plugins/service/snapshots/",
    brief: ["name"],
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      virtual_machine: fk(CORE.virtualMachine, { onDelete: "cascade", ...guestVmid }),
      node: fk(MODELS.node),
      vmid: { type: "int", required: true, min: 0, index: true, ...guestVmid },
      vm_type: choice(VM_TYPE_CHOICES, "qemu"),
      name: str({ required: true, index: true }),
      description: optStr({ maxLength: 8192 }),
      parent: nullStr(),
      snaptime: datetime(),
      vmstate: bool(false),
      status: choice(STATUS_CHOICES, "active"),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "vmid", "name"] }],
    search: ["name", "description"],
    ordering: ["vmid", "name", "id"],
  };

  const backup: ModelDef = {
    app: APP,
    model: "backup",
    verbose: "backup",
    path: "plugins/service/backups/",
    brief: ["volid"],
    display: (r) => String(r.volid),
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      storage: fk(MODELS.storage, { onDelete: "cascade" }),
      node: fk(MODELS.node),
      virtual_machine: guestVmRef,
      vmid: nullInt({ min: 0, index: true, ...guestVmid }),
      vm_type: choice(VM_TYPE_CHOICES, null),
      // One backup per volume and endpoint.
      volid: str({ required: true, maxLength: 1024, index: true, ...guestVmid }),
      format: nullStr(),
      size: { type: "float", nullable: true, min: 0 },
      creation_time: datetime(),
      notes: optStr({ maxLength: 8192 }),
      protected: bool(false),
      encrypted: bool(false),
      verification_state: nullStr(),
      status: choice(STATUS_CHOICES, "active"),
      raw_config: raw,
    },
    unique: [{ fields: ["endpoint", "volid"] }],
    search: ["volid", "notes"],
    ordering: ["-creation_time", "id"],
  };

  const taskHistory: ModelDef = {
    app: APP,
    model: "taskhistory",
    verbose: "task",
    objectName: "TaskHistory",
    path: "plugins/service/task-history/",
    brief: ["upid", "task_type", "status"],
    display: (r) => String(r.upid),
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      node: fk(MODELS.node),
      virtual_machine: vmRef,
      upid: str({ required: true, maxLength: 512 }),
      node_name: optStr({ index: true }),
      task_type: optStr({ index: true }),
      task_id: optStr({ description: "The task's object id (e.g. a vmid)." }),
      vmid: nullInt({ min: 0, index: true }),
      username: optStr({ index: true }),
      status: optStr({ index: true, description: "running, OK, or the error text." }),
      exitstatus: nullStr(),
      starttime: datetime(),
      endtime: datetime(),
      pid: nullInt({ min: 0 }),
      pstart: nullInt({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      raw_config: raw,
    },
    unique: [{ fields: ["upid"] }],
    search: ["upid", "task_type", "username"],
    ordering: ["-starttime", "-id"],
    naturalKey: "upid",
  };

  const vmSyncState: ModelDef = {
    app: APP,
    model: "vmsyncstate",
    verbose: "VM sync state",
    path: "plugins/service/vm-sync-state/",
    brief: ["vmid", "vm_type"],
    display: (r) => `${r.vm_type}/${r.vmid}`,
    fields: {
      endpoint: fk(MODELS.hypervisor, { required: true, nullable: false, onDelete: "cascade" }),
      vmid: { type: "int", required: true, min: 0, index: true, ...guestVmid },
      vm_type: choice(VM_TYPE_CHOICES, "qemu"),
      virtual_machine: guestVmRef,
      node_name: optStr({ index: true }),
      name: optStr({ description: "Name as last seen upstream." }),
      status: choice([["present", "Present"], ["missing", "Missing upstream"]], "present"),
      last_seen: datetime(),
      config_digest: nullStr({ description: "Digest of the last synced config." }),
    },
    unique: [{ fields: ["endpoint", "vmid"] }],
    ordering: ["vmid", "id"],
    tags: false,
  };

  const models: ModelDef[] = [
    hypervisor,
    inventory,
    backend,
    cluster,
    node,
    storage,
    backupRoutine,
    replication,
    deletionRequest,
    applyJob,
    snapshot,
    backup,
    taskHistory,
    vmSyncState,
  ];
  // The plugin's filter sets take references by id (Django's default for `Meta.fields`); a name
  // still finds them here, as before.
  return models.map((m) => ({
    ...m,
    fields: Object.fromEntries(
      Object.entries(m.fields).map(([k, f]) => [
        k,
        f.type === "fk" || f.type === "m2m" ? { ...f, filterTakesIds: true } : f,
      ]),
    ),
  }));
}

/**
 * v1 uses the token reference only, v2 key + secret only: stored values of the other
 * version are dropped when not sent in this write (a write that sends both is an error).
 */
function clearOtherTokenVersion(draft: StoredObject, ctx: HookContext): StoredObject {
  if (draft.token_version === "v2") {
    if (!("token" in ctx.input)) draft.token = null;
  } else {
    if (!("token_key" in ctx.input)) draft.token_key = null;
    if (!("token_secret" in ctx.input)) draft.token_secret = null;
  }
  return draft;
}
