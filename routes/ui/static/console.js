// Bridgebox console: the live parts (EventSource) and small conveniences. Every page works
// without this file; it only fills in live status, follows running syncs and selects rows.
"use strict";

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function badge(text, tone) {
  return el("span", { class: "badge " + (tone || "") }, text);
}

const TONES = {
  online: "ok",
  completed: "ok",
  started: "info",
  progress: "info",
  running: "info",
  offline: "bad",
  error: "bad",
  failed: "bad",
  unauthorized: "bad",
  disabled: "muted",
};

// Select-all checkboxes for bulk forms.
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.dataset.selectAll) return;
  const form = box.closest("form");
  for (const other of form.querySelectorAll(`input[name="${box.dataset.selectAll}"]`)) {
    other.checked = box.checked;
  }
});

// Live keepalive status of hypervisor endpoints.
function followStatus(ids) {
  const source = new EventSource("/ui/live/status?ids=" + encodeURIComponent(ids));
  source.addEventListener("status", (event) => {
    const s = JSON.parse(event.data);
    for (const cell of document.querySelectorAll(`[data-status-for="${s.id}"]`)) {
      cell.replaceChildren(badge(s.status, TONES[s.status]));
      if (s.detail) cell.append(el("span", { class: "error-text" }, String(s.detail)));
    }
    if (s.version) {
      for (const cell of document.querySelectorAll(`[data-version-for="${s.id}"]`)) {
        cell.textContent = s.version;
      }
    }
  });
  source.addEventListener("done", () => source.close());
  source.onerror = () => source.close();
}

function detailText(detail) {
  if (detail === undefined || detail === null) return "";
  if (typeof detail === "string") return detail;
  const parts = [];
  for (const key of ["operation", "url", "status", "cause", "message", "detail", "hint"]) {
    if (detail[key] !== undefined) parts.push(`${key}: ${detail[key]}`);
  }
  return parts.length ? parts.join(" · ") : JSON.stringify(detail);
}

// One row per stage: started → progress bar → completed with counts, errors with cause and hint.
function stageView(table, log) {
  const body = table.tBodies[0];
  const columns = Array.from(table.tHead.rows[0].cells).map((c) => c.textContent.trim());
  const rows = new Map();
  const line = (text) => {
    if (!log) return;
    log.textContent += text + "\n";
    log.scrollTop = log.scrollHeight;
  };
  // One row per stage and endpoint (a job runs each stage once per endpoint).
  function rowFor(step, endpoint) {
    const key = endpoint === undefined || endpoint === null ? step : `${step}@${endpoint}`;
    let row = rows.get(key) || body.querySelector(`tr[data-stage="${CSS.escape(key)}"]`);
    if (!row) {
      row = el("tr", { "data-stage": key });
      for (const _ of columns) row.append(el("td"));
      row.cells[0].textContent = step;
      const where = columns.indexOf("Endpoint");
      if (where >= 0) row.cells[where].textContent = endpoint ?? "—";
      body.append(row);
    }
    rows.set(key, row);
    return row;
  }
  const cell = (row, name) => row.cells[columns.indexOf(name)];
  return {
    line,
    step(frame) {
      const row = rowFor(frame.step, frame.endpoint_id);
      row.dataset.state = frame.status;
      const state = cell(row, "State");
      if (state) state.replaceChildren(badge(frame.status, TONES[frame.status]));
      const bar = cell(row, "Progress");
      if (bar && frame.progress) {
        const p = el("progress", {
          max: String(frame.progress.total || 1),
          value: String(frame.progress.current),
        });
        bar.replaceChildren(p, ` ${frame.progress.current}/${frame.progress.total}`);
      }
      if (frame.status === "completed") {
        if (bar) bar.replaceChildren(el("progress", { max: "1", value: "1" }));
        const r = frame.result || {};
        for (const k of ["Created", "Updated", "Unchanged", "Failed"]) {
          const c = cell(row, k);
          if (c) c.textContent = r[k.toLowerCase()] ?? "0";
        }
      }
      // The log says what happened in words; the raw frame messages (timings, internal names)
      // stay in the stage table and the API.
      if (frame.status === "started") line(`${frame.step}: started`);
      if (frame.status === "completed") {
        const r = frame.result || {};
        line(
          `${frame.step}: completed, ${r.created ?? 0} created, ${r.updated ?? 0} updated, ` +
            `${r.unchanged ?? 0} unchanged, ${r.failed ?? 0} failed`,
        );
      }
    },
    error(frame) {
      const row = rowFor(frame.step || "sync", frame.endpoint_id);
      row.dataset.state = "failed";
      const state = cell(row, "State");
      const text = [frame.error, detailText(frame.detail), frame.hint].filter(Boolean).join(" — ");
      if (state) {
        state.replaceChildren(badge("failed", "bad"), el("div", { class: "stage-error" }, text));
      }
      line(`${frame.step || "sync"}: failed: ${text}`);
    },
  };
}

