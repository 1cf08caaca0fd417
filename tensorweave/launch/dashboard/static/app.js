// tensorweave dashboard: polls /api/cluster, /api/series and /api/events about once a
// second (plain fetches: no socket to hold open, so any port-forward carries it) and
// draws with SVG. No framework, nothing loaded from elsewhere.
"use strict";

const POLL_MS = 1000;
const WINDOW_S = 300;           // the charts show at most the last five minutes,
const MIN_WINDOW_S = 60;        // and at least one: a young job fills the chart
const SVG = "http://www.w3.org/2000/svg";
const COLORS = ["#a371f7", "#3fb950", "#58a6ff", "#d29922", "#f778ba", "#79c0ff"];
const state = { points: [], events: [], lastEvent: 0, lastT: 0, cluster: null, failures: 0 };

function esc(text) {
  return String(text).replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;", "'": "&#39;"}[c]));
}
function fmtNum(v, digits = 3) {
  if (v === null || v === undefined) return "–";
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en-US");
  return Number(v.toPrecision(digits)).toString();
}
function fmtBytes(v) {
  if (v === null || v === undefined) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return (i ? v.toFixed(1) : Math.round(v)) + " " + units[i];
}
function fmtTime(t) { return new Date(t * 1000).toLocaleTimeString("en-GB"); }
function el(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

// ----- the cluster picture ---------------------------------------------------------
function layout(tasks) {
  const rows = { top: [], middle: [], bottom: [] };
  for (const t of tasks) {
    if (t.job === "ps") rows.top.push(t);
    else if (["chief", "master", "worker"].includes(t.job)) rows.bottom.push(t);
    else rows.middle.push(t);
  }
  const pos = {};
  const place = (list, y) => list.forEach((t, i) => {
    pos[t.name] = { x: 760 * (i + 1) / (list.length + 1), y: y };
  });
  place(rows.top, 45); place(rows.middle, 150); place(rows.bottom, 255);
  return pos;
}

function taskLine(t) {
  if (!t.up) return t.state === "ended" ? "ended" : (t.state === "empty slot" ? "empty slot"
    : "not answering");
  if (t.job === "ps" || t.job === "ps_standby") return "cpu " + fmtNum((t.cpu || 0) * 100, 2) + "%";
  return fmtNum(t.step_rate) + " steps/s";
}

function drawCluster(c) {
  const svg = document.getElementById("cluster");
  svg.replaceChildren();
  const pos = layout(c.tasks);
  const top = Math.max(1, ...c.links.map(l => l.bytes_per_s));
  for (const l of c.links) {
    const a = pos[l.a], b = pos[l.b];
    if (!a || !b) continue;
    const w = 1 + 7 * Math.log10(1 + l.bytes_per_s) / Math.log10(1 + top);
    svg.append(el("line", { class: "link", x1: a.x, y1: a.y, x2: b.x, y2: b.y,
      "stroke-width": w.toFixed(1) }));
    // Labels a third of the way from the upper end: crossing links' midpoints coincide.
    const [u, v] = a.y <= b.y ? [a, b] : [b, a];
    const f = u.y === v.y ? 0.5 : 0.3;
    const mx = u.x + f * (v.x - u.x), my = u.y + f * (v.y - u.y);
    svg.append(el("text", { x: mx + 6, y: my + (u.y === v.y ? -4 : 0), class: "dim" },
      fmtBytes(l.bytes_per_s) + "/s"));
  }
  for (const t of c.tasks) {
    const p = pos[t.name];
    const cls = ["node", t.up ? "up" : (t.state === "ended" ? "ended" : "down")];
    if (t.straggler) cls.push("straggler");
    const g = el("g", { class: cls.join(" "), "data-task": t.name,
      transform: `translate(${p.x - 70},${p.y - 24})` });
    g.append(el("rect", { width: 140, height: 48, rx: 6 }));
    g.append(el("text", { x: 8, y: 16, "font-weight": "600" },
      t.name + (t.straggler ? "  ⚠ straggler" : "")));
    g.append(el("text", { x: 8, y: 30, class: "dim" }, t.address || "(no server)"));
    g.append(el("text", { x: 8, y: 43 }, taskLine(t)));
    svg.append(g);
  }
}

// ----- charts ----------------------------------------------------------------------
function chart(id, lines, opts = {}) {
  const svg = document.getElementById(id);
  svg.replaceChildren();
  const W = 460, H = 150, L = 44, R = 8, T = 8, B = 18;
  const now = state.cluster ? state.cluster.t : Date.now() / 1000;
  const first = state.points.length ? state.points[0].t : now;
  const span = Math.min(WINDOW_S, Math.max(MIN_WINDOW_S, now - first));
  const t0 = now - span;
  let ymax = 0;
  for (const line of lines) for (const [, v] of line.points) ymax = Math.max(ymax, v);
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  const x = t => L + (W - L - R) * (t - t0) / span;
  const y = v => T + (H - T - B) * (1 - v / ymax);
  svg.append(el("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
  svg.append(el("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
  svg.append(el("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "dim" },
    fmtNum(ymax, 2)));
  svg.append(el("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "dim" }, "0"));
  svg.append(el("text", { x: L, y: H - 4, class: "dim" },
    span >= 120 ? "-" + Math.round(span / 60) + " min" : "-" + Math.round(span) + " s"));
  svg.append(el("text", { x: W - R, y: H - 4, "text-anchor": "end", class: "dim" }, "now"));
  for (const e of state.events) {
    if (e.t < t0 || e.kind === "info") continue;
    const ex = x(e.t).toFixed(1);
    const m = el("line", { class: "marker " + e.kind, x1: ex, x2: ex, y1: T, y2: H - B });
    m.append(el("title", {}, fmtTime(e.t) + " " + e.text));
    svg.append(m);
  }
  lines.forEach((line, i) => {
    const pts = line.points.filter(([t]) => t >= t0);
    if (!pts.length) return;
    const d = pts.map(([t, v], j) => (j ? "L" : "M") + x(t).toFixed(1) + "," + y(v).toFixed(1));
    svg.append(el("path", { d: d.join(""), fill: "none", "stroke-width": 1.8,
      stroke: line.color || COLORS[i % COLORS.length] }));
    if (lines.length > 1) {
      svg.append(el("text", { x: L + 8 + 70 * i, y: T + 10,
        fill: line.color || COLORS[i % COLORS.length] }, line.label));
    }
  });
  if (opts.empty && !lines.some(l => l.points.length)) {
    svg.append(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "dim" },
      opts.empty));
  }
}

function series(key) {
  return state.points.filter(p => p[key] !== null && p[key] !== undefined)
    .map(p => [p.t, p[key]]);
}

function drawCharts(c) {
  chart("chart-rate", [{ label: "global", points: series("rate"), color: "#3fb950" }],
    { empty: "no steps yet" });
  document.getElementById("rate-source").textContent = c.global.source === "launcher"
    ? "from the launcher's progress" : "global_step updates on the ps tasks";
  chart("chart-loss", [{ label: "loss", points: series("loss"), color: "#f778ba" }],
    { empty: "no loss reported" });
  document.getElementById("loss-note").textContent = c.global.source === "launcher" ? ""
    : "The loss comes from the launcher's reading of the workers' output; a standalone "
      + "dashboard has none.";
  const workers = c.tasks.filter(t => ["chief", "master", "worker"].includes(t.job));
  chart("chart-workers", workers.map(w => ({ label: w.name, points: state.points
    .filter(p => p.workers && p.workers[w.name] !== null && p.workers[w.name] !== undefined)
    .map(p => [p.t, p.workers[w.name]]) })), { empty: "no worker steps yet" });
}

// ----- tables ----------------------------------------------------------------------
function drawWorkers(c) {
  const workers = c.tasks.filter(t => ["chief", "master", "worker"].includes(t.job));
  const top = Math.max(1e-9, ...workers.map(w => w.step_rate || 0));
  let html = "<tr><th>task</th><th>steps/s</th><th></th><th>steps</th><th>cpu</th></tr>";
  for (const w of workers) {
    const pct = 100 * (w.step_rate || 0) / top;
    html += `<tr class="${w.straggler ? "straggler" : ""}" data-task="${esc(w.name)}">`
      + `<td>${esc(w.name)}${w.straggler ? " ⚠" : ""}${w.up ? "" : " (down)"}</td>`
      + `<td class="num">${fmtNum(w.step_rate)}</td>`
      + `<td style="width:35%"><div class="bar worker" style="width:${pct.toFixed(0)}%"></div></td>`
      + `<td class="num">${fmtNum(w.steps)}</td>`
      + `<td class="num">${w.cpu === undefined || w.cpu === null ? "–" : fmtNum(w.cpu * 100, 2) + "%"}</td></tr>`;
  }
  document.getElementById("workers").innerHTML = html;
}

function drawPs(c) {
  const top = Math.max(1e-9, ...c.ps.map(p => p.bytes_per_s || 0));
  let html = c.ps.length ? "" : '<p class="note">no variable updates yet</p>';
  for (const p of c.ps) {
    const pct = 100 * (p.bytes_per_s || 0) / top;
    html += `<div class="psrow" data-task="${esc(p.task)}"><div class="head"><b>${esc(p.task)}</b>`
      + `<span>${fmtBytes(p.bytes_per_s)}/s · ${fmtNum(p.updates_per_s)} updates/s · `
      + `${p.variables} vars</span></div>`
      + `<div class="bar" style="width:${pct.toFixed(0)}%"></div><table>`;
    for (const v of p.hottest) {
      html += `<tr><td>${esc(v.variable)}</td><td class="num">${fmtBytes(v.bytes_per_s)}/s</td>`
        + `<td class="num">${fmtNum(v.updates)} updates</td></tr>`;
    }
    html += "</table></div>";
  }
  document.getElementById("ps").innerHTML = html;
}

function drawSync(c) {
  // One line per task and set of missing replicas: a step's accumulators wait together.
  const groups = new Map();
  for (const s of c.sync) {
    const key = s.task + "|" + s.waiting_for.join(",");
    const g = groups.get(key) || { task: s.task, missing: s.waiting_for, accs: [], secs: 0 };
    g.accs.push(s.accumulator);
    g.secs = Math.max(g.secs, s.waiting_s);
    groups.set(key, g);
  }
  let html = "";
  for (const g of groups.values()) {
    const accs = g.accs.slice(0, 2).map(esc).join(", ")
      + (g.accs.length > 2 ? ` +${g.accs.length - 2}` : "");
    html += `<p><b>${esc(g.task)}</b> <span class="wait">waits ${fmtNum(g.secs, 2)} s</span> for `
      + `<b>${g.missing.length ? g.missing.map(esc).join(", ") : "(replicas not named yet)"}</b>`
      + `<br><span class="note">${accs}</span></p>`;
  }
  document.getElementById("sync").innerHTML = html
    || '<p class="note">nothing waits (async training, or every gradient is in)</p>';
}

function drawEvents() {
  const list = document.getElementById("events");
  list.innerHTML = state.events.slice().reverse().map(e =>
    `<li class="event ${esc(e.kind)}" data-kind="${esc(e.kind)}"><time>${fmtTime(e.t)}</time>`
    + `${esc(e.text)}</li>`).join("") || '<li class="note">none yet</li>';
}

function drawHeader(c) {
  document.getElementById("title").textContent = c.title || "tensorweave";
  document.getElementById("global-step").textContent = fmtNum(c.global.step);
  document.getElementById("global-rate").textContent = fmtNum(c.global.rate);
  document.getElementById("loss").textContent = fmtNum(c.global.loss, 4);
  const up = c.tasks.filter(t => t.up).length;
  document.getElementById("tasks-up").textContent = up + "/" + c.tasks.length;
}

// ----- polling ---------------------------------------------------------------------
async function getJSON(path) {
  const resp = await fetch(path, { cache: "no-store" });
  if (!resp.ok) throw new Error(path + ": HTTP " + resp.status);
  return resp.json();
}

async function poll() {
  try {
    const [c, s, e] = await Promise.all([getJSON("/api/cluster"),
      getJSON("/api/series?since=" + state.lastT), getJSON("/api/events?after=" + state.lastEvent)]);
    state.cluster = c;
    state.points.push(...s.points);
    if (s.points.length) state.lastT = s.points[s.points.length - 1].t;
    state.points = state.points.filter(p => p.t >= c.t - WINDOW_S);
    state.events.push(...e.events);
    if (e.events.length) state.lastEvent = e.events[e.events.length - 1].id;
    state.events = state.events.slice(-200);
    drawHeader(c); drawCluster(c); drawCharts(c); drawWorkers(c); drawPs(c); drawSync(c);
    drawEvents();
    state.failures = 0;
    const status = document.getElementById("status");
    status.textContent = "updated " + fmtTime(c.t);
    status.className = "status";
  } catch (err) {
    state.failures++;
    const status = document.getElementById("status");
    status.textContent = "no answer from the dashboard (" + err.message + ")";
    status.className = "status stale";
  }
}

poll();
setInterval(poll, POLL_MS);
