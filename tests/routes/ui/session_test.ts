/**
 * Console sign-in, session cookie, CSRF and sign-out, through HTTP.
 */
import assert from "node:assert/strict";
import { consoleHarness, ORIGIN, ROOT } from "./_console.ts";

Deno.test("console: an anonymous visitor is sent to sign in, and back afterwards", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    const first = await c.get("/ui/vms?status=active");
    assert.equal(first.status, 303);
    assert.equal(first.location, "/ui/login?next=%2Fui%2Fvms%3Fstatus%3Dactive");
    const login = await c.get(first.location!);
    assert.equal(login.status, 200);
    assert.match(login.html, /<label for="token">Inventory API token<\/label>/);
    // The token field is a password field the browser neither remembers nor spell-checks
    // (a spell-check service would receive the token).
    assert.match(
      login.html,
      /<input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required/,
    );
    const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
    const done = await c.post("/ui/login", {
      _login_csrf: csrf,
      token: ROOT,
      next: "/ui/vms?status=active",
    });
    assert.equal(done.status, 303);
    assert.equal(done.location, "/ui/vms?status=active");
    const page = await c.get("/ui/vms?status=active");
    assert.equal(page.status, 200);
    assert.match(page.text, /Virtual machines/);
    // Signed in, the sign-in page sends on to where the visitor was going (inside the console).
    const again = await c.get("/ui/login?next=%2Fui%2Fjobs");
    assert.deepEqual([again.status, again.location], [303, "/ui/jobs"]);
    const outside = await c.get("/ui/login?next=https%3A%2F%2Fevil.example%2F");
    assert.deepEqual([outside.status, outside.location], [303, "/ui/"]);
  } finally {
    h.close();
  }
});

Deno.test("console: the session cookie is HttpOnly, SameSite=Strict, and holds no token", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    // The sign-in form's own CSRF cookie is held the same way.
    const form = await h.app.request(ORIGIN + "/ui/login");
    await form.body?.cancel();
    const formCookie = form.headers.getSetCookie().find((s) =>
      s.startsWith("bridgebox_login_csrf=")
    );
    assert.ok(formCookie, form.headers.getSetCookie().join(" | "));
    assert.match(formCookie, /HttpOnly/);
    assert.match(formCookie, /SameSite=Strict/);
    assert.match(formCookie, /Path=\/ui/);
    const login = await c.get("/ui/login");
    const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
    const res = await h.app.request(ORIGIN + "/ui/login", {
      method: "POST",
      headers: {
        cookie: c.cookieHeader,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ _login_csrf: csrf, token: ROOT }),
    });
    const cookie = res.headers.getSetCookie().find((s) => s.startsWith("bridgebox_session="))!;
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Strict/);
    assert.match(cookie, /Path=\/ui/);
    assert.ok(!cookie.includes(ROOT));
    // Nor does the stored session: only a sealed value the cookie's secret opens.
    for await (const entry of h.deps.kv.list({ prefix: ["ui", "session"] })) {
      assert.ok(!JSON.stringify(entry.value).includes(ROOT));
    }
  } finally {
    h.close();
  }
});

Deno.test("console: a wrong token is refused with a message, and repeated failures lock out", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    for (let i = 0; i < 5; i++) {
      const login = await c.get("/ui/login");
      const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
      const bad = await c.post("/ui/login", { _login_csrf: csrf, token: "not-a-token" });
      assert.equal(bad.status, 401);
      assert.match(bad.text, /That token is not valid/);
      assert.equal(c.cookies.has("bridgebox_session"), false);
    }
    const login = await c.get("/ui/login");
    const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
    const locked = await c.post("/ui/login", { _login_csrf: csrf, token: ROOT });
    assert.equal(locked.status, 429);
    assert.match(locked.text, /Too many failed sign-ins/);
  } finally {
    h.close();
  }
});

Deno.test("console: sign-in without the form's own CSRF cookie is refused", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    for (const sent of ["forged", ""]) {
      const res = await c.post("/ui/login", { _login_csrf: sent, token: ROOT });
      assert.equal(res.status, 403, sent);
      assert.match(res.text, /form expired/);
      assert.equal(c.cookies.has("bridgebox_session"), false);
    }
    // With the form's cookie, only the form's own value passes: not an empty one, not another.
    const form = await c.get("/ui/login");
    const csrf = /name="_login_csrf" value="([^"]+)"/.exec(form.html)![1];
    for (const sent of ["", "x".repeat(csrf.length), csrf.slice(0, -1)]) {
      const res = await c.post("/ui/login", { _login_csrf: sent, token: ROOT });
      assert.equal(res.status, 403, JSON.stringify(sent));
      assert.match(res.text, /The sign-in form expired \(or came from another site\)/);
      assert.equal(c.cookies.has("bridgebox_session"), false);
    }
  } finally {
    h.close();
  }
});

