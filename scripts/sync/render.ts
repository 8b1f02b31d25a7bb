/**
 * How a sync run looks: on a terminal a block of progress bars (one per stage) redrawn in
 * place with ANSI cursor movement; piped, plain lines a log keeps (start, every quarter,
 * end); then the result table either way. Problems are printed as they happen, on stderr.
 */
import type { SyncFrame } from "./events.ts";
import { COUNT_FIELDS } from "./events.ts";
import type { Problem, StageRow, SyncProgress } from "./progress.ts";

export interface Terminal {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Terminal width, for truncating lines. */
  columns: () => number;
  color: boolean;
  now: () => number;
}

export interface SyncView {
  frame(progress: SyncProgress, frame: SyncFrame, problem: Problem | undefined): void;
  problem(progress: SyncProgress, problem: Problem): void;
  finish(progress: SyncProgress): void;
}

const ESC = "\x1b[";
const BAR_WIDTH = 24;
const REDRAW_EVERY_MS = 100;
const SPINNER = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

function paint(term: Terminal, code: number, text: string): string {
  return term.color ? `${ESC}${code}m${text}${ESC}0m` : text;
}

function seconds(row: StageRow): string {
  return (((row.endedAt ?? row.startedAt) - row.startedAt) / 1000).toFixed(2);
}

function countsSummary(row: StageRow): string {
  const c = row.counts;
  if (!c) return "";
  const parts = COUNT_FIELDS.filter((f) => c[f] > 0).map((f) => `${c[f]} ${f}`);
  return parts.length ? parts.join(", ") : "nothing to do";
}

export function problemText(problem: Problem): string {
  return [problem.title, ...problem.lines.flatMap((l) => l.split("\n")).map((l) => `    ${l}`)]
    .join("\n") + "\n";
}

/** Redraws one line per stage in place. */
export class TtyView implements SyncView {
  #drawn = 0;
  #lastDraw = -Infinity;

  constructor(private readonly term: Terminal) {}

  frame(progress: SyncProgress, frame: SyncFrame, problem: Problem | undefined): void {
    if (problem) return this.problem(progress, problem);
    const onlyProgress = frame.kind === "step" && frame.status === "progress";
    if (onlyProgress && this.term.now() - this.#lastDraw < REDRAW_EVERY_MS) return;
    this.#draw(progress);
  }

  problem(progress: SyncProgress, problem: Problem): void {
    this.#erase();
    this.term.err(paint(this.term, 31, problemText(problem)));
    this.#draw(progress);
  }

  finish(progress: SyncProgress): void {
    this.#draw(progress);
    this.term.out("\n" + resultTable(progress) + summary(progress, this.term));
  }

  #erase(): void {
    // Up to the block's first line, then clear to the end of the screen.
    if (this.#drawn > 0) this.term.out(`${ESC}${this.#drawn}F${ESC}0J`);
    this.#drawn = 0;
  }

  #draw(progress: SyncProgress): void {
    const width = Math.max(40, this.term.columns()) - 1;
    const nameWidth = Math.max(18, ...progress.rows.map((r) => r.step.length));
    let text = this.#drawn > 0 ? `${ESC}${this.#drawn}F` : "";
    for (const row of progress.rows) {
      text += `${ESC}2K${this.#line(row, nameWidth, width)}\n`;
    }
    this.term.out(text);
    this.#drawn = progress.rows.length;
    this.#lastDraw = this.term.now();
  }

  #line(row: StageRow, nameWidth: number, width: number): string {
    // The bar gives way on a narrow terminal so the counts and the message stay visible.
    const barWidth = Math.max(8, Math.min(BAR_WIDTH, width - nameWidth - 40));
    const ratio = row.total > 0 ? Math.min(1, row.current / row.total) : 0;
    const filled = row.status === "completed" ? barWidth : Math.round(ratio * barWidth);
    const bar = "█".repeat(filled) + "░".repeat(barWidth - filled);
    const count = row.total > 0 ? `${row.current}/${row.total}` : "";
    const tail = row.status === "completed"
      ? `${countsSummary(row)} · ${seconds(row)} s`
      : row.message;
    const mark = row.status === "completed"
      ? "✔"
      : row.status === "failed"
      ? "✘"
      : SPINNER[Math.floor(this.term.now() / 100) % SPINNER.length];
    const plain = `${mark} ${row.step.padEnd(nameWidth)} ${bar} ${count.padStart(11)}  ${tail}`;
    const cut = [...plain].length > width ? [...plain].slice(0, width - 1).join("") + "…" : plain;
    const color = row.status === "completed" ? 32 : row.status === "failed" ? 31 : 36;
    return paint(this.term, color, cut.slice(0, 1)) + cut.slice(1);
  }
}

