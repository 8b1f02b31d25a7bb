import { startWired } from "../../browser/_wired.ts";
const w = await startWired({ hypervisor: true });
console.log(w.base, w.token);
const be = await w.api("GET", "/api/plugins/service/endpoints/backend/");
const key = be.body.results[0].token;
const t0 = performance.now();
const r = await fetch(w.base + "/full-update", { headers: { "x-service-api-key": key } });
console.log(
  "full-update",
  r.status,
  (await r.text()).slice(0, 600),
  Math.round(performance.now() - t0),
  "ms",
);
await Deno.writeTextFile(
  "/tmp/dev_server.json",
  JSON.stringify({ base: w.base, token: w.token, key }),
);
await new Promise(() => {});
