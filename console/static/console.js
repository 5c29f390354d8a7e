// kafkette console: the live throughput chart, the lag chart and the produce form.
// Hand-written SVG, no library. Data from the page (data-* attributes) or /api/.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);  // text, never markup
  return node;
}

function niceMax(value) {
  if (value <= 0) return 1;
  const power = Math.pow(10, Math.floor(Math.log10(value)));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function shortNumber(v) {
  if (v >= 1e9) return (v / 1e9).toFixed(1) + "G";
  if (v >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (v >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return String(Math.round(v * 10) / 10);
}

// A line chart of several series over time: series = [{name, cls, points: [[t, v]]}].
function lineChart(box, series, title) {
  const W = 900, H = 240, L = 56, R = 12, T = 12, B = 28;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const all = series.flatMap((s) => s.points);
  const t0 = all.length ? Math.min(...all.map((p) => p[0])) : 0;
  const t1 = all.length ? Math.max(...all.map((p) => p[0])) : 1;
  const top = niceMax(all.length ? Math.max(...all.map((p) => p[1])) : 0);
  const x = (t) => L + ((t - t0) / Math.max(t1 - t0, 1)) * (W - L - R);
  const y = (v) => H - B - (v / top) * (H - T - B);
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    svg.appendChild(el("line", { class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) }));
    svg.appendChild(el("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end" }, shortNumber(v)));
  }
  svg.appendChild(el("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  if (all.length) {
    const seconds = Math.round((t1 - t0) / 1000);
    svg.appendChild(el("text", { x: L, y: H - 8 }, `-${seconds}s`));
    svg.appendChild(el("text", { x: W - R, y: H - 8, "text-anchor": "end" }, "now"));
  } else {
    svg.appendChild(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "collecting samples…"));
  }
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`);
    svg.appendChild(el("path", { class: s.cls, d: d.join(" "), "data-series": s.name }));
  }
  box.replaceChildren(svg);
  const legend = document.createElement("div");
  legend.className = "legend";
  for (const s of series) {
    const item = document.createElement("span");
    item.className = s.cls === "series-in" ? "in" : "out";
    const last = s.points.length ? s.points[s.points.length - 1][1] : 0;
    item.textContent = `${s.name}: ${shortNumber(last)}/s`;
    legend.appendChild(item);
  }
  box.appendChild(legend);
}

// A horizontal bar chart: bars = [{label, value}].
function barChart(box, bars, title) {
  const rowH = 22, L = 220, R = 60, W = 900;
  const H = Math.max(bars.length, 1) * rowH + 16;
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const top = niceMax(Math.max(0, ...bars.map((b) => b.value)));
  bars.forEach((b, i) => {
    const yTop = 8 + i * rowH;
    const width = (b.value / top) * (W - L - R);
    svg.appendChild(el("text", { x: L - 8, y: yTop + 14, "text-anchor": "end" }, b.label));
    svg.appendChild(el("rect", {
      class: b.value ? "bar" : "bar zero", x: L, y: yTop + 3, height: rowH - 6,
      width: Math.max(width, 2), "data-label": b.label, "data-value": b.value,
    }));
    svg.appendChild(el("text", { x: L + Math.max(width, 2) + 6, y: yTop + 14 }, b.value));
  });
  if (!bars.length) {
    svg.appendChild(el("text", { x: W / 2, y: 20, "text-anchor": "middle" }, "no partitions"));
  }
  box.replaceChildren(svg);
}

async function pollThroughput(box) {
  try {
    const response = await fetch(box.dataset.source, { cache: "no-store" });
    const data = await response.json();
    const rates = data.rates || [];
    lineChart(box, [
      { name: "records in", cls: "series-in", points: rates.map((r) => [r.at_ms, r.records_in]) },
      { name: "records out", cls: "series-out", points: rates.map((r) => [r.at_ms, r.records_out]) },
    ], "records per second");
    box.dataset.samples = String(rates.length);
  } catch (err) {
    box.textContent = "throughput unavailable: " + err;
  }
}

async function refreshFacts() {
  try {
    const response = await fetch("/api/overview", { cache: "no-store" });
    const data = await response.json();
    for (const key of ["topics", "partitions", "groups", "connections"]) {
      const node = document.getElementById("fact-" + key);
      if (node) node.textContent = String(data[key]);
    }
  } catch (err) { /* the next poll tries again */ }
}

function parseHeaders(text) {
  const headers = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const at = line.indexOf("=");
    headers.push(at < 0 ? [line, ""] : [line.slice(0, at), line.slice(at + 1)]);
  }
  return headers;
}

function setupProduce(form) {
  const result = document.getElementById("produce-result");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = form.elements;
    const body = {
      topic: f.topic.value,
      partition: f.partition.value === "" ? null : Number(f.partition.value),
      key: f.key.value === "" ? null : f.key.value,
      value: f.value.value,
      headers: parseHeaders(f.headers.value),
    };
    result.className = "hint";
    result.textContent = "producing…";
    try {
      const response = await fetch("/api/produce", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Kafkette-Console": "1" },
        body: JSON.stringify(body),
      });
      const data = await response.json();
      if (response.ok) {
        result.className = "ok";
        result.textContent = `written to ${data.topic}-${data.partition} at offset ${data.offset}`;
        result.dataset.offset = String(data.offset);
      } else {
        result.className = "error";
        result.textContent = `refused (${response.status}): ${data.error}`;
      }
    } catch (err) {
      result.className = "error";
      result.textContent = "failed: " + err;
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const throughput = document.getElementById("throughput-chart");
  if (throughput) {
    pollThroughput(throughput);
    setInterval(() => { pollThroughput(throughput); refreshFacts(); }, 2000);
  }
  const lag = document.getElementById("lag-chart");
  if (lag) barChart(lag, JSON.parse(lag.dataset.bars || "[]"), "lag per partition");
  const produce = document.getElementById("produce");
  if (produce) setupProduce(produce);
});
