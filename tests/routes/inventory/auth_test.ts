import assert from "node:assert/strict";
import { createApp } from "../../../app.ts";
import { can } from "../../../domain/netbox/tokens.ts";
import {
  createInventoryApp,
  createInventoryCore,
  createSuperuserToken,
} from "../../../routes/inventory/mod.ts";
import { testDeps } from "../../_helpers.ts";
import { setup, TOKEN } from "./_setup.ts";

Deno.test("missing and invalid credentials: 403 with NetBox's texts", async () => {
  const inv = await setup();
  try {
    const none = await inv.call("GET", "/api/dcim/sites/", undefined, null);
    assert.equal(none.status, 403);
    assert.deepEqual(none.body, { detail: "Authentication credentials were not provided." });
    assert.equal(none.headers.get("API-Version"), "4.6");
    const wrong = await inv.call("GET", "/api/dcim/sites/", undefined, "Token nope");
    assert.deepEqual([wrong.status, wrong.body], [403, { detail: "Invalid token" }]);
    const badV2 = await inv.call("GET", "/api/dcim/sites/", undefined, "Bearer nbt_abc.def");
    assert.deepEqual([badV2.status, badV2.body], [403, { detail: "Invalid token" }]);
    const notNbt = await inv.call("GET", "/api/dcim/sites/", undefined, "Bearer something");
    assert.deepEqual([notNbt.status, notNbt.body], [403, { detail: "Invalid token" }]);
    const basic = await inv.call("GET", "/api/dcim/sites/", undefined, "Basic dXNlcjpwYXNz");
    assert.deepEqual(basic.body, { detail: "Authentication credentials were not provided." });
    // Unknown paths are authenticated before routing (no 404 leak).
    assert.equal((await inv.call("GET", "/api/secret-path/", undefined, null)).status, 403);
    // Writes without credentials are refused the same way, before the body is read.
    assert.equal(
      (await inv.call("POST", "/api/dcim/sites/", { name: "x", slug: "x" }, null)).status,
      403,
    );
    // Docs, schema and their assets are public.
    assert.equal((await inv.call("GET", "/api/schema/", undefined, null)).status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: v1 and v2 creation, secret shown once, both header forms, v1 plaintext retrievable", async () => {
  const inv = await setup();
  try {
    const v1 = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      description: "reader",
      write_enabled: false,
      permissions: ["dcim.view_site"],
    });
    assert.equal(v1.status, 201, JSON.stringify(v1.body));
    assert.match(v1.body.token, /^[0-9a-f]{40}$/);
    assert.equal(v1.body.key, null);
    const listed = await inv.call("GET", `/api/users/tokens/${v1.body.id}/`);
    assert.ok(!("token" in listed.body), "the secret is shown only on creation");
    assert.ok(!("digest" in listed.body) && !("encrypted" in listed.body));
    assert.deepEqual(listed.body.permissions, ["dcim.view_site"]);
    const asV1 = await inv.call("GET", "/api/dcim/sites/", undefined, `Token ${v1.body.token}`);
    assert.equal(asV1.status, 200);

    const v2 = await inv.call("POST", "/api/users/tokens/", {
      version: 2,
      description: "sync",
      is_superuser: true,
    });
    assert.equal(v2.status, 201);
    // NetBox 4.5: a 12-character key, a 40-character secret of letters and digits.
    assert.match(v2.body.key, /^[A-Za-z0-9]{12}$/);
    assert.match(v2.body.token, /^[A-Za-z0-9]{40}$/);
    const bearer = `Bearer nbt_${v2.body.key}.${v2.body.token}`;
    assert.equal(v2.body.header, bearer);
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, bearer)).status, 200);
    // The v2 secret is only stored hashed: a wrong secret for a right key fails, and the
    // v1 scheme does not accept a v2 secret.
    assert.equal(
      (await inv.call(
        "GET",
        "/api/dcim/sites/",
        undefined,
        `Bearer nbt_${v2.body.key}.${"0".repeat(40)}`,
      )).status,
      403,
    );
    assert.equal(
      (await inv.call("GET", "/api/dcim/sites/", undefined, `Token ${v2.body.token}`)).status,
      403,
    );
    const ctx = createInventoryCore(inv.deps);
    assert.equal(await ctx.tokens.plaintext(v1.body.id), v1.body.token);
    assert.equal(await ctx.tokens.plaintext(v2.body.id), null);
    const raw = await ctx.engine.get("users.token", v2.body.id);
    assert.ok(raw && !JSON.stringify(raw).includes(v2.body.token), "no v2 plaintext at rest");
    const rawV1 = await ctx.engine.get("users.token", v1.body.id);
    assert.ok(rawV1 && !JSON.stringify(rawV1).includes(v1.body.token), "no v1 plaintext at rest");
    // A chosen v1 value is accepted once.
    const chosen = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: "my-own-token-value-0123456789abcdef0123456",
      permissions: ["dcim.view_site"],
    });
    assert.equal(chosen.status, 201);
    assert.equal(chosen.body.token, "my-own-token-value-0123456789abcdef0123456");
    const again = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: "my-own-token-value-0123456789abcdef0123456",
    });
    assert.equal(again.status, 400);
    assert.ok(again.body.token);
    const badVersion = await inv.call("POST", "/api/users/tokens/", { version: 3 });
    assert.equal(badVersion.status, 400);
    const badPerm = await inv.call("POST", "/api/users/tokens/", { permissions: ["everything"] });
    assert.equal(badPerm.status, 400);
    assert.ok(badPerm.body.permissions);
    // Disabled and expired tokens stop working: the same token that worked a moment ago.
    const chosenHeader = `Token ${chosen.body.token}`;
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, chosenHeader)).status, 200);
    const off = await inv.call("PATCH", `/api/users/tokens/${chosen.body.id}/`, { enabled: false });
    assert.deepEqual([off.status, off.body.enabled], [200, false]);
    const refused = await inv.call("GET", "/api/dcim/sites/", undefined, chosenHeader);
    assert.deepEqual([refused.status, refused.body], [403, { detail: "Invalid token" }]);
    // A disabled v2 token is refused too.
    await inv.call("PATCH", `/api/users/tokens/${v2.body.id}/`, { enabled: false });
    const v2Off = await inv.call("GET", "/api/dcim/sites/", undefined, bearer);
    assert.deepEqual([v2Off.status, v2Off.body], [403, { detail: "Invalid token" }]);
    // Enabled again, it works again: the refusal came from the flag, nothing else.
    await inv.call("PATCH", `/api/users/tokens/${chosen.body.id}/`, { enabled: true });
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, chosenHeader)).status, 200);
    const expired = await inv.call("POST", "/api/users/tokens/", {
      expires: "2000-01-01T00:00:00Z",
    });
    const exp = await inv.call("GET", "/api/dcim/sites/", undefined, expired.body.header);
    assert.deepEqual([exp.status, exp.body], [403, { detail: "Token expired" }]);
    // last_used is recorded.
    const me = await inv.call("GET", `/api/users/tokens/${v2.body.id}/`);
    assert.match(me.body.last_used, /Z$/);
  } finally {
    inv.close();
  }
});

