// sqlstore ui: the only script of the viewer (no inline script: the CSP forbids it).
// Stored content is untrusted: this file never assigns innerHTML; rows built from the
// live stream use textContent only.
"use strict";

function localTimes(root) {
  for (const el of root.querySelectorAll("time[datetime]")) {
    const when = new Date(el.getAttribute("datetime"));
    if (!isNaN(when)) {
      el.title = "Local: " + when.toLocaleString() + " (" + el.textContent + ")";
    }
  }
}

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.appendChild(area);
  area.select();
  document.execCommand("copy");
  area.remove();
  return Promise.resolve();
}

document.addEventListener("click", (ev) => {
  const button = ev.target.closest("button.copy");
  if (!button) return;
  copyText(button.dataset.copy || "").then(() => {
    button.textContent = "copied";
    setTimeout(() => { button.textContent = "copy"; }, 1500);
  });
});

// Keyboard: j/k move between rows, Enter follows the row's first link, / searches.
function rows() {
  return Array.from(document.querySelectorAll("table.rows tbody tr, ol.conversation > li"));
}

function focusRow(index) {
  const all = rows();
  if (!all.length) return;
  const i = Math.max(0, Math.min(index, all.length - 1));
  for (const r of all) r.classList.remove("current");
  const row = all[i];
  row.classList.add("current");
  const target = row.querySelector("a, summary, button") || row;
  if (target === row) row.tabIndex = -1;
  target.focus();
  row.scrollIntoView({ block: "nearest" });
}

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  const tag = (ev.target.tagName || "").toLowerCase();
  if (tag === "input" || tag === "textarea" || tag === "select") return;
  const all = rows();
  const current = all.findIndex((r) => r.classList.contains("current") || r.contains(document.activeElement));
  if (ev.key === "j") { focusRow(current + 1); ev.preventDefault(); }
  else if (ev.key === "k") { focusRow(current < 0 ? 0 : current - 1); ev.preventDefault(); }
  else if (ev.key === "/") {
    const search = document.getElementById("search");
    if (search) { search.focus(); ev.preventDefault(); }
  } else if (ev.key === "g") { window.location.assign("/"); }
});

// Live follow of the timeline: server-sent events from /stream.
function cell(row, text, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  if (text !== undefined) td.textContent = text;
  row.appendChild(td);
  return td;
}

function recordRow(rec) {
  const tr = document.createElement("tr");
  tr.className = "live-row" + (rec.gap ? " gap" : "");
  tr.dataset.pos = String(rec.pos);
  cell(tr, String(rec.pos), "num");
  const when = document.createElement("time");
  when.setAttribute("datetime", rec.at);
  when.textContent = rec.at_text;
  cell(tr).appendChild(when);
  const code = document.createElement("code");
  code.textContent = rec.type;
  cell(tr).appendChild(code);
  const details = document.createElement("details");
  const summary = document.createElement("summary");
  summary.textContent = rec.summary || "(no text)";
  const pre = document.createElement("pre");
  pre.textContent = rec.body;
  details.append(summary, pre);
  cell(tr).appendChild(details);
  const button = document.createElement("button");
  button.type = "button";
  button.className = "copy";
  button.dataset.copy = rec.cursor;
  button.setAttribute("aria-label", "Copy cursor");
  button.textContent = "copy";
  cell(tr).appendChild(button);
  localTimes(tr);
  return tr;
}

function setupFollow() {
  const button = document.getElementById("follow");
  if (!button) return;
  const status = document.getElementById("live-status");
  const body = document.getElementById("records");
  let source = null;
  let received = 0;
  function stop(text) {
    if (source) source.close();
    source = null;
    button.textContent = "Follow live";
    button.setAttribute("aria-pressed", "false");
    status.textContent = text || "";
  }
  button.addEventListener("click", () => {
    if (source) { stop("stopped"); return; }
    const params = new URLSearchParams({ id: button.dataset.session, after: button.dataset.after });
    source = new EventSource("/stream?" + params.toString());
    button.textContent = "Stop following";
    button.setAttribute("aria-pressed", "true");
    status.textContent = "following…";
    source.addEventListener("open", () => { status.textContent = "following · " + received + " new"; });
    source.addEventListener("record", (ev) => {
      const rec = JSON.parse(ev.data);
      const empty = body.querySelector("tr.empty");
      if (empty) empty.remove();
      const nearBottom = window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
      body.appendChild(recordRow(rec));
      button.dataset.after = rec.cursor;
      received += 1;
      status.textContent = "following · " + received + " new";
      if (nearBottom) window.scrollTo(0, document.body.scrollHeight);
    });
    source.addEventListener("failure", (ev) => { stop("stopped: " + JSON.parse(ev.data).error); });
    source.addEventListener("end", () => { stop("the server ended the stream"); });
    source.addEventListener("error", () => { status.textContent = "reconnecting…"; });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes(document);
  setupFollow();
});
