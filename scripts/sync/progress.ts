/**
 * What a sync run has seen so far: one row per stage (status, progress, counts, time), the
 * error frames, the `complete` frames and failures to open a stream. Views read it; the run
 * feeds it frames.
 */
import type { CompleteFrame, ErrorFrame, OpenFailure, StageCounts, SyncFrame } from "./events.ts";
import { COUNT_FIELDS } from "./events.ts";

export type RowStatus = "running" | "completed" | "failed";

export interface StageRow {
  step: string;
  status: RowStatus;
  message: string;
  current: number;
  total: number;
  counts: StageCounts | undefined;
  startedAt: number;
  endedAt: number | undefined;
}

export interface Problem {
  /** Stage it belongs to, when known. */
  step?: string;
  title: string;
  /** Further lines: operation, URL, upstream status and body, hint. */
  lines: string[];
}

export class SyncProgress {
  readonly rows: StageRow[] = [];
  readonly problems: Problem[] = [];
  readonly completes: CompleteFrame[] = [];
  /** Streams that ended without their `complete` frame, and streams never opened. */
  incomplete = 0;
  /** Details already shown through error frames, so `complete` does not repeat them. */
  readonly #reported = new Set<string>();

  constructor(private readonly now: () => number) {}

  row(step: string): StageRow {
    let row = this.rows.find((r) => r.step === step);
    if (!row) {
      row = {
        step,
        status: "running",
        message: "",
        current: 0,
        total: 0,
        counts: undefined,
        startedAt: this.now(),
        endedAt: undefined,
      };
      this.rows.push(row);
    }
    return row;
  }

  /** Applies a frame; returns the problem it raised, if any (for views that print at once). */
  apply(frame: SyncFrame): Problem | undefined {
    switch (frame.kind) {
      case "step": {
        const row = this.row(frame.step);
        if (frame.message) row.message = frame.message;
        if (frame.progress) {
          row.current = frame.progress.current;
          row.total = frame.progress.total;
        }
        if (frame.status === "started") {
          if (row.status === "failed") return undefined;
          row.status = "running";
          row.startedAt = this.now();
        } else if (frame.status === "completed" || frame.status === "failed") {
          // A stage that sent an error frame stays failed even when it completes its run.
          row.status = row.status === "failed" ? "failed" : frame.status;
          row.endedAt = this.now();
          if (frame.result) row.counts = fillCounts(frame.result);
          if (frame.status === "completed" && row.total > 0) row.current = row.total;
        }
        return undefined;
      }
      case "error": {
        for (const seen of [frame.error, describe(frame.detail)]) {
          if (seen) this.#reported.add(seen);
        }
        if (frame.step) {
          const row = this.row(frame.step);
          row.status = "failed";
          row.endedAt ??= this.now();
        }
        return this.#add(errorProblem(frame));
      }
      case "complete": {
        this.completes.push(frame);
        for (const stage of frame.stages ?? []) {
          const row = this.rows.find((r) => r.step === stage.step);
          if (row && !row.counts) row.counts = fillCounts(stage.result);
        }
        for (const row of this.rows) {
          // A stage still running when the stream completes did not finish.
          if (row.status === "running") {
            row.status = frame.ok ? "completed" : "failed";
            row.endedAt = this.now();
          }
        }
        if (frame.ok) return undefined;
        const unseen = (frame.errors ?? []).map((e) => describe(e.detail))
          .filter((d) => d && !this.#reported.has(d));
        if (unseen.length === 0 && this.problems.length > 0) return undefined;
        return this.#add({
          title: `sync failed: ${frame.message ?? "the server reported a failure"}`,
          lines: unseen,
        });
      }
      case "unreadable":
        return this.#add({
          title: `unreadable ${frame.event} frame from the server`,
          lines: [frame.data.slice(0, 300)],
        });
    }
  }

  /** A stream that could not be opened (server answered an error, or no answer). */
  openFailed(failure: OpenFailure, path: string): Problem {
    this.incomplete++;
    const title = failure.status === 0
      ? `no answer for GET ${path}`
      : `server answered ${failure.status} to GET ${path}`;
    return this.#add({
      title,
      lines: [describe(failure.detail), ...(failure.hint ? [`hint: ${failure.hint}`] : [])]
        .filter(Boolean),
    });
  }

  /** A stream that ended, or broke, before its `complete` frame. */
  streamLost(path: string, cause: string): Problem {
    this.incomplete++;
    for (const row of this.rows) {
      if (row.status === "running") {
        row.status = "failed";
        row.endedAt = this.now();
      }
    }
    return this.#add({
      title: `the stream GET ${path} ended before its complete frame`,
      lines: [cause],
    });
  }

  get ok(): boolean {
    return this.incomplete === 0 && this.completes.length > 0 &&
      this.completes.every((c) => c.ok) && this.problems.length === 0 &&
      this.rows.every((r) => r.status === "completed");
  }

  #add(problem: Problem): Problem {
    this.problems.push(problem);
    return problem;
  }
}

function fillCounts(partial: Partial<StageCounts>): StageCounts {
  const out = {} as StageCounts;
  for (const field of COUNT_FIELDS) out[field] = partial[field] ?? 0;
  return out;
}

/** Known detail fields, in the order an operator reads them. */
const DETAIL_ORDER = [
  "operation",
  "method",
  "url",
  "status",
  "upstream_status",
  "body",
  "body_excerpt",
  "excerpt",
  "object",
  "message",
  "hint",
];

/** A detail (sentence or object) as text; objects become `field: value` lines joined. */
export function describe(detail: unknown): string {
  if (detail === undefined || detail === null) return "";
  if (typeof detail === "string") return detail;
  if (typeof detail !== "object" || Array.isArray(detail)) return JSON.stringify(detail);
  return detailLines(detail as Record<string, unknown>).join("\n");
}

function detailLines(detail: Record<string, unknown>): string[] {
  const keys = Object.keys(detail).sort((a, b) => rank(a) - rank(b));
  return keys.filter((k) => detail[k] !== undefined && detail[k] !== null && detail[k] !== "")
    .map((k) => `${k}: ${typeof detail[k] === "string" ? detail[k] : JSON.stringify(detail[k])}`);
}

function rank(key: string): number {
  const i = DETAIL_ORDER.indexOf(key);
  return i === -1 ? DETAIL_ORDER.length - 1 : i;
}

function errorProblem(frame: ErrorFrame): Problem {
  const where = frame.step ? `error in ${frame.step}` : "error";
  const lines: string[] = [];
  let headline = frame.error;
  if (typeof frame.detail === "string") {
    if (headline) lines.push(frame.detail);
    else headline = frame.detail;
  } else if (frame.detail !== undefined) {
    lines.push(...describe(frame.detail).split("\n").filter(Boolean));
  }
  for (const [field, value] of Object.entries(frame.context)) {
    lines.push(`${field.replace("_", " ")}: ${value}`);
  }
  if (frame.hint && !lines.some((l) => l.includes(frame.hint!))) lines.push(`hint: ${frame.hint}`);
  return { step: frame.step, title: `${where}: ${headline ?? "(no description)"}`, lines };
}
