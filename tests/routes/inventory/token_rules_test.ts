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
