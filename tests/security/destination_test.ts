/**
 * Secrets follow their destination, and the backend key is shown only to those who may change
 * the backend endpoint (SECURITY.md).
 */
import assert from "node:assert/strict";
import {
  addBackendEndpoint,
  harness,
  P,
  ROOT_TOKEN,
  startBackend,
} from "../routes/plugin/_harness.ts";
import { KEY, registered } from "../routes/backend/_setup.ts";
import { refusingListener } from "../_net.ts";

/** A listener standing in for an attacker's host: records every request it gets. */
function trap() {
  const hits: string[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (req) => {
    hits.push(
      `${req.method} ${new URL(req.url).pathname} ${[...req.headers].join(";")} ${await req
        .text()}`,
    );
    return Response.json({ needs_bootstrap: true, has_db_keys: false });
  });
  return { port: server.addr.port, hits, close: () => server.shutdown() };
}

const LIMITED = [
  "service.view_backendendpoint",
  "service.change_backendendpoint",
  "service.view_inventoryendpoint",
  "service.change_inventoryendpoint",
];

Deno.test("destination: a limited token that re-points the backend cannot make a push carry the superuser token there", async () => {
  const backend = await startBackend();
  const attacker = trap();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const backendKey = be.token;
    assert.equal(typeof backendKey, "string");
    // The superuser saves the inventory endpoint referencing its own (bootstrap) v1 token.
    const inv = await h.call("POST", P + "endpoints/inventory/", {
      name: "inventory",
      domain: "inventory.example.com",
      token_version: "v1",
      token: 1,
    });
    assert.equal(inv.status, 201, JSON.stringify(inv.body));
    assert.equal(inv.body.last_push.ok, true, JSON.stringify(inv.body.last_push));

    const limited = await h.token({ permissions: LIMITED });
    const moved = await h.call("PATCH", `${P}endpoints/backend/${be.id}/`, {
      port: attacker.port,
    }, { auth: limited });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    // The backend key is kept: the mover is shown it anyway (it may change the endpoint).
    assert.equal(moved.body.secrets_cleared, undefined);
    assert.equal(moved.body.token, backendKey);
    const pushed = await h.call("POST", `${P}endpoints/inventory/${inv.body.id}/push/`, undefined, {
      auth: limited,
    });
    assert.equal(pushed.body.last_push?.ok ?? pushed.body.ok, false, JSON.stringify(pushed.body));
    assert.match(JSON.stringify(pushed.body), /superuser must save the backend endpoint/);
    // A hypervisor password is not carried there either.
    const hv = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve.example.com",
      password: "hypervisor-password",
    });
    assert.equal(hv.body.last_push.ok, false);
    const everything = attacker.hits.join("\n");
    assert.ok(!everything.includes(ROOT_TOKEN), "the superuser token never reached the new host");
    assert.ok(!everything.includes("hypervisor-password"));
    // A superuser saving the backend endpoint confirms the address; pushes carry secrets again.
    const confirmed = await h.call("PATCH", `${P}endpoints/backend/${be.id}/`, {
      port: backend.port,
    });
    assert.equal(confirmed.status, 200);
    const again = await h.call("POST", `${P}endpoints/inventory/${inv.body.id}/push/`);
    assert.doesNotMatch(JSON.stringify(again.body), /superuser must save/);
  } finally {
    await h.close();
    await backend.close();
    await attacker.close();
  }
});

Deno.test("destination: moving a hypervisor endpoint without its password clears it (and says so)", async () => {
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve1.example.com",
      password: "pw1",
      token_name: "root@pam!t",
      token_value: "tv1",
    });
    assert.equal(ep.body.has_password, true);
    // Not a move: the secrets stay.
    const renamed = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      name: "pve-renamed",
    });
    assert.equal(renamed.body.has_password, true);
    assert.equal(renamed.body.secrets_cleared, undefined);
    for (const change of [{ domain: "evil.example.com" }, { port: 9443 }, { use_https: false }]) {
      await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
        password: "pw1",
        token_value: "tv1",
      });
      const moved = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, change);
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.deepEqual(
        moved.body.secrets_cleared,
        ["password", "token_value"],
        JSON.stringify(change),
      );
      assert.equal(moved.body.has_password, false);
      assert.equal(moved.body.has_token_value, false);
    }
    // Sending the password with the move keeps it.
    const withSecret = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      domain: "pve2.example.com",
      password: "pw2",
    });
    assert.equal(withSecret.body.has_password, true);
    assert.equal(withSecret.body.secrets_cleared, undefined);
  } finally {
    await h.close();
  }
});

Deno.test("destination: an edited IP address record moves the endpoint; its secrets are not sent there", async () => {
  const h = await harness();
  try {
    const ipId = await h.ip("192.0.2.10/24");
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      ip_address: ipId,
      port: 8006,
      password: "pw",
    });
    assert.equal(ep.status, 201);
    const edited = await h.call("PATCH", `/api/ipam/ip-addresses/${ipId}/`, {
      address: "127.0.0.1/8",
    });
    assert.equal(edited.status, 200);
    const status = await h.call("GET", `${P}endpoints/hypervisor/${ep.body.id}/status/`);
    assert.equal(status.body.status, "error");
    assert.match(status.body.detail, /address changed to https:\/\/127\.0\.0\.1:8006/);
  } finally {
    await h.close();
  }
});

