// beamconnect's live page: state and scope from /events (Server-Sent
// Events), the config from /api/config. Plots are uPlot, redrawn at screen
// rate (requestAnimationFrame) when new samples came and the view is not
// paused.
"use strict";

const $ = (id) => document.getElementById(id);
const KEEP = 120; // seconds of samples kept for the widest window
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#7c3aed", "#b45309"];

let layout = null;   // {generation, columns:[{name, port}]}
let t = [];          // sample times
let cols = [];       // one array per column
let plots = [];      // {port, idx:[column indexes], u: uPlot, cells:[td]}
let dirty = false;
let paused = false;
let lastConfigEvents = -1;

function text(el, s) { if (el.textContent !== s) el.textContent = s; }
function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return (a !== 0 && (a < 1e-3 || a >= 1e6)) ? v.toExponential(4) : v.toFixed(4);
}

// Tick labels: as many decimals as the tick spacing needs and no more, so
// neighbouring ticks never read the same (20.1052 and 20.1053 rather than
// 20.105 twice), and short enough for the axis.
function decimals(step) {
  if (!(step > 0) || !isFinite(step)) return 0;
  const d0 = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  let d = d0;
  while (d < d0 + 2 && Math.abs(step * 10 ** d - Math.round(step * 10 ** d)) > 1e-6) d++;
  return d;
}
function tick(v, step) {
  if (Math.abs(v) < step / 1e6) v = 0; // no "-0.0"
  const a = Math.max(Math.abs(v), step);
  if (a >= 1e10 || (step < 1e-4 && a < 1e-3)) {
    const digits = Math.max(1, Math.ceil(Math.log10(a / step) + 1e-9) + 1);
    return v.toExponential(digits - 1);
  }
  return v.toFixed(decimals(step));
}
const tickLabels = new WeakMap(); // plot → its value axis' labels, for checks
function ticks(u, splits, axisIdx, space, incr) {
  const labels = splits.map((v) => (v == null ? "" : tick(v, incr)));
  if (axisIdx === 1) tickLabels.set(u, labels);
  return labels;
}

// Every plot's value axis is as wide as the widest labels of any plot, so
// the plot areas line up and no label is cut. The width only grows.
const AXIS_FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
const measure = document.createElement("canvas").getContext("2d");
measure.font = AXIS_FONT;
let yAxisWidth = 44;
let relayout = 0;
function labelWidth(labels) {
  return Math.ceil(Math.max(0, ...labels.map((l) => measure.measureText(l).width)));
}
function ySize(u, values) {
  if (values && values.length) {
    const w = labelWidth(values) + 16; // the tick, and a gap each side
    if (w > yAxisWidth) {
      yAxisWidth = w;
      if (!relayout) relayout = requestAnimationFrame(resize);
    }
  }
  return yAxisWidth;
}
function resize() {
  relayout = 0;
  for (const p of plots) {
    p.u.setSize({ width: Math.max(p.chart.clientWidth, 300), height: 180 });
    p.u.redraw(false, true); // the axes again: the shared width may have grown
  }
}

function portTitle(port) {
  const m = /^(out|in)(\d+)$/.exec(port);
  if (!m) return port;
  if (m[2] === "0") return m[1] === "out" ? "port 0 (out): status" : "port 0 (in): directive";
  return (m[1] === "out" ? "output port " : "input port ") + m[2] + (m[1] === "out" ? " (from BeamNG)" : " (to BeamNG)");
}

