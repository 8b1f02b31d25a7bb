/**
 * Who may move a secret: a non-superuser cannot hand a more powerful token to the backend, and a
 * read-only token never gets SSH secrets in plaintext.
 */
import assert from "node:assert/strict";
import { harness, P } from "./_harness.ts";

Deno.test("inventory endpoint: a non-superuser cannot hand a more powerful token to the backend", async () => {
  const h = await harness();
  try {
    const perms = [
      "service.add_inventoryendpoint",
      "service.view_inventoryendpoint",
      "service.change_inventoryendpoint",
      "dcim.view_site",
    ];
    const limited = await h.token({ permissions: perms });
    // The bootstrap token (id 1) is a superuser token with a retrievable plaintext.
    const su = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token_version: "v1",
      token: 1,
    }, { auth: limited });
    assert.equal(su.status, 400);
    assert.deepEqual(su.body, {
      token: ["Cannot reference a token with permissions this token does not hold."],
    });
    // A token with more permissions than the actor is refused too ...
    const wider = await h.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["dcim.add_site"],
    });
    const refused = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token: wider.body.id,
    }, { auth: limited });
    assert.equal(refused.status, 400);
    // ... while one within the actor's own permissions is fine, and so is a superuser's choice.
    const narrow = await h.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["dcim.view_site"],
    });
    const ok = await h.call("POST", P + "endpoints/inventory/", {
      name: "inv",
      domain: "inv.example.com",
      token: narrow.body.id,
    }, { auth: limited });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    const bySuperuser = await h.call("PATCH", `${P}endpoints/inventory/${ok.body.id}/`, {
      token: 1,
    });
    assert.equal(bySuperuser.status, 200, JSON.stringify(bySuperuser.body));
    // The limited token may still edit other fields of a record a superuser pointed at token 1.
    const rename = await h.call("PATCH", `${P}endpoints/inventory/${ok.body.id}/`, {
      name: "renamed",
    }, { auth: limited });
    assert.equal(rename.status, 200, JSON.stringify(rename.body));
  } finally {
    await h.close();
  }
});

Deno.test("ssh-secrets: a write_enabled=false token never gets the plaintext secrets", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "topsecret",
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: "SHA256:" + "A".repeat(43),
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const path = `${P}endpoints/hypervisor/${ep.body.id}/ssh-secrets/`;
    const readOnly = await h.token({ is_superuser: true, write_enabled: false });
    const denied = await h.call("GET", path, undefined, { auth: readOnly });
    assert.equal(denied.status, 403);
    assert.ok(!JSON.stringify(denied.body).includes("topsecret"));
    const writer = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.change_hypervisorendpoint"],
    });
    const ok = await h.call("GET", path, undefined, { auth: writer });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.password, "topsecret");
  } finally {
    await h.close();
  }
});
