/**
 * `deno task test:browser` (with console_flow.ts): headless Chromium opens the browser terminal
 * to a hypervisor endpoint whose SSH server is an in-process ssh2 server on 127.0.0.1
 * (tests/_ssh_server.ts), types `echo hello`, reads `hello` back from xterm.js's rows, and closes
 * the tab: the SSH session must end with it; then the same through a cluster node's own terminal
 * (`/ui/nodes/{id}/terminal`). `UPDATE_SCREENSHOTS=1` writes the screenshot to
 * docs/screenshots/terminal.png (tests/browser/_screenshots.ts); a plain run writes nothing.
 */
import assert from "node:assert/strict";
import puppeteer, { type Browser } from "puppeteer-core";
import { TERMINAL_PERMISSIONS, terminalWorld } from "../e2e/_terminal_world.ts";
import { screenshot } from "./_screenshots.ts";

const CHROMIUM = Deno.env.get("CHROMIUM_PATH") ?? "/usr/bin/chromium";

Deno.test({
  name: "browser: the terminal page types echo hello over SSH and reads hello back",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await Deno.stat(CHROMIUM).catch(() => {
      throw new Error(
        `${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)`,
      );
    });
    const w = await terminalWorld();
    const profile = await Deno.makeTempDir({ prefix: "bridgebox-chromium-" });
    let browser: Browser | undefined;
    const problems: string[] = [];
    try {
      const token = await w.h.token({
        permissions: [...TERMINAL_PERMISSIONS, "service.view_node"],
      });
      browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--no-first-run",
          "--disable-background-networking",
          "--disable-component-update",
          `--user-data-dir=${profile}`,
        ],
      });
      const watched = async () => {
        const page = await browser!.newPage();
        page.setDefaultTimeout(60_000);
        await page.setViewport({ width: 1100, height: 640 });
        page.on("console", (m) => {
          if (m.type() === "error") problems.push(`console error: ${m.text()}`);
        });
        page.on("pageerror", (e) => problems.push(`page error: ${String(e)}`));
        page.on("response", (r) => {
          if (r.status() >= 400) problems.push(`HTTP ${r.status()} ${r.url()}`);
        });
        return page;
      };
      const page = await watched();

      await page.goto(`${w.base}/ui/login`, { waitUntil: "load" });
      await page.type("#token", token.value);
      await Promise.all([
        page.waitForNavigation({ waitUntil: "load" }),
        page.click("form[action='/ui/login'] button[type=submit]"),
      ]);
      const opened = w.ssh.nextShell();
      await page.goto(`${w.base}/ui/endpoints/hypervisor/${w.endpointId}/terminal`, {
        waitUntil: "load",
      });
      await page.waitForSelector("#terminal[data-state=open]");
      await opened;
      await page.click("#terminal");
      await page.keyboard.type("echo hello");
      await page.keyboard.press("Enter");
      await page.waitForFunction(
        `[...document.querySelectorAll(".xterm-rows > div")].some((r) => r.textContent.trim() === "hello")`,
      );
      const rows = await page.$$eval(
        ".xterm-rows > div",
        (els) => els.map((e) => e.textContent?.trimEnd() ?? "").filter((t) => t !== ""),
      );
      assert.deepEqual(rows.slice(0, 3), ["$ echo hello", "hello", "$"]);
      // The PTY got the size xterm.js fitted to the page, not a default.
      assert.equal(w.ssh.ptys.length, 1);
      assert.ok(w.ssh.ptys[0].cols > 80, JSON.stringify(w.ssh.ptys));
      await screenshot(page, "terminal");
      const closed = w.ssh.nextShellClosed();
      await page.close();
      await closed;

      // A cluster node's own terminal: its reported address, its own pinned key.
      const nodeId = await w.addNode("pve2", "127.0.0.1");
      await w.patchEndpoint({ ssh_node_host_fingerprints: { pve2: w.ssh.fingerprint } });
      const nodePage = await watched();
      const nodeOpened = w.ssh.nextShell();
      await nodePage.goto(`${w.base}/ui/nodes/${nodeId}/terminal`, { waitUntil: "load" });
      await nodePage.waitForSelector("#terminal[data-state=open]");
      await nodeOpened;
      await nodePage.click("#terminal");
      await nodePage.keyboard.type("echo node-hello");
      await nodePage.keyboard.press("Enter");
      await nodePage.waitForFunction(
        `[...document.querySelectorAll(".xterm-rows > div")].some((r) => r.textContent.trim() === "node-hello")`,
      );
      const nodeClosed = w.ssh.nextShellClosed();
      await nodePage.close();
      await nodeClosed;
      const sessions = await w.h.deps.storage.terminalSessions.list(10);
      assert.deepEqual(sessions.map((r) => r.node_name ?? null).sort(), [null, "pve2"].sort());
      assert.deepEqual(problems, []);
    } finally {
      await browser?.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
      await w.close();
    }
  },
});
