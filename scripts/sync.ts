/**
 * `deno task sync [--url URL] [--stages a,b] [--endpoints 1,2] [--plain]`: runs a full update
 * or chosen stages against a running backend, with a progress bar per stage on a terminal and
 * plain lines when piped, then the result table. The key comes from BRIDGEBOX_API_KEY (or
 * --key). See `deno task sync --help` and scripts/sync/.
 */
import { syncMain } from "./sync/run.ts";
import { interruptSignal, processIo } from "./sync/terminal.ts";

if (import.meta.main) {
  const code = await syncMain(Deno.args, Deno.env.toObject(), processIo(interruptSignal()));
  Deno.exit(code);
}
