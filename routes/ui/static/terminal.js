// The browser terminal page (routes/ui/terminal.tsx): xterm.js over the app's WebSocket.
// The one-time ticket comes from a CSRF-checked POST and travels in the first frame, never in a URL.
"use strict";
(function () {
  const box = document.getElementById("terminal");
  const status = document.getElementById("terminal-status");
  if (!box || !globalThis.Terminal) return;
  const say = (text) => {
    if (status) status.textContent = text;
  };
  const term = new globalThis.Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
  const fit = new globalThis.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(box);
  try {
    fit.fit();
  } catch (_) { /* hidden box */ }

  async function start() {
    const form = new URLSearchParams({ _csrf: box.dataset.csrf });
    const made = await fetch(box.dataset.sessionUrl, { method: "POST", body: form });
    const body = await made.json().catch(() => ({}));
    if (made.status !== 201) {
      say(`Refused: ${body.detail || made.status}`);
      box.dataset.state = "refused";
      return;
    }
    const url = new URL(box.dataset.socketUrl, location.href);
    url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => {
      socket.send(JSON.stringify({ ticket: body.ticket, cols: term.cols, rows: term.rows }));
    };
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") {
        term.write(new Uint8Array(event.data));
        return;
      }
      const message = JSON.parse(event.data);
      if (message.type === "ready") {
        say("Connected.");
        box.dataset.state = "open";
        term.focus();
      } else if (message.type === "error") {
        say(message.detail);
      }
    };
    socket.onclose = (event) => {
      box.dataset.state = "closed";
      if (event.code !== 1000 || !status || status.textContent === "Connected.") {
        say(`Session ended (${event.code}${event.reason ? ": " + event.reason : ""}).`);
      }
    };
    term.onData((data) => {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: "input", data }));
      }
    });
    term.onResize(({ cols, rows }) => {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify({ type: "resize", cols, rows }));
      }
    });
    addEventListener("resize", () => {
      try {
        fit.fit();
      } catch (_) { /* ignore */ }
    });
  }
  start().catch((error) => say(`Could not connect: ${error.message}`));
})();
