/**
 * Runs first in every task (deno.json): makes sure `node_modules/` holds the pinned npm packages.
 *
 * deno.json says `"nodeModulesDir": "manual"` because with `"auto"` `deno task` installs them
 * itself before any task starts and prints a `Download`/`Initialize` line per package (about 900
 * on a first start), which no `--quiet` in a task can hide. Here a first start prints one line
 * and installs quietly; later starts cost one small file read (the marker below records the
 * deno.json and deno.lock the installation was made from, so a changed pin installs again).
 */
const ROOT = new URL("../", import.meta.url);
const MODULES = new URL("node_modules/", ROOT);
const MARKER = new URL(".bridgebox-installed", MODULES);

async function fingerprint(): Promise<string> {
  const parts = await Promise.all(
    ["deno.json", "deno.lock"].map((name) =>
      Deno.readTextFile(new URL(name, ROOT)).catch(() => "")
    ),
  );
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`${Deno.version.deno}\n${parts.join("\n")}`),
  );
  return new Uint8Array(digest).toHex();
}

async function exists(url: URL): Promise<boolean> {
  try {
    await Deno.stat(url);
    return true;
  } catch {
    return false;
  }
}

export async function ensureDependencies(say: (line: string) => void): Promise<boolean> {
  const wanted = await fingerprint();
  const have = await Deno.readTextFile(MARKER).catch(() => null);
  if (have?.trim() === wanted) return true;
  if (!await exists(MODULES)) {
    say("fetching dependencies once (the pinned npm packages; about a minute)…");
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["install", "--quiet"],
    cwd: decodeURIComponent(ROOT.pathname),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stderr).trim() ||
      new TextDecoder().decode(out.stdout).trim();
    say(`could not fetch the npm packages (deno install): ${text}`);
    return false;
  }
  await Deno.writeTextFile(MARKER, `${wanted}\n`);
  return true;
}

if (import.meta.main) {
  const ok = await ensureDependencies((line) => console.error(line));
  if (!ok) Deno.exit(1);
}
