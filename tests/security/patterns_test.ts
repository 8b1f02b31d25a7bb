/**
 * User-supplied patterns run in the linear-time matcher with a length cap (SECURITY.md
 * "Patterns"): a read-only token cannot stall the process with a catastrophic regex.
 */
import assert from "node:assert/strict";
import { harness, ROOT_TOKEN as ROOT } from "../routes/plugin/_harness.ts";

Deno.test("patterns: a catastrophic __regex from a read-only token answers at once", async () => {
  const h = await harness();
  try {
    // 6 + 18: over a minute in a backtracking engine (V8 took 18 s for 6 + 16 here). The
    // linear matcher takes microseconds, so the 10 s bound holds on a loaded machine and
    // still catches one (more would block the event loop for hours: a hang, not a failure).
    const name = "a".repeat(24);
    const created = await h.call("POST", "/api/dcim/sites/", [
      { name, slug: "catastrophic" },
      { name: "edge-01!", slug: "edge-01" },
    ]);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const reader = await h.token({ permissions: ["dcim.view_site"], write_enabled: false });
    const started = performance.now();
    const res = await h.call(
      "GET",
      `/api/dcim/sites/?name__regex=${encodeURIComponent("^.{6}(.|.|.)*!$")}`,
      undefined,
      { auth: reader },
    );
    const took = performance.now() - started;
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.results.map((s: { name: string }) => s.name), ["edge-01!"]);
    assert.ok(took < 10_000, `took ${Math.round(took)} ms`);
    // Search semantics and case folding, as NetBox.
    const some = await h.call("GET", "/api/dcim/sites/?name__iregex=EDGE-\\d%2B", undefined, {
      auth: reader,
    });
    assert.deepEqual(some.body.results.map((s: { name: string }) => s.name), ["edge-01!"]);
  } finally {
    await h.close();
  }
});

Deno.test("patterns: unsupported or over-long patterns answer 400 naming the filter", async () => {
  const h = await harness();
  try {
    for (
      const [pattern, message] of [
        ["(a)\\1", /Unsupported regular expression/],
        ["(?=a)", /Unsupported regular expression/],
        ["[", /Unsupported regular expression/],
        ["a".repeat(257), /longer than 256 characters/],
      ] as const
    ) {
      const res = await h.call(
        "GET",
        `/api/dcim/sites/?name__regex=${encodeURIComponent(pattern)}`,
      );
      assert.equal(res.status, 400, pattern);
      assert.match(res.body.name__regex[0], message);
    }
  } finally {
    await h.close();
  }
});

