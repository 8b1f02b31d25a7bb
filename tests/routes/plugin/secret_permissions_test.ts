/**
 * Who may move a secret: a non-superuser cannot hand a more powerful token to the backend, a
 * read-only token never gets SSH secrets in plaintext, and only service.open_ssh_terminal (with
 * view) reads them back (SECURITY.md "Who may read which secret back").
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
    const terminalReadOnly = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.open_ssh_terminal"],
      write_enabled: false,
    });
    const refused = await h.call("GET", path, undefined, { auth: terminalReadOnly });
    assert.equal(refused.status, 403);
    assert.ok(!JSON.stringify(refused.body).includes("topsecret"));
    const terminal = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.open_ssh_terminal"],
    });
    const ok = await h.call("GET", path, undefined, { auth: terminal });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.password, "topsecret");
  } finally {
    await h.close();
  }
});

Deno.test("ssh-secrets: reading back needs service.open_ssh_terminal, and switching to reuse_endpoint never exposes a password the switcher did not send", async () => {
  const h = await harness();
  try {
    // A superuser sets the root@pam password; nobody may read it back.
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      username: "root@pam",
      password: "root-secret",
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const item = `${P}endpoints/hypervisor/${ep.body.id}/`;
    const secrets = `${item}ssh-secrets/`;
    const fingerprint = "SHA256:" + "A".repeat(43);

    // view + change: may edit the endpoint, may not read secrets back, and may not flip the
    // credential source to expose the stored password.
    const editor = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.change_hypervisorendpoint"],
    });
    const flip = await h.call("PATCH", item, {
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: fingerprint,
    }, { auth: editor });
    assert.equal(flip.status, 400, JSON.stringify(flip.body));
    assert.match(flip.body.ssh_credential_source[0], /send the endpoint password again/);
    const stored = await h.call("GET", item);
    assert.equal(
      stored.body.ssh_credential_source.value ?? stored.body.ssh_credential_source,
      "dedicated",
    );
    const editorRead = await h.call("GET", secrets, undefined, { auth: editor });
    assert.equal(editorRead.status, 403);
    assert.ok(!JSON.stringify(editorRead.body).includes("root-secret"));

    // The terminal permission with change: the switch still needs the password sent again ...
    const terminalEditor = await h.token({
      permissions: [
        "service.view_hypervisorendpoint",
        "service.change_hypervisorendpoint",
        "service.open_ssh_terminal",
      ],
    });
    const flip2 = await h.call("PATCH", item, {
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: fingerprint,
    }, { auth: terminalEditor });
    assert.equal(flip2.status, 400, JSON.stringify(flip2.body));
    const before = await h.call("GET", secrets, undefined, { auth: terminalEditor });
    assert.equal(before.status, 422, JSON.stringify(before.body)); // dedicated, no SSH secrets
    assert.ok(!JSON.stringify(before.body).includes("root-secret"));
    // ... and with it, the caller reads back only what it sent itself.
    const flip3 = await h.call("PATCH", item, {
      ssh_credential_source: "reuse_endpoint",
      ssh_known_host_fingerprint: fingerprint,
      password: "known-to-caller",
    }, { auth: terminalEditor });
    assert.equal(flip3.status, 200, JSON.stringify(flip3.body));
    const read = await h.call("GET", secrets, undefined, { auth: terminalEditor });
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.password, "known-to-caller");
    assert.equal(read.body.username, "root");

    // A superuser's switch is its own choice; view + terminal then reads the password.
    const back = await h.call("PATCH", item, { ssh_credential_source: "dedicated" });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    const superFlip = await h.call("PATCH", item, { ssh_credential_source: "reuse_endpoint" });
    assert.equal(superFlip.status, 200, JSON.stringify(superFlip.body));
    const viewer = await h.token({
      permissions: ["service.view_hypervisorendpoint", "service.open_ssh_terminal"],
    });
    const viewed = await h.call("GET", secrets, undefined, { auth: viewer });
    assert.equal(viewed.status, 200);
    assert.equal(viewed.body.password, "known-to-caller");
    // The terminal permission alone (without view) reads nothing.
    const blind = await h.token({ permissions: ["service.open_ssh_terminal"] });
    assert.equal((await h.call("GET", secrets, undefined, { auth: blind })).status, 403);

    // The permission is a name tokens accept; a misspelling is refused.
    const typo = await h.call("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["service.open_ssh_terminl"],
    });
    assert.equal(typo.status, 400);
    assert.match(typo.body.permissions[0], /service\.open_ssh_terminal/);
  } finally {
    await h.close();
  }
});
