// deno-lint-ignore-file no-explicit-any
/**
 * The load driver shared by the CI load test and `deno task reliability`: N clients, each in a
 * loop for a while, mixing authenticated backend reads, inventory lists and writes and hypervisor
 * calls against one server; then every write that answered 201 is read back.
 */

export interface LoadTarget {
  base: string;
  backendKey: string;
  inventoryToken: string;
  /** Mock login for the hypervisor surface. */
  hypervisorUser: string;
  hypervisorPassword: string;
}

export interface LoadReport {
  clients: number;
  seconds: number;
  requests: number;
  byStatus: Record<string, number>;
  fiveHundreds: number;
  transportErrors: number;
  writes: number;
  lostWrites: number;
  duplicatedWrites: number;
  p50: number;
  p99: number;
  max: number;
  perKind: Record<string, { requests: number; p99: number }>;
}

const KINDS = ["backend-read", "inventory-list", "inventory-write", "hypervisor"] as const;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

export async function runLoad(
  target: LoadTarget,
  options: { clients: number; durationMs: number; tag: string },
): Promise<LoadReport> {
  const login = await fetch(`${target.base}/api2/json/access/ticket`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      username: target.hypervisorUser,
      password: target.hypervisorPassword,
    }),
  });
  const ticket = (await login.json()).data;
  const headers: Record<(typeof KINDS)[number], Record<string, string>> = {
    "backend-read": { "x-service-api-key": target.backendKey },
    "inventory-list": { authorization: `Token ${target.inventoryToken}` },
    "inventory-write": {
      authorization: `Token ${target.inventoryToken}`,
      "content-type": "application/json",
    },
    hypervisor: { cookie: `PVEAuthCookie=${ticket.ticket}` },
  };
  const latencies: Record<string, number[]> = Object.fromEntries(KINDS.map((k) => [k, []]));
  const byStatus: Record<string, number> = {};
  let transportErrors = 0;
  const written: { id: number; slug: string }[] = [];
  const started = performance.now();
  const until = started + options.durationMs;

  const one = async (client: number, n: number) => {
    const kind = KINDS[(client + n) % KINDS.length];
    let path: string;
    let init: RequestInit = { headers: headers[kind] };
    const slug = `${options.tag}-${client}-${n}`;
    switch (kind) {
      case "backend-read":
        path = n % 2 ? "/hypervisor/endpoints" : "/auth/keys";
        break;
      case "inventory-list":
        path = n % 3
          ? "/api/dcim/sites/?limit=20&ordering=-id"
          : "/api/virtualization/virtual-machines/?limit=20";
        break;
      case "inventory-write":
        path = "/api/dcim/sites/";
        init = { ...init, method: "POST", body: JSON.stringify({ name: slug, slug }) };
        break;
      case "hypervisor":
        path = n % 2 ? "/api2/json/cluster/resources?type=vm" : "/api2/json/nodes";
        break;
    }
    const t0 = performance.now();
    try {
      const res = await fetch(target.base + path, init);
      const text = await res.text();
      latencies[kind].push(performance.now() - t0);
      byStatus[res.status] = (byStatus[res.status] ?? 0) + 1;
      if (kind === "inventory-write" && res.status === 201) {
        written.push({ id: JSON.parse(text).id, slug });
      }
    } catch {
      transportErrors++;
    }
  };

  await Promise.all(Array.from({ length: options.clients }, async (_, client) => {
    for (let n = 0; performance.now() < until; n++) await one(client, n);
  }));
  const seconds = (performance.now() - started) / 1000;

  // Every 201 is readable, and the tag's objects are exactly those (none lost, none twice).
  let lostWrites = 0;
  const inventory = { authorization: `Token ${target.inventoryToken}` };
  for (let i = 0; i < written.length; i += 50) {
    const ids = written.slice(i, i + 50);
    const res = await fetch(
      `${target.base}/api/dcim/sites/?limit=50&${ids.map((w) => `id=${w.id}`).join("&")}`,
      { headers: inventory },
    );
    const found = new Map<number, any>(
      (await res.json()).results.map((s: any) => [s.id, s]),
    );
    for (const w of ids) if (found.get(w.id)?.slug !== w.slug) lostWrites++;
  }
  const tagged = await fetch(
    `${target.base}/api/dcim/sites/?limit=1&slug__isw=${options.tag}-`,
    { headers: inventory },
  );
  const taggedCount = (await tagged.json()).count as number;
  const all = Object.values(latencies).flat().sort((a, b) => a - b);
  const perKind: LoadReport["perKind"] = {};
  for (const k of KINDS) {
    const sorted = latencies[k].sort((a, b) => a - b);
    perKind[k] = { requests: sorted.length, p99: round(percentile(sorted, 0.99)) };
  }
  return {
    clients: options.clients,
    seconds: round(seconds),
    requests: all.length + transportErrors,
    byStatus,
    fiveHundreds: Object.entries(byStatus).filter(([s]) => Number(s) >= 500)
      .reduce((n, [, c]) => n + c, 0),
    transportErrors,
    writes: written.length,
    lostWrites,
    duplicatedWrites: Math.max(0, taggedCount - written.length),
    p50: round(percentile(all, 0.5)),
    p99: round(percentile(all, 0.99)),
    max: round(all.at(-1) ?? 0),
    perKind,
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
