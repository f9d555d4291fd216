#include "sim/report.hpp"

#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include <boost/json.hpp>

#include "sim/report_format.hpp"

namespace gpuq::sim {

namespace json = boost::json;

namespace {

using report::escape_html;
using report::format_delta;
using report::format_value;
using report::Kind;

// ---- reading the summaries: every key is optional, so a partial summary still renders ----

using Path = std::vector<std::string_view>;

const json::value* find(const json::value* v, const Path& path) {
  for (std::string_view key : path) {
    const json::object* o = v ? v->if_object() : nullptr;
    if (!o) return nullptr;
    auto it = o->find(key);
    if (it == o->end()) return nullptr;
    v = &it->value();
  }
  return v;
}

std::optional<double> number(const json::value& v, const Path& path) {
  const json::value* x = find(&v, path);
  if (!x) return std::nullopt;
  if (x->is_double()) return x->get_double();
  if (x->is_int64()) return static_cast<double>(x->get_int64());
  if (x->is_uint64()) return static_cast<double>(x->get_uint64());
  return std::nullopt;
}

std::string text(const json::value& v, const Path& path) {
  const json::value* x = find(&v, path);
  if (x && x->is_string()) return std::string(x->get_string());
  return {};
}

// ---- tables (rendered here, so they read without JavaScript too) ----

struct Column {
  std::string_view header;
  Path path;
  Kind kind;
};

// A number; with `base` (the same row of the first variant), its signed difference beside it.
void cell(std::string& out, const json::value& row, const Column& c, const json::value* base) {
  const std::optional<double> v = number(row, c.path);
  out += "<td class=\"n\"";
  if (v && c.kind == Kind::kSeconds)
    out.append(" title=\"").append(report::printf_double("%.17g", *v)).append(" s\"");
  out.append(">").append(escape_html(format_value(v, c.kind)));
  if (const auto d = base ? format_delta(v, number(*base, c.path), c.kind) : std::nullopt)
    out.append(" <span class=\"d\">").append(escape_html(*d)).append("</span>");
  out.append("</td>");
}

void header_row(std::string& out, std::string_view first, const std::vector<Column>& cols) {
  out += "<thead><tr><th>" + std::string(first) + "</th>";
  for (const Column& c : cols) out += "<th>" + std::string(c.header) + "</th>";
  out += "</tr></thead>";
}

std::string variant_label(const json::value& summary, std::size_t i) {
  std::string label = text(summary, {"variant"});
  return label.empty() ? "variant " + std::to_string(i + 1) : label;
}

const std::vector<Column>& comparison_columns() {
  static const std::vector<Column> cols = {
      {"jobs", {"overall", "jobs"}, Kind::kCount},
      {"finished", {"overall", "finished"}, Kind::kCount},
      {"wait mean", {"overall", "wait", "mean"}, Kind::kSeconds},
      {"wait p50", {"overall", "wait", "p50"}, Kind::kSeconds},
      {"wait p95", {"overall", "wait", "p95"}, Kind::kSeconds},
      {"wait p99", {"overall", "wait", "p99"}, Kind::kSeconds},
      {"completion mean", {"overall", "completion", "mean"}, Kind::kSeconds},
      {"completion p95", {"overall", "completion", "p95"}, Kind::kSeconds},
      {"GPU utilization", {"overall", "gpu_utilization_mean"}, Kind::kRatio},
      {"alloc ratio", {"overall", "alloc_ratio_mean"}, Kind::kRatio},
      {"fragmentation", {"overall", "fragmentation_mean"}, Kind::kRatio},
      {"Jain index", {"overall", "jain_index"}, Kind::kRatio},
      {"preemptions", {"overall", "preemptions"}, Kind::kCount},
      {"GPU-hours lost", {"overall", "gpu_hours_lost"}, Kind::kNumber},
      {"events/s", {"events_per_second"}, Kind::kNumber},
  };
  return cols;
}

// Rows after the first show their differences from the first.
std::string comparison_table(const std::vector<json::value>& summaries) {
  std::string out = "<div class=\"scroll\"><table class=\"compare\">";
  header_row(out, "variant", comparison_columns());
  out += "<tbody>";
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    out += "<tr><th scope=\"row\"><a href=\"#variant-" + std::to_string(i) + "\">" +
           escape_html(variant_label(summaries[i], i)) + "</a></th>";
    for (const Column& c : comparison_columns())
      cell(out, summaries[i], c, i > 0 ? &summaries[0] : nullptr);
    out += "</tr>";
  }
  return out + "</tbody></table></div>";
}

// Queue name -> its row in a summary (the first row of a name that repeats).
using QueueRows = std::unordered_map<std::string_view, const json::value*>;

QueueRows queue_rows(const json::value& summary) {
  QueueRows rows;
  if (const json::value* qs = find(&summary, {"queues"}); qs && qs->is_array())
    for (const json::value& q : qs->get_array())
      if (const json::value* n = find(&q, {"name"}); n && n->is_string())
        rows.emplace(n->get_string(), &q);
  return rows;
}

// With `first` (the first variant, for the ones after it), each queue's row shows its differences
// from the row of the same name there; a queue the first variant lacks shows none.
std::string queue_table(const json::value& summary, const json::object& colors,
                        const json::value* first) {
  static const std::vector<Column> cols = {
      {"jobs", {"jobs"}, Kind::kCount},
      {"wait p50", {"wait", "p50"}, Kind::kSeconds},
      {"wait p95", {"wait", "p95"}, Kind::kSeconds},
      {"completion p50", {"completion", "p50"}, Kind::kSeconds},
      {"entitlement", {"entitlement"}, Kind::kRatio},
      {"share", {"share"}, Kind::kRatio},
      {"share / entitlement", {"share_vs_entitlement"}, Kind::kRatio},
      {"preemptions", {"preemptions"}, Kind::kCount},
      {"GPU-hours lost", {"gpu_hours_lost"}, Kind::kNumber},
  };
  const json::value* queues = find(&summary, {"queues"});
  if (!queues || !queues->is_array() || queues->get_array().empty())
    return "<p class=\"note\">No queues in this summary.</p>";
  const QueueRows base_rows = first ? queue_rows(*first) : QueueRows{};
  std::string out = "<div class=\"scroll\"><table class=\"queues\">";
  header_row(out, "queue", cols);
  out += "<tbody>";
  for (const json::value& q : queues->get_array()) {
    const std::string name = text(q, {"name"});
    const json::value* color = colors.if_contains(name);
    out += "<tr><th scope=\"row\"><span class=\"sw\" style=\"background:" +
           escape_html(color && color->is_string() ? std::string(color->get_string()) : "#888") +
           "\"></span>" + escape_html(name) + "</th>";
    const auto base = base_rows.find(name);
    for (const Column& c : cols) cell(out, q, c, base == base_rows.end() ? nullptr : base->second);
    out += "</tr>";
  }
  return out + "</tbody></table></div>";
}

// "3 nodes", "1 GPU".
std::string counted(double n, std::string_view noun) {
  return format_value(n, Kind::kCount) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

// One line of what is present: a summary without a key leaves its part out rather than print a
// dash in a sentence, and a run with no events (0 or none recorded) says so.
std::string variant_meta(const json::value& s) {
  std::vector<std::string> parts;
  if (const std::string p = text(s, {"policy"}); !p.empty())
    parts.push_back("policy <b>" + escape_html(p) + "</b>");
  if (const std::string q = text(s, {"queues_file"}); !q.empty())
    parts.push_back("queues <b>" + escape_html(q) + "</b>");
  if (const auto nodes = number(s, {"cluster", "nodes"})) parts.push_back(counted(*nodes, "node"));
  if (const auto gpus = number(s, {"cluster", "gpus"})) parts.push_back(counted(*gpus, "GPU"));
  const auto events = number(s, {"events"});
  if (!events || *events == 0) {
    parts.push_back("no events");
  } else {
    parts.push_back(counted(*events, "event"));
    if (const auto wall = number(s, {"wall_seconds"}))
      parts.back() += " in " + format_value(wall, Kind::kSeconds);
  }
  if (const auto makespan = number(s, {"overall", "makespan"}))
    parts.push_back("makespan " + format_value(makespan, Kind::kSeconds));
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ", ") + part;
  return "<p class=\"meta\">" + out + "</p>";
}

// ---- colors: one per queue name across every variant and chart ----

// Queue names in order of first appearance: the queues list, then the timeline's keys.
json::object queue_colors(const std::vector<json::value>& summaries) {
  json::object colors;
  auto add = [&](std::string_view name) {
    if (!colors.contains(name)) colors[name] = report::queue_color(colors.size());
  };
  for (const json::value& s : summaries) {
    if (const json::value* qs = find(&s, {"queues"}); qs && qs->is_array())
      for (const json::value& q : qs->get_array())
        if (const json::value* n = find(&q, {"name"}); n && n->is_string()) add(n->get_string());
    for (std::string_view key : {"gpu_by_queue", "pending_by_queue"})
      if (const json::value* m = find(&s, {"timeline", key}); m && m->is_object())
        for (const auto& kv : m->get_object()) add(kv.key());
  }
  return colors;
}

// The JSON text for inside <script>: '<', '>' and '&' occur only inside JSON strings, where
// their \u escapes mean the same, so "</script>" or "<!--" can never appear.
std::string script_safe_json(const json::value& v) {
  const std::string raw = json::serialize(v);
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

// ---- the page's style and script: inline, no network, no libraries ----

constexpr std::string_view kStyle = R"CSS(
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 12px}h2{font-size:18px;margin:28px 0 6px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;white-space:nowrap}
thead th{background:#f4f4f4;text-align:right}thead th:first-child,tbody th{text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;max-width:100%}.d{color:#888;font-size:11px}
h1,h2,.meta,.legend span,#gpuq-error{overflow-wrap:anywhere}
.meta{color:#555;margin:0 0 8px}.note{color:#777}
.sw{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.legend{flex-basis:100%;display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0}.legend .cap{border-top:2px dashed #222;height:0;border-radius:0}
.charts{display:flex;flex-wrap:wrap;gap:12px}
svg.chart{width:520px;max-width:100%;height:auto;border:1px solid #e4e4e4;background:#fff}
svg .title{font-weight:600;font-size:13px}svg .tick{font-size:11px;fill:#555}svg .label{font-size:11px;fill:#333}
svg .grid line{stroke:#eee}svg .axis{stroke:#888}svg .note{font-size:13px;fill:#999}
#gpuq-error{color:#b00;white-space:pre-wrap;border:1px solid #b00;padding:8px}
)CSS";

constexpr std::string_view kScript = R"JS(
(function () {
  'use strict';
  const body = document.body;
  let drawn = 0;
  // The SVG namespace, taken from a parsed element rather than spelled out in the file.
  const probe = document.createElement('div');
  probe.innerHTML = '<svg></svg>';
  const SVG = probe.firstChild.namespaceURI;
  const W = 520, H = 290, M = {l: 60, r: 24, t: 30, b: 44};
  const MAX_POINTS = 1500;

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function label(parent, x, y, s, attrs) {
    const t = el('text', Object.assign({x: x, y: y}, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  const num = v => (typeof v === 'number' && isFinite(v) ? v : 0);
  const arr = v => (Array.isArray(v) ? v : []);
  const trim = s => (s.indexOf('.') < 0 ? s : s.replace(/\.?0+$/, ''));
  const fx = v => (Math.round(v * 10) / 10).toString();
  function maxOf(values, floor) {
    let m = floor;
    for (const v of values) if (v > m) m = v;
    return m;
  }

  // Ticks at 1, 2 or 5 times a power of ten. With `exact` the domain is [lo, hi]; otherwise it
  // grows to the enclosing ticks.
  function ticks(lo, hi, n, exact) {
    if (!(hi > lo)) hi = lo + 1;
    const raw = (hi - lo) / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    const step = (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
    const first = Math.ceil(lo / step - 1e-9) * step;
    const d = exact ? {lo: lo, hi: hi} : {lo: Math.floor(lo / step + 1e-9) * step,
                                          hi: Math.ceil(hi / step - 1e-9) * step};
    const values = [];
    for (let i = 0; i <= 60; i++) {
      const v = (exact ? first : d.lo) + i * step;
      if (v > d.hi + step * 1e-6) break;
      values.push(v);
    }
    const big = Math.max(Math.abs(d.lo), Math.abs(d.hi));
    return {lo: d.lo, hi: d.hi, values: values, text: numberLabel(step, big)};
  }
  // One unit (k, M, G, T) and one precision for every label on an axis.
  function numberLabel(step, big) {
    if (big >= 1e15) return v => (v === 0 ? '0' : v.toExponential(1));
    const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, '']];
    const u = units.find(x => big >= x[0]) || units[4];
    const digits = Math.max(0, Math.min(8, -Math.floor(Math.log10(step / u[0]) + 1e-9)));
    return v => (Math.abs(v) < step * 1e-6 ? '0' : trim((v / u[0]).toFixed(digits)) + u[1]);
  }
  // Time in seconds shown in seconds, minutes or hours by the span.
  function timeTicks(t0, t1) {
    const span = t1 - t0;
    const u = span >= 7200 ? [3600, 'h'] : span >= 120 ? [60, 'min'] : [1, 's'];
    const k = ticks(t0 / u[0], t1 / u[0], 6, true);
    return {lo: k.lo * u[0], hi: k.hi * u[0], values: k.values.map(v => v * u[0]),
            text: v => k.text(v / u[0]), name: 'time (' + u[1] + ')'};
  }
  // At most MAX_POINTS sample indices, evenly strided, always keeping the last.
  function sample(n) {
    const idx = [], k = Math.max(1, Math.ceil(n / MAX_POINTS));
    for (let i = 0; i < n; i += k) idx.push(i);
    if (n > 0 && idx[idx.length - 1] !== n - 1) idx.push(n - 1);
    return idx;
  }

  // An SVG chart with axes, grid and labels; x and y are tick sets from ticks()/timeTicks().
  function frame(host, o) {
    const svg = el('svg', {viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img',
                           'aria-label': o.title}, host);
    const sx = v => M.l + (v - o.x.lo) / (o.x.hi - o.x.lo) * (W - M.l - M.r);
    const sy = v => H - M.b - (v - o.y.lo) / (o.y.hi - o.y.lo) * (H - M.t - M.b);
    label(svg, M.l, 18, o.title, {class: 'title'});
    const grid = el('g', {class: 'grid'}, svg);
    for (const v of o.y.values) {
      el('line', {x1: M.l, x2: W - M.r, y1: fx(sy(v)), y2: fx(sy(v))}, grid);
      label(svg, M.l - 6, fx(sy(v) + 4), o.y.text(v), {class: 'tick', 'text-anchor': 'end'});
    }
    for (const v of o.x.values) {
      el('line', {x1: fx(sx(v)), x2: fx(sx(v)), y1: H - M.b, y2: H - M.b + 4, class: 'axis'}, svg);
      label(svg, fx(sx(v)), H - M.b + 16, o.x.text(v), {class: 'tick', 'text-anchor': 'middle'});
    }
    el('line', {x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, class: 'axis'}, svg);
    el('line', {x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: 'axis'}, svg);
    label(svg, (M.l + W - M.r) / 2, H - 8, o.xName, {class: 'label', 'text-anchor': 'middle'});
    label(svg, 0, 0, o.yName, {class: 'label', 'text-anchor': 'middle',
                               transform: 'translate(14 ' + (M.t + H - M.b) / 2 + ') rotate(-90)'});
    const plot = el('g', {class: 'plot'}, svg);
    drawn++;
    return {
      sx: sx, sy: sy,
      series: function (d, attrs, name) {
        const p = el('path', Object.assign({d: d, class: 'series'}, attrs), plot);
        el('title', {}, p).textContent = name;  // shown on hover
        return p;
      },
      note: s => label(svg, (M.l + W - M.r) / 2, (M.t + H - M.b) / 2, s,
                       {class: 'note', 'text-anchor': 'middle'}),
    };
  }
  const line = pts => pts.map((p, i) => (i ? 'L' : 'M') + fx(p[0]) + ' ' + fx(p[1])).join('');

  function timeline(s) {
    const tl = (s.timeline && typeof s.timeline === 'object') ? s.timeline : {};
    const t = arr(tl.t);
    const idx = sample(t.length);
    const xs = idx.map(i => num(t[i]));
    const x = xs.length ? timeTicks(xs[0], xs[xs.length - 1]) : timeTicks(0, 3600);
    const of = (m, q) => (m && typeof m === 'object' ? arr(m[q]) : []);
    return {tl: tl, idx: idx, xs: xs, x: x, of: of};
  }

  function gpuChart(host, s, names, colors) {
    const T = timeline(s), cap = arr(T.tl.capacity_gpu);
    let base = T.idx.map(() => 0);
    const layers = [];
    for (const q of names) {
      const a = T.of(T.tl.gpu_by_queue, q);
      if (!a.length) continue;
      const top = base.map((b, j) => b + Math.max(0, num(a[T.idx[j]])));
      layers.push({q: q, lo: base, hi: top});
      base = top;
    }
    const capv = T.idx.map(i => num(cap[i]));
    const y = ticks(0, maxOf(base, maxOf(capv, 1)), 5, false);
    const c = frame(host, {title: 'GPUs allocated, stacked by queue', x: T.x, y: y,
                           xName: T.x.name, yName: 'GPUs'});
    if (!T.xs.length) return c.note('no timeline samples');
    for (const L of layers) {
      const up = T.xs.map((t, j) => [c.sx(t), c.sy(L.hi[j])]);
      const down = T.xs.map((t, j) => [c.sx(t), c.sy(L.lo[j])]).reverse();
      c.series(line(up.concat(down)) + 'Z', {fill: colors[L.q] || '#888', 'fill-opacity': 0.85,
                                             stroke: 'none'}, L.q);
    }
    if (cap.length)
      c.series(line(T.xs.map((t, j) => [c.sx(t), c.sy(capv[j])])),
               {fill: 'none', stroke: '#222', 'stroke-width': 1.5, 'stroke-dasharray': '5 3'},
               'capacity');
  }

  function pendingChart(host, s, names, colors) {
    const T = timeline(s);
    const lines = [];
    for (const q of names) {
      const a = T.of(T.tl.pending_by_queue, q);
      if (a.length) lines.push({q: q, v: T.idx.map(i => Math.max(0, num(a[i])))});
    }
    const y = ticks(0, maxOf(lines.map(L => maxOf(L.v, 0)), 1), 5, false);
    const c = frame(host, {title: 'Pending jobs by queue', x: T.x, y: y, xName: T.x.name,
                           yName: 'pending jobs'});
    if (!T.xs.length) return c.note('no timeline samples');
    for (const L of lines)
      c.series(line(T.xs.map((t, j) => [c.sx(t), c.sy(L.v[j])])),
               {fill: 'none', stroke: colors[L.q] || '#888', 'stroke-width': 1.6}, L.q);
  }

  // Wait times span zero to days, so x is log10(1 + seconds): zero stays on the axis.
  function cdfChart(host, s, names, colors) {
    const sl = v => Math.log10(1 + Math.max(0, v));
    const byName = new Map();
    for (const q of arr(s.queues)) if (q && typeof q.name === 'string') byName.set(q.name, q);
    const cdfs = names.map(q => ({q: q, pts: arr((byName.get(q) || {}).wait_cdf)
        .filter(p => Array.isArray(p) && p.length >= 2).map(p => [num(p[0]), num(p[1])])}))
        .filter(C => C.pts.length);
    const maxX = maxOf(cdfs.map(C => maxOf(C.pts.map(p => p[0]), 0)), 1);
    const marks = [[0, '0'], [1, '1s'], [10, '10s'], [60, '1m'], [600, '10m'], [3600, '1h'],
                   [36000, '10h'], [86400, '1d'], [864000, '10d']];
    for (let d = 100; marks[marks.length - 1][0] < maxX && d < 1e300; d *= 10)
      marks.push([86400 * d, d >= 1e4 ? (d).toExponential(0) + 'd' : d + 'd']);
    let end = marks.findIndex(m => m[0] >= maxX);
    if (end < 0) end = marks.length - 1;
    // Labels need room (about 6.5px a character at 11px); the last one closes the axis.
    const px = (W - M.l - M.r) / sl(marks[end][0]), shown = [marks[0]];
    const crowded = (a, b) => (sl(b[0]) - sl(a[0])) * px < 3.5 * (a[1].length + b[1].length) + 8;
    for (const m of marks.slice(1, end + 1)) {
      if (crowded(shown[shown.length - 1], m)) {
        if (m !== marks[end]) continue;
        if (shown.length > 1) shown.pop();
      }
      shown.push(m);
    }
    const tickName = {};
    for (const m of shown) tickName[sl(m[0])] = m[1];
    const x = {lo: 0, hi: sl(shown[shown.length - 1][0]), values: shown.map(m => sl(m[0])),
               text: v => tickName[v]};
    const y = {lo: 0, hi: 1, values: [0, 0.25, 0.5, 0.75, 1], text: v => String(v)};
    const c = frame(host, {title: 'Wait-time CDF by queue', x: x, y: y,
                           xName: 'wait (log scale: 0, 1s, 10s, 1m, ...)', yName: 'fraction of jobs'});
    if (!cdfs.length) return c.note('no waits recorded');
    for (const C of cdfs) {
      let d = 'M' + fx(c.sx(sl(C.pts[0][0]))) + ' ' + fx(c.sy(0));
      for (let i = 0; i < C.pts.length; i++) {
        if (i) d += 'H' + fx(c.sx(sl(C.pts[i][0])));
        d += 'V' + fx(c.sy(Math.min(1, Math.max(0, C.pts[i][1]))));
      }
      d += 'H' + fx(c.sx(x.hi));
      c.series(d, {fill: 'none', stroke: colors[C.q] || '#888', 'stroke-width': 1.6}, C.q);
    }
  }

  function legend(host, names, colors) {
    const div = document.createElement('div');
    div.className = 'legend';
    const item = (cls, color, text) => {
      const span = document.createElement('span');
      const sw = document.createElement('span');
      sw.className = cls;
      if (color) sw.style.background = color;
      span.append(sw, text);
      div.append(span);
    };
    for (const q of names) item('sw', colors[q] || '#888', q);
    item('sw cap', '', 'capacity');
    host.append(div);
  }

  function drawVariant(host, s, colors) {
    const present = new Set();
    for (const q of arr(s.queues)) if (q && typeof q.name === 'string') present.add(q.name);
    const tl = (s.timeline && typeof s.timeline === 'object') ? s.timeline : {};
    for (const m of [tl.gpu_by_queue, tl.pending_by_queue])
      if (m && typeof m === 'object') for (const k of Object.keys(m)) present.add(k);
    const names = Object.keys(colors).filter(q => present.has(q));
    legend(host, names, colors);
    gpuChart(host, s, names, colors);
    pendingChart(host, s, names, colors);
    cdfChart(host, s, names, colors);
  }

  try {
    const data = JSON.parse(document.getElementById('gpuq-data').textContent);
    const hosts = document.querySelectorAll('.variant .charts');
    arr(data.summaries).forEach((s, i) => drawVariant(hosts[i], s || {}, data.colors || {}));
    body.dataset.charts = String(drawn);
    body.dataset.rendered = 'ok';
  } catch (e) {
    const box = document.getElementById('gpuq-error');
    box.textContent = 'The report failed to draw: ' + (e && e.stack ? e.stack : String(e));
    box.hidden = false;
    body.dataset.charts = String(drawn);
    body.dataset.rendered = 'error';
  }
})();
)JS";

}  // namespace

std::string render_report(const std::vector<json::value>& summaries, const std::string& title) {
  if (summaries.empty())
    throw std::invalid_argument("render_report: no summaries; pass at least one variant's summary");
  json::object colors = queue_colors(summaries);

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  html += "<title>" + escape_html(title) + "</title><style>" + std::string(kStyle) +
          "</style></head>\n";
  html += "<body data-rendered=\"pending\"><h1>" + escape_html(title) + "</h1>\n";
  html +=
      "<div id=\"gpuq-error\" hidden></div>\n<h2>Comparison</h2>\n" + comparison_table(summaries);
  for (std::size_t i = 0; i < summaries.size(); ++i) {
    html += "\n<section class=\"variant\" id=\"variant-" + std::to_string(i) + "\"><h2>" +
            escape_html(variant_label(summaries[i], i)) + "</h2>" + variant_meta(summaries[i]);
    html += "<div class=\"charts\"></div>" +
            queue_table(summaries[i], colors, i > 0 ? &summaries[0] : nullptr) + "</section>";
  }

  json::object data;
  data["title"] = title;
  data["colors"] = colors;
  data["summaries"] = json::array(summaries.begin(), summaries.end());
  html += "\n<script type=\"application/json\" id=\"gpuq-data\">" + script_safe_json(data) +
          "</script>\n<script>" + std::string(kScript) + "</script>\n</body></html>\n";
  return html;
}

}  // namespace gpuq::sim