function follow(url, table, log, onEnd, onStep) {
  const view = stageView(table, log);
  const source = new EventSource(url);
  const data = (event) => {
    try {
      return JSON.parse(event.data);
    } catch {
      return { message: event.data };
    }
  };
  source.addEventListener("step", (e) => {
    view.step(data(e));
    if (onStep) onStep();
  });
  source.addEventListener("error", (e) => {
    if (e.data) view.error(data(e));
  });
  source.addEventListener("log", (e) => {
    const l = data(e);
    view.line(`${l.timestamp || ""} ${(l.level || "").toUpperCase()} ${l.message || ""}`);
  });
  source.addEventListener("message", (e) => view.line(e.data));
  source.addEventListener("unavailable", (e) => {
    view.line(data(e).detail);
    source.close();
    // No live stream: a job page refreshes itself from the stored job instead.
    if (onEnd) setTimeout(() => onEnd({ ok: false, unavailable: true }), 3000);
  });
  source.addEventListener("complete", (e) => {
    const c = data(e);
    view.line(c.ok ? `✔ ${c.message || "done"}` : `✘ ${c.message || "failed"}`);
    for (const err of c.errors || []) view.line(`  ${detailText(err.detail)}`);
    source.close();
    document.body.dataset.syncDone = c.ok ? "ok" : "failed";
    if (onEnd) onEnd(c);
  });
  source.onerror = () => {
    // The server ended the stream without `complete` (restart, network): a running job is
    // resumed by reloading, which reads the stored log and reconnects.
    if (source.readyState === EventSource.CLOSED) view.line("(stream closed)");
  };
  return source;
}

// A hypervisor task a verb started: polled until it stops, its cells filled in place.
function pollTask(url) {
  const tick = async () => {
    let task;
    try {
      const response = await fetch(url, { headers: { accept: "application/json" } });
      if (!response.ok) return;
      task = await response.json();
    } catch {
      return;
    }
    for (const cell of document.querySelectorAll("[data-task-status]")) {
      cell.textContent = task.status === "stopped" ? "finished" : "running";
    }
    const exit = String(task.exitstatus ?? "");
    const result = task.status !== "stopped"
      ? badge("not yet", "info")
      : exit === "OK"
      ? badge("succeeded", "ok")
      : badge("failed: " + (exit || "unknown"), "bad");
    for (const cell of document.querySelectorAll("[data-task-exit]")) cell.replaceChildren(result);
    if (task.status === "stopped") clearInterval(timer);
  };
  const timer = setInterval(tick, 2000);
}

document.addEventListener("DOMContentLoaded", () => {
  const body = document.body;
  if (body.dataset.liveStatus) followStatus(body.dataset.liveStatus);
  if (body.dataset.taskPoll) pollTask(body.dataset.taskPoll);
  if (body.dataset.jobStream) {
    const table = document.querySelector("[data-stage-table]");
    const log = document.querySelector("[data-log]");
    // The stream replays the job's log from its first line: start from an empty box, or every
    // line written before the page loaded shows twice.
    if (log) log.textContent = "";
    let started = false;
    follow(`/ui/live/jobs/${body.dataset.jobStream}`, table, log, () => {
      setTimeout(() => location.reload(), 800);
    }, () => {
      // Stages are arriving: the job runs, whatever the page said when it loaded.
      if (started) return;
      started = true;
      for (const cell of document.querySelectorAll("[data-job-status]")) {
        cell.replaceChildren(badge("running", "info"));
      }
      for (const cell of document.querySelectorAll("[data-job-started]")) {
        if (/never|—/.test(cell.textContent)) cell.textContent = "just now";
      }
    });
  }
  const live = document.querySelector('form[data-sync-form="live"]');
  if (live) {
    live.addEventListener("submit", (event) => {
      // "Show the plan" is an ordinary form post (the page answers with the plan).
      if (event.submitter?.value === "plan") return;
      event.preventDefault();
      // Every field rides along: stages, endpoints, the CSRF token and the run options, which
      // the server reads as the durable job's form does (routes/ui/live.ts).
      const params = new URLSearchParams();
      for (const [k, v] of new FormData(live)) {
        if (k !== "intent" && k !== "mode") params.append(k, v);
      }
      const section = document.getElementById("live-run");
      section.hidden = false;
      const table = section.querySelector("[data-stage-table]");
      table.tBodies[0].replaceChildren();
      section.querySelector("[data-log]").textContent = "";
      for (const b of live.querySelectorAll("button")) b.disabled = true;
      const log = section.querySelector("[data-log]");
      const done = () => {
        for (const b of live.querySelectorAll("button")) b.disabled = false;
      };
      section.scrollIntoView();
      // Asked first as JSON: a refusal (no backend copy of a chosen endpoint, no permission)
      // comes back as a 4xx whose detail an EventSource could not read. Nothing runs yet.
      fetch("/ui/live/stages?" + params, { headers: { accept: "application/json" } })
        .then(async (response) => {
          if (response.ok) return follow("/ui/live/stages?" + params, table, log, done);
          let detail = `HTTP ${response.status}`;
          try {
            detail = detailText((await response.json()).detail) || detail;
          } catch {
            // keep the status
          }
          log.textContent += `✘ ${detail}\n`;
          document.body.dataset.syncDone = "refused";
          done();
        })
        .catch((error) => {
          log.textContent += `✘ ${error}\n`;
          done();
        });
    });
  }
});
