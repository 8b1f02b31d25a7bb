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

/**
 * Derived keys and tokens made once with Python (3, `cryptography` 48.0.0), not with our code,
 * and recorded here:
 *   base64.urlsafe_b64encode(hashlib.sha256(value.strip().encode()).digest())
 *   Fernet(<derived key of "shared">).encrypt(plaintext.encode())
 */
const PYTHON_DERIVED: Array<[configured: string, key: string]> = [
  ["bridgebox", "hvq4bphVeZY3EXOnbdeqrJX1PFFolUDUn2cuAdsD4iQ="],
  ["  shared plugin key 123 \n", "EXw9wTfHoW_nJlsy7G8XoTv8NLupfJI-uTQrJg3pVRA="],
  ["pässwörd ✓ ключ", "iJzYC069woAIw0ym3t4ieHnsQ8D5GkF3futSAqv3ExU="],
];
const PYTHON_TOKENS: Array<[plaintext: string, token: string]> = [
  [
    "from-python",
    "gAAAAABrBJiSBEXy2jI4gOOBu7MhaAIDoAvGJYC0usrFNIiLE3RnsjfoTEknVkLwYSPgeWViFpoHB9Wuda6JyyzksIOrn5isdw==",
  ],
  [
    "pässwörd ✓",
    "gAAAAABrBJiSHTSIOL81o6m6QYvyK-7kbtZWtWzySJ1v6LWG8I0BLC7ZZZTqZRp6Zs7OhqLWUSE7g-VJ1EnewBfjGcrEClxZ-Q==",
  ],
  [
    "",
    "gAAAAABrBJiS8PquPBZSluSBuX7EP9Zz7oSARsc7t36mgDoRw9LN5PgpGLThXtGDmlgLkzIvX5O1VKj7pzxtHl4y32cXLvlBng==",
  ],
  [
    "x".repeat(100),
    "gAAAAABrBJiSckZ4jKFqLgorKCE04kgqvZNN6BRTX-MPMYxgy9Tg1O90MxK4WbXXw0q23kTHlqKGff4_VwhWqOlI71YIKqDba5WnwF9R8bsDo4cw_nDGRTJenRc3VrF9cxut5QG9PXZrYyRxHHNC1-sukoyaO3byoeYDzd2QAYiSM5SctxLj3qv0EnXG82VkeLXgmBFKiS7Jzw5YxSwTK9Z_e_Q1so-vBQ==",
  ],
];

Deno.test("fernet: derived keys equal the ones Python computed (trimmed, UTF-8, padded base64url)", async () => {
  for (const [configured, key] of PYTHON_DERIVED) {
    assert.equal(await deriveFernetKey(configured), key, JSON.stringify(configured));
  }
});

Deno.test("fernet: tokens made by Python's cryptography decrypt to their plaintext", async () => {
  const key = await importFernetKey(await deriveFernetKey("shared"));
  for (const [plaintext, token] of PYTHON_TOKENS) {
    assert.equal(await fernetDecrypt(key, token), plaintext);
  }
  // The timestamp inside the token is Python's (2026-11-23T19:48:34Z): a TTL counts from it.
  const stamped = Date.UTC(2026, 10, 23, 19, 48, 34);
  assert.equal(
    await fernetDecrypt(key, PYTHON_TOKENS[0][1], { now: stamped + 10_000, ttlSeconds: 10 }),
    "from-python",
  );
  await assert.rejects(
    () => fernetDecrypt(key, PYTHON_TOKENS[0][1], { now: stamped + 11_000, ttlSeconds: 10 }),
    /expired/,
  );
});

Deno.test("fernet: malformed keys are refused clearly", async () => {
  await assert.rejects(() => importFernetKey("short"), FernetError);
  await assert.rejects(() => importFernetKey("%%%"), FernetError);
  // 48 bytes would make a valid AES-256 key: still not a Fernet key.
  const long = new Uint8Array(48).fill(1).toBase64({ alphabet: "base64url" });
  await assert.rejects(() => importFernetKey(long), /32 bytes/);
});

Deno.test("fernet: a token whose plaintext is not UTF-8 is refused, not decoded with replacements", async () => {
  // Python: Fernet(<derived key of "shared">).encrypt(b"\xff\xfe not utf-8")
  const token =
    "gAAAAABrBJwvx8dLiexa6r_WLcFQU5RQFdDDwIANZUthmMkBViUAotKWOUcQ-AE11ltCQrBfRtO6aYb4KkJceUA2xxrdBGG13w==";
  const key = await importFernetKey(await deriveFernetKey("shared"));
  await assert.rejects(() => fernetDecrypt(key, token));
});

Deno.test("fernet: an authentic token with another version byte is refused", async () => {
  const raw = Uint8Array.fromBase64(await deriveFernetKey("shared"), { alphabet: "base64url" });
  const key = await importFernetKey(await deriveFernetKey("shared"));
  const good = Uint8Array.fromBase64(await fernetEncrypt(key, "x"), { alphabet: "base64url" });
  // Same body with version 0x81, signed again with the right signing key: only the version is off.
  const body = good.slice(0, good.length - 32);
  body[0] = 0x81;
  const signing = await crypto.subtle.importKey(
    "raw",
    raw.slice(0, 16),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", signing, body));
  const forged = new Uint8Array(body.length + 32);
  forged.set(body);
  forged.set(mac, body.length);
  await assert.rejects(
    () => fernetDecrypt(key, forged.toBase64({ alphabet: "base64url" })),
    /version/,
  );
});