Deno.test("destination: the backend's PUT that re-points an endpoint copy must send its secret again", async () => {
  await using h = await registered({}, {
    fetch: () => Promise.resolve(Response.json({ encryption_key: null })),
  });
  const inventory = {
    name: "inv",
    ip: "192.0.2.20",
    port: 443,
    use_https: true,
    verify_ssl: true,
    token_version: "v1",
    token: "inventory-token",
  };
  assert.equal(
    (await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory })).status,
    201,
  );
  const { token: _omit, ...withoutToken } = inventory;
  // Same destination, no token: kept.
  const same = await h.call("/inventory/endpoint/1", {
    method: "PUT",
    key: KEY,
    json: { ...withoutToken, name: "renamed" },
  });
  assert.equal(same.status, 200);
  assert.equal((await same.json()).has_token, true);
  for (
    const change of [{ ip: "203.0.113.9" }, { port: 8443 }, { use_https: false }, {
      token_version: "v2",
      token_key: "k",
    }]
  ) {
    const moved = await h.call("/inventory/endpoint/1", {
      method: "PUT",
      key: KEY,
      json: { ...withoutToken, ...change },
    });
    assert.equal(moved.status, 422, JSON.stringify(change));
    assert.match(JSON.stringify(await moved.json()), /token is required again/);
  }
  const hv = await h.call("/hypervisor/endpoints", {
    method: "POST",
    key: KEY,
    json: { name: "pve", ip: "192.0.2.30", port: 8006, password: "pw" },
  });
  assert.equal(hv.status, 201);
  const movedHv = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { name: "pve", ip: "203.0.113.30", port: 8006 },
  });
  assert.equal(movedHv.status, 422);
  assert.match(JSON.stringify(await movedHv.json()), /required again/);
  const kept = await h.call("/hypervisor/endpoints/1", {
    method: "PUT",
    key: KEY,
    json: { name: "pve-renamed", ip: "192.0.2.30", port: 8006 },
  });
  assert.equal(kept.status, 200);
  assert.equal((await kept.json()).has_password, true);
});

Deno.test("backend key visibility: only superusers and change-permission holders see token", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    const viewer = await h.token({ permissions: ["service.view_backendendpoint"] });
    const readOnlyChanger = await h.token({
      permissions: ["service.view_backendendpoint", "service.change_backendendpoint"],
      write_enabled: false,
    });
    const changer = await h.token({
      permissions: ["service.view_backendendpoint", "service.change_backendendpoint"],
    });
    for (const auth of [viewer, readOnlyChanger]) {
      const one = await h.call("GET", `${P}endpoints/backend/${be.id}/`, undefined, { auth });
      assert.equal(one.body.token, undefined);
      assert.equal(one.body.has_token, true);
      const list = await h.call("GET", `${P}endpoints/backend/?fields=token`, undefined, { auth });
      assert.equal(list.body.results[0].token, undefined);
      assert.ok(!JSON.stringify(list.body).includes(be.token));
    }
    for (const auth of [changer, `Token ${ROOT_TOKEN}`]) {
      const one = await h.call("GET", `${P}endpoints/backend/${be.id}/`, undefined, { auth });
      assert.equal(one.body.token, be.token);
    }
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("destination: re-pointing the backend endpoint (a port typo, then back) keeps its key, so pushes still authenticate", async () => {
  const backend = await startBackend();
  const typo = refusingListener();
  const h = await harness();
  try {
    const be = await addBackendEndpoint(h, backend.port);
    assert.equal(be.last_push.ok, true, JSON.stringify(be.last_push));
    const key = be.token;
    const item = `${P}endpoints/backend/${be.id}/`;
    const away = await h.call("PATCH", item, { port: typo.port });
    assert.equal(away.status, 200, JSON.stringify(away.body));
    assert.equal(away.body.token, key);
    assert.equal(away.body.secrets_cleared, undefined);
    const back = await h.call("PATCH", item, { port: backend.port });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.token, key);
    assert.equal(back.body.last_push.ok, true, JSON.stringify(back.body.last_push));
    // The already bootstrapped backend still takes the key: the plugin's relay reads through.
    const relayed = await h.call("GET", P + "bootstrap-status/");
    assert.equal(relayed.status, 200, JSON.stringify(relayed.body));
    const keys = await backend.request("/auth/keys", { headers: { "x-service-api-key": key } });
    assert.equal(keys.status, 200);
    const listed = await keys.json();
    const records = Array.isArray(listed) ? listed : listed.keys ?? listed.results;
    assert.equal(records.length, 1, `no second key was needed: ${JSON.stringify(listed)}`);
  } finally {
    typo.close();
    await h.close();
    await backend.close();
  }
});