/** One line per event worth a log line. */
export class PlainView implements SyncView {
  readonly #quarter = new Map<string, number>();

  constructor(private readonly term: Terminal) {}

  frame(progress: SyncProgress, frame: SyncFrame, problem: Problem | undefined): void {
    if (frame.kind === "step") {
      const row = progress.row(frame.step);
      const message = frame.message ? ` - ${frame.message}` : "";
      if (frame.status === "started") {
        this.#quarter.set(frame.step, 0);
        this.term.out(`${frame.step}: started${message}\n`);
      } else if (frame.status === "progress" && row.total > 0) {
        const quarter = Math.floor((row.current / row.total) * 4);
        if (quarter > (this.#quarter.get(frame.step) ?? 0) && quarter < 4) {
          this.#quarter.set(frame.step, quarter);
          this.term.out(`${frame.step}: ${quarter * 25}% (${row.current}/${row.total})\n`);
        }
      } else if (frame.status === "completed") {
        this.term.out(
          `${frame.step}: completed in ${seconds(row)} s - ${countsSummary(row) || "no result"}\n`,
        );
      } else if (frame.status === "failed") {
        this.term.out(`${frame.step}: failed${message}\n`);
      }
    }
    if (problem) this.problem(progress, problem);
  }

  problem(_progress: SyncProgress, problem: Problem): void {
    this.term.err(problemText(problem));
  }

  finish(progress: SyncProgress): void {
    this.term.out("\n" + resultTable(progress) + summary(progress, this.term));
  }
}

const COLUMNS = ["created", "updated", "unchanged", "deleted", "failed"] as const;

/** stage, created, updated, unchanged, deleted, failed, seconds, status; then totals. */
export function resultTable(progress: SyncProgress): string {
  const header = ["stage", ...COLUMNS, "seconds", "status"];
  const rows = progress.rows.map((row) => [
    row.step,
    ...COLUMNS.map((f) => row.counts ? String(row.counts[f]) : "-"),
    seconds(row),
    row.status === "completed" ? "ok" : row.status,
  ]);
  if (rows.length === 0) return "No stage reported a result.\n";
  const total = [
    "total",
    ...COLUMNS.map((f) => String(progress.rows.reduce((n, r) => n + (r.counts?.[f] ?? 0), 0))),
    progress.rows.reduce((n, r) => n + Number(seconds(r)), 0).toFixed(2),
    progress.rows.every((r) => r.status === "completed") ? "ok" : "failed",
  ];
  const all = [header, ...rows, total];
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const format = (cells: string[]) =>
    cells.map((cell, i) =>
      i === 0 || i === cells.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])
    ).join("  ").trimEnd() + "\n";
  const rule = widths.map((w) => "-".repeat(w)).join("  ") + "\n";
  return format(header) + rule + rows.map(format).join("") + rule + format(total);
}

function summary(progress: SyncProgress, term: Terminal): string {
  if (progress.ok) {
    // One stream per chosen stage: the last stream's message would speak for one stage only.
    const message = progress.completes.length === 1
      ? progress.completes[0].message
      : `${progress.completes.length} stages, one stream each`;
    const line = message && /^sync complete/i.test(message)
      ? message
      : `Sync completed${message ? `: ${message}` : ""}`;
    return paint(term, 32, `\n${line.replace(/\.?$/, ".")}`) + "\n";
  }
  const titles = progress.problems.map((p) => `  - ${p.title}`).join("\n");
  return paint(term, 31, "\nSync FAILED.") + (titles ? `\n${titles}` : "") + "\n";
}
