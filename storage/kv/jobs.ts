/**
 * Deno KV side of the sync jobs (domain/jobs): the job requests, admission slots, the run
 * lease, live progress, finished-job index for retention, and the queue (`enqueue` /
 * `listenQueue`, so the same code runs on Deno Deploy). Keys live under `["plugin_jobs"]`;
 * the job record itself is the inventory's `core.job` object (watched for the live stream).
 */
import { keys } from "./keys.ts";
import { retryAtomic } from "./ids.ts";
import type {
  JobKind,
  JobPart,
  JobPartOutcome,
  JobSpec,
  JobStore,
  Lease,
} from "../../domain/jobs/ports.ts";

const P = "plugin_jobs";
const jobKeys = {
  spec: (id: number): Deno.KvKey => [P, "spec", id],
  slot: (kind: JobKind): Deno.KvKey => [P, "slot", kind],
  lease: (): Deno.KvKey => [P, "lease"],
  progress: (id: number): Deno.KvKey => [P, "progress", id],
  settled: (id: number): Deno.KvKey => [P, "settled", id],
  finished: (kind: JobKind, id: number): Deno.KvKey => [P, "finished", kind, id],
  finishedPrefix: (kind: JobKind): Deno.KvKey => [P, "finished", kind],
  part: (id: number, endpointId: number): Deno.KvKey => [P, "part", id, endpointId],
  partsOf: (id?: number): Deno.KvKey => id === undefined ? [P, "part"] : [P, "part", id],
};

/** The queue message of a job run. */
export interface JobMessage {
  type: "bridgebox.sync-job";
  job_id: number;
}

export function isJobMessage(value: unknown): value is JobMessage {
  return typeof value === "object" && value !== null &&
    (value as JobMessage).type === "bridgebox.sync-job" &&
    Number.isInteger((value as JobMessage).job_id);
}

/**
 * Two processes writing one local KV file may see SQLite's "database is locked" for a moment;
 * job bookkeeping retries it (bounded) instead of failing a request or a run.
 */
async function busyRetry<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 0;; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= 20 || !/database is locked|busy/i.test(String(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * (attempt + 1)));
    }
  }
}

/** Deno KV delays are capped at 30 days. */
const MAX_DELAY_MS = 30 * 24 * 3600 * 1000;

export class KvJobStore implements JobStore {
  constructor(readonly kv: Deno.Kv, readonly now: () => number = Date.now) {}

  async saveSpec(jobId: number, spec: JobSpec): Promise<void> {
    await busyRetry(() => this.kv.set(jobKeys.spec(jobId), spec));
  }

  async spec(jobId: number): Promise<JobSpec | null> {
    return (await busyRetry(() => this.kv.get<JobSpec>(jobKeys.spec(jobId)))).value;
  }

  async deleteSpec(jobId: number): Promise<void> {
    await busyRetry(() => this.kv.delete(jobKeys.spec(jobId)));
  }

  async claimSlot(
    kind: JobKind,
    jobId: number,
    blocking: readonly JobKind[],
    isActive: (jobId: number) => Promise<boolean>,
  ): Promise<{ ok: true } | { ok: false; holder: number }> {
    const kinds = [...new Set([kind, ...blocking])];
    return await busyRetry(() =>
      retryAtomic(async () => {
        const entries = await this.kv.getMany<number[]>(kinds.map((k) => jobKeys.slot(k)));
        for (const entry of entries) {
          const holder = entry.value;
          if (typeof holder === "number" && holder !== jobId && await isActive(holder)) {
            return { ok: false as const, holder };
          }
        }
        // Every slot read is checked: a claim or release in between makes us read again.
        const op = this.kv.atomic();
        for (const entry of entries) op.check(entry);
        op.set(jobKeys.slot(kind), jobId);
        return (await op.commit()).ok ? { ok: true as const } : undefined;
      })
    );
  }

  async releaseSlot(kind: JobKind, jobId: number): Promise<void> {
    await busyRetry(() =>
      retryAtomic(async () => {
        const entry = await this.kv.get<number>(jobKeys.slot(kind));
        if (entry.value !== jobId) return true;
        return (await this.kv.atomic().check(entry).delete(entry.key).commit()).ok
          ? true
          : undefined;
      })
    );
  }

