/**
 * Console sessions over time and the gate's answers a person sees (docs/console.md, "Sign-in and
 * sessions"): cookie lifetimes, the 12-hour expiry on a test clock, sign-out's cookie and KV
 * record, the lockout's wait and its reset, the sign-in page's notices, the gate's answers without
 * a session, and the headers every console page carries.
 */
import assert from "node:assert/strict";
import { consoleHarness, ORIGIN, ROOT } from "./_console.ts";

const HOUR = 60 * 60 * 1000;

function cookieLine(headers: Headers, name: string): string | undefined {
  return headers.getSetCookie().find((s) => s.startsWith(`${name}=`));
}

async function sessionIds(kv: Deno.Kv): Promise<string[]> {
  const ids: string[] = [];
  for await (const entry of kv.list({ prefix: ["ui", "session"] })) ids.push(String(entry.key[2]));
  return ids;
}

Deno.test("console: the session lasts 12 hours to the millisecond, then sends to sign in and is deleted", async () => {
  let clock = Date.UTC(2026, 0, 1);
  const h = await consoleHarness({}, undefined, { now: () => clock });
  try {
    const c = h.client();
    const form = await c.get("/ui/login");
    // The sign-in form's cookie lives an hour; the session cookie as long as the session.
    assert.match(cookieLine(form.headers, "bridgebox_login_csrf")!, /Max-Age=3600(;|$)/);
    const signedIn = await c.post("/ui/login", {
      _login_csrf: /name="_login_csrf" value="([^"]+)"/.exec(form.html)![1],
      token: ROOT,
      next: "/ui/jobs",
    });
    assert.deepEqual([signedIn.status, signedIn.location], [303, "/ui/jobs"]);
    assert.match(cookieLine(signedIn.headers, "bridgebox_session")!, /Max-Age=43200(;|$)/);
    // The form's one-use cookie is cleared once it served.
    assert.match(cookieLine(signedIn.headers, "bridgebox_login_csrf")!, /Max-Age=0(;|$)/);
    assert.equal(c.cookies.has("bridgebox_login_csrf"), false);
    assert.equal((await sessionIds(h.deps.kv)).length, 1);

    clock += 12 * HOUR - 1;
    const last = await c.get("/ui/jobs");
    assert.equal(last.status, 200, "one millisecond before the end the session still opens");

    clock += 1;
    const after = await c.get("/ui/jobs");
    assert.deepEqual([after.status, after.location], [303, "/ui/login?next=%2Fui%2Fjobs"]);
    // The dead cookie is cleared in the browser and the record is gone from storage.
    assert.match(cookieLine(after.headers, "bridgebox_session")!, /Max-Age=0;.*Path=\/ui(;|$)/);
    assert.equal(c.cookies.has("bridgebox_session"), false);
    assert.deepEqual(await sessionIds(h.deps.kv), []);
    // The sign-in page shows its form again (no redirect loop on the expired cookie).
    const again = await c.get("/ui/login?next=%2Fui%2Fjobs");
    assert.equal(again.status, 200);
    assert.match(again.html, /name="next" value="\/ui\/jobs"/);
  } finally {
    h.close();
  }
});

Deno.test("console: sign-out clears the cookie, deletes the stored session and says so", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const other = h.client();
    await other.signIn(ROOT);
    assert.equal((await sessionIds(h.deps.kv)).length, 2);
    const mine = c.cookies.get("bridgebox_session")!.split(".")[0];
    const out = await c.submit("/ui/", "/ui/logout", {});
    assert.deepEqual([out.status, out.location], [303, "/ui/login?reason=signedout"]);
    // Cleared on the path it was set on (a browser keeps a cookie cleared on another path).
    assert.match(cookieLine(out.headers, "bridgebox_session")!, /Max-Age=0;.*Path=\/ui(;|$)/);
    const left = await sessionIds(h.deps.kv);
    assert.equal(left.length, 1, "only this browser's session ends");
    assert.ok(!left.includes(mine));
    assert.equal((await other.get("/ui/")).status, 200, "the other browser stays signed in");
    const page = await c.get(out.location!);
    assert.equal(page.status, 200);
    assert.match(page.html, /<div class="notice info"[^>]*>You are signed out\.<\/div>/);
    // An unknown reason shows no notice at all.
    const plain = await c.get("/ui/login?reason=whatever");
    assert.doesNotMatch(plain.html, /class="notice/);
  } finally {
    h.close();
  }
});

Deno.test("console: a lockout says how long to wait, refuses even the right token, and ends on time", async () => {
  let clock = Date.UTC(2026, 0, 1);
  const h = await consoleHarness({}, undefined, { now: () => clock });
  try {
    const c = h.client();
    const attempt = async (token: string) => {
      const form = await c.get("/ui/login");
      const csrf = /name="_login_csrf" value="([^"]+)"/.exec(form.html)![1];
      return c.post("/ui/login", { _login_csrf: csrf, token, next: "/ui/vms" });
    };
    // Four failures, then a success: the count starts again, so four more still do not lock.
    for (let i = 0; i < 4; i++) assert.equal((await attempt("wrong")).status, 401);
    assert.equal((await attempt(ROOT)).status, 303);
    c.cookies.delete("bridgebox_session");
    for (let i = 0; i < 4; i++) assert.equal((await attempt("wrong")).status, 401, `after ${i}`);
    // The fifth in a row locks the address.
    assert.equal((await attempt("wrong")).status, 401);
    const locked = await attempt(ROOT);
    assert.equal(locked.status, 429);
    assert.equal(locked.headers.get("retry-after"), "300");
    assert.match(locked.text, /Try again in 5 min\./);
    assert.equal(c.cookies.has("bridgebox_session"), false, "no session while locked");
    // The locked form keeps where the person was going.
    assert.match(locked.html, /name="next" value="\/ui\/vms"/);
    clock += 299_000;
    const almost = await attempt(ROOT);
    assert.equal(almost.status, 429);
    assert.equal(almost.headers.get("retry-after"), "1");
    assert.match(almost.text, /Try again in 1 min\./);
    clock += 1_000;
    const done = await attempt(ROOT);
    assert.deepEqual([done.status, done.location], [303, "/ui/vms"]);
  } finally {
    h.close();
  }
});

