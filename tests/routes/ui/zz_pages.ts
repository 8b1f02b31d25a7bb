const { base, token } = JSON.parse(await Deno.readTextFile("/tmp/dev_server.json"));
let r = await fetch(base + "/ui/login");
const c1 = r.headers.getSetCookie()[0].split(";")[0];
const csrf = /name="_login_csrf" value="([^"]+)"/.exec(await r.text())![1];
r = await fetch(base + "/ui/login", {
  method: "POST",
  redirect: "manual",
  headers: { cookie: c1, "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ _login_csrf: csrf, token }),
});
const sc = r.headers.getSetCookie().find((s) => s.startsWith("bridgebox_session="))!.split(";")[0];
await r.body?.cancel();
const pages = Deno.args.length ? Deno.args : [
  "/ui/",
  "/ui/endpoints",
  "/ui/vms",
  "/ui/nodes",
  "/ui/clusters",
  "/ui/storage",
  "/ui/backup-routines",
  "/ui/replications",
  "/ui/tasks",
  "/ui/sync",
  "/ui/jobs",
  "/ui/actions",
  "/ui/settings",
  "/ui/endpoints/hypervisor/1",
  "/ui/vms?type=lxc",
];
for (const p of pages) {
  const t0 = performance.now();
  const res = await fetch(base + p, { headers: { cookie: sc } });
  const html = await res.text();
  const text = html.replace(/<(script|style)[\s\S]*?<\/\1>/g, "").replace(/<[^>]+>/g, " ").replace(
    /\s+/g,
    " ",
  );
  console.log(`== ${p} ${res.status} ${html.length}B ${Math.round(performance.now() - t0)}ms`);
  if (Deno.env.get("V")) console.log(text.slice(text.indexOf("Skip to content") + 15, 3000));
}
