import assert from "node:assert/strict";
import { blockedAddressReason, checkSchemaSource } from "../../domain/schema_sources.ts";

Deno.test("schema sources: private, loopback, link-local and metadata addresses are blocked", () => {
  for (
    const address of [
      "127.0.0.1",
      "10.0.0.1",
      "172.16.5.4",
      "192.168.0.1",
      "169.254.169.254",
      "100.100.100.200",
      "0.0.0.0",
      "224.0.0.1",
      "::1",
      "::",
      "fe80::1",
      "fd00:ec2::254",
      "::ffff:10.0.0.1",
      "64:ff9b::7f00:1",
    ]
  ) assert.ok(blockedAddressReason(address), address);
  for (const address of ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
    assert.equal(blockedAddressReason(address), null, address);
  }
});

Deno.test("schema sources: every resolved address must be public; configured origins are trusted", async () => {
  const policy = {
    allowedDirs: [],
    allowPrivate: false,
    trustedOrigins: ["https://pve.lan:8006"],
    resolve: (host: string) =>
      Promise.resolve(
        ({
          "mixed.example": ["93.184.216.34", "10.0.0.8"],
          "pub.example": ["93.184.216.34"],
        } as Record<string, string[]>)[host] ?? [],
      ),
  };
  const mixed = await checkSchemaSource("https://mixed.example/a.json", policy);
  assert.ok(!mixed.ok && /private/.test(mixed.message));
  assert.ok((await checkSchemaSource("https://pub.example/a.json", policy)).ok);
  assert.ok(
    (await checkSchemaSource("https://pve.lan:8006/pve-docs/api-viewer/apidata.js", policy)).ok,
  );
  const files = await checkSchemaSource("/tmp/x.json", policy);
  assert.ok(!files.ok && /no schema directory/.test(files.message));
  assert.ok(
    (await checkSchemaSource("http://10.0.0.8/a.json", { ...policy, allowPrivate: true })).ok,
  );
});