Deno.test("console: a v2 token signs in too", async () => {
  const h = await consoleHarness();
  try {
    const t = await h.token({ version: 2, permissions: ["virtualization.view_virtualmachine"] });
    assert.match(t.value, /^nbt_/);
    const c = h.client();
    assert.equal((await c.signIn(t.value)).location, "/ui/");
    assert.equal((await c.get("/ui/vms")).status, 200);
  } finally {
    h.close();
  }
});

Deno.test("console: next never leaves the console", async () => {
  const h = await consoleHarness();
  try {
    for (
      const next of ["//evil.example/", "https://evil.example/", "/api/users/tokens/", "/ui/\\evil"]
    ) {
      const c = h.client();
      const login = await c.get("/ui/login");
      const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
      const res = await c.post("/ui/login", { _login_csrf: csrf, token: ROOT, next });
      assert.equal(res.location, "/ui/", next);
    }
  } finally {
    h.close();
  }
});

Deno.test("console: a forged or tampered cookie is no session", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const real = c.cookies.get("bridgebox_session")!;
    const [id, secret] = real.split(".");
    const flipped = (secret.startsWith("A") ? "B" : "A") + secret.slice(1);
    for (const forged of [`${id}.${flipped}`, `${"0".repeat(32)}.${secret}`, "garbage"]) {
      const res = await h.app.request(ORIGIN + "/ui/", {
        headers: { cookie: `bridgebox_session=${forged}` },
        redirect: "manual",
      });
      assert.equal(res.status, 303, forged);
      assert.match(res.headers.get("location")!, /^\/ui\/login/);
    }
  } finally {
    h.close();
  }
});

Deno.test("console: a token disabled after sign-in ends the session at once", async () => {
  const h = await consoleHarness();
  try {
    const t = await h.token({ permissions: ["virtualization.view_virtualmachine"] });
    const c = h.client();
    await c.signIn(t.value);
    assert.equal((await c.get("/ui/vms")).status, 200);
    assert.equal(
      (await h.api("PATCH", `/api/users/tokens/${t.id}/`, { enabled: false })).status,
      200,
    );
    const after = await c.get("/ui/vms");
    assert.equal(after.status, 303);
    assert.equal(after.location, "/ui/login?next=%2Fui%2Fvms&reason=token");
    assert.match((await c.get(after.location!)).text, /no longer valid/);
  } finally {
    h.close();
  }
});

Deno.test("console: sign-out needs the CSRF token and ends the session server-side", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const stolen = c.cookies.get("bridgebox_session")!;
    const forged = await c.post("/ui/logout", {});
    assert.equal(forged.status, 403);
    assert.equal((await c.get("/ui/")).status, 200, "still signed in");
    const out = await c.submit("/ui/", "/ui/logout", {});
    assert.equal(out.status, 303);
    assert.equal(out.location, "/ui/login?reason=signedout");
    // The old cookie value no longer opens anything.
    const replay = await h.app.request(ORIGIN + "/ui/", {
      headers: { cookie: `bridgebox_session=${stolen}` },
      redirect: "manual",
    });
    assert.equal(replay.status, 303);
  } finally {
    h.close();
  }
});

Deno.test("console: every state-changing form checks the CSRF token and the origin", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const created = await h.api("POST", "/api/plugins/service/endpoints/hypervisor/", {
      name: "lab",
      domain: "10.0.0.1",
      password: "secret",
    });
    const id = String(created.body.id);
    const targets: Array<[string, Record<string, string>]> = [
      ["/ui/endpoints/bulk", { action: "disable", ids: id }],
      ["/ui/endpoints/delete", { ids: id }],
      ["/ui/endpoints/hypervisor/new", { name: "x", domain: "10.0.0.2" }],
      [`/ui/endpoints/hypervisor/${id}`, { name: "renamed" }],
      ["/ui/settings", {}],
      ["/ui/repair", {}],
      ["/ui/sync", {}],
      ["/ui/vms/1/action", { verb: "start" }],
    ];
    for (const [path, form] of targets) {
      const missing = await c.post(path, form);
      assert.equal(missing.status, 403, path);
      assert.match(missing.text, /Form expired/, path);
      const wrong = await c.post(path, { ...form, _csrf: "x".repeat(32) });
      assert.equal(wrong.status, 403, path);
      // An empty token is no token either (it matches no part of the session's).
      const empty = await c.post(path, { ...form, _csrf: "" });
      assert.equal(empty.status, 403, path);
      assert.match(empty.text, /Form expired/, path);
    }
    const page = await c.get("/ui/endpoints");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.html)![1];
    const crossSite = await c.post("/ui/endpoints/bulk", {
      _csrf: csrf,
      action: "disable",
      ids: id,
    }, {
      origin: "https://evil.example",
    });
    assert.equal(crossSite.status, 403);
    assert.match(crossSite.text, /another site/);
    // The token sent twice (a forged value beside the page's own) is no token: refused too.
    const doubled = await c.post("/ui/endpoints/bulk", {
      _csrf: ["x".repeat(32), csrf],
      action: "disable",
      ids: id,
    });
    assert.equal(doubled.status, 403);
    assert.match(doubled.text, /Form expired/);
    const record = await h.api("GET", `/api/plugins/service/endpoints/hypervisor/${id}/`);
    assert.equal(record.body.enabled, true, "nothing changed");
    assert.equal(record.body.name, "lab");
  } finally {
    h.close();
  }
});

