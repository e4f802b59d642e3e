// m2g-exporter: the operator page it serves at / — self-contained (no
// external script, style, font or image), drawn in the browser from the
// exporter's own /status.json and /forecast.json, so what it shows is what
// those say: the rack map (NVLink domains, their jobs and health), site
// power against its budget with the forecast band and the events, and the
// flexibility curve. Every figure shown also carries its value in a data-*
// attribute; test/integration/exporter.sh checks them against the JSON in
// headless Chromium.
#pragma once

namespace m2g_exporter {

inline constexpr const char* kOperatorPage = R"m2g(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>m2g operator</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
header{background:#1d232b;color:#fff;padding:10px 18px;display:flex;gap:18px;align-items:baseline;flex-wrap:wrap}
header h1{font-size:18px;margin:0}header a{color:#9cd1ff}
main{padding:12px 18px;display:grid;grid-template-columns:1fr 1fr;gap:14px}
section{background:#fff;border:1px solid #d9dde3;border-radius:6px;padding:10px 14px}
section.wide{grid-column:1/3}
h2{font-size:15px;margin:0 0 8px}
#racks{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px}
.rack{border:1px solid #c8ced6;border-radius:5px;padding:6px 8px;background:#fbfcfd}
.rack.fault{border-color:#c0392b;background:#fdf0ee}.rack.maint{border-color:#b9770e;background:#fef7e8}
.rack .name{font-weight:600}.bar{display:flex;height:12px;border-radius:3px;overflow:hidden;margin:4px 0;background:#e9ecef}
.bar .used{background:#2e86de}.bar .degraded{background:#c0392b}.bar .free{background:#d5f0d5}
.small{font-size:12px;color:#56606c}.badge{font-size:11px;padding:1px 5px;border-radius:3px;background:#eee;margin-left:4px}
table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #eef0f3}
th{color:#56606c;font-weight:600}td:first-child,th:first-child{text-align:left}
svg text{font-size:11px;fill:#56606c}.err{color:#ffb3a7}
.met{color:#1e8449}.notmet{color:#c0392b}
</style></head>
<body data-ready="0">
<header><h1>m2g <span id="cluster"></span></h1>
<span id="at" class="small"></span><span id="made-at" class="small"></span><span id="err" class="err"></span>
<span><a href="/metrics">metrics</a> · <a href="/status.json">status.json</a> · <a href="/forecast.json">forecast.json</a></span></header>
<main>
<section class="wide"><h2>Racks: NVLink domains, their jobs and health</h2><div id="racks"></div></section>
<section><h2>Site GPU power against budget, next 24 h</h2>
<svg id="power-chart" width="620" height="260" role="img" aria-label="site power forecast"></svg>
<div id="power-now" class="small"></div><div id="events" class="small"></div>
<table id="band"><thead><tr><th>time (UTC)</th><th>P10 kW</th><th>P50 kW</th><th>P90 kW</th><th>budget kW</th></tr></thead><tbody></tbody></table></section>
<section><h2>Flexibility: what shedding would deliver</h2>
<svg id="flex-chart" width="620" height="260" role="img" aria-label="flexibility curve"></svg>
<table id="flex"><thead><tr><th>depth</th><th>hours</th><th>shed mean kW</th><th>met</th><th>GPU-h delayed</th><th>cost</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Pending jobs: forecast starts</h2>
<table id="jobs"><thead><tr><th>job</th><th>class</th><th>topology</th><th>GPUs</th><th>start (UTC)</th><th>where</th></tr></thead><tbody></tbody></table></section>
</main>
<script>
"use strict";
const NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
const kw = (v) => (v === null || v === undefined || v < 0) ? "-" : Number(v).toFixed(1);
const hhmm = (t) => new Date(t * 1000).toISOString().slice(11, 16);
const axis = (v, max) => v.toFixed(max < 10 ? 1 : 0);
function el(tag, attrs, text, parent) {
  const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined && text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function row(tbody, attrs, cells) { const tr = el("tr", attrs, null, tbody); for (const c of cells) el("td", {}, c, tr); return tr; }

function racks(st) {
  const box = $("racks");
  for (const d of st.domains) {
    const health = d.nvlink_fault ? "nvlink-fault" : d.maintenance_now ? "maintenance" : d.gpus_degraded > 0 ? "degraded" : "ok";
    const r = el("div", {class: "rack" + (d.nvlink_fault ? " fault" : d.maintenance_now ? " maint" : ""),
      "data-name": d.name, "data-gpus-used": d.gpus_used, "data-gpus-free": d.gpus_free,
      "data-gpus-degraded": d.gpus_degraded, "data-gpus-total": d.gpus_total, "data-health": health,
      "data-jobs": d.jobs.join(",")}, null, box);
    const head = el("div", {}, null, r);
    el("span", {class: "name"}, d.name, head);
    if (health !== "ok") el("span", {class: "badge"}, health, head);
    const bar = el("div", {class: "bar"}, null, r);
    for (const k of ["used", "degraded", "free"])
      el("div", {class: k, style: "width:" + (100 * d["gpus_" + k] / Math.max(1, d.gpus_total)) + "%"}, null, bar);
    el("div", {class: "small gpus"}, d.gpus_used + " used · " + d.gpus_free + " free · " + d.gpus_degraded + " degraded of " + d.gpus_total + " GPUs", r);
    el("div", {class: "small power"}, "power " + kw(d.draw_kw) + " / " + kw(d.budget_kw) + " kW" + (d.temp_c ? " · " + d.temp_c + " °C" : ""), r);
    el("div", {class: "small jobs"}, d.jobs.length ? "jobs " + d.jobs.join(", ") : "no jobs", r);
  }
}

function power(st, fc) {
  const site = st.power.find((p) => p.scope === "site") || {};
  el("span", {id: "site-draw", "data-kw": site.draw_kw ?? ""}, "draw now " + kw(site.draw_kw) + " kW", $("power-now"));
  el("span", {}, " · ", $("power-now"));
  el("span", {id: "site-budget", "data-kw": site.effective_kw ?? ""}, "budget now " + kw(site.effective_kw) + " kW", $("power-now"));
  for (const e of st.active_events)
    el("div", {class: "event", "data-id": e.id}, "event " + e.id + " (" + e.scope_name + "): " +
      (e.limit_kw !== null && e.limit_kw !== undefined ? "at most " + e.limit_kw + " kW" : e.curtail_kw ? "-" + e.curtail_kw + " kW" : "-" + e.curtail_pct + "%") +
      " until " + e.end, $("events"));
  if (!fc) return;
  const b = fc.power.find((p) => p.scope === "site");
  const n = b.p50_kw.length, step = fc.step_s, t0 = fc.made_at_epoch;
  const per_hour = Math.max(1, Math.round(3600 / step));
  const tbody = $("band").tBodies[0];
  for (let k = 0; k < n; k += per_hour)
    row(tbody, {class: "band", "data-k": k, "data-t": t0 + k * step, "data-p10": b.p10_kw[k], "data-p50": b.p50_kw[k],
      "data-p90": b.p90_kw[k], "data-budget": b.budget_kw[k] ?? ""},
      [hhmm(t0 + k * step), kw(b.p10_kw[k]), kw(b.p50_kw[k]), kw(b.p90_kw[k]), kw(b.budget_kw[k])]);
  // The chart: the P10-P90 band, P50, the budget (events show as its steps).
  const svg = $("power-chart"), W = 620, H = 260, L = 48, R = 10, T = 10, B = 24;
  const budgets = b.budget_kw.filter((v) => v !== null && v >= 0);
  const ymax = Math.max(1, ...b.p90_kw, ...budgets) * 1.1;
  const x = (k) => L + (W - L - R) * k / Math.max(1, n - 1), y = (v) => T + (H - T - B) * (1 - v / ymax);
  let band = "";
  for (let k = 0; k < n; k++) band += (k ? "L" : "M") + x(k) + "," + y(b.p90_kw[k]);
  for (let k = n - 1; k >= 0; k--) band += "L" + x(k) + "," + y(b.p10_kw[k]);
  el("svg:path", {d: band + "Z", fill: "#aed6f1", stroke: "none", class: "band-area"}, null, svg);
  el("svg:polyline", {points: b.p50_kw.map((v, k) => x(k) + "," + y(v)).join(" "), fill: "none", stroke: "#2e86de", "stroke-width": 2, class: "p50"}, null, svg);
  if (budgets.length)
    el("svg:polyline", {points: b.budget_kw.map((v, k) => v === null || v < 0 ? null : x(k) + "," + y(v)).filter(Boolean).join(" "),
      fill: "none", stroke: "#c0392b", "stroke-dasharray": "5,3", class: "budget"}, null, svg);
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4;
    el("svg:text", {x: 2, y: y(v) + 4}, axis(v, ymax), svg);
  }
  for (let k = 0; k < n; k += 6 * per_hour)
    el("svg:text", {x: x(k), y: H - 6, "text-anchor": k + 6 * per_hour >= n ? "end" : "middle"}, hhmm(t0 + k * step), svg);
  el("svg:text", {x: W - 150, y: 20}, "P50 ─  P10-P90 ▒  budget ┄", svg);
}

function flex(fc) {
  if (!fc) return;
  const tbody = $("flex").tBodies[0];
  for (const o of fc.flexibility) {
    const cost = o.money ? o.money.delay_cost.toFixed(2) + " " + o.money.currency : "-";
    row(tbody, {class: "flex", "data-depth": o.depth_pct, "data-hours": o.duration_s / 3600, "data-kw": o.shed_mean_kw,
      "data-met": o.met ? 1 : 0}, [o.depth_pct + "%", String(o.duration_s / 3600), kw(o.shed_mean_kw),
      o.met ? "met" : "not met", (o.deferrable_delay_gpu_h + o.nondeferrable_delay_gpu_h).toFixed(1), cost]);
  }
  const svg = $("flex-chart"), W = 620, H = 260, L = 48, R = 10, T = 10, B = 24;
  const ymax = Math.max(1, ...fc.flexibility.map((o) => o.shed_mean_kw)) * 1.1;
  const x = (d) => L + (W - L - R) * (d - 5) / 50, y = (v) => T + (H - T - B) * (1 - v / ymax);
  const colour = {1: "#2e86de", 3: "#8e44ad", 10: "#d35400"};
  for (const h of [1, 3, 10]) {
    const pts = fc.flexibility.filter((o) => o.duration_s / 3600 === h).sort((a, b) => a.depth_pct - b.depth_pct);
    if (!pts.length) continue;
    el("svg:polyline", {points: pts.map((o) => x(o.depth_pct) + "," + y(o.shed_mean_kw)).join(" "), fill: "none", stroke: colour[h], "stroke-width": 2}, null, svg);
    for (const o of pts)
      el("svg:circle", {cx: x(o.depth_pct), cy: y(o.shed_mean_kw), r: 4, stroke: colour[h], fill: o.met ? colour[h] : "#fff"}, null, svg);
    el("svg:text", {x: x(pts[pts.length - 1].depth_pct) - 30, y: y(pts[pts.length - 1].shed_mean_kw) - 8}, h + " h", svg);
  }
  for (const d of [10, 20, 30, 40, 50]) el("svg:text", {x: x(d) - 8, y: H - 6}, d + "%", svg);
  for (let i = 0; i <= 4; i++) el("svg:text", {x: 2, y: y(ymax * i / 4) + 4}, axis(ymax * i / 4, ymax), svg);
  el("svg:text", {x: L + 4, y: 20}, "mean kW shed by depth asked; filled: met", svg);
}

function jobs(fc) {
  if (!fc) return;
  const tbody = $("jobs").tBodies[0];
  for (const j of fc.jobs)
    row(tbody, {class: "job", "data-job": j.job, "data-start": j.start ?? ""},
      [String(j.job), j.class || "-", j.topology, String(j.gpus), j.start === null ? "never" : new Date(j.start * 1000).toISOString().slice(0, 16).replace("T", " "),
       j.nodelist || "-"]);
}

async function load() {
  try {
    const st = await (await fetch("/status.json", {cache: "no-store"})).json();
    const r = await fetch("/forecast.json", {cache: "no-store"});
    const fc = r.ok ? await r.json() : null;
    $("cluster").textContent = st.cluster || "";
    $("at").textContent = "state at " + st.at;
    $("made-at").textContent = fc ? "forecast made " + fc.made_at : "no forecast: " + (await r.text()).trim();
    if (fc) document.body.dataset.forecastMadeAt = fc.made_at_epoch;
    racks(st); power(st, fc); flex(fc); jobs(fc);
    document.body.dataset.ready = "1";
  } catch (e) {
    $("err").textContent = "cannot read the exporter's JSON: " + e;
    document.body.dataset.ready = "error";
  }
}
load();
</script>
</body></html>
)m2g";

}  // namespace m2g_exporter
