/**
 * An SSH server on 127.0.0.1:0 for the terminal tests, from the same npm package the app's
 * client uses (`ssh2`): a fresh RSA host key, one user/password, and a tiny shell that echoes
 * what is typed and answers `echo X` with X. It records every authentication attempt (to prove
 * a refused host key sent no secret), the PTY size and resizes, and when each shell closes.
 */
import { generateKeyPairSync } from "node:crypto";
import { Server } from "ssh2";
import { fingerprintOf } from "../domain/terminal.ts";

export interface TestSshServer {
  port: number;
  fingerprint: string;
  /** TCP connections accepted so far (a refused target must add none). */
  readonly connections: number;
  /** Every auth attempt: method and username (and the password, to prove none arrived). */
  authAttempts: { method: string; username: string; password?: string }[];
  ptys: { cols: number; rows: number; term: string }[];
  resizes: { cols: number; rows: number }[];
  /** Resolves when the next shell opens / closes. */
  nextShell(): Promise<void>;
  nextShellClosed(): Promise<void>;
  /** Ends every open shell from the server side. */
  closeShells(): void;
  close(): Promise<void>;
}

export async function startSshServer(
  user = "tester",
  password = "s3cret-ssh",
): Promise<TestSshServer> {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    privateKeyEncoding: { type: "pkcs1", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "der" },
  });
  void publicKey;
  const authAttempts: TestSshServer["authAttempts"] = [];
  const ptys: TestSshServer["ptys"] = [];
  const resizes: TestSshServer["resizes"] = [];
  let shellWaiters: (() => void)[] = [];
  let closeWaiters: (() => void)[] = [];
  const openStreams = new Set<{ close(): void }>();
  const clients = new Set<{ end(): void }>();
  let hostKeyBlob: Uint8Array | null = null;

  let connections = 0;
  const server = new Server({ hostKeys: [privateKey] }, (client) => {
    connections++;
    clients.add(client);
    client.on("close", () => clients.delete(client));
    client.on("error", () => {});
    client.on("authentication", (ctx) => {
      authAttempts.push({
        method: ctx.method,
        username: ctx.username,
        ...(ctx.method === "password" ? { password: ctx.password } : {}),
      });
      if (ctx.method === "password" && ctx.username === user && ctx.password === password) {
        ctx.accept();
      } else {
        ctx.reject(["password"]);
      }
    });
    client.on("ready", () => {
      client.on("session", (accept) => {
        const session = accept();
        session.on("pty", (acceptPty, _reject, info) => {
          ptys.push({
            cols: info.cols,
            rows: info.rows,
            term: String((info as unknown as { term?: string }).term ?? ""),
          });
          acceptPty?.();
        });
        session.on("window-change", (acceptWc, _reject, info) => {
          resizes.push({ cols: info.cols, rows: info.rows });
          acceptWc?.();
        });
        session.on("shell", (acceptShell) => {
          const stream = acceptShell();
          openStreams.add(stream);
          let line = "";
          stream.write("$ ");
          stream.on("data", (chunk: Uint8Array) => {
            for (const ch of new TextDecoder().decode(chunk)) {
              if (ch === "\r" || ch === "\n") {
                stream.write("\r\n");
                const m = /^echo (.*)$/.exec(line);
                if (m) stream.write(`${m[1]}\r\n`);
                line = "";
                stream.write("$ ");
              } else {
                line += ch;
                stream.write(ch);
              }
            }
          });
          stream.on("close", () => {
            openStreams.delete(stream);
            const waiters = closeWaiters;
            closeWaiters = [];
            waiters.forEach((w) => w());
          });
          const waiters = shellWaiters;
          shellWaiters = [];
          waiters.forEach((w) => w());
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  // The server's public key blob in SSH wire form, as a client sees it.
  const { parseKey } = await import("ssh2").then((m) => m.utils);
  const parsed = parseKey(privateKey);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key instanceof Error) throw key;
  hostKeyBlob = new Uint8Array(key.getPublicSSH());
  return {
    port,
    fingerprint: await fingerprintOf(hostKeyBlob),
    get connections() {
      return connections;
    },
    authAttempts,
    ptys,
    resizes,
    nextShell: () => new Promise((r) => shellWaiters.push(r)),
    nextShellClosed: () => new Promise((r) => closeWaiters.push(r)),
    closeShells: () => {
      for (const s of openStreams) s.close();
    },
    close: async () => {
      for (const c of clients) c.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