Deno.test("permissions: app.action_model, write_enabled, no privilege escalation", async () => {
  const inv = await setup();
  try {
    const make = async (body: Record<string, unknown>) => {
      const r = await inv.call("POST", "/api/users/tokens/", body);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      // A v2 token (the default): the create answer's `header` is `Bearer nbt_<key>.<token>`.
      return r.body.header as string;
    };
    const denied = { detail: "You do not have permission to perform this action." };
    const reader = await make({ permissions: ["dcim.view_site"] });
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, reader)).status, 200);
    const noView = await inv.call("GET", "/api/tenancy/tenants/", undefined, reader);
    assert.deepEqual([noView.status, noView.body], [403, denied]);
    const noAdd = await inv.call("POST", "/api/dcim/sites/", { name: "s", slug: "s" }, reader);
    assert.deepEqual([noAdd.status, noAdd.body], [403, denied]);
    const writer = await make({
      permissions: ["dcim.view_site", "dcim.add_site", "dcim.change_site"],
    });
    const site = await inv.call("POST", "/api/dcim/sites/", { name: "s", slug: "s" }, writer);
    assert.equal(site.status, 201);
    const patched = await inv.call(
      "PATCH",
      `/api/dcim/sites/${site.body.id}/`,
      { facility: "f" },
      writer,
    );
    assert.deepEqual([patched.status, patched.body.facility], [200, "f"]);
    // The change is stored (read back by another token), and a reader may not make one.
    const readBack = await inv.call("GET", `/api/dcim/sites/${site.body.id}/`, undefined, reader);
    assert.equal(readBack.body.facility, "f");
    const noChange = await inv.call(
      "PATCH",
      `/api/dcim/sites/${site.body.id}/`,
      { facility: "g" },
      reader,
    );
    assert.deepEqual([noChange.status, noChange.body], [403, denied]);
    assert.equal((await inv.call("GET", `/api/dcim/sites/${site.body.id}/`)).body.facility, "f");
    const noDelete = await inv.call(
      "DELETE",
      `/api/dcim/sites/${site.body.id}/`,
      undefined,
      writer,
    );
    assert.deepEqual([noDelete.status, noDelete.body], [403, denied]);
    assert.equal((await inv.call("GET", `/api/dcim/sites/${site.body.id}/`)).status, 200);
    // write_enabled false: even a superuser token cannot write.
    const ro = await make({ is_superuser: true, write_enabled: false });
    assert.equal((await inv.call("GET", "/api/dcim/sites/", undefined, ro)).status, 200);
    const roWrite = await inv.call("POST", "/api/dcim/sites/", { name: "t", slug: "t" }, ro);
    assert.deepEqual([roWrite.status, roWrite.body], [403, denied]);
    // Tokens: a token allowed to add tokens cannot grant what it does not hold.
    const admin = await make({
      permissions: ["users.add_token", "users.view_token", "dcim.view_site"],
    });
    const su = await inv.call("POST", "/api/users/tokens/", { is_superuser: true }, admin);
    assert.equal(su.status, 400);
    assert.ok(su.body.is_superuser);
    const more = await inv.call(
      "POST",
      "/api/users/tokens/",
      { permissions: ["dcim.delete_site"] },
      admin,
    );
    assert.equal(more.status, 400);
    const subset = await inv.call(
      "POST",
      "/api/users/tokens/",
      { permissions: ["dcim.view_site"] },
      admin,
    );
    assert.equal(subset.status, 201);
    // ... and cannot retire a superuser token even with the delete permission.
    // (It may retire tokens within its own permissions only.)
    const deleter = await make({
      permissions: ["users.delete_token", "users.view_token", "dcim.view_site"],
    });
    const tokens = await inv.call("GET", "/api/users/tokens/?is_superuser=true");
    const suId = tokens.body.results[0].id;
    const refused = await inv.call("DELETE", `/api/users/tokens/${suId}/`, undefined, deleter);
    assert.deepEqual([refused.status, refused.body], [403, denied]);
    const retired = await inv.call(
      "DELETE",
      `/api/users/tokens/${subset.body.id}/`,
      undefined,
      deleter,
    );
    assert.equal(retired.status, 204);
    const jobPerm = await make({ permissions: ["core.add_job"] });
    assert.equal((await inv.call("GET", "/api/status/", undefined, jobPerm)).status, 200);
    // The helper the plugin uses.
    assert.equal(
      can({
        tokenId: 1,
        isSuperuser: false,
        writeEnabled: true,
        permissions: new Set(["core.add_job"]),
      }, "core.add_job"),
      true,
    );
    assert.equal(
      can({
        tokenId: 1,
        isSuperuser: false,
        writeEnabled: false,
        permissions: new Set(["core.add_job"]),
      }, "core.add_job"),
      false,
    );
    assert.equal(
      can(
        { tokenId: 1, isSuperuser: true, writeEnabled: false, permissions: new Set() },
        "service.view_backendendpoint",
      ),
      true,
    );
    assert.equal(can(null, "dcim.view_site"), false);
  } finally {
    inv.close();
  }
});