  async slotHolder(kind: JobKind): Promise<number | null> {
    return (await this.kv.get<number>(jobKeys.slot(kind))).value;
  }

  async takeLease(
    jobId: number,
    owner: string,
    ttlMs: number,
  ): Promise<{ ok: true } | { ok: false; lease: Lease }> {
    return await busyRetry(() =>
      retryAtomic(async () => {
        const entry = await this.kv.get<Lease>(jobKeys.lease());
        const held = entry.value;
        const now = this.now();
        if (held && held.expires_at > now && !(held.job_id === jobId && held.owner === owner)) {
          return { ok: false as const, lease: held };
        }
        const lease: Lease = { job_id: jobId, owner, expires_at: now + ttlMs };
        const done = await this.kv.atomic().check(entry).set(jobKeys.lease(), lease).commit();
        return done.ok ? { ok: true as const } : undefined;
      })
    );
  }

  async renewLease(jobId: number, owner: string, ttlMs: number): Promise<boolean> {
    return await busyRetry(() =>
      retryAtomic(async () => {
        const entry = await this.kv.get<Lease>(jobKeys.lease());
        const held = entry.value;
        if (!held || held.job_id !== jobId || held.owner !== owner) return false;
        const lease: Lease = { ...held, expires_at: this.now() + ttlMs };
        const done = await this.kv.atomic().check(entry).set(jobKeys.lease(), lease).commit();
        return done.ok ? true : undefined;
      })
    );
  }

  async releaseLease(jobId: number, owner: string): Promise<void> {
    await busyRetry(() =>
      retryAtomic(async () => {
        const entry = await this.kv.get<Lease>(jobKeys.lease());
        const held = entry.value;
        if (!held || held.job_id !== jobId || held.owner !== owner) return true;
        return (await this.kv.atomic().check(entry).delete(entry.key).commit()).ok
          ? true
          : undefined;
      })
    );
  }

  async lease(): Promise<Lease | null> {
    return (await busyRetry(() => this.kv.get<Lease>(jobKeys.lease()))).value;
  }

  async openParts(jobId: number, endpointIds: readonly number[]): Promise<void> {
    // Batches below an atomic's 1000 mutations. Other processes may take parts of a batch already
    // written; the job's process looks at the parts only once all are open.
    for (let i = 0; i < endpointIds.length; i += 500) {
      const op = this.kv.atomic();
      for (const endpointId of endpointIds.slice(i, i + 500)) {
        const part: JobPart = {
          job_id: jobId,
          endpoint_id: endpointId,
          state: "open",
          owner: null,
          expires_at: 0,
          claims: 0,
          outcome: null,
        };
        op.set(jobKeys.part(jobId, endpointId), part);
      }
      await busyRetry(() => op.commit());
    }
  }

  async parts(jobId?: number): Promise<JobPart[]> {
    return await busyRetry(async () => {
      const out: JobPart[] = [];
      for await (const entry of this.kv.list<JobPart>({ prefix: jobKeys.partsOf(jobId) })) {
        out.push(entry.value);
      }
      return out;
    });
  }