Deno.test("patterns: custom-field validation_regex is checked in linear time, and refused when unsupported", async () => {
  const h = await harness();
  try {
    const bad = await h.call("POST", "/api/extras/custom-fields/", {
      name: "backref",
      type: "text",
      object_types: ["dcim.site"],
      validation_regex: "^(a)\\1$",
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.validation_regex[0], /Unsupported regular expression/);
    const cf = await h.call("POST", "/api/extras/custom-fields/", {
      name: "owner",
      type: "text",
      object_types: ["dcim.site"],
      validation_regex: "^(a+)+$",
    });
    assert.equal(cf.status, 201, JSON.stringify(cf.body));
    const started = performance.now();
    const site = await h.call("POST", "/api/dcim/sites/", {
      name: "s1",
      slug: "s1",
      // (a+)+ over 28 a's: over a minute in a backtracking engine (23 s for 26 here).
      custom_fields: { owner: "a".repeat(28) + "!" },
    });
    const took = performance.now() - started;
    assert.equal(site.status, 400);
    assert.match(JSON.stringify(site.body), /must match regex/);
    assert.ok(took < 10_000, `took ${Math.round(took)} ms`);
    const ok = await h.call("POST", "/api/dcim/sites/", {
      name: "s2",
      slug: "s2",
      custom_fields: { owner: "aaaa" },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  } finally {
    await h.close();
  }
});

Deno.test("patterns: one request's pattern filters are bounded in number and in total work (400 naming the limit), and /health is answered meanwhile", async () => {
  const { serveApp } = await import("../e2e/_served_app.ts");
  const served = await serveApp({ INVENTORY_BOOTSTRAP_TOKEN: ROOT }, {});
  const call = async (path: string, auth: string, init: RequestInit = {}) => {
    const res = await fetch(`${served.base}${path}`, {
      ...init,
      headers: {
        authorization: auth,
        "content-type": "application/json",
        accept: "application/json",
      },
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    const root = `Token ${ROOT}`;
    // 400 sites with 200-character descriptions: each 250-character pattern below visits
    // about 200 × 200 / 2 states per site, so three of them need ~30 million steps (seconds
    // of one core, and minutes with 5,000 sites) where the budget allows 5 million.
    // A custom field holding the same text: a cf_ pattern shares the budget.
    const cf = await call("/api/extras/custom-fields/", root, {
      method: "POST",
      body: JSON.stringify({ name: "notes", type: "text", object_types: ["dcim.site"] }),
    });
    assert.equal(cf.status, 201, JSON.stringify(cf.body));
    const sites = Array.from({ length: 400 }, (_, i) => ({
      name: `site-${String(i).padStart(3, "0")}`,
      slug: `site-${i}`,
      description: "a".repeat(200),
      custom_fields: { notes: "a".repeat(200) },
    }));
    const created = await call("/api/dcim/sites/", root, {
      method: "POST",
      body: JSON.stringify(sites),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body).slice(0, 300));
    const tokenRes = await call("/api/users/tokens/", root, {
      method: "POST",
      body: JSON.stringify({
        version: 1,
        permissions: ["dcim.view_site"],
        write_enabled: false,
      }),
    });
    assert.equal(tokenRes.status, 201, JSON.stringify(tokenRes.body));
    const reader = tokenRes.body.header ?? `Token ${tokenRes.body.token}`;

    const long = encodeURIComponent("a".repeat(250));
    const heavy = call(
      `/api/dcim/sites/?description__iregex=${long}&description__iregex=${long}a&description__iregex=${long}b`,
      reader,
    );
    const health = fetch(`${served.base}/health`).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));
    const [refused, healthy] = await Promise.all([heavy, health]);
    assert.equal(refused.status, 400, JSON.stringify(refused.body).slice(0, 300));
    assert.match(refused.body.description__iregex[0], /at most 5,000,000 matching steps/);
    assert.equal(healthy.status, 200);
    const cfHeavy = await call(
      `/api/dcim/sites/?cf_notes__iregex=${long}&cf_notes__iregex=${long}a`,
      reader,
    );
    assert.equal(cfHeavy.status, 400, JSON.stringify(cfHeavy.body).slice(0, 300));
    assert.match(cfHeavy.body.cf_notes__iregex[0], /at most 5,000,000 matching steps/);

    // More than five pattern values in one request: refused before any matching.
    const many = Array.from({ length: 6 }, (_, i) => `name__regex=site-${i}`).join("&");
    const counted = await call(`/api/dcim/sites/?${many}`, reader);
    assert.equal(counted.status, 400);
    assert.match(JSON.stringify(counted.body), /At most 5 __regex \/ __iregex filter values/);

    // Everyday patterns over the same sites stay well inside the budget.
    const fine = await call(
      `/api/dcim/sites/?name__iregex=${encodeURIComponent("^SITE-00\\d$")}&description__regex=a`,
      reader,
    );
    assert.equal(fine.status, 200, JSON.stringify(fine.body).slice(0, 300));
    assert.equal(fine.body.count, 10);
    // Other filters run first, so a heavy pattern over the few records they leave is fine.
    const narrowed = await call(
      `/api/dcim/sites/?name=site-007&description__iregex=${long}`,
      reader,
    );
    assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body).slice(0, 300));
    assert.equal(narrowed.body.count, 0);
    // Whatever their order in the query, and when no index narrows first (`__ic`).
    const later = await call(
      `/api/dcim/sites/?description__iregex=${long}&name__ic=site-007`,
      reader,
    );
    assert.equal(later.status, 200, JSON.stringify(later.body).slice(0, 300));
    assert.equal(later.body.count, 0);
  } finally {
    await served.close();
  }
});

Deno.test("patterns: a write's validation_regex checks share the request's budget (400 naming it), and a light write passes", async () => {
  const h = await harness();
  try {
    const cf = await h.call("POST", "/api/extras/custom-fields/", {
      name: "serial",
      type: "longtext",
      object_types: ["dcim.site"],
      validation_regex: "a{250}b",
    });
    assert.equal(cf.status, 201, JSON.stringify(cf.body));
    // Every value matches, but each costs ~250 states × 1,000 characters: 60 of them need
    // about four times the budget.
    const heavy = Array.from({ length: 60 }, (_, i) => ({
      name: `s${i}`,
      slug: `s${i}`,
      custom_fields: { serial: "a".repeat(1000) + "b" },
    }));
    const refused = await h.call("POST", "/api/dcim/sites/", heavy);
    assert.equal(refused.status, 400, JSON.stringify(refused.body).slice(0, 300));
    assert.match(JSON.stringify(refused.body), /5,000,000 matching steps one request may take/);
    assert.equal((await h.call("GET", "/api/dcim/sites/?limit=1")).body.count, 0, "nothing saved");
    const light = await h.call("POST", "/api/dcim/sites/", heavy.slice(0, 2));
    assert.equal(light.status, 201, JSON.stringify(light.body).slice(0, 300));
  } finally {
    await h.close();
  }
});
