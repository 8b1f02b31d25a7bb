/**
 * `deno task rekey`: asks the running server to re-seal every stored endpoint secret under its
 * current key (`POST /credentials/rekey`) and prints what changed. It goes through the server
 * rather than opening the KV file itself, so it can never work on another store than the one the
 * server uses, and the server's own keys (SERVICE_ENCRYPTION_KEY, the plugin's encryption_key)
 * are the ones used.
 *
 *   BRIDGEBOX_API_KEY=<backend key> deno task rekey [--url http://localhost:8800]
 *
 * Exit status: 0 when nothing failed, 1 when a record could not be re-sealed or the server
 * refused, 2 for a usage error.
 */

export function rekeyUrl(args: string[], env: Record<string, string | undefined>): string {
  const at = args.indexOf("--url");
  const given = at >= 0 ? args[at + 1] : env.BRIDGEBOX_URL;
  const base = given ?? `http://localhost:${env.PORT || "8800"}`;
  const url = new URL(base); // throws on a malformed value: a usage error
  if (!/^https?:$/.test(url.protocol)) throw new TypeError(`not an http(s) URL: ${base}`);
  return new URL("credentials/rekey", url.href.endsWith("/") ? url : `${url.href}/`).href;
}

if (import.meta.main) {
  const env = Deno.env.toObject();
  let url: string;
  try {
    url = rekeyUrl(Deno.args, env);
  } catch (error) {
    console.error(`deno task rekey: ${(error as Error).message}`);
    Deno.exit(2);
  }
  const key = env.BRIDGEBOX_API_KEY;
  if (!key) {
    console.error("deno task rekey: set BRIDGEBOX_API_KEY to a backend API key");
    Deno.exit(2);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "X-Service-API-Key": key },
      redirect: "manual",
    });
  } catch (error) {
    console.error(`deno task rekey: ${url} did not answer (${(error as Error).message})`);
    Deno.exit(1);
  }
  const text = await res.text();
  if (res.status !== 200) {
    console.error(`deno task rekey: ${url} answered ${res.status}: ${text.slice(0, 500)}`);
    Deno.exit(1);
  }
  const report = JSON.parse(text) as {
    resealed: number;
    unchanged: number;
    failed: { endpoint: string; reason: string }[];
  };
  console.log(
    `resealed ${report.resealed}, unchanged ${report.unchanged}, failed ${report.failed.length}`,
  );
  for (const f of report.failed) console.log(`  ${f.endpoint}: ${f.reason}`);
  Deno.exit(report.failed.length ? 1 : 0);
}
