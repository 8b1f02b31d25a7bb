/**
 * Surviving mutants no user could tell apart from the original (scripts/mutate.ts counts them
 * apart from the kill rate). Each entry: the module, the mutation, a piece of the original
 * line, and why no test can or should notice. Keep it short: a survivor that a user could
 * notice needs a test, not an entry here.
 */
export interface Equivalent {
  module: string;
  what: string;
  /** A piece of the original line (trimmed) that identifies it. */
  line: string;
  /** A piece of the mutated line, when the line has the same mutation in several places. */
  mutant?: string;
  why: string;
}

export const EQUIVALENT: Equivalent[] = [
  {
    module: "domain/verbs/idempotency.ts",
    what: "remove line",
    line: 'if (claim.entry.answer) return { kind: "replayed", answer: claim.entry.answer };',
    why:
      "a shortcut: without it the request asks store.settled, which returns the stored answer at once",
  },
  {
    module: "domain/verbs/idempotency.ts",
    what: "&& → ||",
    line: "if (!settled && !wait.aborted) {",
    why: "a settled entry always carries an answer with this fingerprint (claim checked it), " +
      "which returned just above: settled is null whenever this line runs",
  },
  {
    module: "domain/verbs/idempotency.ts",
    what: "remove line",
    line: "await store.release(key);",
    why: "the release after a throw: runVerb turns every failure into an answer, so work() " +
      "throws only on an internal error; the key then expires after its 60 s window",
  },
  {
    module: "domain/verbs/run.ts",
    what: "?? → ||",
    line: "String((error as Error)?.message ?? error)",
    why: 'differs only for an error with an empty message (shown as "" or as "Error")',
  },
  {
    module: "domain/verbs/run.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "alreadyDone's caller only tests the result for truth",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "verification_state: v.verification?.state ?? null,",
    why: "Proxmox sends a verification state or none, never an empty string",
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: "storage_type: cfg.type ?? null,",
    why: "every Proxmox storage has a non-empty type",
  },
  {
    module: "domain/sync/owned.ts",
    what: "&& → ||",
    line: "if (refId(v.site) === site && !known.has(Number(v.vid)))",
    why: "the list is read with site_id=<site>: every VLAN in it is of that site",
  },
  {
    module: "domain/sync/runner.ts",
    what: "remove line",
    line: "if (current !== 0 && current !== of && t - last < every) return;",
    why: "the progress throttle: without it the same progress arrives in more frames " +
      "(first and last frames are sent either way)",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "const every = this.deps.progressEveryMs ?? 250;",
    why: "progressEveryMs is a test seam no deployment sets; 0 and 250 differ only in frame count",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "remove line",
    line: "lookupAt.set(key, at);",
    why: "a dedupe of the unique-index reads of one batch: without it the same key is read twice",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: 'const wanted = new Set(c.req.queries("sync_types") ?? []);',
    why: "queries() gives an array or undefined, never another falsy value",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line: "if (running.length === 0) return 0;",
    why: "a shortcut: with no running job the loop below does nothing and reap returns 0 anyway " +
      "(it only saves reading the lease)",
  },
  {
    module: "domain/jobs/service.ts",
    what: "> → >=",
    line: "if (lease && lease.job_id === job.id && lease.expires_at > now) continue;",
    why: "differs only for a lease expiring in the very millisecond of the check",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line: "n++;",
    why: "the count reap returns is read by no caller (the worker's check ignores it)",
  },
  {
    module: "domain/jobs/request.ts",
    what: "&& → ||",
    line: "} else if (b.interval_unit !== undefined && b.interval_unit !== null) {",
    why: "an absent or null unit defaults to minutes just above, which passes the unit check " +
      "this branch runs: entering it for them changes nothing",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "if (signal.aborted) throw signal.reason ?? error;",
    why: "an aborted signal's reason is our Error or the platform's AbortError, never falsy",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: ": (timing.now() - (started.get(step) ?? timing.now())) / 1000;",
    why: "a stage's start is a clock reading in epoch milliseconds (never 0) or absent",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "const name = request.job_name ??",
    why: "parseSyncRequest gives a trimmed, non-empty job name or null, never another falsy value",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'const base = Date.parse(String(current?.scheduled ?? current?.started ?? "")) ||',
    why: "a job's scheduled time is an ISO text or null, never another falsy value",
  },
  {
    module: "domain/jobs/service.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "#requesterRefusal's callers test its answer for truth only",
  },
  {
    module: "clients/outbound.ts",
    what: "true → false",
    line: 'signal?.addEventListener("abort", onAbort, { once: true });',
    why: "an AbortSignal fires its abort event at most once",
  },
  {
    module: "clients/outbound.ts",
    what: "remove line",
    line: "if (done) return;",
    why: "the data handler's guard: done is set by end, close, error, abort and cancel, after " +
      "which Node emits no more data (abort and cancel destroy the response)",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "const status = res.statusCode ?? 502;",
    why: "a client response always has a status code, never 0",
  },
  {
    module: "clients/outbound.ts",
    what: "<= → <",
    line: "if ((controller.desiredSize ?? 1) <= 0) res.pause();",
    why: "back-pressure pauses the socket one chunk later: one more chunk buffered, nothing a " +
      "caller reads differs",
  },
  {
    module: "clients/outbound.ts",
    what: "true → false",
    line: "}, { once: true, signal: listening.signal });",
    why: "an AbortSignal fires its abort event at most once, and the listener goes with " +
      "listening's abort when the answer ends",
  },
  {
    module: "clients/outbound.ts",
    what: "> → >=",
    line: "if (response.status < 300 || response.status > 399) return response;",
    why: "399 is no HTTP status: no server answers it (300 to 308 are read back, " +
      "tests/clients/outbound_rules_test.ts)",
  },
  {
    module: "clients/outbound.ts",
    what: "<= → <",
    line: "if (response.status >= 300 && response.status <= 399) {",
    why: "399 is no HTTP status: no server answers it",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "if ((controller.desiredSize ?? 1) <= 0) res.pause();",
    why: "a full queue (0) pauses one chunk later, as the listed <= → < does: nothing a caller " +
      "reads differs",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "const signal = exchange.signal ?? null;",
    why: "a signal is an AbortSignal (never falsy), undefined or null",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "signal: init.signal ?? null,",
    why: "a signal is an AbortSignal (never falsy), undefined or null",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: 'reject(signal?.reason ?? new DOMException("aborted", "AbortError"));',
    why: "an aborted signal's reason is the caller's (our callers abort with DOMExceptions: " +
      "timeouts, a closed page) or an AbortError; never falsy",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "const resolve = options.resolve ?? systemResolve;",
    why: "a resolver function is never falsy",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "const trusted = new Set(options.trustedOrigins ?? []);",
    why: "a list is never falsy",
  },
  {
    module: "domain/outbound_policy.ts",
    what: ">= → >",
    line: "if (zone >= 0) s = s.slice(0, zone);",
    why: "a zone at index 0 leaves no address before it: both forms are 'not an IP address'",
  },
  {
    module: "domain/outbound_policy.ts",
    what: "remove line",
    line: 'if (!s.includes(":")) return null;',
    why: "a shortcut: text without a colon fails the group count below and is null all the same",
  },
  {
    module: "domain/outbound_policy.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "ipv4Class's, classifyAddress's and endpointNameReason's callers test the result " +
      "with ?. or for truth (clients/outbound.ts, domain/provisioning/target.ts, schema_sources)",
  },
  {
    module: "domain/outbound_policy.ts",
    what: "remove line",
    line: "if (!isIpAddress(h)) return false;",
    why: "a shortcut: a non-address classifies as 'not an IP address', which is not local either",
  },
  {
    module: "domain/outbound_policy.ts",
    what: "?? → ||",
    line:
      'return reason === "a loopback address" || (reason?.startsWith("the unspecified") ?? false);',
    why: "startsWith gives a boolean or (no reason) undefined: ?? false and || false agree",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: '(c.req.query("ids") ?? "").split(",")',
    why: "query() gives a string or undefined; an empty string splits to the same nothing",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: "detail = (await response.json()).detail ?? detail;",
    why: "the backend's error bodies always carry a non-empty detail sentence",
  },
  {
    module: "routes/ui/live.ts",
    what: "true → false",
    line: 'outer.addEventListener("abort", () => abort.abort(), { once: true });',
    why: "an AbortSignal fires abort at most once, so the listener runs once either way",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: 'const sent = c.req.query("_csrf") ?? "";',
    why: "query() gives a string or undefined; an empty string stays an empty string",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: 'const rawIds = c.req.queries("endpoint_ids") ?? [];',
    why: "queries() gives an array or undefined, never another falsy value",
  },
  {
    module: "routes/ui/mod.ts",
    what: "?? → ||",
    line: "metrics: deps.metrics ?? noopMetrics,",
    why: "a metrics object is never falsy",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: 'send(event.event ?? "message", safeJson(event.data));',
    why: "the backend's stage streams name every frame's event (never an empty name)",
  },
  {
    module: "domain/console_sessions.ts",
    what: "false → true",
    line:
      'return crypto.subtle.importKey("raw", secret as BufferSource, "AES-GCM", false, [usage]);',
    why: "the key lives for one seal or open and is never exported: extractable is not read",
  },
  {
    module: "routes/ui/mod.ts",
    what: "?? → ||",
    line: "ssh: deps.ssh ?? sshConnector(),",
    why: "deps.ssh is a connector object or unset, never another falsy value",
  },
  {
    module: "domain/console_sessions.ts",
    what: "< → <=",
    line: "for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);",
    why: "the extra step reads past both strings: NaN ^ NaN is 0, diff is unchanged",
  },
  {
    module: "routes/ui/session.ts",
    what: "|| → &&",
    line: 'if (value === "" || value.length > 512 || /\\s/.test(value)) return null;',
    why: "a pre-check of a pasted token: the inventory's own token check refuses an empty, " +
      "over-long or two-word value with the same 401 and lockout count " +
      "(tests/routes/ui/session_test.ts 'a pasted token is taken whole')",
  },
  {
    module: "routes/ui/session.ts",
    what: "remove line",
    line: 'if (value === "" || value.length > 512 || /\\s/.test(value)) return null;',
    why: "a pre-check of a pasted token: the inventory's own token check refuses an empty, " +
      "over-long or two-word value with the same 401 and lockout count " +
      "(tests/routes/ui/session_test.ts 'a pasted token is taken whole')",
  },
  {
    module: "routes/ui/session.ts",
    what: "> → >=",
    line: 'if (value === "" || value.length > 512 || /\\s/.test(value)) return null;',
    why: "a pre-check of a pasted token: the inventory's own token check refuses an empty, " +
      "over-long or two-word value with the same 401 and lockout count " +
      "(tests/routes/ui/session_test.ts 'a pasted token is taken whole')",
  },
  {
    module: "routes/ui/session.ts",
    what: "return null → undefined",
    line: 'if (value === "" || value.length > 512 || /\\s/.test(value)) return null;',
    why: "a pre-check of a pasted token: the inventory's own token check refuses an empty, " +
      "over-long or two-word value with the same 401 and lockout count " +
      "(tests/routes/ui/session_test.ts 'a pasted token is taken whole')",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "=== → !==",
    line: 'const byId = ordering.length === 1 && ordering[0].field === "id";',
    why: "every ordering but a lone id gets an id tie-break (length 2), so the mutant only " +
      "sends ?ordering=id down the general path, which orders by id as well: same pages, slower",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "remove line",
    line: 'if (field === "id") return null;',
    why: "id is no entry of def.fields: the stored-field test below gives null for it as well",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "&& → ||",
    line: "while (excess > 0 && budget > 0) {",
    why: "with no excess the loop asks a page of min(excess, 500) <= 0 entries, which the store " +
      "answers [] without reading the KV (storage/kv/models.ts page): it breaks at once",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "?? → ||",
    line: "const subject = (c.after ?? c.before)!;",
    why: "after is a stored record (an object) or null, never another falsy value",
  },

  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line:
      '(typeof typed === "string" && (typed.length > core.store.maxIndexedLength || typed === ""))',
    why: "a value of exactly the longest indexed length then takes the general path instead of " +
      "its index entry: the same records, read slower",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "?? → ||",
    line: 'if (order.length === 0) order = parse(def.ordering ?? ["id"]);',
    why:
      "a model's ordering is a list (truthy, even when empty) or absent, never another falsy value",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "false → true",
    line: "return false; // never reached: each lookup query.ts accepts",
    why: "matchScalar's default: every lookup the parser accepts has its case above it",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "< → <=",
    line: "(text < filter ? -1 : 1);",
    why: "equal texts returned 0 two lines above: the tie-break only sees texts that differ",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "|| → &&",
    line: 'if ((f.type !== "fk" && f.type !== "m2m") || !f.model) return null;',
    why: "a field names a model exactly when it is an FK or m2m (models/: fk(), m2m fields; " +
      "generic FKs return above), so both sides of the `||` are true or false together",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: 'if (cf.type !== "object" && cf.type !== "multiobject") continue;',
    why: "only object fields hold a related type (any other is refused: `Integer fields may not " +
      "define an object type.`, custom_fields_test.ts), so the next line skips the rest",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "&& → ||",
    line: "if (ref.model && ref.nested) extraOf.set(ref.model, ref.nested);",
    why: "only the primary/OOB IP fields set `nested`, all to the same list, and no plan refers " +
      "to IP addresses otherwise: a model mapped to undefined gets its brief plan, as unmapped",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "&& → ||",
    line: 'if (typeof record.name === "string" && record.name) return record.name;',
    why: "every model whose name may be blank or absent has a display of its own (def.display " +
      "returns first), so a record reaching this line has a non-empty text name or none",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: "} else out[name] = { value: v, label: labels.get(v) ?? String(v) };",
    why: "every choice list names each value with a non-empty label",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "&& → ||",
    line: "def.customFields !== false && plan.steps.includes(CUSTOM_FIELDS_STEP)",
    why: "only whether the custom field definitions are read: a plan without the custom_fields " +
      "step never looks at them, so the rows are the same (one read more)",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "for (const id of input.add ?? []) if (!out.includes(id)) out.push(id);",
    why: "add_tags is parsed to a list of ids or left out, never another falsy value",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "> → >=",
    line: "const head = at > 0 ? k.slice(0, at) : k;",
    why: "head differs only for a key starting with `__` (at 0), and the join below needs " +
      "`at > 0` first: such a key is kept as given either way",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "false → true",
    line: "if (def.tags !== false && Array.isArray(r.tags)) {",
    why: "no model sets `tags: true`, and a tagless model's records hold no tag ids (`tags` sent " +
      "to one is ignored as an unknown field): the same records pass either test",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "true → false",
    line: "): Promise<{ ok: true; value: unknown } | { ok: false; error: string }> {",
    why: "a return type annotation: types vanish at run time",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "<= → <",
    line: '(typeof v !== "string" || (v.length <= core.store.maxIndexedLength && v !== ""))',
    why: "a value of exactly the longest indexed length is then found by a scan instead of its " +
      "index entry: the same records, read slower",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "|| → &&",
    line:
      'c.kind === "id" && (c.lookup === "gt" || c.lookup === "gte") && c.values.length === 1 &&',
    why: "only whether an id__gt/id__gte walk reads its page by key: without it the general " +
      "path gives the same page and count, reading the keys before the bound too",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "=== → !==",
    line: 'else if (f.type === "m2m" && Array.isArray(data[name])) {',
    why: "the bulk prefetch of referenced records: without it each m2m member is read when it " +
      "is resolved, with the same answer (found, or the same not-found error)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "remove line",
    line: "if (inputs.length === 0) return { ok: true, value: [] };",
    why: "a shortcut: an empty bulk create without it allocates no id, prepares and commits " +
      "nothing and answers the same 201 []",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "remove line",
    line: "if (!model || !core.registry.has(model)) return;",
    why: "the bulk prefetch's guard: an unknown model (a bogus assigned_object_type) is then " +
      "read from the store, which holds none of it; validation refuses the type either way",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "?? → ||",
    line: 'return pattern.ok && pattern.test(String(v ?? ""), meter);',
    why: "differs only for a value of 0 or false; NetBox offers __regex on text fields only, " +
      "whose values are strings (an empty one is falsy both ways)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "remove line",
    line: "if (keyset !== null) return keyset;",
    why: "the keyset page is a shortcut: the general path answers the same page and count, " +
      "reading more keys (bench/ measures the walk, no user sees a difference)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "remove line",
    line: "if (fast !== null) return fast;",
    why: "the index-only page is a shortcut: the general path answers the same page and count " +
      "from the same index, reading the records too",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: ": (f.models ?? []).includes(String(t));",
    why: "a generic FK's models are a list (truthy, even when empty) or absent here ('*' is " +
      "taken the line above), never another falsy value",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: "const known = byDepth[depth] ??= new Map();",
    why: "the slot holds a Map (always truthy) or nothing: ||= and ??= fill the same empty slots",
  },
  {
    module: "domain/sync/options.ts",
    what: "true → false",
    line: "): { ok: true; value: string } | { ok: false; message: string } {",
    why: "a return type annotation: types vanish at run time",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "?? → ||",
    line: "const results: (R | null)[] = at.map((_, pos) => resolved.get(pos) ?? null);",
    why: "the resolved values are records (objects) or absent, never another falsy value",
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "?? → ||",
    line: "const cidr = s.cidr ?? s.subnet;",
    why: "Proxmox sends an SDN subnet's cidr as a CIDR text or not at all, never empty",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: "const pveName = clusterNameOf(status ?? [], ctx.endpoint.name).slice(0, 100);",
    why: "status is the cluster status list or null, never another falsy value",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "&& → ||",
    line: '.filter((t) => typeof t.upid === "string" && t.upid);',
    why: "Proxmox lists every task with its UPID as a text: no task has a truthy UPID of " +
      "another type",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "|| → &&",
    line: 'const running = t.status === undefined || t.status === "running" || !t.endtime;',
    why: "Proxmox lists a running task without endtime (caught by !t.endtime either way) and a " +
      "finished one with both endtime and status",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "=== → !==",
    line: 'if (typeof failure?.itemIndex === "number") failure.itemIndex = at[failure.itemIndex];',
    why: "the inventory client sets itemIndex only with per-item errors of the same length, " +
      "which take the other branch; an aborted run reports no error frame (it ends cancelled)",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "&& → ||",
    line: "if (k !== null && !out.has(k)) out.set(k, o);",
    why: "every list indexBy reads is unique on its key in the inventory (the plugin records' " +
      "unique constraints; prefixes by the global table), so no key repeats and first or last " +
      "is one object; only a hand-made copy carrying the sync's tag, with global uniqueness " +
      "off, could repeat a prefix",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "> → >=",
    line: "if (Number.isFinite(total) && total > 0) {",
    why: "total is 0 only for a container without cores and without maxcpu in " +
      "/cluster/resources, which Proxmox always sends (cores has a minimum of 1)",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: 'notes: v.notes ?? "",',
    why: 'a backup\'s notes are a text or absent: an empty text gives "" either way',
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "|| → &&",
    line: "if (!ctx.inv.readOne || !ctx.inv.updateGuarded || ctx.options.dryRun) return edited;",
    why: "a dry run always writes through the PlanningInventory (routes/backend/sync.ts), which " +
      "offers no readOne in a dry run: the first test returns already",
  },
  {
    module: "domain/sync/owned.ts",
    what: "- → +",
    line: "for (const v of [...list].sort((a, b) => a.id - b.id)) {",
    why: "an always-positive comparator leaves the list as read (the sort is stable), and the " +
      "inventory lists a site's VLANs of one vid by id (NetBox orders by site, group, vid, pk)",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'node_name: t.node ?? "",',
    why: "t.node is always set above (the task's node, else the node whose list it came from)",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "maxmem: n?.maxmem ?? null,",
    why: "Proxmox sends a node's maxmem as a positive number, or none (an offline node)",
  },
  {
    module: "domain/sync/stages/vm_interfaces.ts",
    what: "?? → ||",
    line: "untagged_vlan: nic.vlan ? vlans.get(nic.vlan) ?? null : null,",
    why: "inventory ids are positive: a VLAN id is never another falsy value",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? → ||",
    line: 'const cores = Number(config.cores ?? (type === "qemu" ? 1 : fallback ?? 0));',
    why: "Proxmox refuses cores below 1 (QEMU and LXC): cores is absent or positive",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "for (const nic of lists[i] ?? []) {",
    why: "a node's interface list is an array or null (the read failed), never another falsy value",
  },
  {
    module: "domain/sync/plan.ts",
    what: "&& → ||",
    line: "if (!dryRun && readOne && updateGuarded) {",
    why: "the inventory client offers both or neither; in a dry run the edit re-check returns " +
      "before using them (reconcile.ts editedSinceRead tests dryRun)",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "&& → ||",
    line: 'if ("value" in value && "label" in value && Object.keys(value).length === 2) {',
    why: "only a two-key object without value/label reads differently, and the sync compares " +
      "such objects only inside raw_config, whose facts its own fields carry and compare",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "virtual_machine: v.vmid !== undefined ? anchors.get(v.vmid) ?? null : null,",
    why: "inventory ids are positive: a VM id is never another falsy value",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'jobnum: j.jobnum ?? Number(j.id.split("-")[1]),',
    why: "a job number 0 is the 0 after the dash of its id (`100-0`) either way",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "pid: t.pid ?? null,",
    why: "a UPID's process id is never 0",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "this.#made.get(path)?.values() ?? []",
    why: "an iterator or undefined: never another falsy value",
  },
  {
    module: "domain/sync/guests.ts",
    what: "=== → !==",
    line: "if (done % 250 === 0 || done === resources.length) {",
    why: "which config reads report progress: the runner sends at most one progress frame per " +
      "250 ms either way, and the last read (done = total) is reported in both",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "|| → &&",
    line: "return Number(g.template) === 1 || Number(g.config.template) === 1;",
    why: "Proxmox's /cluster/resources reads its template flag from the same config: both say 1 " +
      "or neither",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "< → <=",
    line: "for (let i = 0; i === 0 || i < gone.length; i += SLICE) {",
    why: "the one extra slice starts at the end of the list: it is empty and writes nothing",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "< → <=",
    line: "for (let i = 0; i < watched.length; i += RECHECK_IDS) {",
    why: "the one extra re-check reads with an empty id list and marks nothing edited (a " +
      "wasted read when the updates fill whole batches of 100, nothing written differs)",
  },
  {
    module: "domain/sync/owned.ts",
    what: "remove line",
    line: "await syncTags(ctx);",
    why: "both callers (sdn, network-interfaces) have made sure of the sync's tags first",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "+ 1 → - 1",
    line: "const size = JSON.stringify(items[i]).length + 1;",
    why: "a chunk's byte budget (512 KiB) is half the inventory's 1 MiB cap: counting two bytes " +
      "less per item moves where a chunk ends, not what is written",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "&& → ||",
    line: 'if (error && typeof error === "object") {',
    why: "the ports throw Error objects only: an error is always a truthy object",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "vrf: o.vrf ?? null",
    why: "a VRF is an object or an id (positive) or absent, never another falsy value",
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: "path: cfg.path ?? null,",
    why: "Proxmox sends a storage's path as a non-empty text or not at all",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? → ||",
    line: "props.hwaddr ?? props.macaddr ?? null",
    why: "a MAC in a property string is a non-empty text or absent",
  },
  {
    module: "domain/sync/runner.ts",
    what: "|| → &&",
    line: "if (cancelled || signal.aborted) {",
    why: "reached only by an abort after a stage's last inventory call (every call throws on " +
      "abort): the stage's work is done and is reported done; the next stage's check ends the " +
      "run cancelled (after the last stage nothing was left undone)",
  },
  {
    module: "domain/sync/plan.ts",
    what: "remove line",
    line: "if (key === null) return {};",
    why: "every body the sync writes to addresses and prefixes has the value as text and no " +
      "VRF: its key is never null",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "> → >=",
    line: "if (Number.isFinite(mem) && mem > 0) return Math.round(mem);",
    why: "Proxmox refuses a memory below 16 MiB: a config's memory is never 0",
  },
  {
    module: "domain/sync/guests.ts",
    what: "- → +",
    line: "const all = [...new Set(ids)].sort((a, b) => a - b);",
    why: "the order of ids across listByIds batches: each id is still asked for once, in " +
      "batches of at most IDS_PER_REQUEST, and every caller indexes the answer by id or sorts " +
      "it by id first (owned.ts childrenOf/assignedTo, reconcile.ts indexBy)",
  },
  {
    module: "domain/sync/options.ts",
    what: "?? → ||",
    line: "for (const [k, v] of Object.entries(p.overwrite ?? {})) {",
    why: "the fallback of an absent object: an object is never falsy",
  },
  {
    module: "domain/sync/options.ts",
    what: "?? → ||",
    line: "for (const [k, v] of Object.entries(p.stages ?? {})) {",
    why: "the fallback of an absent object: an object is never falsy",
  },
  {
    module: "domain/sync/options.ts",
    what: "?? → ||",
    line: "for (const [key, value] of Object.entries(policy ?? {})) {",
    why: "the fallback of an absent policy: a policy object is never falsy",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'storage: typeof j.storage === "string" ? storages.get(j.storage)?.id ?? null : null,',
    why: "an inventory id is a positive integer, never 0",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "(statusByName.get(n)?.online ??",
    why: "a node that /cluster/status reports offline (online 0) is offline in /nodes as well " +
      "(both come from the cluster's membership): the fallback answers the same",
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "=== → !==",
    line: '(typeof p.scope === "object" && (p.scope as { id?: number } | null)?.id === base.site)',
    why: "the nested scope is a fallback for a prefix rendered without scope_id; NetBox 4.2+ " +
      "and this inventory render scope_id on every prefix, which the line before checks",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "?? → ||",
    line: "parent: s.parent ?? null,",
    why: "Proxmox lists a snapshot's parent as a snapshot name (never empty) or not at all",
  },
  {
    module: "domain/sync/guests.ts",
    what: "&& → ||",
    line: "if (firstId.has(vmid) && firstId.get(vmid)! < s.id) continue;",
    why: "the inventory holds one sync-state per endpoint and vmid (a unique constraint, as the " +
      "plugin's model has): no duplicate ever reaches this line",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'const jobs = (await hvGet<BackupJob[]>(ctx, "/cluster/backup") ?? [])',
    why: "the fallback of an absent list: a list is never falsy",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: "rate: j.rate ?? null,",
    why: "Proxmox refuses a replication rate below 1 (MB/s): a rate is absent or at least 1",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'source: j.source ?? "",',
    why: "the fallback is the empty text itself",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'const mode = String(j["pbs-change-detection-mode"] ?? "default");',
    why: "Proxmox sends the mode as one of its names or not at all, never an empty text",
  },
  {
    module: "domain/sync/plan.ts",
    what: "return null → undefined",
    line: "if (done === null) return null;",
    why: "its callers treat both alike: update() answers `done ?? []`, the guarded write " +
      "returns its own outcome",
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "|| → &&",
    line: "Number(p.scope_id) === base.site ||",
    why: "the inventory renders a prefix's nested scope with the same id as scope_id: both " +
      "tests agree on every prefix",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "< → <=",
    line: "if (at < 0) {",
    why: "a Proxmox property string never has an empty key (`=value`)",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'username: t.user ?? "",',
    why: "a task's user is a text or absent: the fallback is the empty text itself",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "< → <=",
    line: "if (start < items.length) out.push({ start, items: items.slice(start) });",
    why: "chunks are made only of a non-empty list (reconcile writes nothing when it has none), " +
      "and start is always the index of one of its items: never equal to its length",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const tracer = options.tracer ?? noopTracer;",
    why: "the default of an absent a tracer: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const dryRun = (options.syncOptions ?? DEFAULT_SYNC_OPTIONS).dryRun;",
    why: "the default of an absent options: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const metrics = options.metrics ?? noopMetrics;",
    why: "the default of an absent a metrics port: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const now = options.now ?? Date.now;",
    why: "the default of an absent a clock function: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const syncOptions = options.syncOptions ?? DEFAULT_SYNC_OPTIONS;",
    why: "the default of an absent options: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const endpointOptions = options.syncOptionsFor?.(endpoint) ?? syncOptions;",
    why: "the default of an absent options: an object or function is never falsy",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "const failure = (error ?? {}) as CallFailure & Error;",
    why: "stages and ports throw Error objects, never a falsy value",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "upstream_status: failure.status ?? null,",
    why: "an HTTP status is never 0",
  },
  {
    module: "domain/sync/runner.ts",
    what: "?? → ||",
    line: "concurrency: options.concurrency ?? 8,",
    why: "no caller passes a concurrency of 0 (it would stall every mapLimit); the routes and " +
      "jobs pass none",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: 'const s = typeof value === "string" ? value : JSON.stringify(value) ?? "";',
    why: "JSON.stringify gives a non-empty text or undefined, never another falsy value",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: 'const parts = [String(frame.error ?? "error")];',
    why: "the backend's error frames always name the error (domain/sync/runner.ts), never with " +
      "an empty text",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "|| → &&",
    line: "if (!copies.ok || !copies.copies) {",
    why: "the backend link sets copies exactly when the answer is ok " +
      "(routes/plugin/job_wiring.ts)",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "remove line",
    line: "if (problem === null) continue;",
    why: "a call ends well only after its complete frame, and the backend frames every stage it " +
      "is asked for, even one a run option leaves out (domain/sync/runner.ts): nothing is left",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "return null → undefined",
    line: "return null;",
    mutant: "return undefined as never;",
    why: "the same: a call that ends well has no stage left, so its answer is only compared " +
      "with null before the empty remainder ends the step",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "await this.renew(problem.status ?? null);",
    why: "an HTTP status is never 0",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "const n = (attempts.get(current.type) ?? 0) + 1;",
    why: "a stored attempt count is at least 1",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "const data = (frame.data ?? {}) as Record<string, unknown>;",
    why: "a frame's data is an object or absent (the links parse JSON objects)",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: 'const step = String(data.step ?? "");',
    why: "a step is a stage name or absent; an empty, 0 or false step matches no stage either way",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "const errors = stageErrors.get(step) ?? [];",
    why: "the map holds arrays (truthy) or nothing",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "const list = stageErrors.get(step) ?? [];",
    why: "the map holds arrays (truthy) or nothing",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: 'const cause = errors[0] ?? "the backend counted failures";',
    why: "an error line is describeErrorFrame's text, never empty",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "requiredFailure ??= {",
    why: "a failure is an object (truthy) or null",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "< → <=",
    line: "if (list.length < 5) list.push(line);",
    why: "only the first error line of a stage is read (its cause): the cap bounds memory only",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "for (const id of spec.endpoint_ids ?? []) {",
    why: "endpoint ids are a list or null",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "const b = (answer.body ?? {}) as Record<string, unknown>;",
    why: "a reconcile answer's body is a JSON object or absent",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "?? → ||",
    line: "failure ??= result.failure;",
    why: "a failure is an object (truthy) or null",
  },
  {
    module: "clients/outbound.ts",
    what: "< → <=",
    line: "for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {",
    why: "node's rawHeaders is a flat list of name, value pairs: its length is always even",
  },
  {
    module: "clients/outbound.ts",
    what: "?? → ||",
    line: "const trustedFetch = options.trustedFetch ?? globalThis.fetch;",
    why: "a fetch function is never falsy",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line: 'if (s && typeof s === "object") return String((s as { value?: unknown }).value);',
    why: "the service reads stored job records, whose status is the choice's value as text; the " +
      "{value, label} form is only how the API renders it",
  },
  {
    module: "domain/console_sessions.ts",
    what: "true → false",
    line: "omitPadding: true,",
    why: "24 random bytes are 32 base64url characters with no padding either way",
  },
  {
    module: "domain/console_sessions.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "open()'s callers test the session for truth only",
  },
  {
    module: "domain/jobs/service.ts",
    what: "+ → -",
    line: "await new Promise((resolve) => setTimeout(resolve, 10 * i + Math.random() * 20));",
    why: "the jitter of a pause between busy retries: a shorter or zero pause retries the same",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "this.leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;",
    why: "a lease of 0 ms is never configured (the routes pass DEFAULT_LEASE_MS or a test's " +
      "positive value)",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "this.retention = deps.retention ?? DEFAULT_RETENTION;",
    why: "a retention of 0 is never configured: SERVICE_JOB_RETENTION is 1 to 100000 " +
      "(config.ts refuses 0 at start), and the routes pass that or nothing",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "this.partPollMs = deps.partPollMs ?? DEFAULT_PART_POLL_MS;",
    why: "a part poll of 0 ms is never configured: the app passes none (routes/inventory/mod.ts " +
      "leaves the option unset) and tests pass positive values",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "if (status) counts[status] = (counts[status] ?? 0) + 1;",
    why: "a count is absent or a positive number: || 0 and ?? 0 agree",
  },
  {
    module: "routes/ui/mod.ts",
    what: "?? → ||",
    line: "idleTimeoutMs: deps.terminalIdleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,",
    why: "a test seam (deps.terminalIdleTimeoutMs) no deployment sets; tests pass a positive value",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: '(c.req.header("accept") ?? "").includes("application/json");',
    why: "an empty Accept header includes nothing either way",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: "sseStream(ctx.deps.metrics ?? noopMetrics, run, outer);",
    why: "a metrics object is never falsy",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: '!(c.req.header("accept") ?? "").includes("text/event-stream") &&',
    why: "an empty Accept header includes nothing either way",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line: "await store.clearProgress(jobId);",
    why: "only a running job has live progress (set while it runs, cleared when it settles, and " +
      "expiring by itself within the hour) and a running job is never cancelled: cancel() has " +
      "none to clear (the same line in #settle is not: tests/domain/jobs/service_test.ts reads " +
      "the progress back after a run)",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "const tokenId = spec.token_id ??",
    why: "a token id is a positive integer, never 0",
  },
  {
    module: "domain/jobs/runner.ts",
    what: "< → <=",
    line: "for (let i = 0; i < tries; i++) {",
    why: "the last try throws (i === tries - 1) before the loop could run once more",
  },
  {
    module: "routes/ui/login.tsx",
    what: "?? → ||",
    line: 'info: REASONS[c.req.query("reason") ?? ""],',
    why: "query() gives a string or undefined; an empty reason names no notice either way",
  },
  {
    module: "routes/ui/login.tsx",
    what: "?? → ||",
    line: 'const expected = getCookie(c, LOGIN_CSRF_COOKIE) ?? "";',
    why: "getCookie gives a string or undefined; an empty cookie is refused the same way",
  },
  {
    module: "domain/console_sessions.ts",
    what: "?? → ||",
    line: 'const match = COOKIE_VALUE.exec(cookie ?? "");',
    why: "the cookie is a string or undefined; an empty one matches nothing either way",
  },
  {
    module: "routes/ui/live.ts",
    what: "true → false",
    line: 'abort.signal.addEventListener("abort", closed, { once: true });',
    why: "an AbortSignal fires abort at most once, so the listener runs once either way",
  },
  {
    module: "routes/ui/live.ts",
    what: "&& → ||",
    line: "const gone = response.status === 404 &&",
    why: "the job read answers 404 only when the stream's own read did (same job, same " +
      "core.view_job check): a stream refused otherwise (403, 429) finds the job read refused " +
      "or present, so the same reason is shown (tests/routes/ui/pages_test.ts, the 403 case)",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: "errors.push(...(body.errors ?? [{ detail: body.message }]));",
    why:
      "the backend's complete frame (routes/backend/sync.ts) carries errors as a list or not at all, " +
      "never another falsy value; an empty list is truthy either way",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "return { ok: true, job: (await engine.get(JOB_MODEL, job.id)) ?? job };",
    why: "a stored record is an object, never falsy",
  },
  {
    module: "domain/jobs/service.ts",
    what: "|| → &&",
    line: "if (!job || status === null || FINISHED.has(status)) return;",
    mutant: "if (!job && status === null ||",
    why:
      "a missing job has a null status, so `!job && status === null` holds exactly when `!job` does; a stored job always has a status",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'const due = Date.parse(String(job.scheduled ?? "")) || now;',
    why: 'null and "" both parse to NaN',
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "const already = ((job.log_entries as { message: string }[] | undefined) ?? [])",
    why: "a log is an array, never falsy",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: "const tracer = this.deps.tracer ?? noopTracer;",
    why: "a tracer is an object, never falsy",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line: "this.#running.delete(jobId);",
    why:
      "a finished job's id is never looked up again: a redelivery returns on its final status first, reap() reads running jobs only, and its parts are cleared when it settles; the set only keeps one number per finished job of this process",
  },
  {
    module: "domain/jobs/service.ts",
    what: "true → false",
    line: 'jobSignal?.addEventListener("abort", onJobAbort, { once: true });',
    why: "an AbortSignal fires its abort once, and the listener is removed when the part ends",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'status: result.failure?.outcome ?? "completed",',
    why: "an outcome is failed or errored, never an empty text",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'error: result.failure?.error ?? "",',
    why: 'an empty error is "" either way',
  },
  {
    module: "domain/jobs/service.ts",
    what: "> → >=",
    line: "for (let i = 0; i < data.length && engine.recordSize(data) > MAX_DATA_BYTES; i++) {",
    mutant: "recordSize(data) >= MAX_DATA_BYTES",
    why:
      "at exactly 24,000 bytes one old record keeps or loses its error text: the budget sits far below the KV's 64 KiB either way",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line:
      'if (FINISHED.has(statusOf(await engine.get(JOB_MODEL, jobId)) ?? "completed")) return false;',
    why: "a status is never an empty text",
  },
  {
    module: "domain/jobs/service.ts",
    what: "remove line",
    line:
      'if (FINISHED.has(statusOf(await engine.get(JOB_MODEL, jobId)) ?? "completed")) return false;',
    why:
      'the settlement claim (store.claimSettlement, kept 7 days) refuses a second settler on its own, and nothing settles a job finished longer ago (a redelivery returns on the final status, reap() reads running jobs): tests/domain/jobs/service_test.ts "already settled by another" kills this line\'s `return true`',
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'const began = startedAt ?? (Date.parse(String(job.started ?? "")) || this.deps.now());',
    mutant: "startedAt ||",
    why: "a start time is epoch ms, never 0",
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'const began = startedAt ?? (Date.parse(String(job.started ?? "")) || this.deps.now());',
    mutant: 'job.started || ""',
    why: 'null and "" both parse to NaN',
  },
  {
    module: "domain/jobs/service.ts",
    what: "?? → ||",
    line: 'spec?.kind ?? "sync",',
    why: "a kind is sync or repair, never an empty text",
  },
  {
    module: "domain/jobs/service.ts",
    what: "<= → <",
    line: "if (excess <= 0) return;",
    why: "with no excess, slice(0, 0) prunes nothing and forgets nothing",
  },
  {
    module: "domain/jobs/service.ts",
    what: "- → +",
    line: "for (const job of waiting.sort((a, b) => a.id - b.id)) {",
    why:
      "engine.find returns records in id order (their keys' order) and V8 keeps that order under a comparator that is always positive: the sort only guards the order",
  },
  {
    module: "routes/ui/live.ts",
    what: "?? → ||",
    line: 'const copyOf = (p: number) => list.find((e) => String(e.name ?? "").endsWith(',
    why:
      "a backend copy's name is a string of 1 to 200 characters (routes/backend/endpoints.ts), " +
      "never another falsy value",
  },
  {
    module: "domain/netbox/engine/custom_fields.ts",
    what: "remove line",
    line: "if (!core.registry.has(CUSTOM_FIELD_MODEL)) return [];",
    why: "the inventory registers extras.customfield in every app (routes/inventory/mod.ts); " +
      "without the guard an engine lacking it reads an index of a model it never wrote: none",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: "steps.push((r, out) => out[name] = r[name] ?? null);",
    why: "created and last_updated are ISO date-time texts written on every save, never empty",
  },
  {
    module: "domain/netbox/engine/delete.ts",
    what: "?? → ||",
    line: "const r = (await core.store.get(model, id))?.record ?? null;",
    why: "a stored record is an object or absent, never another falsy value",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "?? → ||",
    line: "for (const u of def.unique ?? []) {",
    why: "a model's unique list is an array or absent, never another falsy value",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "false → true",
    line: "if (def.tags !== false) {",
    mutant: "def.tags !== true",
    why: "a tagless model's draft then carries tags: [], which nothing reads: its tags are " +
      "never parsed from input, indexed, rendered or logged (each checks def.tags !== false)",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: "if (found?.id === cluster) site = refId(found.scope) ?? refId(found.scope_id);",
    why: "refId answers an id or null, and no inventory object has the id 0",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'task_id: t.id ?? "",',
    why: "Proxmox lists a task's id as a string; the only falsy one is the empty string itself",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: ".then((done) => done ?? []);",
    why: "done is the list of written objects or null, never another falsy value",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "node_id: s?.nodeid ?? null,",
    why: "Proxmox numbers cluster nodes from 1: a node id is never 0",
  },
  {
    module: "domain/sync/vm_policy.ts",
    what: "remove line",
    line: "if (!(error instanceof WorkBudgetExceeded)) throw error;",
    why: "the only error a compiled rule's test throws is WorkBudgetExceeded (a pattern that " +
      "cannot compile is never tested: c.name!.ok is checked first)",
  },
  {
    module: "domain/sync/guests.ts",
    what: "< → <=",
    line: "for (let i = 0; i < texts.length; i += size) {",
    why: "the one extra slice is empty, and no stage reads or writes for an empty slice " +
      "(tests/domain/sync/slices_test.ts: one full slice, and no guests)",
  },
  // domain/sync: `?? → ||` where no value the left side can take tells them apart (listed
  // before the draw issue22g, each line read: arrays and objects, inventory ids, "" fallbacks).
  {
    module: "domain/sync/address_space.ts",
    what: "?? → ||",
    line: "const parent = (assigned.virtual_machine ?? assigned.device) as",
    why:
      "a rendered reference is an object or null: the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/address_space.ts",
    what: "?? → ||",
    line: "if (!assigned) return String(o.display ?? o.address ?? o.prefix);",
    why:
      "NetBox renders `display` of an address or prefix as its non-empty text; the holder's name is only shown in a message",
  },
  {
    module: "domain/sync/address_space.ts",
    what: "?? → ||",
    line: "return [parent?.display ?? parent?.name, assigned.display ?? assigned.name]",
    why:
      "NetBox's `display` of a VM, device or interface is never empty (it is the object's name); empty parts are filtered out after",
  },
  {
    module: "domain/sync/address_space.ts",
    what: "?? → ||",
    line: "return written ?? free;",
    why: "`written` is the object the inventory answered (never falsy) or undefined",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: 'color: m.color ?? "9e9e9e",',
    why: "every caller passes a non-empty hex colour or none",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: 'description: m.description ?? "",',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: ".find((o) => o.slug === slug) ?? null,",
    why: "find() answers an object or undefined",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: ".sort((a, b) => a.id - b.id)[0] ?? null,",
    why: "an inventory object or undefined",
  },
  {
    module: "domain/sync/base.ts",
    what: "?? → ||",
    line: "status: status ?? [],",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/guests.ts",
    what: "?? → ||",
    line: ") ?? [])",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/guests.ts",
    what: "?? → ||",
    line: "config: config ?? {},",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "return this.inner.isOwnWrite?.(path, id, lastUpdated) ?? false;",
    why: "a boolean or undefined: false either way",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "return this.inner.apiVersion?.() ?? null;",
    why: "an empty version and null both mean an unknown version (versionAtLeast answers false)",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "...(before[i] ?? {})",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "const old = (before[i] ?? {}) as Record<string, unknown>;",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/plan.ts",
    what: "?? → ||",
    line: "const old = this.#known.get(`${path}#${id}`) ?? { id };",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/ports.ts",
    what: "?? → ||",
    line: 'const m = /^(\\d+)\\.(\\d+)/.exec(version ?? "");',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? → ||",
    line: 'const volume = props[""] ?? props.volume ?? "";',
    mutant: 'props.volume || ""',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? → ||",
    line: 'const sockets = type === "qemu" ? Number(config.sockets ?? 1) : 1;',
    why: "Proxmox refuses sockets 0 (its minimum is 1); an empty value is no config Proxmox keeps",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "?? → ||",
    line: "if (!versionAtLeast(ctx.inv.apiVersion?.() ?? null, 4, 6)) return patch;",
    why: "an empty version and null both mean an unknown version (versionAtLeast answers false)",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "?? → ||",
    line: "good.forEach((pos, k) => results[pos] = written[k] ?? null);",
    why: "an inventory object or undefined",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "?? → ||",
    line: "objects.set(u.desired.key, object ?? u.current);",
    why: "an inventory object or undefined",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "?? → ||",
    line: "objects.set(bulk[i].desired.key, object ?? options.existing.get(bulk[i].desired.key)!);",
    why: "an inventory object or undefined",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'schedule: String(j.schedule ?? j.starttime ?? ""),',
    why:
      "Proxmox requires a non-empty schedule (or the old starttime) for a backup job; the last fallback is the empty string",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'node: typeof j.node === "string" ? nodes.get(j.node)?.id ?? null : null,',
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'selection: String(j.vmid ?? "").split(",")',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'comment: String(j.comment ?? ""),',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'notes_template: String(j["notes-template"] ?? ""),',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: "fleecing_storage: fleecingStorage ? storages.get(fleecingStorage)?.id ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/backup_routines.ts",
    what: "?? → ||",
    line: 'repeat_missed: Number(j["repeat-missed"] ?? 0) === 1,',
    why: "Number of an empty string is 0, the fallback",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: 'if (!(s.content ?? "").split(",").includes("backup") || s.active === 0) continue;',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "for (const v of lists[i] ?? []) {",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "storage: storages.get(r.storage)?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "node: nodes.get(r.node)?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "vmid: v.vmid ?? null,",
    why: "a vmid is 100 or more, never 0",
  },
  {
    module: "domain/sync/stages/backups.ts",
    what: "?? → ||",
    line: "format: v.format ?? null,",
    why: "Proxmox names every backup volume's format (never an empty one)",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: 'const nodeList = await hvGet<NodeEntry[]>(ctx, "/nodes") ?? [];',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "version: version?.version ?? null,",
    why: "Proxmox's /version always names a non-empty version",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "ip_address: s?.ip ?? null,",
    why: "/cluster/status gives a node's address or none, never an empty one",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "device: devices.objects.get(name)?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/devices.ts",
    what: "?? → ||",
    line: "maxcpu: n?.maxcpu ?? null,",
    why: "a node has at least one CPU: never 0",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: "for (const a of answer?.result ?? []) {",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: 'for (const ip of a["ip-addresses"] ?? []) {',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: "if (isV6(address)) first.v6 ??= key;",
    why: "the keys are non-empty (`<vmid>:<address>`): `||=` and `??=` set them alike",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: "else first.v4 ??= key;",
    why: "the keys are non-empty (`<vmid>:<address>`): `||=` and `??=` set them alike",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: "first.v4 ? ips.objects.get(first.v4)?.id ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/ip_addresses.ts",
    what: "?? → ||",
    line: "first.v6 ? ips.objects.get(first.v6)?.id ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: ": Number(/\\.(\\d+)$/.exec(nic.iface)?.[1] ?? NaN);",
    why: "the match's group is one or more digits, never empty",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "for (const nic of list ?? []) {",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "for (const nic of [...(lists[i] ?? [])]",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "untagged_vlan: nodeVlan(nic) !== null ? vlans.get(nodeVlan(nic)!) ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "const chosen = candidates.find((c) => c.host === known) ??",
    why: "find() answers an object or undefined",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "candidates.find((c) => c.gateway) ?? candidates[0];",
    why: "find() answers an object or undefined",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "?? → ||",
    line: "return chosen ? ips.objects.get(chosen.key)?.id ?? null : null;",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'const jobs = (await hvGet<ReplicationJob[]>(ctx, "/cluster/replication") ?? [])',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'const guest = j.guest ?? Number(j.id.split("-")[0]);',
    why: "a guest's vmid is 100 or more, never 0",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: "virtual_machine: anchors.get(guest) ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: "hypervisor_node: j.source ? nodes.get(j.source)?.id ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'target: j.target ?? "",',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'schedule: j.schedule ?? "*/15",',
    why:
      "Proxmox drops an empty schedule from a job (its default */15 applies): never an empty string",
  },
  {
    module: "domain/sync/stages/replications.ts",
    what: "?? → ||",
    line: 'comment: j.comment ?? "",',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "?? → ||",
    line: 'const vnets = (await hvGet<Vnet[]>(ctx, "/cluster/sdn/vnets") ?? [])',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "?? → ||",
    line: "for (const s of subnetLists[i] ?? []) {",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/sdn.ts",
    what: "?? → ||",
    line: "vlan: Number.isInteger(vid) ? vlans.get(vid) ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "?? → ||",
    line: "for (const s of lists[i] ?? []) {",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "?? → ||",
    line: "virtual_machine: anchors.get(g.vmid) ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "?? → ||",
    line: "node: nodes.get(g.node)?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "?? → ||",
    line: 'description: s.description ?? "",',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: 'const nodes = (await hvGet<NodeEntry[]>(ctx, "/nodes") ?? [])',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: "return new Map(nodes.map((n, i) => [n, lists[i] ?? []]));",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: 'const configs = await hvGet<StorageConfig[]>(ctx, "/storage") ?? [];',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/storage.ts",
    what: "?? → ||",
    line: 'content: (cfg.content ?? "").split(",")',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "}) ?? [];",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'const names = (await hvGet<{ node: string; status?: string }[]>(ctx, "/nodes") ?? [])',
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "const tasks = lists.flatMap((l, i) => (l ?? []).map(",
    mutant: "(l || [])",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "const tasks = lists.flatMap((l, i) => (l ?? []).map(",
    mutant: "node: t.node || names[i]",
    why: "every task names its node or none, never an empty name",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'const vmid = /^\\d+$/.test(t.id ?? "") ? Number(t.id) : null;',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "node: nodes.get(t.node!)?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "virtual_machine: vmid !== null ? anchors.get(vmid) ?? null : null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'task_type: t.type ?? "",',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: 'status: running ? "running" : (t.status ?? ""),',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "exitstatus: running ? null : (t.status ?? null),",
    why: "a finished task's status is never empty (Proxmox writes OK or the error)",
  },
  {
    module: "domain/sync/stages/task_history.ts",
    what: "?? → ||",
    line: "pstart: t.pstart ?? null,",
    why: "a process start time is never 0",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: 'return (String(g.config.name ?? g.config.hostname ?? g.name ?? "").trim() ||',
    why:
      "Proxmox refuses an empty guest name or hostname (a DNS name), and an empty result falls back to <type>-<vmid> just after",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "const settings = await ctx.inv.read?.(PATHS.pluginSettings, ctx.signal) ?? null;",
    why:
      "the left side is an array or an object when present and undefined/null otherwise: `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "const version = ctx.inv.apiVersion?.() ?? null;",
    why: "an empty version and null both mean an unknown version (versionAtLeast answers false)",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "const hasDisks = Number(existing?.virtual_disk_count ?? 0) > 0;",
    why: "a count of 0 and the fallback 0 are the same",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "device: devices.get(g.node) ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "virtual_machine: written.get(String(g.vmid))?.id ?? null,",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "const vm = objects.get(owned.get(vmid) ?? NaN);",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/virtual_machines.ts",
    what: "?? → ||",
    line: "const state = byId.get(states.ids.get(vmid) ?? NaN);",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/stages/vm_interfaces.ts",
    what: "?? → ||",
    line: 'description: [nic.guestName ?? "", nic.bridge ? `bridge ${nic.bridge}` : ""]',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/stages/vm_interfaces.ts",
    what: "?? → ||",
    line:
      "const mac = nic.mac ? savedMacs.objects.get(`${iface.id}:${nic.mac}`)?.id ?? null : null;",
    why:
      "an inventory id (a positive integer) or undefined: never 0, so `||` and `??` pick the same side",
  },
  {
    module: "domain/sync/vm_policy.ts",
    what: "?? → ||",
    line: 'const name = names.get(g.vmid) ?? "";',
    why: 'the fallback is the empty string: an empty string on the left gives "" either way',
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? \u2192 ||",
    line: 'const volume = props[""] ?? props.volume ?? "";',
    mutant: 'props[""] || props.volume',
    why:
      "an empty first value with a `volume=` key beside it is no disk string Proxmox writes (a disk's volume comes first, or as `volume=` alone)",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "?? \u2192 ||",
    line: "bridge: props.bridge ?? null,",
    why:
      "the bridge is only tested for truth (vm_interfaces.ts writes `bridge <name>` when there is one): an empty one and null read alike",
  },
  {
    module: "domain/sync/run_lock.ts",
    what: "remove line",
    line: "if (ended) return;",
    why:
      "a second end() releases by run id (storage/kv/sync_runs.ts deletes only holds of that run), clears a cleared timer and resolves a resolved promise: nothing another run holds is touched",
  },
  {
    module: "domain/sync/run_lock.ts",
    what: "true → false",
    line: "ended = true;",
    why:
      "the flag only makes a second end() return early; without it that second end() does what the entry above says is harmless (a release by run id, a cleared timer, a resolved promise)",
  },
  // The engine's issue22g draw (README, "Tests, benchmarks and mutation testing").
  {
    module: "domain/netbox/engine/render.ts",
    what: "&& → ||",
    line: '(id): id is number => typeof id === "number" && !known.has(id),',
    why: "object custom fields hold ids only (validated on write), so the mutant only reads " +
      "records already loaded once more, and stores the same records under the same ids",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "false → true",
    line: "return false; // never reached: the caller passes TIMESTAMP_LOOKUPS only",
    why: "matchTimestamp's default: its one caller passes only exact, n, gt, gte, lt, lte " +
      "(TIMESTAMP_LOOKUPS, `in` mapped to exact), so the default is never reached",
  },
  {
    module: "domain/sync/reconcile.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "rewriteEdited's results (an edited object not written) are read only as " +
      "`object ?? u.current`: null and undefined alike; refId's own `return null;` is killed " +
      "by tests/domain/sync/reconcile_test.ts (refId … null for anything else)",
  },
  {
    module: "domain/sync/proxmox.ts",
    what: "return null → undefined",
    line: 'if (!value || value === "dhcp" || value === "auto" || value === "manual") return null;',
    why: "staticAddress's one caller keeps an address only when it is truthy (`if (a)`)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "remove line",
    line: "if (inputs.length < 2) return;",
    why: "the single-item shortcut of both bulk prefetches: one item's references are then read " +
      "in one batch instead of one by one (the same records), and prefetchIndexed skips a " +
      "value set of fewer than two anyway",
  },
  // Before the issue22h draw: `?? → ||` where the left side is never 0, false or "" (an
  // object, an array, a record, a non-empty literal); tests/routes/inventory/falsy_values_test.ts
  // holds the places where it can be (custom-field weights and values, change-log data).
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "?? → ||",
    line: "if (def.customFields !== false) out.custom_fields = record.custom_fields ?? {};",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "?? → ||",
    line: "out.tags = ((record.tags as number[] | undefined) ?? [])",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "?? → ||",
    line: ".map((id) => tagNames.get(id) ?? String(id))",
    why: "a tag's name is required and never blank (refused on write): `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "?? → ||",
    line: "for (const id of (r?.tags as number[] | undefined) ?? []) tagIds.add(id);",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/core.ts",
    what: "?? → ||",
    line: 'return u.name ?? u.fields.join("+");',
    why: "a constraint's name is a non-empty literal of the model definitions, or absent",
  },
  {
    module: "domain/netbox/engine/delete.ts",
    what: "?? → ||",
    line: 'const action = rel.def.onDelete ?? "protect";',
    why: "onDelete is a non-empty literal of the model definitions, or absent",
  },
  {
    module: "domain/netbox/engine/delete.ts",
    what: "?? → ||",
    line: "const current = (await core.store.get(n.model, n.id))?.record ?? null;",
    why: "a stored record (an object) or nothing: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/delete.ts",
    what: "?? → ||",
    line: "? ((current[n.field] as number[] | undefined) ?? []).filter((x) => x !== n.remove)",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/delete.ts",
    what: "?? → ||",
    line: 'const message = m === plan.root ? plan.messages?.get(r.id) ?? "" : "";',
    why: 'a message is a string or absent: `"" || ""` is `""` as `"" ?? ""` is',
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "?? → ||",
    line: 'return (def.ordering ?? []).filter((f) => f.replace(/^-/, "") !== "id").length;',
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "?? → ||",
    line: "const first = def.orderedIndex ?? def.ordering?.[0];",
    why: "orderedIndex is a non-empty field name of the model definitions, or absent",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "const both = (add ?? []).filter((id) => remove?.includes(id));",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "errors[f.typeField!] ??= [MESSAGES.contentType(t)];",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "if (!found.ok) errors[f.idField!] ??= [found.error];",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "const current = (existing?.custom_fields as Record<string, unknown> | undefined) ?? {};",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "const found = (await core.store.get(model, id))?.record ?? null;",
    why: "a stored record (an object) or nothing: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "?? → ||",
    line: "draft.tags = nextTags(tagInput, (existing?.tags as number[] | undefined) ?? []);",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "?? → ||",
    line: "const list = grouped.get(k) ?? [];",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "?? → ||",
    line: "const via = def.through?.[name] ??",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "?? → ||",
    line: 'const field = name === "id" ? null : own ?? rel!;',
    why: "own is a field definition (an object) or undefined: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "false → true",
    line:
      'rel && (rel.type === "fk" || rel.type === "m2m") && rel.filter !== false && !rel.compute',
    why: "no FK or m2m field sets `filter` (models/): `!== false` and `!== true` both hold for " +
      "every one",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "remove line",
    line: "if (RESERVED_PARAMS.has(k)) continue;",
    why: "no model has a field, custom filter or tree filter named limit, offset, brief, fields, " +
      "omit, ordering, q, format, exclude, include or brief_mode: each would be ignored as an " +
      "unknown filter",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "?? → ||",
    line: 'const cls = field ? DJANGO_FIELDS[field.type] ?? "Field" : "BigAutoField";',
    why: "the table's values are non-empty class names: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "?? → ||",
    line: "r = (await core.store.get(model, ref.id))?.record ?? null;",
    why: "a stored record (an object) or nothing: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/registry.ts",
    what: "?? → ||",
    line: "for (const target of f.models ?? []) {",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/registry.ts",
    what: "?? → ||",
    line: "const list = this.#reverse.get(target) ?? [];",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/registry.ts",
    what: "?? → ||",
    line: "return [...(this.#reverse.get(model) ?? []), ...this.#wildcard];",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: "const cache = options.known ?? newCache();",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line:
      'data[cf.name] = cf.type === "object" ? nested[0] ?? null : nested.filter((x) => x !== null);',
    why:
      "a nested form is an object or null (undefined past the end): `||` gives null in the same cases",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: 'const name = (id: unknown) => String(known.get(id as number)?.name ?? "");',
    why: "a tag's name is required and never blank: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "?? → ||",
    line: "for (const [value, label] of f.choices ?? []) {",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/search.ts",
    what: "?? → ||",
    line: 'for (const path of def.search ?? ["name"]) {',
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/search.ts",
    what: "?? → ||",
    line: 'if (other && contains(other[rel.sub] ?? "")) rel.matched.add(id);',
    why:
      'the only related search path is a VM\'s name (replications): a non-empty string, never 0 or false, so `String(x || "")` reads the same text',
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line:
      "const record = batch.get(holder) ?? (await core.store.get(model, holder))?.record ?? null;",
    why: "a stored record (an object) or nothing: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "for (const read of def.batchIndexReads ?? []) {",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "for (const u of def.unique ?? []) {",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "errors ??= {};",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "(errors[long] ??= []).push(MESSAGES.maxLength(maxLength));",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "const holder = seen.get(key) ?? holders[lookup!];",
    why: "seen holds draft ids, which start at 1: never 0, so `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "const field = u.errorField ?? u.fields[u.fields.length - 1];",
    why: "errorField is a non-empty field name of the model definitions, or absent",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "(errors[field] ??= []).push(await uniqueMessage(core, def, u, holder, batch));",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "if (uniq.some((e) => e !== null)) return uniq.map((e) => e ?? {});",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "if (sizes.some((e) => e !== null)) return sizes.map((e) => e ?? {});",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "errors: again.map((e) => e ?? {})",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "for (const x of dangling.get(p.draft.id) ?? []) {",
    why: "the left side is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "(e[key] ??= []).push(MESSAGES.pk(x.id));",
    why:
      "`??=` on an error list or error object: the slot holds an array/object or nothing, never a falsy value, so `||=` assigns in the same cases",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "for (const p of prepared) out.push(byId.get(p.draft.id) ?? p.draft);",
    why: "the left side is an object or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "tagRules' one caller (prepare) tests the result for truth (`if (refused)`)",
  },
  {
    module: "domain/netbox/engine/registry.ts",
    what: "return null → undefined",
    line: "return null;",
    why: "naturalKey's one caller (query.ts, a reference by natural key) tests it for truth",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "?? → ||",
    line: "const fields = (target.ordering ?? []).map((item) => ({",
    why: "a model's ordering is an array or absent, never a falsy value: `||` picks the same side",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "|| → &&",
    line: 'o.field === "id" || o.field === "created" || o.field === "last_updated" ||',
    mutant: '"created" && o.field',
    why: "only journal entries and jobs are ordered by created, and no foreign key names either " +
      "model: an FK's related ordering never meets created or last_updated",
  },
  {
    module: "domain/sync/stages/network_interfaces.ts",
    what: "&& → ||",
    line: "mtu: Number.isInteger(mtu) && mtu > 0 ? mtu : null,",
    why: "Proxmox's schema types a node interface's mtu as an integer of 1280 to 65520: no " +
      "answer holds a negative integer or a positive fraction, the only values the two tests " +
      "judge apart (a missing or text mtu is NaN, null either way)",
  },
  {
    module: "domain/sync/guests.ts",
    what: "< → <=",
    line: "for (const group of [all.filter((id) => id < 0), all.filter((id) => id >= 0)]) {",
    why: "an id of 0 is the only value the two tests judge apart: NetBox ids start at 1 and a " +
      "dry run's made-up ids at -1 (plan.ts), so no id of 0 is ever asked for",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "> → >=",
    line: "const head = at > 0 ? k.slice(0, at) : k;",
    why: "head differs only for a key starting with `__` (at 0), and the join below needs " +
      "`at > 0` first: such a key is kept as given either way",
  },
  {
    module: "domain/sync/stages/snapshots.ts",
    what: "- → +",
    line: "const gone = [...recorded].filter((vmid) => !present.has(vmid)).sort((a, b) => a - b);",
    why: "only the order the gone guests are visited in: their slices of 500 cover every one, " +
      "each snapshot is marked stale once in the same run, with the same writes and counts",
  },
  // The engine, listed before its issue22j draw: issue22i's survivors no user could tell
  // apart, and the lines of the same classes (exact-ms bounds, ids of 0, values JSON cannot
  // carry, generic FKs half given, plan thresholds and batch shortcuts of equal answers).
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "< → <=",
    line: "now - state.lastAgeSweep < AGE_SWEEP_EVERY_MS) return;",
    why: "differs only for a write in the very millisecond the sweep period ends (the sweep " +
      "then runs one write later)",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "< → <=",
    line: "const expired = oldest.filter((r) => Date.parse(String(r.time)) < cutoff);",
    why: "differs only for an entry exactly retentionDays old to the millisecond of the sweep",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "> → >=",
    line: "if (tagIds.size > 0) {",
    why: "the store's getMany of no ids answers [] without reading anything",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "&& → ||",
    line: 'if (typeof v === "object" && v !== null && JSON.stringify(v) === JSON.stringify(w))',
    mutant: "v !== null || JSON",
    why: "two JSON values that are not === (tested just above) and are no objects never " +
      "serialize alike (JSON has no NaN nor undefined, and -0 === 0)",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "|| → &&",
    line: "if (!(key in data) || data[key] === undefined) continue;",
    why: "a body is parsed JSON, which has no undefined: a key present is never undefined",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line: 'typeof c.ids[0] === "number" && c.ids[0] > 0',
    why: "a reference filter's id of 0 is refused before (`Select a valid choice. 0 is not " +
      "one of the available choices.`); resolved names give positive ids",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "&& → ||",
    line: 'if (typeof t === "string" && typeof i === "number") add(name, `${t}:${i}`);',
    why: "a generic FK's type without its id, or an id without its type, is refused before " +
      "it is stored (`This field is required.` on the missing one)",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "&& → ||",
    line: 'if (typeof t === "string" && typeof i === "number" && core.registry.has(t)) {',
    why: "a generic FK's type without its id, or an id without its type, is refused before " +
      "it is stored, and a stored type is a model of the registry",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "&& → ||",
    line: '} else if (f.type === "gfk" && !f.weak) {',
    why: "other fields have no typeField (no type is found below); the only weak generic FK " +
      "is the change log's, whose entries no create or update that checks references writes",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "> → >=",
    line: "if (wanted.size > 0) await fetch(wanted);",
    why: "a fetch of no models reads nothing",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line:
      "if (records.length > 1) await sortRecords(core, def, records, orderingOf(def, null), newCache());",
    why: "one record sorts as itself; the sort's read of its FK ordering's target goes through " +
      "the store's record cache, where the answer's nested form reads it anyway (no KV read more)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: 'error ??= result.reason ?? new Error("commit failed");',
    why: "error is undefined or a thrown error (an object, never falsy), and a commit rejects " +
      "with an Error: `||` picks the same side at both places",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line: "if (c.ids.size > MAX_KEYED_IDS) return null;",
    why: "a list of exactly MAX_KEYED_IDS ids is not kept in the derived-ids cache: the same " +
      "answer, computed again",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line: "if (uncounted.has(read.field) || read.values.length > SIZED_VALUES) return -1;",
    why: "a plan choice: an index of exactly SIZED_VALUES values is read unsized (first); the " +
      "intersection of the reads is the same in any order",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: ">= → >",
    line: "size >= 0 && known !== null && known.size <= FEW_CANDIDATES &&",
    why: "a plan choice: an index value of no objects is read (an empty list) instead of left " +
      "to the per-record test, which finds nothing either",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "<= → <",
    line: "size >= 0 && known !== null && known.size <= FEW_CANDIDATES &&",
    why: "a plan choice at exactly FEW_CANDIDATES candidates: the index is read instead of " +
      "each candidate tested, the same ids either way",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "> → >=",
    line: "size > LARGER_INDEX * known.size",
    why: "a plan choice at exactly LARGER_INDEX times the candidates: the candidates are " +
      "tested instead of the index read, the same ids either way",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: "if (values === null) return null;",
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`)",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: "if (!TIMESTAMP_LOOKUPS.has(lookup)) return null;",
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`)",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: "lookup, source)) return null;",
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`): a lookup a " +
      "filter's kind does not offer (offered()) is ignored either way",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: 'name !== "tag_id") return null;',
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`): `__any` on a " +
      "filter other than the tags' is ignored either way",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: "if (kept === null) return null;",
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`)",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: "return null; // unknown filters are ignored, as NetBox does",
    why: "condition()'s only caller keeps its answer when truthy (`if (cond)`)",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "return null → undefined",
    line: 'if (lookup !== "exact" && lookup !== "n") return null;',
    why: "throughCondition's answer is condition()'s, kept when truthy only (`if (cond)`)",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "return null → undefined",
    line: 'if ((f.type !== "fk" && f.type !== "m2m") || !f.model) return null;',
    why: "referenceOf's caller keeps its answer when truthy only (`if (reference)`)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "remove line",
    line: "shapes.set(def, shape = { fewPerValue, uncounted });",
    why: "the memo of a pure function of the model definition: computed again, the same sets",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: "if (cachedRecords(cache, model).has(id)) return;",
    why:
      "a record already in the request's cache is read again into it (a cost: the same record, read in the same batch)",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "false → true",
    line: "? await core.store.page(model, 0, 2, false)",
    why:
      "a look-up of nothing reads two objects to tell one from several: newest or oldest first, one object is the same one and two are several either way",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "&& → ||",
    line: 'return typeof t === "string" && typeof i === "number" ? [t, i] : [null, null];',
    why:
      "a generic FK's type without its id, or an id without its type, is refused before it is stored: both are given or neither",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "&& → ||",
    line: 'if (typeof t === "string" && registry.has(t)) want(t, r[ref.idField!]);',
    why:
      "a stored generic FK type (and a change log entry's object type) is always a model of the registry; a type that is no text is never one",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "|| → &&",
    line: "if (v === null || v === undefined) return;",
    why:
      "null and undefined are neither text, number nor boolean: the test just below leaves them out of the index all the same",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "remove line",
    line: "if (v === null || v === undefined) return;",
    why:
      "null and undefined are neither text, number nor boolean: the test just below leaves them out of the index all the same",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "|| → &&",
    line: "if (id === null || id <= 0) return;",
    why:
      "a prefetch of an id of 0 or less finds nothing (no such object), and validation refuses that id as before, from the same cache",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "<= → <",
    line: "if (id === null || id <= 0) return;",
    why:
      "a prefetch of an id of 0 or less finds nothing (no such object), and validation refuses that id as before, from the same cache",
  },
  {
    module: "domain/netbox/engine/core.ts",
    what: "remove line",
    line: "if (missing.length === 0) return [];",
    why:
      "a shortcut: the store's getMany of no ids answers [] without reading, and no id is marked",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "remove line",
    line: "if (ids.length === 0) return [];",
    why: "a shortcut: the lines below read no ids and map none, the same []",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: "if (plan.counts.length === 0) return [];",
    why:
      "a shortcut: plan.counts.map below answers the same [] (the lines between only name things)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "&& → ||",
    line: "(target.fields[o.field] && !target.fields[o.field].compute)",
    why:
      "no model's ordering names a computed field or one it lacks (all 56 registered models, plugin ones included, checked): the test keeps the same fields either way (an issue22j survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: ">= → >",
    line: "values: ids.filter((id) => id >= 0),",
    why:
      "a reference filter's id of 0 is refused before (`Select a valid choice. 0 is not one of the available choices.`) and a name that names nothing is marked below 0: no 0 reaches this test (an issue22j survivor)",
  },
  {
    module: "domain/sync/ledger.ts",
    what: "?? → ||",
    line: 'const newest = await inv.changeEnd("newest", signal) ?? 0;',
    why: "changeEnd answers null (an empty log) or a JSON number: `||` and `??` both give 0 " +
      "for null and for 0, and the same id otherwise (only NaN, which JSON cannot carry, differs)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "- 1 → + 1",
    line: 'else if (c.lookup === "lt") high = Math.min(high, v - 1);',
    why:
      "idSpan's bounds only choose which ids a span page reads: every condition is tested on the records after, so one id more is read in the same batch and left out (an issue22j survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "+ 1 → - 1",
    line: 'if (c.lookup === "gt") low = Math.max(low, v + 1);',
    why:
      "idSpan's bounds only choose which ids a span page reads: every condition is tested on the records after, so one id more is read in the same batch and left out (an issue22j survivor)",
  },
  {
    module: "domain/sync/plan.ts",
    what: "|| → &&",
    line:
      'if (key === "tag" || key === "limit" || key === "offset" || key === "ordering") continue;',
    why: "no object the sync makes has a field named tag, limit, offset or ordering (tags is " +
      "plural; nor one with `_id` cut off): a key not skipped here finds no field below and " +
      "is skipped there, whichever || is turned",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "false → true",
    line: "if (def.tags !== false && Array.isArray(r.tags)) {",
    why:
      "no model sets tags: true (undefined reads the same either way), and a tagless model's records hold no tags array, which the test beside it requires (an issue22j survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "< → <=",
    line: "nothing: cond.all && ids.some((id) => id < 0),",
    why: "an id condition holds ids of existing objects (1 and up; an unknown id is a 400 first) " +
      "or the -1 of an unknown name given together: no 0 reaches it (as the values line " +
      "beside it, an issue22l survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "&& → ||",
    line: "return Number.isFinite(low) && Number.isFinite(high) ? [low, high] : null;",
    why: "a range open on one side is infinitely wide, and spanPage's width test answers null " +
      "for it just after (an issue22l survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "remove line",
    line: "if (high < low) return { count: 0, records: [], limit, offset };",
    why: "an empty range: the loop after it adds no id, and the records of no ids are none: the " +
      "same empty page, with no KV read either way (the store answers no ids without one; an " +
      "issue22l survivor)",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: 'if (typeof id !== "number") return null;',
    why: "a shortcut: a reference that is no number (null, an absent field) finds no record " +
      "in the page's cache (keyed by number) nor in the memo, and answers null the same way",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "remove line",
    line: 'if (fields.every((o) => o.field === "id")) return null;',
    why: "the one foreign key to a model ordered by id alone is an inventory endpoint's token " +
      "(tokens: ordering id), and sorting by the related record's id gives the stored id's order; " +
      "no registered model an FK names has no ordering (all checked). A list ordered by token is " +
      "tested (reference_edges_test); an eng6p survivor",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "remove line",
    line: 'if (!written.ok) throw new Error("the change log\'s atomic failed");',
    why: "the store's createWithFreshIds answers ok: false only when a unique claim is taken " +
      "(storage/kv/models.ts: new records are not version-checked), and the change log model has " +
      "no unique constraint: never false here; a KV failure throws and is caught below (an " +
      "eng6p survivor: a squatting record at the next id was tried, and overwritten)",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "> → >=",
    line: "while (excess > 0 && budget > 0) {",
    mutant: "excess >= 0",
    why:
      "with no excess the loop asks a page of min(0, 500) = 0 entries, which the store answers " +
      "[] without reading the KV (storage/kv/models.ts page): the break after it ends the loop " +
      "(as the && → || entry of this line; an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "remove line",
    line: "if (expired.length === 0) break;",
    why: "the age sweep runs right after the request's entries were written at the current time: " +
      "the log is not empty and its newest entries are young, so a page with no expired entry " +
      "still holds some, and the test below (expired < oldest) breaks the same way after an " +
      "empty deleteEntries (no read, no commit; an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/changelog.ts",
    what: "remove line",
    line: "if (expired.length < oldest.length) break;",
    why: "entries are written in id and time order, so after a page's expired entries go, the " +
      "next page starts with that page's young ones: it has no expired entry and the break " +
      "above ends the sweep, one page read later (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "<= → <",
    line: 'return v !== "" && v.length <= store.maxIndexedLength;',
    why: "every writer and reader of the value index asks this one function (stateOf, the " +
      "paging plan, prepare's byIndex, write's batch reads, idsIndexed): a value of exactly the " +
      "longest indexed length is then kept out of the index and found by a scan instead, the " +
      "same answers (as the paging.ts entries for the same edge; an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "remove line",
    line: "if (f.compute) continue;",
    why: "a computed field is never stored (prepare.ts deletes it from every draft): the record " +
      "holds nothing under its name, and add() and the list test skip an absent value (an " +
      "eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "remove line",
    line: "if (shape) return shape;",
    why: "the memo of a pure function of the model definition: computed again, the same sets " +
      "(as the shapes.set entry; an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: 'if (typeof value === "number" && Number.isInteger(value)) return value;',
    why:
      "prefetchRefs only: a non-integer number (JSON has no NaN) joins the batch's one read as an id no record has, and validation refuses it after (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: 'if (value && typeof value === "object" && !Array.isArray(value)) {',
    mutant: "value || typeof",
    why:
      "prefetchRefs only: a truthy value that is no object (a string, an array, true) has no own `id` key, so the id read is undefined and null is returned as before (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: 'if (keys.length === 1 && typeof id === "number" && Number.isInteger(id)) return id;',
    mutant: 'typeof id === "number" || Number',
    why:
      "prefetchRefs only: Number.isInteger(id) implies a number, so only a nested reference with an integer id and other keys ({id, name}) differs: its id joins the batch's one read, and it is resolved by its attributes either way (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "|| → &&",
    line: "if (!model || !core.registry.has(model)) return;",
    why:
      "prefetchRefs only: a model name the registry lacks comes only from a generic reference's type: the batch read asks keys no record holds, so no definition is read for it, and validation refuses the type (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "|| → &&",
    line: 'if (!input || typeof input !== "object" || Array.isArray(input)) continue;',
    mutant: 'typeof input !== "object" && Array',
    why:
      "prefetch only: an array item then reaches the field loop, where every named field and tag key reads undefined: nothing is wanted, and validation refuses the item (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: '} else if (f.type === "gfk" && typeof data[f.typeField!] === "string") {',
    why:
      'prefetchRefs only: a field that is not a generic reference has neither typeField nor idField, so both read data["undefined"], one value that is never both a registered model name and an id; a generic reference whose type is no string names no model (want returns) (an eng6w survivor)',
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: 'if (f.type === "gfk" && typeof record[f.typeField!] === "string") {',
    why:
      "the prefetch's second hop only: as the first hop's generic-reference test, on stored records (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "false → true",
    line: "if (def.tags !== false) {",
    why:
      "prefetchRefs only: only a model without tags (tags: false) differs, whose items' tag keys, which it does not store, are then read in the batch's one tag read; no tagged model's request changes (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "false → true",
    line: "def.customFields !== false && plan.steps.includes(CUSTOM_FIELDS_STEP)",
    why: "no model sets customFields: true (undefined reads as it), and a model with false has " +
      "no custom_fields step in any plan (outputFields leaves the key out), so the test is false",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "false → true",
    line: "const models = registry.models().filter((m) => m.tags !== false);",
    why: "no model sets tags: true, so the tagless models join the sum of a tag's tagged_items: " +
      "their records hold no tag ids, each adds 0",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "|| → &&",
    line: 'if (typeof target !== "string" || !registry.has(target)) continue;',
    why: "an object custom field's related_object_type is always a registered model's name: the " +
      "custom field model's validate refuses any other (models/core.ts), so both sides are false",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: 'if (typeof target !== "string" || !registry.has(target)) continue;',
    why: "an object custom field's related_object_type is always a registered model's name (see " +
      "the || → && entry): the skipped case never occurs",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "remove line",
    line: "if (!f) continue;",
    why: "every name a plan is compiled from is a field of the model or a key handled above: " +
      "outputFields picks from the model's fields, and each brief names fields (or `created`)",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "remove line",
    line: "if (!resolved.ok) return { ok: false, error: MESSAGES.attrs(ref.attrs) };",
    why: "an unresolved nested reference then filters by `<fk>_id=undefined`, which no object " +
      "matches (or which the filter refuses, caught below): the same 'not found' answer",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "> → >=",
    line: 'at > 0 && def.fields[head]?.type === "fk" && rest !== "id" && !LOOKUPS.has(rest) &&',
    why: "at 0 (a key starting with `__`) the head is the whole key, and no model has a field " +
      "named `__…`: the FK test after it is false either way, the key kept as given",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "&& → ||",
    line: 'if (typeof v === "string" && indexedString(core.store, v)) {',
    why:
      "prefetchIndexed only: the one batch index read (an address's host, models/core.ts) gives a canonical host, short enough to index, or null, which the string test keeps out the same (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "remove line",
    line: "if (values.size < 2) continue;",
    why:
      "prefetchIndexed only: one value is then read in a batch read of one instead of by the rule's own single read (one store read either way), no value in a batch read of none (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/search.ts",
    what: "&& → ||",
    line: 'if (sub && f?.type === "fk" && f.model) {',
    why: "a model's search path has a `__` part exactly when its first part is an FK (models/: " +
      "`virtual_machine__name`), and a field names a model only when it is an FK or m2m, none " +
      "searched whole: each side of the `||` agrees with the whole test for every path",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "return errors.find((e) => Object.keys(e).length > 0) ?? {};",
    why:
      "find answers an error object (truthy) or undefined: `||` picks the same side (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "const records = currents.map((c) => c?.record ?? null);",
    why: "a record is an object (truthy) or absent: `||` picks the same side (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "?? → ||",
    line: "const records = prepared.map((p) => p.ctx.existing ?? null);",
    why: "a record is an object (truthy) or absent: `||` picks the same side (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "&& → ||",
    line: "if (def.tags !== false && Array.isArray(record.tags)) {",
    why: "a tagless model's records hold no tags (prepare stores none), and a record without a " +
      "tag list adds nothing (new Set(undefined) is empty): the same index entries (an eng6p " +
      "survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "false → true",
    line: "if (def.tags !== false && Array.isArray(record.tags)) {",
    why: "no model declares tags: true (absent or false): the test is true for the same models, " +
      "and a tagless model's records hold no tags anyway (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "return null → undefined",
    line: "if (!first) return null;",
    why: "only a model with no ordering at all reaches it, and every registered model names one " +
      "(all 57 checked): no caller sees the difference (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "=== → !==",
    line: 'const stored = field === "created" || field === "last_updated" ||',
    mutant: 'field !== "last_updated"',
    why: "no model is ordered by last_updated, and every registered model's first ordering " +
      "field is created or a stored field of the listed types (all 57 checked): the test is " +
      "true for the same models (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/index_state.ts",
    what: "&& → ||",
    line: "(f && !f.compute && !f.hidden &&",
    why: "every registered model's first ordering field other than created is a stored, shown " +
      "field of the listed types (all 57 checked), and created never reaches this term: the " +
      "test is true for the same models (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "remove line",
    line: "if (c.ids.size > MAX_KEYED_IDS) return null;",
    why: "a memory bound only: the id set is then part of its cache key whatever its size, so " +
      "the list is kept and answered the same (the store bounds its cached lists by count and " +
      "ids, not by key length; an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "- → +",
    line: 'parts.push(["ids", [...c.ids].sort((a, b) => a - b)]);',
    why: "the ids are then in some other order in the cache key: one id set may get two keys " +
      "(a cache miss, computed again), two sets never one: the same answers (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "false → true",
    line: 'if (order.length === 0) order = [{ field: "id", desc: false }];',
    why: "only a model whose default ordering names no field orderingOf knows reaches it, and " +
      "every registered model's names one (all 57 checked; id, created and stored fields): " +
      "never reached (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "< → <=",
    line: "for (let i = 0; i < ka.length; i++) {",
    why: "orderingOf ends every ordering with id unless it names id, and ids are unique: two " +
      "records differ at some part before the loop ends, so it never reads past the keys (an " +
      "eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "|| → &&",
    line: "return Array.isArray(v) ? v : v === null || v === undefined ? [] : [v];",
    why: "a null or absent value then gives [null] or [undefined]: the ids to read keep numbers " +
      "only, and the rendering loop below skips a null or absent value before it reads them",
  },
  {
    module: "domain/netbox/engine/render.ts",
    what: "> → >=",
    line: "if (ids.length > 0) {",
    why: "with no id to read the branch reads nothing (getMany of none) and preloads again " +
      "what the page has loaded already: the same cache, the same answer (work only)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "|| → &&",
    line: 'if (f?.type !== "fk" || !f.model || !core.registry.has(f.model)) return null;',
    mutant: "!f.model && !core",
    why: "every foreign key names its model, and every model a registered FK names is " +
      "registered (all 57 models, plugin ones included, checked): the registry test never " +
      "answers otherwise (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "=== → !==",
    line: 'o.field === "id" || o.field === "created" || o.field === "last_updated" ||',
    mutant: 'o.field !== "created"',
    why: "the filter then keeps every field but created (or every field): no model an FK names " +
      "is ordered by created or last_updated, and none names a computed or missing field in " +
      "its ordering (all checked, as this line's || → && entry): the same fields (an eng6p " +
      "survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "=== → !==",
    line: 'o.field === "id" || o.field === "created" || o.field === "last_updated" ||',
    mutant: 'o.field !== "last_updated"',
    why: "the filter then keeps every field but created (or every field): no model an FK names " +
      "is ordered by created or last_updated, and none names a computed or missing field in " +
      "its ordering (all checked, as this line's || → && entry): the same fields (an eng6p " +
      "survivor)",
  },
  {
    module: "domain/netbox/engine/references.ts",
    what: "remove line",
    line: "if (f.compute) continue;",
    why: "a computed field is never stored (prepare deletes it from every draft), so the record " +
      "holds nothing under its name: no FK id, no list, no reference either way",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "|| → &&",
    line: 'if (!("meter" in cond) || !cond.meter) return test;',
    why: "a condition has a meter key only where parseConditions set it to the request's meter " +
      "(query.ts, never undefined): the key's absence and an unset meter go together",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "remove line",
    line: 'if (!("meter" in cond) || !cond.meter) return test;',
    why: "the wrapper only turns a WorkBudgetExceeded into the QueryError naming the parameter, " +
      "and only a metered pattern test throws one: around any other test it changes nothing",
  },
  {
    module: "domain/netbox/engine/lookups.ts",
    what: "&& → ||",
    line: 'return "meter" in cond && cond.meter !== undefined;',
    why: "a condition has a meter key only where parseConditions set it to the request's meter " +
      "(query.ts, never undefined): both sides are true or false together",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "return null → undefined",
    line: "return null;",
    why:
      "checkDrafts' last line: both callers test its result for truth only. The file's other `return null;` lines (refIdOf, sizeError) are killed: their callers compare with null (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/write.ts",
    what: "false → true",
    line: "const r = await prepare(core, def, inputs[i], null, false, auth, cache, first + i);",
    why:
      "prepare reads `partial` only for an existing record (PATCH against PUT): a create passes none, so every required field is required either way (an eng6w survivor)",
  },
  {
    module: "domain/netbox/engine/prepare.ts",
    what: "|| → &&",
    line: "const rendered = f.compute || f.count || f.resolve;",
    why: "a computed or counted field then keeps a stored default (null) no reader looks at: " +
      "rendering computes or counts it, the change log, filters and indexes pass over computed " +
      "fields, counts are no filter, and an ordering by one finds the same null on every record",
  },
  {
    module: "domain/netbox/engine/query.ts",
    what: "false → true",
    line: "all: false,",
    why: "an __isnull/__empty reference condition is decided before `all` is read (lookups.ts's " +
      "rel test returns first), and paging.ts reads `all` for exact lookups only: the list's " +
      "cache key alone differs, the same for every run of one query",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "&& → ||",
    line:
      "const patterns = conditions.filter((c) => !reading(c) && isPatternCondition(c)).map((c) =>",
    why: "the plain conditions then run a second time on the records they already kept: the " +
      "same records, and no pattern meter is charged (plain conditions are no patterns; an " +
      "eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "&& → ||",
    line: 'const byId = primary.field === "id" && ordering.length === 1;',
    why: "orderingOf appends id to every ordering that lacks it, so an ordering of one term is " +
      "id alone: the test is true for the same orderings (an eng6p survivor)",
  },
  {
    module: "domain/netbox/engine/paging.ts",
    what: "=== → !==",
    line: 'const byId = primary.field === "id" && ordering.length === 1;',
    mutant: "ordering.length !== 1",
    why: "an ordering led by id is by id whatever follows (ids are unique): the index page by id " +
      "answers [id, ...] as the general path would, and [id] alone takes the general path, the " +
      "same page (an eng6p survivor)",
  },
];
