/**
 * User-supplied patterns run in the linear-time matcher with a length cap (SECURITY.md
 * "Patterns"): a read-only token cannot stall the process with a catastrophic regex.
 */
import assert from "node:assert/strict";
import { harness } from "../routes/plugin/_harness.ts";

Deno.test("patterns: a catastrophic __regex from a read-only token answers at once", async () => {
  const h = await harness();
  try {
    const name = "a".repeat(24); // 6 + 18: seconds in a backtracking engine
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
    assert.ok(took < 1000, `took ${Math.round(took)} ms`);
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
      custom_fields: { owner: "a".repeat(28) + "!" },
    });
    const took = performance.now() - started;
    assert.equal(site.status, 400);
    assert.match(JSON.stringify(site.body), /must match regex/);
    assert.ok(took < 1000, `took ${Math.round(took)} ms`);
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
