/**
 * The host-agent client against real sockets: a host-agent that never answers (the per-call
 * timeout), one that redirects (never followed), and one that answers nonsense.
 */
import assert from "node:assert/strict";
import { HostAgentClient } from "../../clients/host_agent.ts";

const TOKEN = "client-test-token-55aa";

async function withAgent(
  handler: (req: Request) => Response | Promise<Response>,
  work: (base: string) => Promise<void>,
) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  try {
    await work(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}

Deno.test("host-agent client: a call that gets no answer fails after the timeout, naming it", async () => {
  const never = Promise.withResolvers<Response>();
  await withAgent(() => never.promise, async (base) => {
    const client = new HostAgentClient({ baseUrl: base, token: TOKEN, fetch, timeoutMs: 50 });
    await assert.rejects(client.health(), (error: Error) => {
      assert.match(
        error.message,
        /^GET http:\/\/127\.0\.0\.1:\d+\/health: no answer: timed out after 0\.05 s$/,
      );
      assert.ok(!error.message.includes(TOKEN));
      return true;
    });
    never.resolve(new Response("late"));
  });
});

Deno.test("host-agent client: redirects are reported, not followed, and the token stays home", async () => {
  const seen: string[] = [];
  await withAgent((req) => {
    seen.push(new URL(req.url).pathname);
    return new Response(null, { status: 302, headers: { location: "http://169.254.169.254/" } });
  }, async (base) => {
    const client = new HostAgentClient({ baseUrl: `${base}/`, token: TOKEN, fetch });
    await assert.rejects(
      client.capabilities(),
      /redirect to http:\/\/169\.254\.169\.254\/ not followed \(HTTP 302\)/,
    );
  });
  assert.deepEqual(seen, ["/capabilities"]);
});

Deno.test("host-agent client: answers of the wrong shape are errors, with the field named", async () => {
  await withAgent(
    (req) =>
      new URL(req.url).pathname === "/health"
        ? new Response("<html>hello</html>")
        : Response.json({ kernel_image_path: 5 }),
    async (base) => {
      const client = new HostAgentClient({ baseUrl: base, fetch });
      await assert.rejects(client.health(), /the answer is not JSON: <html>hello<\/html>/);
      await assert.rejects(
        client.prepareAssets({
          name: "i",
          kernel_image_url: "k",
          kernel_image_sha256: "a".repeat(64),
          rootfs_image_url: "r",
          rootfs_image_sha256: "a".repeat(64),
          architecture: "x86_64",
          default_user: "cloud-user",
        }),
        /unexpected answer \(kernel_image_path: /,
      );
    },
  );
});