  /** Read, decide, write with a check on what was read: the one change of a part's state. */
  #changePart(
    jobId: number,
    endpointId: number,
    change: (part: JobPart) => JobPart | null,
  ): Promise<JobPart | null> {
    const key = jobKeys.part(jobId, endpointId);
    return busyRetry(() =>
      retryAtomic(async () => {
        const entry = await this.kv.get<JobPart>(key);
        if (!entry.value) return null;
        const next = change(entry.value);
        if (!next) return null;
        return (await this.kv.atomic().check(entry).set(key, next).commit()).ok ? next : undefined;
      })
    );
  }

  claimPart(
    jobId: number,
    endpointId: number,
    owner: string,
    ttlMs: number,
  ): Promise<JobPart | null> {
    return this.#changePart(jobId, endpointId, (part) => {
      const now = this.now();
      const lapsed = part.state === "claimed" && part.expires_at <= now;
      if (part.state !== "open" && !lapsed) return null;
      return { ...part, state: "claimed", owner, expires_at: now + ttlMs, claims: part.claims + 1 };
    });
  }

  async renewPart(
    jobId: number,
    endpointId: number,
    owner: string,
    ttlMs: number,
  ): Promise<boolean> {
    const renewed = await this.#changePart(
      jobId,
      endpointId,
      (part) =>
        part.state === "claimed" && part.owner === owner
          ? { ...part, expires_at: this.now() + ttlMs }
          : null,
    );
    return renewed !== null;
  }

  async finishPart(
    jobId: number,
    endpointId: number,
    owner: string | null,
    outcome: JobPartOutcome,
  ): Promise<boolean> {
    const done = await this.#changePart(jobId, endpointId, (part) => {
      const mine = owner === null
        ? part.state === "open"
        : part.state === "claimed" && part.owner === owner;
      return mine ? { ...part, state: "done", expires_at: 0, outcome } : null;
    });
    return done !== null;
  }

  async clearParts(jobId: number): Promise<void> {
    const keys: Deno.KvKey[] = [];
    for await (const entry of this.kv.list({ prefix: jobKeys.partsOf(jobId) })) {
      keys.push(entry.key);
    }
    for (let i = 0; i < keys.length; i += 500) {
      const op = this.kv.atomic();
      for (const key of keys.slice(i, i + 500)) op.delete(key);
      await busyRetry(() => op.commit());
    }
  }

  async claimSettlement(jobId: number): Promise<boolean> {
    const key = jobKeys.settled(jobId);
    const done = await busyRetry(() =>
      this.kv.atomic().check({ key, versionstamp: null }).set(key, this.now(), {
        expireIn: 7 * 24 * 3600 * 1000,
      }).commit()
    );
    return done.ok;
  }

  async enqueue(jobId: number, delayMs: number): Promise<void> {
    const message: JobMessage = { type: "bridgebox.sync-job", job_id: jobId };
    const delay = Math.max(0, Math.min(MAX_DELAY_MS, Math.round(delayMs)));
    await busyRetry(() => this.kv.enqueue(message, delay ? { delay } : undefined));
  }

  listen(handler: (jobId: number) => Promise<void>): Promise<void> {
    return this.kv.listenQueue(async (message: unknown) => {
      if (isJobMessage(message)) await handler(message.job_id);
    });
  }

  async setProgress(jobId: number, frame: unknown): Promise<void> {
    // Progress is transient: it expires on its own if the job's owner dies.
    await busyRetry(() => this.kv.set(jobKeys.progress(jobId), frame, { expireIn: 3_600_000 }));
  }

  async progress(jobId: number): Promise<unknown> {
    return (await this.kv.get(jobKeys.progress(jobId))).value;
  }

  async clearProgress(jobId: number): Promise<void> {
    await busyRetry(() => this.kv.delete(jobKeys.progress(jobId)));
  }

  async markFinished(kind: JobKind, jobId: number): Promise<void> {
    await busyRetry(() => this.kv.set(jobKeys.finished(kind, jobId), this.now()));
  }

  async finished(kind: JobKind): Promise<number[]> {
    const out: number[] = [];
    for await (const entry of this.kv.list({ prefix: jobKeys.finishedPrefix(kind) })) {
      out.push(entry.key[entry.key.length - 1] as number);
    }
    return out;
  }

  async forgetFinished(kind: JobKind, jobIds: number[]): Promise<void> {
    for (let i = 0; i < jobIds.length; i += 500) {
      const op = this.kv.atomic();
      for (const id of jobIds.slice(i, i + 500)) op.delete(jobKeys.finished(kind, id));
      await op.commit();
    }
  }

  async *watch(jobId: number, signal: AbortSignal): AsyncIterable<void> {
    const stream = this.kv.watch([
      keys.inventoryObject("core.job", jobId),
      jobKeys.progress(jobId),
    ]);
    const reader = stream.getReader();
    const stop = () => reader.cancel().catch(() => {});
    signal.addEventListener("abort", stop, { once: true });
    try {
      while (!signal.aborted) {
        const { done } = await reader.read();
        if (done) return;
        yield;
      }
    } finally {
      signal.removeEventListener("abort", stop);
      await reader.cancel().catch(() => {});
    }
  }
}