/** Signs in over `origin` with the given connection facts; answers both cookies' Set-Cookie lines. */
async function signInCookies(
  h: Awaited<ReturnType<typeof consoleHarness>>,
  origin: string,
  env: { remoteAddr?: { hostname: string } },
  headers: Record<string, string> = {},
): Promise<{ csrf: string; session: string }> {
  const form = await h.app.request(origin + "/ui/login", { headers }, env);
  const csrfLine = form.headers.getSetCookie().find((s) => s.startsWith("bridgebox_login_csrf="))!;
  const csrf = /name="_login_csrf" value="([^"]+)"/.exec(await form.text())![1];
  const res = await h.app.request(origin + "/ui/login", {
    method: "POST",
    headers: {
      ...headers,
      cookie: csrfLine.split(";")[0],
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ _login_csrf: csrf, token: ROOT }),
  }, env);
  assert.equal(res.status, 303, "signed in");
  const session = res.headers.getSetCookie().find((s) => s.startsWith("bridgebox_session="))!;
  assert.ok(session, "a session cookie was set");
  return { csrf: csrfLine, session };
}

const SECURE = /;\s*Secure(;|$)/i;

Deno.test("console: cookies are Secure on direct HTTPS and behind a trusted TLS-terminating proxy", async () => {
  const h = await consoleHarness({ SERVICE_TRUSTED_PROXIES: "10.9.8.7" });
  try {
    const direct = await signInCookies(h, "https://console.test", {
      remoteAddr: { hostname: "203.0.113.9" },
    });
    assert.match(direct.session, SECURE, "direct HTTPS: session cookie Secure");
    assert.match(direct.csrf, SECURE, "direct HTTPS: sign-in form cookie Secure");

    const proxied = await signInCookies(h, "http://console.test", {
      remoteAddr: { hostname: "10.9.8.7" },
    }, { "x-forwarded-proto": "https", "x-forwarded-for": "198.51.100.4" });
    assert.match(proxied.session, SECURE, "trusted proxy saying https: session cookie Secure");
    assert.match(proxied.csrf, SECURE, "trusted proxy saying https: form cookie Secure");

    // Plain HTTP (the laptop setup) must keep working, so no Secure there; and a header from a
    // peer that is not a configured proxy is not believed.
    const plain = await signInCookies(h, "http://console.test", {
      remoteAddr: { hostname: "203.0.113.9" },
    });
    assert.doesNotMatch(plain.session, SECURE);
    const spoofed = await signInCookies(h, "http://console.test", {
      remoteAddr: { hostname: "203.0.113.9" },
    }, { "x-forwarded-proto": "https" });
    assert.doesNotMatch(spoofed.session, SECURE);
  } finally {
    h.close();
  }
});

Deno.test("console: a pasted token is taken whole: 'Token'/'Bearer' and outer spaces are fine, a second word or 513 characters are not", async () => {
  const h = await consoleHarness();
  try {
    const attempt = async (token: string) => {
      const c = h.client();
      const login = await c.get("/ui/login");
      // A fresh form shows no error box at all.
      assert.doesNotMatch(login.html, /role="alert"/);
      const csrf = /name="_login_csrf" value="([^"]+)"/.exec(login.html)![1];
      const answer = await c.post("/ui/login", { _login_csrf: csrf, token });
      return { answer, signedIn: c.cookies.has("bridgebox_session") };
    };
    for (const token of [`  Token ${ROOT}  `, `token ${ROOT}`]) {
      const { answer, signedIn } = await attempt(token);
      assert.equal(answer.status, 303, token);
      assert.equal(signedIn, true, token);
    }
    for (const token of [`${ROOT} ${ROOT}`, `${ROOT}\textra`, "", " ", ROOT + "x".repeat(473)]) {
      const { answer, signedIn } = await attempt(token);
      assert.equal(answer.status, 401, JSON.stringify(token));
      assert.equal(signedIn, false);
      // The refusal is said in the page's error box.
      assert.match(
        answer.html,
        /<div class="notice error" role="alert">That token is not valid\. Check it and try again\.<\/div>/,
      );
    }
  } finally {
    h.close();
  }
});
