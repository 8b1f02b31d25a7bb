import assert from "node:assert/strict";
import {
  deriveFernetKey,
  fernetDecrypt,
  fernetEncrypt,
  FernetError,
  importFernetKey,
} from "../../domain/fernet.ts";

// The published Fernet specification test vectors (generate.json, verify.json, invalid.json),
// written here as data so any standard Fernet library's tokens are proven to interoperate.
const SECRET = "cw_0x689RpI-jtRR7oE8h_eQsKImvJapLeSbXpwF4e4=";
const at = (iso: string) => Date.parse(iso);

const GENERATE = [{
  token:
    "gAAAAAAdwJ6wAAECAwQFBgcICQoLDA0ODy021cpGVWKZ_eEwCGM4BLLF_5CV9dOPmrhuVUPgJobwOz7JcbmrR64jVmpU4IwqDA==",
  now: "1985-10-26T01:20:00-07:00",
  iv: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  src: "hello",
}];

const VERIFY = [
  { token: GENERATE[0].token, now: "1985-10-26T01:20:01-07:00", ttl: 60, src: "hello" },
  { token: GENERATE[0].token, now: "1985-10-26T01:20:01-07:00", ttl: undefined, src: "hello" },
];

const INVALID = [
  {
    desc: "incorrect mac",
    token:
      "gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykQUFBQUFBQUFBQQ==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "too short",
    token: "gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPA==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "invalid base64",
    token:
      "%%%%%%%%%%%%%AECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykRtfsH-p1YsUD2Q==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "payload size not multiple of block size",
    token:
      "gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPOm73QeoCk9uGib28Xe5vz6oxq5nmxbx_v7mrfyudzUm",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "payload padding error",
    token:
      "gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0ODz4LEpdELGQAad7aNEHbf-JkLPIpuiYRLQ3RtXatOYREu2FWke6CnJNYIbkuKNqOhw==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "far-future TS (unacceptable clock skew)",
    token:
      "gAAAAAAdwStRAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAnja1xKYyhd-Y6mSkTOyTGJmw2Xc2a6kBd-iX9b_qXQcw==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "expired TTL",
    token:
      "gAAAAAAdwJ6xAAECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAl1-szkFVzXTuGb4hR8AKtwcaX1YdykRtfsH-p1YsUD2Q==",
    now: "1985-10-26T01:21:31-07:00",
  },
  {
    desc: "incorrect IV (causes padding error)",
    token:
      "gAAAAAAdwJ6xBQECAwQFBgcICQoLDA0OD3HkMATM5lFqGaerZ-fWPAkLhFLHpGtDBRLRTZeUfWgHSv49TF2AUEZ1TIvcZjK1zQ==",
    now: "1985-10-26T01:20:01-07:00",
  },
  {
    desc: "very short payload size",
    token: "gAAAAABdnQ1TUKh2OE_ggbyCIxfg",
    now: "1985-10-26T01:20:01-07:00",
  },
  { desc: "super short payload size", token: "gAAA", now: "1985-10-26T01:20:01-07:00" },
];

Deno.test("fernet: generate vectors produce the exact published token", async () => {
  const key = await importFernetKey(SECRET);
  for (const v of GENERATE) {
    const token = await fernetEncrypt(key, v.src, { now: at(v.now), iv: new Uint8Array(v.iv) });
    assert.equal(token, v.token);
  }
});

Deno.test("fernet: verify vectors decrypt", async () => {
  const key = await importFernetKey(SECRET);
  for (const v of VERIFY) {
    assert.equal(await fernetDecrypt(key, v.token, { now: at(v.now), ttlSeconds: v.ttl }), v.src);
  }
});

Deno.test("fernet: every invalid vector is rejected with a FernetError", async () => {
  const key = await importFernetKey(SECRET);
  for (const v of INVALID) {
    await assert.rejects(
      () => fernetDecrypt(key, v.token, { now: at(v.now), ttlSeconds: 60 }),
      FernetError,
      v.desc,
    );
  }
});

Deno.test("fernet: round trip with a derived key, wrong key and tampering fail", async () => {
  const derived = await deriveFernetKey("  my configured value \n");
  assert.equal(derived, await deriveFernetKey("my configured value"), "the value is trimmed first");
  assert.equal(Uint8Array.fromBase64(derived, { alphabet: "base64url" }).length, 32);
  const key = await importFernetKey(derived);
  const token = await fernetEncrypt(key, "pässwörd ✓");
  assert.equal(await fernetDecrypt(key, token), "pässwörd ✓");

  const other = await importFernetKey(await deriveFernetKey("another value"));
  await assert.rejects(() => fernetDecrypt(other, token), /signature/);
  const bytes = Uint8Array.fromBase64(token, { alphabet: "base64url" });
  bytes[30] ^= 1;
  await assert.rejects(
    () => fernetDecrypt(key, bytes.toBase64({ alphabet: "base64url" })),
    /signature/,
  );
});

Deno.test("fernet: the derived key matches urlsafe_b64encode(sha256(value)) computed independently", async () => {
  // sha256("bridgebox") computed by hand through WebCrypto, then base64url with padding, as Python does.
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode("bridgebox")),
  );
  const expected = digest.toBase64({ alphabet: "base64url" });
  assert.ok(expected.endsWith("="), "Python's urlsafe_b64encode keeps the padding");
  assert.equal(await deriveFernetKey("bridgebox"), expected);
});

Deno.test("fernet: malformed keys are refused clearly", async () => {
  await assert.rejects(() => importFernetKey("short"), FernetError);
  await assert.rejects(() => importFernetKey("%%%"), FernetError);
});
