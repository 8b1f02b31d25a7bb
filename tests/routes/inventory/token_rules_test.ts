/**
 * Inventory token rules: a chosen v1 plaintext has NetBox's length, a non-superuser cannot weaken a
 * more powerful token, and the last enabled superuser token stays.
 */
import assert from "node:assert/strict";
import { setup } from "./_setup.ts";

Deno.test("tokens: a caller-chosen v1 plaintext needs NetBox's 40 characters", async () => {
  const inv = await setup();
  try {
    const short = await inv.call("POST", "/api/users/tokens/", { version: 1, token: "short" });
    assert.equal(short.status, 400);
    assert.deepEqual(short.body, { token: ["Ensure this field has at least 40 characters."] });
    const long = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: "f".repeat(40),
    });
    assert.equal(long.status, 201);
    const works = await inv.call("GET", "/api/status/", undefined, `Token ${"f".repeat(40)}`);
    assert.equal(works.status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: a non-superuser can neither strip, disable nor delete a more powerful token", async () => {
  const inv = await setup();
  try {
    const make = async (body: Record<string, unknown>) => {
      const r = await inv.call("POST", "/api/users/tokens/", { version: 1, ...body });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body as { id: number; token: string };
    };
    const admin = await make({
      permissions: ["users.view_token", "users.change_token", "users.delete_token"],
    });
    const as = `Token ${admin.token}`;
    const peer = await make({ permissions: ["dcim.add_site", "dcim.view_site"] });
    const strip = await inv.call("PATCH", `/api/users/tokens/${peer.id}/`, { permissions: [] }, as);
    assert.equal(strip.status, 400);
    assert.deepEqual(strip.body, {
      non_field_errors: ["Cannot change a token with more permissions than this one."],
    });
    const disable = await inv.call(
      "PATCH",
      `/api/users/tokens/${peer.id}/`,
      { enabled: false },
      as,
    );
    assert.equal(disable.status, 400);
    assert.equal(
      (await inv.call("DELETE", `/api/users/tokens/${peer.id}/`, undefined, as)).status,
      403,
    );
    // The peer still works with its permissions.
    const peerAuth = `Token ${peer.token}`;
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, peerAuth)).status, 200);
    // A token within the actor's own permissions can be managed.
    const small = await make({ permissions: ["users.view_token"] });
    const ok = await inv.call("PATCH", `/api/users/tokens/${small.id}/`, { enabled: false }, as);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(
      (await inv.call("DELETE", `/api/users/tokens/${small.id}/`, undefined, as)).status,
      204,
    );
  } finally {
    inv.close();
  }
});

Deno.test("tokens: the last enabled superuser token cannot be deleted, disabled or demoted", async () => {
  const inv = await setup();
  try {
    const self = (await inv.call("GET", "/api/users/tokens/?is_superuser=true")).body.results[0];
    const last = "This is the last enabled superuser token; create another superuser token first.";
    const del = await inv.call("DELETE", `/api/users/tokens/${self.id}/`);
    assert.deepEqual([del.status, del.body], [409, { detail: last }]);
    for (const change of [{ enabled: false }, { is_superuser: false }, { expires: "2001-01-01" }]) {
      const r = await inv.call("PATCH", `/api/users/tokens/${self.id}/`, change);
      assert.deepEqual(
        [r.status, r.body],
        [400, { non_field_errors: [last] }],
        JSON.stringify(change),
      );
    }
    // Still usable, and other edits are fine.
    const edit = await inv.call("PATCH", `/api/users/tokens/${self.id}/`, { description: "root" });
    assert.equal(edit.status, 200);
    // With a second superuser token, the first may go.
    const second = await inv.call("POST", "/api/users/tokens/", { is_superuser: true });
    assert.equal(second.status, 201);
    assert.equal((await inv.call("DELETE", `/api/users/tokens/${self.id}/`)).status, 204);
    const nowLast = await inv.call(
      "DELETE",
      `/api/users/tokens/${second.body.id}/`,
      undefined,
      second.body.header,
    );
    assert.equal(nowLast.status, 409);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: a filter on a secret (write-only token, hidden digest and sealed key) is no filter: no oracle for a reader", async () => {
  const inv = await setup();
  try {
    const plaintext = "a".repeat(40);
    const made = await inv.call("POST", "/api/users/tokens/", { version: 1, token: plaintext });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const v2 = await inv.call("POST", "/api/users/tokens/", { description: "v2" });
    assert.equal(v2.status, 201, JSON.stringify(v2.body));
    const ids = async (query: string) =>
      (await inv.call("GET", `/api/users/tokens/?limit=0&${query}`)).body.results
        .map((t: { id: number }) => t.id).sort((a: number, b: number) => a - b);
    const all = await ids("");
    assert.ok(all.includes(made.body.id) && all.includes(v2.body.id), String(all));
    // Each probe would tell a token's secret apart were it a filter: the list stays whole.
    const probes = [
      `token=${plaintext}`,
      `token__n=${plaintext}`,
      "token__isw=a",
      "token__isnull=true",
      "token__empty=true",
      "digest__isw=a",
      "digest__isnull=true",
      "digest__isnull=false",
      "digest__empty=true",
      "digest__n=x",
      "digest__regex=^[0-9a-f]",
      "encrypted__isnull=true",
      "encrypted__isnull=false",
      "encrypted__ic=a",
    ];
    for (const probe of probes) assert.deepEqual(await ids(probe), all, probe);
    // A field a reader may see still filters (the probes are not ignored for some other reason).
    assert.deepEqual(await ids("description=v2"), [v2.body.id]);
    assert.deepEqual(await ids("version=1&description__empty=true"), [made.body.id]);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: read-only and hidden fields in a write are ignored (key, last_used, pepper_id, digest): the token keeps working", async () => {
  const inv = await setup();
  try {
    const plain = "a".repeat(40);
    const made = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: plain,
      description: "t",
      key: "b".repeat(40),
      last_used: "2020-01-01T00:00:00Z",
      digest: "forged",
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const path = `/api/users/tokens/${made.body.id}/`;
    const before = await inv.call("GET", path);
    for (
      const body of [
        { description: "u", key: "c".repeat(40), last_used: "2021-01-01T00:00:00Z" },
        { description: "v", pepper_id: 7, digest: "forged", encrypted: "x", enc_source: "y" },
      ]
    ) {
      const r = await inv.call("PATCH", path, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.description, body.description);
      for (const field of ["key", "last_used", "pepper_id"]) {
        assert.deepEqual(r.body[field], before.body[field], field);
      }
    }
    const works = await inv.call("GET", "/api/status/", undefined, `Token ${plain}`);
    assert.equal(works.status, 200);
  } finally {
    inv.close();
  }
});