Deno.test("backend key recovery: a backend that refuses the endpoint's key says how to get one without it, and a key given back works", async () => {
  const backend = await startBackend();
  const h = await harness();
  try {
    // The backend was bootstrapped by someone else: the endpoint's own key is refused.
    const first = await backend.request("/auth/register-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ api_key: KEY, label: "operator" }),
    });
    assert.equal(first.status, 201);
    await first.body?.cancel();
    const be = await addBackendEndpoint(h, backend.port);
    assert.equal(be.last_push.ok, false);
    assert.equal(be.last_push.status, 401, JSON.stringify(be.last_push));
    assert.match(be.last_push.error, /npx -y deno@2\.9\.6 task key:create/);
    assert.match(be.last_push.error, /endpoints\/backend\/\{id\}\/token\//);
    // A key made there (here with the key its operator holds) and given to the endpoint.
    const made = await backend.request("/auth/keys", {
      method: "POST",
      headers: { "x-service-api-key": KEY, "content-type": "application/json" },
      body: JSON.stringify({ label: "plugin" }),
    });
    const raw = (await made.json()).raw_key;
    const given = await h.call("POST", `${P}endpoints/backend/${be.id}/token/`, { token: raw });
    assert.equal(given.status, 200, JSON.stringify(given.body));
    assert.equal(given.body.last_push.ok, true, JSON.stringify(given.body.last_push));
    const read = await h.call("GET", `${P}endpoints/backend/${be.id}/`);
    assert.equal(read.body.token, raw);
  } finally {
    await h.close();
    await backend.close();
  }
});

Deno.test("destination: turning verify_ssl off without sending the secret again counts as a move (backend copies and plugin records)", async () => {
  // Backend copies: the PUT must send the secret again, or it is refused 422.
  {
    await using h = await registered({}, {
      fetch: () => Promise.resolve(Response.json({ encryption_key: null })),
    });
    const inventory = {
      name: "inv",
      ip: "192.0.2.20",
      port: 443,
      use_https: true,
      verify_ssl: true,
      token_version: "v1",
      token: "inventory-token",
    };
    const put = (path: string, json: unknown) => h.call(path, { method: "PUT", key: KEY, json });
    assert.equal(
      (await h.call("/inventory/endpoint", { method: "POST", key: KEY, json: inventory })).status,
      201,
    );
    const { token: _omit, ...withoutToken } = inventory;
    const off = await put("/inventory/endpoint/1", { ...withoutToken, verify_ssl: false });
    assert.equal(off.status, 422);
    assert.match(JSON.stringify(await off.json()), /token is required again/);
    const offWithToken = await put("/inventory/endpoint/1", { ...inventory, verify_ssl: false });
    assert.equal(offWithToken.status, 200);
    await offWithToken.body?.cancel();
    // Turning verification back on is no move: the token stays.
    const on = await put("/inventory/endpoint/1", { ...withoutToken, verify_ssl: true });
    assert.equal(on.status, 200);
    assert.equal((await on.json()).has_token, true);

    const hv = { name: "pve", ip: "192.0.2.30", port: 8006, verify_ssl: true };
    const created = await h.call("/hypervisor/endpoints", {
      method: "POST",
      key: KEY,
      json: { ...hv, password: "pw" },
    });
    assert.equal(created.status, 201);
    await created.body?.cancel();
    const hvOff = await put("/hypervisor/endpoints/1", { ...hv, verify_ssl: false });
    assert.equal(hvOff.status, 422);
    assert.match(JSON.stringify(await hvOff.json()), /required again/);
    const unchanged = await (await h.call("/hypervisor/endpoints/1", { key: KEY })).json();
    assert.equal(unchanged.verify_ssl, true, "the refused write changed nothing");
    assert.equal(unchanged.has_password, true);
  }
  // Plugin records: the secrets not sent again are cleared, and the answer says why.
  const h = await harness();
  try {
    const ep = await h.call("POST", P + "endpoints/hypervisor/", {
      name: "pve",
      domain: "pve1.example.com",
      verify_ssl: true,
      password: "pw1",
      token_name: "root@pam!t",
      token_value: "tv1",
    });
    assert.equal(ep.status, 201, JSON.stringify(ep.body));
    const off = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      verify_ssl: false,
    });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.deepEqual(off.body.secrets_cleared, ["password", "token_value"]);
    assert.match(off.body.warnings[0], /Certificate verification was turned off/);
    assert.equal(off.body.has_password, false);
    // Sent along with the change, the password is kept; turning it back on keeps it too.
    const offWith = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      verify_ssl: true,
      password: "pw2",
    });
    assert.equal(offWith.body.has_password, true);
    const again = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      verify_ssl: false,
      password: "pw3",
    });
    assert.equal(again.body.has_password, true);
    assert.equal(again.body.secrets_cleared, undefined);
    const backOn = await h.call("PATCH", `${P}endpoints/hypervisor/${ep.body.id}/`, {
      verify_ssl: true,
    });
    assert.equal(backOn.body.has_password, true);
    assert.equal(backOn.body.secrets_cleared, undefined);
  } finally {
    await h.close();
  }
});
