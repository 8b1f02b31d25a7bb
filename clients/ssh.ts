/**
 * The SSH client of the browser terminal (domain/terminal.ts SshConnector), on the npm package
 * `ssh2` (pure-JS crypto under Deno; its optional native build is left unapproved).
 *
 * The pinned host key is checked inside `hostVerifier`, which ssh2 calls during key exchange:
 * before the user-auth phase, so a mismatch ends the connection with no username, password or
 * key sent (tests/e2e/terminal_test.ts "a wrong fingerprint…" reads the server's auth log).
 */
import { Client, type ClientChannel } from "ssh2";
import {
  fingerprintOf,
  type HostKeyRead,
  mismatchDetail,
  type PtySize,
  sameFingerprint,
  type SshConnector,
  type SshOpened,
  type SshShell,
  type SshTarget,
} from "../domain/terminal.ts";

export interface SshClientOptions {
  /** Connect + key exchange + auth must finish within this (milliseconds). */
  readyTimeoutMs?: number;
}

function shellOf(client: Client, stream: ClientChannel): SshShell {
  const { promise: closed, resolve } = Promise.withResolvers<void>();
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    client.end();
    resolve();
  };
  stream.on("close", finish);
  client.on("close", finish);
  client.on("error", finish);
  return {
    write: (data) => {
      if (!done) stream.write(data);
    },
    resize: ({ cols, rows }) => {
      if (!done) stream.setWindow(rows, cols, 0, 0);
    },
    onData: (listener) => {
      stream.on("data", (chunk: Uint8Array) => listener(new Uint8Array(chunk)));
      stream.stderr.on("data", (chunk: Uint8Array) => listener(new Uint8Array(chunk)));
    },
    closed,
    close: () => {
      stream.close();
      finish();
    },
  };
}

export function sshConnector(options: SshClientOptions = {}): SshConnector {
  const readyTimeout = options.readyTimeoutMs ?? 15_000;
  return {
    openShell(target: SshTarget, size: PtySize): Promise<SshOpened> {
      return new Promise<SshOpened>((resolve) => {
        const client = new Client();
        let presented: string | null = null;
        let settled = false;
        const settle = (result: SshOpened) => {
          if (settled) return;
          settled = true;
          if (!result.ok) client.end();
          resolve(result);
        };
        client.on("ready", () => {
          client.shell({ term: "xterm-256color", cols: size.cols, rows: size.rows }, (err, s) => {
            if (err) return settle({ ok: false, reason: "unreachable", detail: err.message });
            settle({ ok: true, shell: shellOf(client, s) });
          });
        });
        client.on("error", (err: Error & { level?: string }) => {
          if (presented && !sameFingerprint(presented, target.pinnedFingerprint)) {
            return settle({
              ok: false,
              reason: "fingerprint_mismatch",
              detail: mismatchDetail(target.pinnedFingerprint, presented, target.pinnedBy),
            });
          }
          if (err.level === "client-authentication") {
            return settle({
              ok: false,
              reason: "auth_failed",
              detail: `The SSH server refused the stored credentials for ${target.username}.`,
            });
          }
          settle({
            ok: false,
            reason: "unreachable",
            detail: `SSH to ${target.host}:${target.port} failed: ${err.message}`,
          });
        });
        client.on("close", () =>
          settle({
            ok: false,
            reason: "unreachable",
            detail: `SSH to ${target.host}:${target.port} closed before a shell opened.`,
          }));
        client.connect({
          host: target.host,
          port: target.port,
          username: target.username,
          ...(target.privateKey
            ? { privateKey: target.privateKey }
            : { password: target.password }),
          readyTimeout,
          tryKeyboard: false,
          hostVerifier: (key: Uint8Array, verify: (ok: boolean) => void) => {
            fingerprintOf(new Uint8Array(key)).then((fp) => {
              presented = fp;
              verify(sameFingerprint(fp, target.pinnedFingerprint));
            }, () => verify(false));
          },
        });
      });
    },

    readHostKey(host: string, port: number): Promise<HostKeyRead> {
      return new Promise<HostKeyRead>((resolve) => {
        const client = new Client();
        let result: HostKeyRead | null = null;
        const finish = (fallback: string) => {
          client.end();
          resolve(result ?? { ok: false, detail: fallback });
        };
        client.on("error", (err: Error) => finish(`SSH to ${host}:${port} failed: ${err.message}`));
        client.on("ready", () => finish("unexpected login"));
        client.on("close", () => finish(`SSH to ${host}:${port} closed before a host key came.`));
        client.connect({
          host,
          port,
          // A name only: the verifier refuses every key, so no user-auth phase is ever reached.
          username: "bridgebox-host-key-probe",
          readyTimeout,
          hostVerifier: (key: Uint8Array, verify: (ok: boolean) => void) => {
            const bytes = new Uint8Array(key);
            fingerprintOf(bytes).then((fingerprint) => {
              result = { ok: true, fingerprint, algorithm: keyAlgorithm(bytes) };
              verify(false);
            }, () => verify(false));
          },
        });
      });
    },
  };
}

/** The algorithm name the SSH wire format puts first in a public key blob. */
function keyAlgorithm(blob: Uint8Array): string {
  if (blob.length < 4) return "unknown";
  const len = new DataView(blob.buffer, blob.byteOffset).getUint32(0);
  if (len > 64 || len + 4 > blob.length) return "unknown";
  return new TextDecoder().decode(blob.subarray(4, 4 + len));
}
