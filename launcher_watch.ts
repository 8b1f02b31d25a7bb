/**
 * `npx deno task start` runs three processes: npx (node) → `deno task` → `deno run main.ts`.
 * A SIGTERM to npx ends npx only; the other two are re-parented and keep serving. So when this
 * process runs under `deno task`, it remembers who launched the task and stops (gracefully)
 * once that launcher is gone.
 *
 * Only under `deno task`, not on Windows, and only a *change* of launcher
 * counts: a task started by systemd or in a container keeps its launcher for life, and
 * `deno run main.ts` (Deno Deploy, nohup, service managers) is never watched.
 */

/** The parent pid of `pid`, from /proc/<pid>/stat; null where /proc cannot be read. */
export function parentPid(
  pid: number,
  readText: (path: string) => string = Deno.readTextFileSync,
): number | null {
  try {
    const stat = readText(`/proc/${pid}/stat`);
    // "<pid> (<comm>) <state> <ppid> ...": comm may hold spaces or parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ppid = Number(fields[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}

/** Reads a process's parent pid and command line: /proc where readable, else `ps`. */
export interface ProcessTable {
  parentPid(pid: number): Promise<number | null>;
  commandLine(pid: number): Promise<string[] | null>;
}

/**
 * Deno lets only --allow-all read /proc, so `deno task start` (which grants `--allow-run=ps`)
 * asks `ps`; both work on Linux, `ps` on macOS too.
 */
export const systemProcessTable: ProcessTable = {
  async parentPid(pid) {
    const viaProc = parentPid(pid);
    if (viaProc !== null) return viaProc;
    const out = await ps(["-o", "ppid=", "-p", String(pid)]);
    const ppid = Number(out?.trim());
    return out && Number.isInteger(ppid) && ppid >= 0 ? ppid : null;
  },
  async commandLine(pid) {
    try {
      return Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").filter(Boolean);
    } catch { /* not readable: ask ps */ }
    const out = await ps(["-o", "args=", "-p", String(pid)]);
    return out?.trim() ? out.trim().split(/\s+/) : null;
  },
};

async function ps(args: string[]): Promise<string | null> {
  try {
    if (Deno.permissions.querySync({ name: "run", command: "ps" }).state !== "granted") return null;
    const out = await new Deno.Command("ps", { args, stdout: "piped", stderr: "null" }).output();
    return out.success ? new TextDecoder().decode(out.stdout) : null;
  } catch {
    return null;
  }
}

/** Whether a command line is `deno ... task ...`. */
export function isDenoTaskCommand(args: string[] | null): boolean {
  return !!args && /(^|\/)deno[^/]*$/.test(args[0] ?? "") && args.slice(1).includes("task");
}

/**
 * Calls `onGone` once when the process that launched our `deno task` exits (or the task
 * itself does). Returns a function that stops watching; a no-op where nothing is watched.
 */
export async function watchLauncher(
  onGone: (reason: string) => void,
  { intervalMs = 1000, table = systemProcessTable } = {},
): Promise<() => void> {
  if (Deno.build.os === "windows") return () => {};
  let task: number;
  try {
    task = Deno.ppid;
  } catch {
    return () => {};
  }
  if (!isDenoTaskCommand(await table.commandLine(task))) return () => {};
  const launcher = await table.parentPid(task);
  if (launcher === null) return () => {};
  let checking = false;
  const timer = setInterval(async () => {
    if (checking) return;
    checking = true;
    const now = Deno.ppid === task ? await table.parentPid(task) : null;
    checking = false;
    if (now === launcher) return;
    clearInterval(timer);
    onGone(`the process that ran "deno task" (pid ${launcher}) has exited`);
  }, intervalMs);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
