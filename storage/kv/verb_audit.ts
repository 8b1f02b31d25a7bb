import type { VerbAuditFilter, VerbAuditRecord, VerbAuditStart, VerbAuditStore } from "../ports.ts";
import { keys } from "./keys.ts";
import { readSequence, retryAtomic } from "./ids.ts";

const INDEXED = ["endpoint_id", "vmid", "actor", "verb"] as const;

/** Audit records kept per endpoint (docs/verbs.md): the newest 10,000. */
export const AUDIT_RETAINED_PER_ENDPOINT = 10_000;
/** Records an endpoint may grow past the bound before one pruning pass deletes them together. */
const AUDIT_PRUNE_BATCH = 100;
/** A record is 1 + 4 index keys: 5 deletes, so 150 records stay under KV's 1000 mutations. */
const RECORDS_PER_DELETE = 150;

export interface VerbAuditRetention {
  retainedPerEndpoint?: number;
  pruneBatch?: number;
}

/**
 * Verb audit records in Deno KV. Each record is stored by id and copied under each filterable
 * field (`by/<field>/<value>/<id>`), all in one atomic, so any one filter reads its records
 * newest first straight from a prefix; ids grow, so reverse key order is newest first.
 *
 * Retention: each endpoint keeps its newest `retainedPerEndpoint` records. A counter per endpoint
 * grows in the same atomic as each record; once it passes the bound by `pruneBatch`, the writer
 * deletes everything older than the newest `retainedPerEndpoint` in one pass.
 */
export class KvVerbAuditStore implements VerbAuditStore {
  readonly #retained: number;
  readonly #batch: number;

  constructor(private readonly kv: Deno.Kv, retention: VerbAuditRetention = {}) {
    this.#retained = retention.retainedPerEndpoint ?? AUDIT_RETAINED_PER_ENDPOINT;
    this.#batch = retention.pruneBatch ?? AUDIT_PRUNE_BATCH;
  }

  async begin(start: VerbAuditStart): Promise<VerbAuditRecord> {
    const record = await this.#begin(start);
    // The verb goes on whatever pruning does: a failed pass is retried by the next write.
    await this.#pruneIfDue(record.endpoint_id).catch(() => {});
    return record;
  }

  #begin(start: VerbAuditStart): Promise<VerbAuditRecord> {
    return retryAtomic(async () => {
      const seq = await readSequence(this.kv, "verb_audit");
      const record: VerbAuditRecord = {
        id: seq.next,
        ...start,
        result: null,
        status: "in_progress",
        task_upid: null,
        finished_at: null,
        detail: null,
      };
      const op = this.kv.atomic()
        .check({ key: seq.key, versionstamp: seq.versionstamp })
        .set(seq.key, seq.next)
        .sum(keys.verbAuditCount(record.endpoint_id), 1n);
      this.#write(op, record);
      return (await op.commit()).ok ? record : undefined;
    });
  }

  finish(
    id: number,
    outcome: Pick<VerbAuditRecord, "result" | "task_upid" | "detail" | "finished_at">,
  ): Promise<VerbAuditRecord | null> {
    return retryAtomic(async () => {
      const current = await this.kv.get<VerbAuditRecord>(keys.verbAudit(id));
      if (!current.value) return null;
      const record: VerbAuditRecord = { ...current.value, ...outcome, status: "finalized" };
      const op = this.kv.atomic().check(current);
      this.#write(op, record);
      return (await op.commit()).ok ? record : undefined;
    });
  }

  async list(
    filter: VerbAuditFilter,
    page: { limit: number; offset: number },
  ): Promise<{ count: number; results: VerbAuditRecord[] }> {
    const field = INDEXED.find((f) => filter[f] !== undefined);
    const prefix = field
      ? keys.verbAuditIndexPrefix(field, filter[field] as string | number)
      : keys.verbAuditPrefix();
    const matches = (r: VerbAuditRecord) =>
      INDEXED.every((f) => filter[f] === undefined || r[f] === filter[f]) &&
      (filter.status === undefined || r.status === filter.status);
    let count = 0;
    const results: VerbAuditRecord[] = [];
    for await (const entry of this.kv.list<VerbAuditRecord>({ prefix }, { reverse: true })) {
      if (!matches(entry.value)) continue;
      if (count >= page.offset && results.length < page.limit) results.push(entry.value);
      count++;
    }
    return { count, results };
  }

  async #pruneIfDue(endpointId: number): Promise<void> {
    const counted = await this.kv.get<Deno.KvU64>(keys.verbAuditCount(endpointId));
    if (Number(counted.value?.value ?? 0n) <= this.#retained + this.#batch) return;
    let seen = 0;
    const doomed: VerbAuditRecord[] = [];
    const prefix = keys.verbAuditIndexPrefix("endpoint_id", endpointId);
    for await (const entry of this.kv.list<VerbAuditRecord>({ prefix }, { reverse: true })) {
      if (++seen > this.#retained) doomed.push(entry.value);
    }
    for (let i = 0; i < doomed.length; i += RECORDS_PER_DELETE) {
      const op = this.kv.atomic();
      for (const record of doomed.slice(i, i + RECORDS_PER_DELETE)) {
        op.delete(keys.verbAudit(record.id));
        for (const field of INDEXED) {
          op.delete(keys.verbAuditIndex(field, record[field], record.id));
        }
      }
      await op.commit();
    }
    // Records begun during the pass are not in `seen`: the count may run low, never high, so
    // the next pass only comes a little later.
    await this.kv.set(
      keys.verbAuditCount(endpointId),
      new Deno.KvU64(BigInt(seen - doomed.length)),
    );
  }

  #write(op: Deno.AtomicOperation, record: VerbAuditRecord): void {
    op.set(keys.verbAudit(record.id), record);
    for (const field of INDEXED) {
      op.set(keys.verbAuditIndex(field, record[field], record.id), record);
    }
  }
}
