// beamconnect's live page: state and scope from /events (Server-Sent
// Events), the config from /api/config. Plots are uPlot, redrawn at screen
// rate (requestAnimationFrame) when new samples came and the view is not
// paused.
"use strict";

const $ = (id) => document.getElementById(id);
const KEEP = 120; // seconds of samples kept for the widest window
const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#7c3aed", "#b45309"];

let layout = null;   // {generation, columns:[{name, port, unit}]}
let t = [];          // sample times
let cols = [];       // one array per column
let panels = [];     // {port, unit, idx:[column indexes], u: uPlot, cells:[td], notes:[td], chart, lo, hi}
let bands = [];      // per column: the range it needs drawn, {lo, hi, clip} (see measureBands)
let dirty = false;
let paused = false;
let lastConfigEvents = -1;

function text(el, s) { if (el.textContent !== s) el.textContent = s; }
// fmt writes a live value in at most 11 characters (2.225e-308,
// -1.845e+19, 20.1053), so it fits its cell on one line.
function fmt(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e10) return String(v);
  return (a !== 0 && (a < 1e-3 || a >= 1e6)) ? v.toExponential(3) : v.toFixed(4);
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
// The value axis' ticks: round values, 1, 2 or 5 times a power of ten
// apart, at least two inside the panel whatever its height and whatever
// the magnitude (2.2e-308, 1.8e19), as `beamconnect plot` has them: uPlot's
// own choice leaves a short panel of ±4.9 one lone "0", and stops at the
// powers of ten it knows.
function niceStep(raw) {
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (raw <= m * p * (1 + 1e-9)) return m * p;
  return 10 * p;
}
function smallerStep(step) {
  const p = 10 ** Math.floor(Math.log10(step) + 1e-9), m = Math.round(step / p);
  return m >= 5 ? 2 * p : m >= 2 ? p : p / 2;
}
function tickCount(lo, hi, step) { return Math.floor(hi / step + 1e-6) - Math.ceil(lo / step - 1e-6) + 1; }
function valueSplits(u, axisIdx, lo, hi) {
  if (!(hi > lo) || !isFinite(hi - lo)) return [];
  const px = u.bbox.height / (uPlot.pxRatio || 1);
  const n = Math.max(2, Math.floor(px / 28));
  const raw = (hi - lo) / n;
  let step = niceStep(raw);
  const down = smallerStep(step);
  if (raw / down < step / raw) step = down; // the nearer of the two, by ratio
  while (tickCount(lo, hi, step) < Math.min(3, n) && step > (hi - lo) * 1e-9) step = smallerStep(step);
  const out = [];
  for (let k = Math.ceil(lo / step - 1e-9); out.length <= 1000; k++) {
    let v = k * step;
    if (v > hi + step / 1e6) break;
    if (Math.abs(v) < step / 1e6) v = 0;
    out.push(v);
  }
  return out;
}
function valueTicks(u, splits, axisIdx, space, incr) {
  return ticks(u, splits, axisIdx, space, splits.length > 1 ? splits[1] - splits[0] : incr);
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
const HEIGHT = 170; // of each panel
function resize() {
  relayout = 0;
  for (const p of panels) {
    p.u.setSize({ width: Math.max(p.chart.clientWidth, 300), height: HEIGHT });
    p.u.redraw(false, true); // the axes again: the shared width may have grown
  }
}

function portTitle(port) {
  if (port === "model") return "the model's own variables";
  const m = /^(out|in)(\d+)$/.exec(port);
  if (!m) return "component " + port + " (its connectors)";
  if (m[2] === "0") return m[1] === "out" ? "port 0 (out): status" : "port 0 (in): directive";
  return (m[1] === "out" ? "output port " : "input port ") + m[2] + (m[1] === "out" ? " (from BeamNG)" : " (to BeamNG)");
}

// Panels. As `beamconnect plot` draws a recording, each port is a group of
// panels: one per unit, and within a unit one per range of values, so rpm
// beside gear, time beside a serial number, or a time to collision of 1e5 s
// beside a 1.8 s time gap each use the height they are drawn in. The
// grouping follows the data shown: it is checked twice a second, and a
// panel splits when a field in it spans less than a tenth of the panel's
// range, two panels merge when each field would still span a fifth (the gap
// between the two keeps a field near the edge from flapping).
const SHARE_SPAN = 5, KEEP_SPAN = 10, MAX_PER_PANEL = 6;
// Robust ranges, as in `beamconnect plot`: a field's central band is its
// 5th to 95th percentile; values further from it than the band is wide are
// clipped at the panel's edge, and said so under the field, when that shows
// the rest at least CLIP_GAIN times taller.
const BAND_LO = 0.05, BAND_HI = 0.95, MIN_SAMPLE = 20, CLIP_GAIN = 3, SAMPLE = 2048;
const HEAD = 0.05; // the newest part of the samples shown, never clipped
const CHECK_MS = 500;  // how often bands and grouping are measured
const REGROUP_MS = 2000; // the panels are rebuilt at most this often

let statusCol = -1, directiveCol = -1; // port 0's columns: a timeline and values, not panels

function setLayout(l) {
  layout = l;
  t = [];
  cols = l.columns.map(() => []);
  bands = l.columns.map(() => null);
  statusCol = l.columns.findIndex((c) => c.port === "out0");
  directiveCol = l.columns.findIndex((c) => c.port === "in0");
  build(groupByUnit());
}

const isSetpoint = (ci) => layout.columns[ci].name.startsWith("setpoint:");

// The ports in the order their columns came. Port 0 (status and
// directive) is not plotted: it is the timeline above the plots.
function portOrder() {
  const ports = [];
  for (const c of layout.columns) if (!ports.includes(c.port) && !/^(out|in)0$/.test(c.port)) ports.push(c.port);
  return ports;
}

// group puts each port's fields in panels: a field joins the first panel
// of its unit that has room and that takes it (ok), else opens one.
function group(ok) {
  const groups = [];
  for (const port of portOrder()) {
    const mine = [];
    layout.columns.forEach((c, i) => {
      if (c.port !== port) return;
      let g = mine.find((g) => g.unit === c.unit && g.idx.length < MAX_PER_PANEL && ok([...g.idx, i]));
      if (!g) mine.push(g = { port, unit: c.unit, idx: [] });
      g.idx.push(i);
    });
    groups.push(...mine);
  }
  return groups;
}

// groupByUnit is the first grouping, before any values came.
const groupByUnit = () => group(() => true);

// span is the range a set of columns needs: [lo, hi], or null before any
// value.
function span(idx) {
  let lo = Infinity, hi = -Infinity;
  for (const ci of idx) {
    const b = bands[ci];
    if (b) { lo = Math.min(lo, b.lo); hi = Math.max(hi, b.hi); }
  }
  return lo <= hi ? [lo, hi] : null;
}

// fits reports whether the fields of idx can share a panel: every field
// that moves spans at least 1/k of their range, and every field that
// barely moves (less than the least span its unit and magnitude make
// meaningful: a setpoint, a constant) lies within the range of those that
// do, or, where none moves, spans 1/k of it with that least span. As in
// `beamconnect plot`: a setpoint joins its measured value; a constant
// 2.2e-308 does not share a panel with 1.8e19, where it would be a line at 0.
function fits(idx, k) {
  const least = (ci, b) => Math.max(layout.columns[ci].min_span || 0, 0.1 * Math.max(Math.abs(b.lo), Math.abs(b.hi)), 1e-300);
  const moves = (ci, b) => b.hi - b.lo >= least(ci, b);
  const have = idx.filter((ci) => bands[ci]);
  if (!have.length) return true;
  const moving = have.filter((ci) => moves(ci, bands[ci]));
  const all = span(moving.length ? moving : have);
  const w = all[1] - all[0];
  if (!moving.length) return have.every((ci) => least(ci, bands[ci]) * k >= w);
  return have.every((ci) => {
    const b = bands[ci];
    if (moves(ci, b)) return (b.hi - b.lo) * k >= w;
    const e = least(ci, b);
    return b.lo >= all[0] - e && b.hi <= all[1] + e;
  });
}

// groupByRange is the grouping the values shown call for.
const groupByRange = () => group((idx) => fits(idx, SHARE_SPAN));

// stale reports whether the panels no longer suit the values: a panel
// whose fields have grown too far apart, or two that could be one.
function stale() {
  if (panels.some((p) => !fits(p.idx, KEEP_SPAN))) return true;
  return panels.some((p, i) => panels.some((q, j) => j > i && p.port === q.port && p.unit === q.unit &&
    p.idx.length + q.idx.length <= MAX_PER_PANEL && fits([...p.idx, ...q.idx], SHARE_SPAN)));
}

function portTitleBox(port) {
  const box = document.createElement("div");
  box.className = "port";
  box.dataset.port = port;
  const h = document.createElement("h3");
  h.textContent = portTitle(port);
  box.appendChild(h);
  return box;
}

// build makes a uPlot per group, each port's panels in a box of its own.
function build(groups) {
  for (const p of panels) p.u.destroy();
  panels = [];
  const host = $("plots");
  host.replaceChildren();
  let box = null;
  for (const g of groups) {
    if (!box || box.dataset.port !== g.port) host.appendChild(box = portTitleBox(g.port));
    const row = document.createElement("div");
    row.className = "plot";
    row.dataset.unit = g.unit;
    const chart = document.createElement("div");
    chart.className = "chart";
    const live = document.createElement("table");
    live.className = "live";
    const cells = [], notes = [];
    g.idx.forEach((ci, k) => {
      const tr = live.insertRow();
      const name = tr.insertCell();
      name.textContent = layout.columns[ci].name;
      if (layout.columns[ci].comment) name.title = layout.columns[ci].comment; // what it is, on hover
      name.style.color = COLORS[k % COLORS.length];
      const v = tr.insertCell();
      v.className = "v";
      v.dataset.col = layout.columns[ci].name;
      v.textContent = "–";
      cells.push(v);
      const nr = live.insertRow();
      nr.className = "clipnote";
      const note = nr.insertCell();
      note.colSpan = 2;
      note.dataset.col = layout.columns[ci].name;
      nr.hidden = true;
      notes.push(note);
    });
    row.append(chart, live);
    box.appendChild(row);
    const p = { port: g.port, unit: g.unit, idx: g.idx, cells, notes, chart, lo: 0, hi: 1 };
    const opts = {
      width: Math.max(chart.clientWidth, 300), height: HEIGHT,
      padding: [10, 28, 0, 0], // room for the last time label at the right edge
      scales: { x: { time: false }, y: { auto: false, range: () => [p.lo, p.hi] } },
      axes: [{ label: "simulation time s", font: AXIS_FONT, values: ticks },
        { font: AXIS_FONT, values: valueTicks, splits: valueSplits, size: ySize, label: g.unit || "(no unit)", labelFont: AXIS_FONT, labelSize: 18 }],
      series: [{ label: "t", value: (u, v) => v == null ? "–" : v.toFixed(3) }]
        .concat(g.idx.map((ci, k) => ({ label: layout.columns[ci].name, stroke: COLORS[k % COLORS.length], width: isSetpoint(ci) ? 1.5 : 1.25,
          dash: isSetpoint(ci) ? [6, 4] : undefined, value: (u, v) => fmt(v) }))),
      legend: { live: true }, // the values under the cursor; the newest are in the table beside
    };
    p.u = new uPlot(opts, [[], ...g.idx.map(() => [])], chart);
    panels.push(p);
  }
  lastRegroup = performance.now();
  dirty = true;
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

// measureBands finds, for each column, the range it needs over the samples
// shown (from index `from`): all of it, or its central band when clipping
// its few outliers shows the rest CLIP_GAIN times taller.
function measureBands(from) {
  bands = cols.map((c) => {
    let min = Infinity, max = -Infinity, n = 0;
    for (let i = from; i < c.length; i++) {
      const v = c[i];
      if (v == null || !isFinite(v)) continue;
      if (v < min) min = v;
      if (v > max) max = v;
      n++;
    }
    if (!n) return null;
    const b = { lo: min, hi: max, min, max, clip: false };
    if (n < MIN_SAMPLE || max === min) return b;
    const step = Math.max(1, Math.floor((c.length - from) / SAMPLE));
    const s = [];
    for (let i = from; i < c.length; i += step) if (c[i] != null && isFinite(c[i])) s.push(c[i]);
    s.sort((x, y) => x - y);
    const q = (p) => s[Math.round(p * (s.length - 1))];
    const a = q(BAND_LO), z = q(BAND_HI);
    if (!(z > a)) return b;
    let lo = Math.max(min, a - (z - a)), hi = Math.min(max, z + (z - a));
    // The trace's head is never clipped: on a live view the newest values
    // matter most, and a trend that leaves the band is not an outlier.
    for (let i = Math.max(from, c.length - Math.ceil((c.length - from) * HEAD)); i < c.length; i++) {
      const v = c[i];
      if (v != null && isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    }
    if (max - min >= CLIP_GAIN * (hi - lo)) Object.assign(b, { lo, hi, clip: true });
    return b;
  });
}

// setRange sets a panel's value range from its fields' bands, with a
// margin, and says under each clipped field how many values lie beyond.
// minSpan is the smallest range worth the panel's height: its fields'
// unit's (min_span) and 10 % of their magnitude, as `beamconnect plot`
// has it, so a settled value's last digits never fill the panel.
function minSpan(p, s) {
  let m = 0;
  for (const ci of p.idx) m = Math.max(m, layout.columns[ci].min_span || 0);
  return Math.max(m, 0.1 * Math.max(Math.abs(s[0]), Math.abs(s[1])), 1e-9);
}

function setRange(p, from) {
  const s = span(p.idx);
  let lo = 0, hi = 1;
  if (s) {
    let [a, b] = s;
    const need = minSpan(p, s);
    if (b - a < need) {
      const c = (a + b) / 2;
      [a, b] = [c - need / 2, c + need / 2];
    }
    const pad = (b - a) * 0.05;
    [lo, hi] = [a - pad, b + pad];
  }
  p.lo = lo;
  p.hi = hi;
  p.idx.forEach((ci, k) => {
    const c = cols[ci];
    let above = 0, below = 0, max = -Infinity, min = Infinity;
    for (let i = from; i < c.length; i++) {
      const v = c[i];
      if (v == null) continue;
      if (v > hi) { above++; max = Math.max(max, v); }
      if (v < lo) { below++; min = Math.min(min, v); }
    }
    const unit = p.unit ? " " + p.unit : "";
    const parts = [];
    if (above) parts.push(`▲ ${above} values above ${short(hi)}${unit} (max ${short(max)}${unit})`);
    if (below) parts.push(`▼ ${below} values below ${short(lo)}${unit} (min ${short(min)}${unit})`);
    const note = p.notes[k];
    text(note, parts.length ? "clipped: " + parts.join(", ") : "");
    note.parentElement.hidden = !parts.length;
  });
}

// short writes v with 4 significant digits.
function short(v) {
  const a = Math.abs(v);
  if (a >= 1e4 && a < 1e10) return v.toFixed(0);
  return String(Number(v.toPrecision(4)));
}

let lastCheck = 0, lastRegroup = 0;

// grew widens the bands by the newest values (from index `from`) between
// two measures, so the head of a trace never runs off its panel; it
// reports whether any band grew.
function grew(from) {
  let any = false;
  cols.forEach((c, ci) => {
    for (let i = from; i < c.length; i++) {
      const v = c[i], b = bands[ci];
      if (v == null || !isFinite(v)) continue;
      if (!b) { bands[ci] = { lo: v, hi: v, min: v, max: v, clip: false }; any = true; continue; }
      if (v > b.hi) { b.hi = v; b.max = Math.max(b.max, v); any = true; }
      if (v < b.lo) { b.lo = v; b.min = Math.min(b.min, v); any = true; }
    }
  });
  return any;
}

function draw(now) {
  requestAnimationFrame(draw);
  if (!dirty || paused || !t.length) return;
  dirty = false;
  const win = Number($("window").value);
  const end = t[t.length - 1];
  const from = lowerBound(t, end - win);
  if (now - lastCheck >= CHECK_MS) {
    lastCheck = now;
    measureBands(from);
    if (now - lastRegroup >= REGROUP_MS && stale()) build(groupByRange());
    for (const p of panels) setRange(p, from);
  } else if (grew(Math.max(from, t.length - 256))) {
    for (const p of panels) setRange(p, from);
  }
  const xs = t.slice(from);
  for (const p of panels) {
    p.u.setData([xs, ...p.idx.map((ci) => cols[ci].slice(from))], false);
    p.u.setScale("x", { min: Math.max(end - win, xs[0]), max: end });
    p.u.setScale("y", { min: p.lo, max: p.hi });
    p.idx.forEach((ci, k) => text(p.cells[k], fmt(cols[ci][cols[ci].length - 1])));
  }
  drawTimeline(from, Math.max(end - win, xs[0]), end); // the plots' time axis
  text($("scopeinfo"), `${xs.length} samples shown, simulation time ${end.toFixed(3)} s`);
}

// The status timeline: port 0's status over the plots' time window, a
// colour per status, lined up with the plot areas; the directive and the
// status now beside it.
const STATUS_COLORS = { 0: "#d1d5db", 1: "#d1d5db", 2: "#fbbf24", 3: "#22c55e", 4: "#ef4444", 5: "#9ca3af" };
const STATUS_NAMES = { 0: "unknown", 1: "unconnected", 2: "connecting", 3: "connected", 4: "error", 5: "disconnecting" };
let timelineSegments = [];
function drawTimeline(from, x0, x1) {
  const row = $("timeline");
  if (statusCol < 0 || !panels.length) { row.hidden = true; return; }
  row.hidden = false;
  const canvas = $("timelinecanvas");
  const over = panels[0].u.over;
  const left = over.getBoundingClientRect().left - canvas.parentElement.getBoundingClientRect().left;
  const w = Math.max(over.clientWidth, 10), h = 14;
  canvas.style.marginLeft = `${Math.max(left, 0)}px`;
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
  canvas.style.width = `${w}px`; canvas.style.height = `${h}px`;
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const c = cols[statusCol];
  const segs = [];
  for (let i = from; i < t.length; i++) {
    const v = c[i];
    if (segs.length && segs[segs.length - 1].status === v) { segs[segs.length - 1].to = t[i]; continue; }
    segs.push({ status: v, from: t[i], to: t[i] });
  }
  for (let k = 0; k < segs.length; k++) {
    const sg = segs[k], next = k + 1 < segs.length ? segs[k + 1].from : sg.to;
    const xa = ((sg.from - x0) / (x1 - x0)) * w, xb = ((next - x0) / (x1 - x0)) * w;
    g.fillStyle = STATUS_COLORS[sg.status] || "#d1d5db";
    g.fillRect(Math.max(xa, 0), 0, Math.max(xb - xa, 1), h);
  }
  timelineSegments = segs.map((sg) => sg.status);
  const st = c[c.length - 1], dir = directiveCol >= 0 ? cols[directiveCol][cols[directiveCol].length - 1] : null;
  text($("statusnow"), st == null ? "–" : `${st} ${STATUS_NAMES[st] || ""}`);
  text($("directivenow"), dir == null ? "–" : `${dir} ${dir === 0 ? "(disconnect)" : "(connect)"}`);
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
  const sync = s.time_sync === "none" ? "no time sync" : `time sync ${s.time_sync}`;
  text($("what"), `${s.config} · ${s.protocol} · model ${s.model} · every ${s.period_ms} ms · ${sync}`);
  const tb = document.querySelector("#vehicles tbody");
  while (tb.rows.length > s.vehicles.length) tb.deleteRow(-1);
  s.vehicles.forEach((v, i) => {
    const r = tb.rows[i] || tb.insertRow();
    const vals = [v.name || "—", `${v.status} ${v.status_text}`, v.time_s.toFixed(3), v.messages_per_s.toFixed(0),
      v.turnaround_p50_us.toFixed(0), v.turnaround_p99_us.toFixed(0), v.stalls_recovered, v.overdue, v.dropped,
      v.out_of_lockstep ? "NOW" : String(v.lockstep_lost), v.model_faults];
    vals.forEach((x, k) => text(r.cells[k] || r.insertCell(), String(x)));
  });
  showControl(s);
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

// showControl shows how well the model controls, a row per loop: its
// verdict (good, poor, settling, not settled), why, and the figures; the
// header says whether every loop is good.
const num = (v, unit) => (v == null ? "–" : `${short(v)}${unit ? " " + unit : ""}`);
function showControl(s) {
  const loops = s.control || [];
  $("control").hidden = !loops.length;
  const chip = $("controlverdict");
  chip.hidden = !loops.length;
  if (!loops.length) return;
  text($("controlmodel"), `(model ${s.model})`);
  // The server never calls a loop good in a run with faults: it held, in a
  // run with faults, shown amber.
  const good = loops.every((r) => r.verdict === "good");
  const poor = loops.some((r) => r.verdict === "poor" || r.verdict === "not settled");
  text(chip, "control: " + (good ? "good" : loops.map((r) => `${r.name} ${r.verdict}`).join(", ")));
  chip.className = "verdict " + (good ? "good" : poor ? "poor" : "settling");
  const tb = document.querySelector("#controltbl tbody");
  while (tb.rows.length > loops.length) tb.deleteRow(-1);
  loops.forEach((r, i) => {
    const row = tb.rows[i] || tb.insertRow();
    const over = r.overshoot == null ? "–" : num(r.overshoot, r.unit) + (r.overshoot_percent == null ? "" : ` (${r.overshoot_percent.toFixed(1)} %)`);
    const setp = num(r.setpoint_value, r.unit) + (r.setpoint && r.setpoint !== String(r.setpoint_value) ? ` from ${r.setpoint}` : "");
    const cells = [["loop", r.name], ["verdict", r.verdict], ["why", r.why], ["setpoint", setp], ["error now", num(r.error_now, r.unit)],
      ["RMS after settling", num(r.error_rms_after_settling, r.unit)], ["max after settling", num(r.error_max_after_settling, r.unit)],
      ["overshoot", over], ["settled after", num(r.settled_after_s, "s")]];
    cells.forEach(([name, v], k) => {
      const td = row.cells[k] || row.insertCell();
      td.dataset.figure = name;
      td.dataset.loop = r.name;
      text(td, v);
    });
    row.cells[1].className = "verdict " + r.verdict.replace(/[^a-z]+/g, "-");
  });
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

// ?still=N: the server ends the stream after N seconds and the page keeps
// what it drew: a still view a headless browser can take a screenshot of.
const still = new URLSearchParams(location.search).get("still");
let stillDone = false;

function connect() {
  es = new EventSource(still ? `events?still=${encodeURIComponent(still)}` : "events");
  es.addEventListener("still", () => {
    stillDone = true;
    es.close();
    text($("stream"), `still view after ${still} s`);
    banner("still", `A still view: the page streamed for ${still} s, then stopped, as ?still=${still} asks; ` +
      "the run goes on. Open the page without ?still to follow it live.");
  });
  es.addEventListener("open", () => {
    text($("stream"), "live");
    $("stream").className = "stream";
    if (lostAt) { lostAt = null; banner(""); }
  });
  es.addEventListener("error", () => {
    if (ended || stillDone) return;
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
window.timelineCheck = () => ({ shown: !$("timeline").hidden, segments: timelineSegments,
  status: $("statusnow").textContent, directive: $("directivenow").textContent });
window.scopeCheck = () => panels.map((p) => {
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
  return {
    port: p.port, unit: p.unit, axisLabel: p.u.axes[1].label, timeLabel: p.u.axes[0].label, fields: p.idx.map((ci) => layout.columns[ci].name), lo: p.lo, hi: p.hi,
    dashed: p.idx.filter((ci, k) => p.u.series[k + 1].dash).map((ci) => layout.columns[ci].name),
    clipped: p.notes.map((n) => n.textContent).filter((s) => s),
    chart: p.chart.clientWidth, uw: p.u.width, left: over.left, width: over.width, labels,
    labelWidth: labelWidth(labels), axis: yAxisWidth, timeFits,
  };
});
connect();
requestAnimationFrame(draw);