Deno.test("console: an expired token is told apart from a wrong one, and a failed form keeps next", async () => {
  let clock = Date.UTC(2026, 0, 1);
  const h = await consoleHarness({}, undefined, { now: () => clock });
  try {
    const created = await h.api("POST", "/api/users/tokens/", {
      version: 1,
      permissions: ["virtualization.view_virtualmachine"],
      expires: new Date(clock + HOUR).toISOString(),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const c = h.client();
    assert.equal((await c.signIn(created.body.token)).status, 303);
    // Signed in with a valid session, the sign-in page sends on; once the token expires the
    // session ends at the next page and the sign-in page says why.
    assert.equal((await c.get("/ui/login")).status, 303);
    clock += HOUR;
    const gone = await c.get("/ui/vms");
    assert.equal(gone.location, "/ui/login?next=%2Fui%2Fvms&reason=token");
    assert.deepEqual(await sessionIds(h.deps.kv), []);
    const form = await c.get(gone.location!);
    assert.equal(form.status, 200);
    assert.match(form.text, /Your token is no longer valid/);
    const retry = await c.post("/ui/login", {
      _login_csrf: /name="_login_csrf" value="([^"]+)"/.exec(form.html)![1],
      token: created.body.token,
      next: "/ui/vms",
    });
    assert.equal(retry.status, 401);
    assert.match(retry.html, /role="alert">That token has expired\.<\/div>/);
    assert.match(retry.html, /name="next" value="\/ui\/vms"/);
    assert.match(retry.html, /aria-invalid="true"/);
  } finally {
    h.close();
  }
});

Deno.test("console: without a session, pages redirect (GET keeps next, POST does not) and live streams answer 401 JSON", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    const post = await c.post("/ui/sync", { _csrf: "x" });
    assert.deepEqual([post.status, post.location], [303, "/ui/login?"]);
    const live = await h.app.request(ORIGIN + "/ui/live/status?ids=1");
    assert.equal(live.status, 401);
    assert.deepEqual(await live.json(), { detail: "Sign in again." });
    // A cookie that opens nothing is cleared; no cookie at all gets no Set-Cookie.
    const forged = await h.app.request(ORIGIN + "/ui/", {
      headers: { cookie: `bridgebox_session=${"0".repeat(32)}.${"A".repeat(43)}` },
      redirect: "manual",
    });
    await forged.body?.cancel();
    assert.match(cookieLine(forged.headers, "bridgebox_session")!, /Max-Age=0(;|$)/);
    const bare = await h.app.request(ORIGIN + "/ui/", { redirect: "manual" });
    await bare.body?.cancel();
    assert.equal(cookieLine(bare.headers, "bridgebox_session"), undefined);
    assert.equal(bare.headers.get("location"), "/ui/login?next=%2Fui%2F");
  } finally {
    h.close();
  }
});

Deno.test("console: a form from the same origin (or an opaque one) passes the origin check; its CSRF token still decides", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    await c.signIn(ROOT);
    const page = await c.get("/ui/");
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.html)![1];
    for (const origin of [ORIGIN, "null"]) {
      const other = h.client();
      await other.signIn(ROOT);
      const own = /name="_csrf" value="([^"]+)"/.exec((await other.get("/ui/")).html)![1];
      const out = await other.post("/ui/logout", { _csrf: own }, { origin });
      assert.deepEqual([out.status, out.location], [303, "/ui/login?reason=signedout"], origin);
    }
    // Another session's token is not this session's token.
    const other = h.client();
    await other.signIn(ROOT);
    const crossed = await other.post("/ui/logout", { _csrf: csrf });
    assert.equal(crossed.status, 403);
    assert.match(crossed.text, /Form expired/);
    assert.equal((await other.get("/ui/")).status, 200, "still signed in");
  } finally {
    h.close();
  }
});

Deno.test("console: every page carries the security headers, no-store, and error pages say what happened", async () => {
  const h = await consoleHarness();
  try {
    const c = h.client();
    const expectHeaders = (headers: Headers, where: string) => {
      assert.match(headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/, where);
      assert.equal(headers.get("x-frame-options"), "DENY", where);
      assert.equal(headers.get("x-content-type-options"), "nosniff", where);
      assert.equal(headers.get("referrer-policy"), "same-origin", where);
      assert.equal(headers.get("cache-control"), "no-store", where);
    };
    expectHeaders((await c.get("/ui/login")).headers, "sign-in page");
    const root = await c.get("/ui");
    assert.deepEqual([root.status, root.location], [301, "/ui/"]);
    await c.signIn(ROOT);
    expectHeaders((await c.get("/ui/")).headers, "overview");
    const missing = await c.get("/ui/no-such-page");
    assert.equal(missing.status, 404);
    assert.match(missing.text, /Page not found/);
    assert.match(missing.text, /There is no console page at this address\./);
    expectHeaders(missing.headers, "404");
    const big = await c.post("/ui/sync", { _csrf: "x", filler: "a".repeat(257 * 1024) });
    assert.equal(big.status, 413);
    assert.match(big.text, /A form may carry at most 256 KiB\./);
  } finally {
    h.close();
  }
});