function setLayout(l) {
  layout = l;
  t = [];
  cols = l.columns.map(() => []);
  for (const p of plots) p.u.destroy();
  plots = [];
  const host = $("plots");
  host.replaceChildren();
  const byPort = new Map();
  l.columns.forEach((c, i) => {
    if (!byPort.has(c.port)) byPort.set(c.port, []);
    byPort.get(c.port).push(i);
  });
  // Status and directive last: the signals matter most.
  const zero = (p) => (/^(out|in)0$/.test(p) ? 1 : 0);
  const ports = [...byPort.keys()].sort((a, b) => zero(a) - zero(b));
  for (const port of ports) {
    const idx = byPort.get(port);
    const box = document.createElement("div");
    box.className = "plot";
    box.dataset.port = port;
    const chart = document.createElement("div");
    chart.className = "chart";
    const h = document.createElement("h3");
    h.textContent = portTitle(port);
    chart.appendChild(h);
    const live = document.createElement("table");
    live.className = "live";
    const cells = idx.map((ci, k) => {
      const tr = live.insertRow();
      const name = tr.insertCell();
      name.textContent = l.columns[ci].name;
      name.style.color = COLORS[k % COLORS.length];
      const v = tr.insertCell();
      v.className = "v";
      v.dataset.col = l.columns[ci].name;
      v.textContent = "–";
      return v;
    });
    box.append(chart, live);
    host.appendChild(box);
    const opts = {
      width: Math.max(chart.clientWidth, 300), height: 180,
      padding: [10, 28, 0, 0], // room for the last time label at the right edge
      scales: { x: { time: false } },
      axes: [{ label: "time s", font: AXIS_FONT, values: ticks },
        { font: AXIS_FONT, values: ticks, size: ySize }],
      series: [{ label: "t", value: (u, v) => v == null ? "–" : v.toFixed(3) }]
        .concat(idx.map((ci, k) => ({ label: l.columns[ci].name, stroke: COLORS[k % COLORS.length], width: 1.25, value: (u, v) => fmt(v) }))),
      legend: { live: true },
    };
    const u = new uPlot(opts, [[], ...idx.map(() => [])], chart);
    plots.push({ port, idx, u, cells, chart });
  }
  // The page grew as the plots came: a scroll bar may have narrowed the
  // columns after the first plots took their width.
  if (!relayout) relayout = requestAnimationFrame(resize);
}

function addSamples(s) {
  if (!layout || s.g !== layout.generation || !s.t.length) return;
  // Time going back (BeamNG reloaded, ids from 0): start the traces over.
  if (t.length && s.t[0] < t[t.length - 1] - 1e-9) {
    t = [];
    cols = layout.columns.map(() => []);
  }
  for (let i = 0; i < s.t.length; i++) t.push(s.t[i]);
  s.v.forEach((vals, c) => { for (const v of vals) cols[c].push(v); });
  const cut = lowerBound(t, t[t.length - 1] - KEEP);
  if (cut > 4096) {
    t = t.slice(cut);
    cols = cols.map((c) => c.slice(cut));
  }
  dirty = true;
}

function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < x) lo = m + 1; else hi = m; }
  return lo;
}

function draw() {
  requestAnimationFrame(draw);
  if (!dirty || paused || !t.length) return;
  dirty = false;
  const win = Number($("window").value);
  const end = t[t.length - 1];
  const from = lowerBound(t, end - win);
  const xs = t.slice(from);
  for (const p of plots) {
    p.u.setData([xs, ...p.idx.map((ci) => cols[ci].slice(from))], false);
    p.u.setScale("x", { min: Math.max(end - win, xs[0]), max: end });
    p.idx.forEach((ci, k) => text(p.cells[k], fmt(cols[ci][cols[ci].length - 1])));
  }
  text($("scopeinfo"), `${xs.length} samples shown, t = ${end.toFixed(3)} s`);
}

let es = null;       // the event stream
let ended = false;   // the run is over: its last state came
let lostAt = null;   // when the stream was lost, while it is

function setState(s) {
  const st = $("status");
  text(st, `${s.status} ${s.status_text}`);
  st.className = "status s" + s.status + (s.ended ? " stale" : "");
  st.dataset.status = String(s.status);
  const h = $("health");
  if (s.ended) {
    // A finished run is not "healthy" live: say it ended, and how it went.
    text(h, s.healthy ? "ended: no faults" : "ended with faults");
    h.className = "health " + (s.healthy ? "ended" : "bad");
    ended = true;
    banner("ended", `This run ended after ${s.uptime_s.toFixed(1)} s: the figures below are its last. ` +
      (s.healthy ? "It had no faults." : "It had faults (listed below)."));
    text($("stream"), "run ended");
    $("stream").className = "stream";
    if (es) es.close(); // nothing more will come: no reconnecting
  } else {
    text(h, s.healthy ? "healthy" : "NOT HEALTHY");
    h.className = "health " + (s.healthy ? "good" : "bad");
  }
  text($("what"), `${s.config} · ${s.protocol} · model ${s.model} · every ${s.period_ms} ms · time sync ${s.time_sync}`);
  const tb = document.querySelector("#vehicles tbody");
  while (tb.rows.length > s.vehicles.length) tb.deleteRow(-1);
  s.vehicles.forEach((v, i) => {
    const r = tb.rows[i] || tb.insertRow();
    const vals = [v.name || "—", `${v.status} ${v.status_text}`, v.time_s.toFixed(3), v.messages_per_s.toFixed(0),
      v.turnaround_p50_us.toFixed(0), v.turnaround_p99_us.toFixed(0), v.stalls_recovered, v.overdue, v.dropped,
      v.out_of_lockstep ? "NOW" : String(v.lockstep_lost), v.model_faults];
    vals.forEach((x, k) => text(r.cells[k] || r.insertCell(), String(x)));
  });
  const pr = $("problems");
  pr.replaceChildren(...(s.problems || []).map((p) => { const li = document.createElement("li"); li.textContent = p; return li; }));

  const hist = $("history");
  const changes = (s.history || []).slice(-50).reverse();
  hist.replaceChildren(...changes.map((c) => {
    const li = document.createElement("li");
    li.textContent = `${c.at_s.toFixed(2)} s  ${c.vehicle ? c.vehicle + ": " : ""}${c.status} ${c.status_text}`;
    return li;
  }));
  text($("reloadcount"), `(${s.reloads} applied, ${s.reload_errors} refused)`);
  const evs = s.events || [];
  $("events").replaceChildren(...evs.slice().reverse().map((e) => {
    const li = document.createElement("li");
    li.className = e.kind;
    const head = document.createElement("div");
    head.textContent = `${e.at_s.toFixed(2)} s  ${e.kind === "reload" ? "applied" : "refused, the running config stays"}`;
    const pre = document.createElement("pre");
    pre.textContent = (e.lines || []).join("\n");
    li.append(head, pre);
    return li;
  }));
  if (evs.length !== lastConfigEvents) {
    lastConfigEvents = evs.length;
    loadConfig();
  }
}

