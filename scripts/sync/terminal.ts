/**
 * The real process around `deno task sync` and `deno task demo`: stdout and stderr, the
 * terminal's width, colour unless NO_COLOR, Ctrl-C as an abort signal.
 */
import type { SyncIo } from "./run.ts";

const encoder = new TextEncoder();

function writer(file: { writeSync(p: Uint8Array): number }): (text: string) => void {
  return (text) => {
    let bytes = encoder.encode(text);
    while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
  };
}

export function processIo(signal?: AbortSignal): SyncIo {
  const isTerminal = Deno.stdout.isTerminal();
  return {
    fetch: globalThis.fetch,
    out: writer(Deno.stdout),
    err: writer(Deno.stderr),
    columns: () => {
      try {
        return Deno.consoleSize().columns;
      } catch {
        return 100;
      }
    },
    color: isTerminal && !Deno.env.get("NO_COLOR"),
    now: () => performance.now(),
    isTerminal,
    signal,
  };
}

/** An AbortSignal that fires on the first Ctrl-C (a second one ends the process at once). */
export function interruptSignal(): AbortSignal {
  const controller = new AbortController();
  try {
    Deno.addSignalListener("SIGINT", () => {
      if (controller.signal.aborted) Deno.exit(130);
      controller.abort(new Error("interrupted"));
    });
  } catch {
    // No signals on this platform: Ctrl-C ends the process as usual.
  }
  return controller.signal;
}
