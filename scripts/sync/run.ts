/**
 * `deno task sync` without the process around it: runs a full update (or the chosen stages,
 * one stream each) against a backend, feeding every frame to the progress model and a view,
 * and answers the exit status. `deno task demo` runs its first sync through here too.
 */
import { resolveEndpoints } from "./endpoints.ts";
import { parseSyncArgs, type SyncOptions, USAGE } from "./args.ts";
import { openStageStream, type PlanFrame, planLine } from "./events.ts";
import { SyncProgress } from "./progress.ts";
import { PlainView, type SyncView, type Terminal, TtyView } from "./render.ts";
import { FULL_UPDATE_STREAM, SYNC_STAGES } from "./stages.ts";

export interface SyncIo extends Terminal {
  fetch: typeof fetch;
  /** True when stdout is a terminal: progress bars instead of plain lines. */
  isTerminal: boolean;
  /** Ctrl-C: aborting it closes the stream, which stops the work on the server. */
  signal?: AbortSignal;
  idleTimeoutMs?: number;
  readTextFile?: (path: string) => Promise<string>;
}

export interface SyncOutcome {
  ok: boolean;
  exitCode: number;
  progress: SyncProgress;
  /** HTTP status of the first stream the server refused (0: no answer), if any. */
  refusedStatus: number | undefined;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_INTERRUPTED = 130;

export async function runSync(options: SyncOptions, io: SyncIo): Promise<SyncOutcome> {
  const progress = new SyncProgress(io.now);
  const view: SyncView = io.isTerminal && !options.plain ? new TtyView(io) : new PlainView(io);
  const paths = options.stages.length > 0
    ? options.stages.map((s) => s.stream)
    : [FULL_UPDATE_STREAM];
  let client: Deno.HttpClient | undefined;
  if (options.caFile) {
    const pem = await (io.readTextFile ?? Deno.readTextFile)(options.caFile);
    client = Deno.createHttpClient({ caCerts: [pem] });
  }
  let refusedStatus: number | undefined;
  let interrupted = false;
  const plan: PlanFrame[] = [];
  try {
    for (const path of paths) {
      const opened = await openStageStream({
        fetch: io.fetch,
        baseUrl: options.url,
        key: options.key,
        path,
        endpointIds: options.endpointIds,
        dryRun: options.dryRun,
        signal: io.signal,
        idleTimeoutMs: io.idleTimeoutMs,
        client,
      }).catch((error) => {
        if (io.signal?.aborted) return undefined;
        throw error;
      });
      if (!opened) {
        interrupted = true;
        break;
      }
      if (!opened.ok) {
        refusedStatus ??= opened.failure.status;
        view.problem(progress, progress.openFailed(opened.failure, path));
        // The same key, server and inventory copy would refuse every other stage alike.
        break;
      }
      let completed = false;
      try {
        for await (const frame of opened.frames) {
          if (frame.kind === "plan") {
            plan.push(frame);
            continue;
          }
          const problem = progress.apply(frame);
          view.frame(progress, frame, problem);
          if (frame.kind === "complete") completed = true;
        }
      } catch (error) {
        if (io.signal?.aborted) {
          interrupted = true;
          break;
        }
        view.problem(progress, progress.streamLost(path, (error as Error).message));
        continue;
      }
      if (!completed) {
        view.problem(progress, progress.streamLost(path, "the server closed the stream"));
      }
    }
  } finally {
    client?.close();
  }
  if (interrupted) {
    progress.streamLost(paths.at(-1)!, "interrupted");
    view.finish(progress);
    io.err("Interrupted: the stream was closed, so the server stops the work.\n");
    return { ok: false, exitCode: EXIT_INTERRUPTED, progress, refusedStatus };
  }
  view.finish(progress);
  if (options.dryRun) {
    io.out(
      plan.length
        ? `\nPlan (dry run, nothing written): ${plan.length} write(s)\n${
          plan.map((p) => `  ${planLine(p)}\n`).join("")
        }`
        : "\nPlan (dry run, nothing written): nothing to write.\n",
    );
  }
  const ok = progress.ok;
  return { ok, exitCode: ok ? EXIT_OK : EXIT_FAILED, progress, refusedStatus };
}

/** The whole command: arguments and environment in, exit status out. */
export async function syncMain(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  io: SyncIo,
): Promise<number> {
  const parsed = parseSyncArgs(args, env);
  switch (parsed.kind) {
    case "help":
      io.out(USAGE + "\n");
      return EXIT_OK;
    case "list":
      io.out(
        SYNC_STAGES.map((s, i) =>
          `${String(i + 1).padStart(2)}  ${s.type.padEnd(18)}  ${s.summary}\n`
        )
          .join(""),
      );
      return EXIT_OK;
    case "usage-error":
      io.err(`sync: ${parsed.message}\n(see npx -y deno@2.9.6 task sync --help)\n`);
      return EXIT_USAGE;
    case "run": {
      const options = parsed.options;
      const what = options.stages.length > 0
        ? `stages ${options.stages.map((s) => s.type).join(", ")}`
        : "a full update (13 stages)";
      let scope = "";
      if (options.endpointRefs?.length) {
        const client = options.caFile
          ? Deno.createHttpClient({
            caCerts: [await (io.readTextFile ?? Deno.readTextFile)(options.caFile)],
          })
          : undefined;
        const resolved = await resolveEndpoints(
          { url: options.url, key: options.key, refs: options.endpointRefs, client },
          io.fetch,
        ).finally(() => client?.close());
        if (!resolved.ok) {
          io.err(`sync: ${resolved.message}\n`);
          return EXIT_USAGE;
        }
        options.endpointIds = resolved.endpoints.map((e) => e.id);
        scope = `, hypervisor endpoints ${
          resolved.endpoints.map((e) => `${e.id} "${e.name}"`).join(", ")
        }`;
      }
      const dry = options.dryRun ? " as a dry run (nothing is written)" : "";
      io.out(`Running ${what}${dry} on ${options.url}${scope}\n`);
      return (await runSync(options, io)).exitCode;
    }
  }
}