async function loadConfig() {
  try {
    const r = await fetch("api/config", { cache: "no-store" });
    const c = await r.json();
    text($("configpath"), c.path);
    text($("config"), c.text);
  } catch (e) { /* the stream's status shows a lost server */ }
}

// banner says what the page shows plainly: a run that ended, or a stream
// that was lost; kind "" hides it.
function banner(kind, msg) {
  const b = $("banner");
  b.hidden = !kind;
  b.className = "banner " + kind;
  text(b, msg || "");
}

function connect() {
  es = new EventSource("events");
  es.addEventListener("open", () => {
    text($("stream"), "live");
    $("stream").className = "stream";
    if (lostAt) { lostAt = null; banner(""); }
  });
  es.addEventListener("error", () => {
    if (ended) return;
    // beamconnect is gone (stopped, killed) or unreachable: what the page
    // shows is from before, and whether the run is healthy is unknown.
    if (!lostAt) lostAt = new Date();
    text($("stream"), "stream lost: reconnecting…");
    $("stream").className = "stream down";
    text($("health"), "unknown");
    $("health").className = "health unknown";
    $("status").classList.add("stale");
    banner("lost", `Lost contact with beamconnect at ${lostAt.toLocaleTimeString()}: the run stopped, or its computer or ` +
      "the network is down. The figures below are from before; whether the coupling is healthy is unknown. Reconnecting…");
  });
  es.addEventListener("layout", (e) => setLayout(JSON.parse(e.data)));
  es.addEventListener("samples", (e) => addSamples(JSON.parse(e.data)));
  es.addEventListener("state", (e) => setState(JSON.parse(e.data)));
}

$("pause").addEventListener("click", () => {
  paused = !paused;
  $("pause").textContent = paused ? "Resume" : "Pause";
  dirty = true;
});
$("window").addEventListener("change", () => { dirty = true; });
// Plots follow their column's width: the window's, and a scroll bar that
// comes or goes as the page grows.
new ResizeObserver(() => { if (!relayout) relayout = requestAnimationFrame(resize); }).observe($("plots"));

// scopeCheck measures the scope as drawn, for the browser test and for
// anyone wondering: where each plot area is, its value labels and their
// width against the axis', and whether the time labels fit the canvas.
window.scopeCheck = () => plots.map((p) => {
  const over = p.u.over.getBoundingClientRect();
  const canvas = p.u.root.querySelector("canvas").getBoundingClientRect();
  const labels = tickLabels.get(p.u) || [];
  const xs = p.u.axes[0]._splits || [];
  const xl = p.u.axes[0]._values || [];
  let timeFits = true;
  xs.forEach((v, i) => {
    if (v == null || xl[i] == null || xl[i] === "") return;
    const x = over.left + p.u.valToPos(v, "x");
    const w = measure.measureText(xl[i]).width;
    if (x - w / 2 < canvas.left - 0.5 || x + w / 2 > canvas.right + 0.5) timeFits = false;
  });
  return { port: p.port, chart: p.chart.clientWidth, uw: p.u.width, left: over.left, width: over.width, labels, labelWidth: labelWidth(labels), axis: yAxisWidth, timeFits };
});
connect();
requestAnimationFrame(draw);
