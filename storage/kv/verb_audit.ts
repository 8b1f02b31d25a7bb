import type { VerbAuditFilter, VerbAuditRecord, VerbAuditStart, VerbAuditStore } from "../ports.ts";
import { keys } from "./keys.ts";
import { readSequence, retryAtomic } from "./ids.ts";

const INDEXED = ["endpoint_id", "vmid", "actor", "verb"] as const;

/**
 * Verb audit records in Deno KV. Each record is stored by id and copied under each filterable
 * field (`by/<field>/<value>/<id>`), all in one atomic, so any one filter reads its records
 * newest first straight from a prefix; ids grow, so reverse key order is newest first.
 */
export class KvVerbAuditStore implements VerbAuditStore {
  constructor(private readonly kv: Deno.Kv) {}

  begin(start: VerbAuditStart): Promise<VerbAuditRecord> {
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
        .set(seq.key, seq.next);
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

  #write(op: Deno.AtomicOperation, record: VerbAuditRecord): void {
    op.set(keys.verbAudit(record.id), record);
    for (const field of INDEXED) {
      op.set(keys.verbAuditIndex(field, record[field], record.id), record);
    }
  }
}
