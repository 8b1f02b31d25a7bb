/**
 * Certificates for TLS tests, made with the `openssl` command. Every test that needs one uses
 * `ignore: !HAS_OPENSSL`, and a missing openssl is reported once, loudly, the same way
 * everywhere (CI installs it: see .ci/run).
 */

async function probe(): Promise<boolean> {
  try {
    const out = await new Deno.Command("openssl", {
      args: ["version"],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

export const HAS_OPENSSL = await probe();

if (!HAS_OPENSSL) {
  console.error(
    "\n*** openssl not found: the TLS tests are SKIPPED (shown as 'ignored'). " +
      "Install it (Debian: apt-get install -y openssl) to run them. ***\n",
  );
}

export async function openssl(args: string[], cwd?: string): Promise<void> {
  const out = await new Deno.Command("openssl", { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
}

/** A self-signed certificate and its key (PEM) for `commonName`. */
export async function selfSigned(commonName: string): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir({ prefix: "bridgebox-tls-" });
  try {
    await openssl([
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${commonName}`,
      "-keyout",
      `${dir}/key.pem`,
      "-out",
      `${dir}/cert.pem`,
    ]);
    return {
      cert: await Deno.readTextFile(`${dir}/cert.pem`),
      key: await Deno.readTextFile(`${dir}/key.pem`),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * A private CA and a server certificate for localhost / 127.0.0.1 signed by it, written to `dir`
 * as ca.pem (ca.key), cert.pem and key.pem.
 */
export async function caSignedCertificate(
  dir: string,
): Promise<{ ca: string; cert: string; key: string }> {
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const subject = (cn: string) => ["-days", "2", "-subj", `/CN=${cn}`];
  await openssl(
    ["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", ...subject("CA")],
    dir,
  );
  await openssl([
    "req",
    ...ec,
    "-keyout",
    "key.pem",
    "-out",
    "server.csr",
    "-subj",
    "/CN=localhost",
  ], dir);
  await Deno.writeTextFile(
    `${dir}/ext.cnf`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n" +
      "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "cert.pem",
    "-days",
    "2",
    "-extfile",
    "ext.cnf",
  ], dir);
  const read = (name: string) => Deno.readTextFile(`${dir}/${name}`);
  return { ca: await read("ca.pem"), cert: await read("cert.pem"), key: await read("key.pem") };
}