Deno.test("bootstrap token: registered once, only when no token exists", async () => {
  const deps = await testDeps({ INVENTORY_BOOTSTRAP_TOKEN: "bootstrap-value-0123456789" });
  try {
    const app = await createInventoryApp(deps);
    const ok = await app.request("http://x/api/users/tokens/", {
      headers: { authorization: "Token bootstrap-value-0123456789" },
    });
    const body = await ok.json();
    assert.equal(ok.status, 200);
    assert.equal(body.count, 1);
    assert.equal(body.results[0].is_superuser, true);
    // A second start with the same (or another) value does not add tokens.
    await createInventoryApp(deps);
    const ctx = createInventoryCore({
      ...deps,
      config: { ...deps.config, inventoryBootstrapToken: "other-value-0123456789" },
    });
    await createInventoryApp(ctx.deps);
    assert.equal(await ctx.engine.store.count("users.token"), 1);
  } finally {
    deps.kv.close();
  }
});

Deno.test("token:create path and SERVICE_ENCRYPTION_KEY sealing; mounted under the whole app", async () => {
  const deps = await testDeps({
    SERVICE_ENCRYPTION_KEY: "inventory-secret",
    SERVICE_SURFACES: "plugin,backend",
  });
  try {
    const ctx = createInventoryCore(deps);
    const { id, token } = await createSuperuserToken(ctx, "cli", 1);
    assert.equal((await ctx.engine.get("users.token", id))?.enc_source, "config");
    assert.equal(await ctx.tokens.plaintext(id), token);
    // Without the variable the same record is not readable (different key), but auth still works.
    const other = createInventoryCore({
      ...deps,
      config: { ...deps.config, encryptionKey: undefined },
    });
    assert.equal(await other.tokens.plaintext(id), null);
    const app = await createApp(deps);
    const r = await app.request("http://x/api/status/", {
      headers: { authorization: `Token ${token}` },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("API-Version"), "4.6");
    await r.body?.cancel();
  } finally {
    deps.kv.close();
  }
});

Deno.test("the bootstrap token constant used by the other tests works", async () => {
  const inv = await setup();
  try {
    assert.equal((await inv.call("GET", "/api/", undefined, `Token ${TOKEN}`)).status, 200);
  } finally {
    inv.close();
  }
});

Deno.test("permissions: a view-only, read-only token may GET, HEAD and OPTIONS, never write", async () => {
  const inv = await setup();
  try {
    const t = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["dcim.view_site"],
      write_enabled: false,
    });
    const auth = `Token ${t.body.token}`;
    for (const method of ["GET", "HEAD", "OPTIONS"]) {
      assert.equal(
        (await inv.call(method, "/api/dcim/sites/", undefined, auth)).status,
        200,
        method,
      );
    }
    const post = await inv.call("POST", "/api/dcim/sites/", { name: "x", slug: "x" }, auth);
    assert.deepEqual([post.status, post.body], [403, {
      detail: "You do not have permission to perform this action.",
    }]);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: the version is told by the nbt_ prefix, not the keyword (pynetbox 7.0.0 and netbox.netbox send 'Token' only)", async () => {
  const inv = await setup();
  try {
    const v2 = await inv.call("POST", "/api/users/tokens/", { version: 2, is_superuser: true });
    const value = `nbt_${v2.body.key}.${v2.body.token}`;
    // pynetbox 7.0.0 (and Ansible's netbox.netbox 3.13 on top of it) sends every token after
    // `Token`; NetBox 4.6 reads this header as a v2 token.
    const asToken = await inv.call("GET", "/api/dcim/sites/", undefined, `Token ${value}`);
    assert.deepEqual([asToken.status, asToken.body.count], [200, 0], JSON.stringify(asToken.body));
    const created = await inv.call(
      "POST",
      "/api/dcim/sites/",
      { name: "via v2", slug: "via-v2" },
      `Token ${value}`,
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const read = await inv.call("GET", `/api/dcim/sites/${created.body.id}/`);
    assert.equal(read.body.name, "via v2");
    // A wrong secret stays refused whatever the keyword.
    const wrong = `nbt_${v2.body.key}.${"0".repeat(40)}`;
    for (const header of [`Token ${wrong}`, `Bearer ${wrong}`]) {
      const r = await inv.call("GET", "/api/dcim/sites/", undefined, header);
      assert.deepEqual([r.status, r.body], [403, { detail: "Invalid token" }], header);
    }
    // And a v1 plaintext after `Bearer` is a v1 token, as in NetBox 4.6.
    const v1 = await inv.call("POST", "/api/users/tokens/", { version: 1, is_superuser: true });
    const bearerV1 = await inv.call(
      "GET",
      "/api/dcim/sites/",
      undefined,
      `Bearer ${v1.body.token}`,
    );
    assert.equal(bearerV1.status, 200, JSON.stringify(bearerV1.body));
    // A v1 plaintext may not carry the v2 prefix: it could never be presented.
    const prefixed = await inv.call("POST", "/api/users/tokens/", {
      version: 1,
      token: `nbt_${"a".repeat(40)}`,
    });
    assert.deepEqual([prefixed.status, prefixed.body], [400, {
      token: ['A v1 token cannot begin with "nbt_" (that marks a v2 token).'],
    }]);
  } finally {
    inv.close();
  }
});

Deno.test("tokens: malformed and oversized credentials are a 403 'Invalid token', never a 500 or a pass", async () => {
  const inv = await setup();
  try {
    for (
      const header of [
        "Bearer nbt_abc", // no secret
        "Bearer nbt_.secret", // no key
        `Bearer nbt_${"k".repeat(65)}.secret`, // key longer than any issued
        `Bearer nbt_${"k".repeat(3000)}.secret`, // longer than a storage key may be
        `Token ${"t".repeat(513)}`,
        "Token nbt_abc", // the v2 prefix after `Token`: read as v2, no secret
      ]
    ) {
      const r = await inv.call("GET", "/api/dcim/sites/", undefined, header);
      assert.deepEqual([r.status, r.body], [403, { detail: "Invalid token" }], header.slice(0, 30));
    }
    assert.equal(await createInventoryCore(inv.deps).tokens.plaintext(9999), null, "unknown id");
  } finally {
    inv.close();
  }
});

Deno.test("tokens: the version can be restated but not changed; a chosen v2 secret (NetBox 4.6.3) needs 40 letters or digits and is kept only as a keyed HMAC", async () => {
  const inv = await setup();
  try {
    const t = await inv.call("POST", "/api/users/tokens/", { version: 1, description: "a" });
    const same = await inv.call("PATCH", `/api/users/tokens/${t.body.id}/`, {
      version: 1,
      description: "b",
    });
    assert.deepEqual([same.status, same.body.description], [200, "b"]);
    const changed = await inv.call("PATCH", `/api/users/tokens/${t.body.id}/`, { version: 2 });
    assert.deepEqual([changed.status, changed.body], [400, {
      version: ["The version of an existing token cannot be changed."],
    }]);
    // NetBox 4.5: a token asked for without a version is v2, shown as its key.
    const plain = await inv.call("POST", "/api/users/tokens/", { description: "default" });
    assert.deepEqual([plain.body.version, plain.body.display], [2, plain.body.key]);
    assert.match(plain.body.header, /^Bearer nbt_[A-Za-z0-9]{12}\.[A-Za-z0-9]{40}$/);
    const weak = await inv.call("POST", "/api/users/tokens/", { version: 2, token: "short" });
    assert.deepEqual([weak.status, weak.body], [400, {
      token: ["Ensure this field has at least 40 characters of letters and digits."],
    }]);
    const secret = "Chosen0Secret0" + "x".repeat(30);
    const chosen = await inv.call("POST", "/api/users/tokens/", {
      version: 2,
      token: secret,
      permissions: ["dcim.view_site"],
    });
    assert.equal(chosen.status, 201);
    assert.deepEqual([chosen.body.token, chosen.body.display, chosen.body.pepper_id], [
      secret,
      chosen.body.key,
      1,
    ]);
    // Both keywords work for a v2 token: the nbt_ prefix tells the version, as in NetBox 4.5.
    for (const scheme of ["Bearer", "Token"]) {
      const r = await inv.call(
        "GET",
        "/api/dcim/sites/",
        undefined,
        `${scheme} nbt_${chosen.body.key}.${secret}`,
      );
      assert.equal(r.status, 200, scheme);
    }
    // At rest: neither the secret nor its plain SHA-256 (a keyed HMAC under the pepper).
    const raw = await createInventoryCore(inv.deps).engine.get("users.token", chosen.body.id);
    const plainDigest = new Uint8Array(
      await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret)),
    ).toHex();
    assert.ok(raw && !JSON.stringify(raw).includes(secret));
    assert.notEqual(raw!.digest, plainDigest);
    assert.match(String(raw!.digest), /^[0-9a-f]{64}$/);
  } finally {
    inv.close();
  }
});
