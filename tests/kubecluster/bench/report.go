package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"
)

// Metric is one row of a workload's table: how to read it from a result, and whether less is
// better (for the ratio's reading).
type Metric struct {
	Name  string
	Unit  string
	Less  bool
	Value func(*RunResult) float64
}

// MetricsFor: the rows each workload's table shows.
func MetricsFor(workload string) []Metric {
	common := []Metric{
		{"CPU seconds (scheduler processes)", "s", true, func(r *RunResult) float64 { return r.CPUSeconds }},
		{"peak memory (largest process)", "MiB", true, func(r *RunResult) float64 { return r.PeakMiB }},
		{"API requests per pod", "", true, func(r *RunResult) float64 { return r.RequestsPerPod }},
		{"API writes per pod", "", true, func(r *RunResult) float64 { return r.WritesPerPod }},
	}
	switch {
	case workload == "throughput":
		return append([]Metric{
			{"time until every pod runs", "s", true, func(r *RunResult) float64 { return r.Seconds }},
			{"pods bound per second", "/s", false, func(r *RunResult) float64 { return r.BoundPerSecond }},
			{"creation to Running p50", "s", true, func(r *RunResult) float64 { return r.LatencyP50 }},
			{"creation to Running p99", "s", true, func(r *RunResult) float64 { return r.LatencyP99 }},
			{"pods running at the end", "", false, func(r *RunResult) float64 { return float64(r.Running) }},
		}, common...)
	case strings.HasPrefix(workload, "fairness"):
		m := []Metric{
			{"share error (integral |held - fair| / capacity x time)", "", true, func(r *RunResult) float64 { return r.ShareError }},
			{"wave 2: until every queue holds 95% of its fair share", "s", true, func(r *RunResult) float64 { return r.ReturnSeconds }},
		}
		for i := 0; i < 3; i++ {
			i := i
			m = append(m, Metric{fmt.Sprintf("steady state %d: Jain's index", i+1), "", false, func(r *RunResult) float64 { return at(r.Jain, i) }},
				Metric{fmt.Sprintf("steady state %d: worst queue off its fair share", i+1), "%", true, func(r *RunResult) float64 { return 100 * at(r.WorstOff, i) }})
		}
		return append(m, common...)
	case workload == "gangs":
		return append([]Metric{
			{"time until every Job has run", "s", true, func(r *RunResult) float64 { return r.Seconds }},
			{"Jobs done (of all)", "", false, func(r *RunResult) float64 { return float64(r.JobsDone) }},
			{"partly bound gangs (most at once)", "", true, func(r *RunResult) float64 { return float64(r.PartialGangsMax) }},
			{"GPU-seconds held by partly bound gangs", "GPU-s", true, func(r *RunResult) float64 { return r.PartialGPUSeconds }},
		}, common...)
	case workload == "reclaim":
		return append([]Metric{
			{"lender's pods all running after", "s", true, func(r *RunResult) float64 { return r.LenderSeconds }},
			{"pods evicted (minimum: the lender's pods)", "", true, func(r *RunResult) float64 { return float64(r.Evicted) }},
			{"evicted despite a PodDisruptionBudget", "", true, func(r *RunResult) float64 { return float64(r.EvictedProtected) }},
		}, common...)
	}
	return common
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return math.NaN()
}

// Table writes one workload's results as a plain-text table with the ratios gpuq/peer.
func Table(w io.Writer, workload string, results []*RunResult) {
	by := map[string]*RunResult{}
	var systems []string
	for _, r := range results {
		if r.Workload == workload {
			by[r.System] = r
			systems = append(systems, r.System)
		}
	}
	if len(systems) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== %s ==\n", workload)
	fmt.Fprintf(w, "%-58s", "")
	for _, s := range systems {
		fmt.Fprintf(w, " %16s", s)
	}
	peers := peerList(systems)
	for _, p := range peers {
		fmt.Fprintf(w, " %16s", "gpuq/"+p)
	}
	fmt.Fprintln(w)
	for _, m := range MetricsFor(workload) {
		name := m.Name
		if m.Unit != "" {
			name += " (" + m.Unit + ")"
		}
		fmt.Fprintf(w, "%-58s", name)
		for _, s := range systems {
			fmt.Fprintf(w, " %16s", num(m.Value(by[s]), by[s]))
		}
		for _, p := range peers {
			fmt.Fprintf(w, " %16s", ratio(m.Value(by[Gpuq]), m.Value(by[p])))
		}
		fmt.Fprintln(w)
	}
	anyBacklog := false
	for _, r := range by {
		anyBacklog = anyBacklog || (r != nil && r.Backlog > 0)
	}
	for _, s := range systems {
		if by[s].Backlog == 0 && anyBacklog && by[s].Finished {
			fmt.Fprintf(w, "  %s: not a backlog run (times from the first Job's creation)\n", s)
		}
		if by[s].Backlog > 0 {
			fmt.Fprintf(w, "  %s: started once all %d pods existed (%.0f s after the first Job); times from its start\n", s, by[s].Pods, by[s].Backlog)
		}
		if !by[s].Finished {
			fmt.Fprintf(w, "  %s: did not finish within the workload's limit (%.0f s)\n", s, by[s].Seconds)
		}
		if by[s].Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", s, by[s].Error)
		}
	}
}

func peerList(systems []string) []string {
	has := false
	var out []string
	for _, s := range systems {
		if s == Gpuq {
			has = true
		} else {
			out = append(out, s)
		}
	}
	if !has {
		return nil
	}
	return out
}

func num(v float64, r *RunResult) string {
	switch {
	case r == nil:
		return "-"
	case math.IsNaN(v):
		return "-"
	case v < 0:
		return "never"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || a < 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// colors of the queues (and of the systems in the latency plot).
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// Report writes the HTML report: each workload's table, each system's per-queue GPUs over time
// (with the fair share dashed), and the creation-to-Running percentiles of each system.
func Report(w io.Writer, title string, meta []string, results []*RunResult) {
	fmt.Fprintf(w, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}.ratio{background:#f4f8ff}
figure{display:inline-block;margin:0 1em 1em 0}figcaption{font-size:90%%;color:#444}
svg text{font-size:11px;font-family:system-ui,sans-serif}
</style></head><body data-rendered="pending">
<h1>%s</h1>
`, html.EscapeString(title), html.EscapeString(title))
	fmt.Fprintln(w, "<ul>")
	for _, m := range meta {
		fmt.Fprintf(w, "<li>%s</li>\n", html.EscapeString(m))
	}
	fmt.Fprintln(w, "</ul>")
	var workloads []string
	seen := map[string]bool{}
	for _, r := range results {
		if !seen[r.Workload] {
			seen[r.Workload] = true
			workloads = append(workloads, r.Workload)
		}
	}
	for _, wl := range workloads {
		var rs []*RunResult
		for _, r := range results {
			if r.Workload == wl {
				rs = append(rs, r)
			}
		}
		fmt.Fprintf(w, "<section class=\"workload\" id=\"%s\"><h2>%s</h2>\n", html.EscapeString(wl), html.EscapeString(wl))
		htmlTable(w, wl, rs)
		for _, r := range rs {
			sharePlot(w, r)
		}
		latencyPlot(w, wl, rs)
		fmt.Fprintln(w, "</section>")
	}
	// The check a browser runs (scripts/check_report.sh reads its verdict from <body>): every
	// figure has a drawn line with points inside its box.
	fmt.Fprint(w, `<div id="gpuq-error" hidden></div>
<script>
(function () {
  var body = document.body, n = 0;
  try {
    var figs = document.querySelectorAll("figure svg");
    for (var i = 0; i < figs.length; i++) {
      var lines = figs[i].querySelectorAll("polyline");
      if (lines.length === 0) throw new Error("figure " + (i + 1) + " has no line");
      var box = lines[0].getBBox();
      if (!(box.width > 0) && !(box.height > 0)) throw new Error("figure " + (i + 1) + ": its line is empty");
      n++;
    }
    body.setAttribute("data-charts", String(n));
    body.setAttribute("data-rendered", "ok");
  } catch (e) {
    body.setAttribute("data-charts", String(n));
    body.setAttribute("data-rendered", "error");
    var d = document.getElementById("gpuq-error");
    d.textContent = String(e && e.message || e);
    d.hidden = false;
  }
})();
</script>
</body></html>
`)
}

func htmlTable(w io.Writer, wl string, rs []*RunResult) {
	by := map[string]*RunResult{}
	var systems []string
	for _, r := range rs {
		by[r.System] = r
		systems = append(systems, r.System)
	}
	peers := peerList(systems)
	fmt.Fprint(w, "<table><tr><th></th>")
	for _, s := range systems {
		fmt.Fprintf(w, "<th>%s</th>", html.EscapeString(s))
	}
	for _, p := range peers {
		fmt.Fprintf(w, "<th class=\"ratio\">gpuq / %s</th>", html.EscapeString(p))
	}
	fmt.Fprintln(w, "</tr>")
	for _, m := range MetricsFor(wl) {
		name := m.Name
		if m.Unit != "" {
			name += " (" + m.Unit + ")"
		}
		fmt.Fprintf(w, "<tr><td>%s</td>", html.EscapeString(name))
		for _, s := range systems {
			fmt.Fprintf(w, "<td>%s</td>", num(m.Value(by[s]), by[s]))
		}
		for _, p := range peers {
			fmt.Fprintf(w, "<td class=\"ratio\">%s</td>", ratio(m.Value(by[Gpuq]), m.Value(by[p])))
		}
		fmt.Fprintln(w, "</tr>")
	}
	fmt.Fprintln(w, "</table>")
	for _, s := range systems {
		if !by[s].Finished {
			fmt.Fprintf(w, "<p>%s did not finish within the workload's limit (%.0f s).</p>\n", html.EscapeString(s), by[s].Seconds)
		}
	}
}

const plotW, plotH, padL, padB = 420.0, 220.0, 44.0, 28.0

// sharePlot: GPUs each queue holds over time, its fair share dashed.
func sharePlot(w io.Writer, r *RunResult) {
	if len(r.Samples) < 2 {
		return
	}
	var queues []string
	seen := map[string]bool{}
	maxY, maxX := 1.0, r.Samples[len(r.Samples)-1].At
	for _, s := range r.Samples {
		for q, v := range s.Demand {
			if !seen[q] {
				seen[q] = true
				queues = append(queues, q)
			}
			_ = v
		}
		for _, v := range s.Held {
			maxY = math.Max(maxY, float64(v))
		}
		for _, v := range s.Fair {
			maxY = math.Max(maxY, v)
		}
	}
	sort.Strings(queues)
	x := func(t float64) float64 { return padL + (plotW-padL-8)*t/math.Max(maxX, 1) }
	y := func(v float64) float64 { return plotH - padB - (plotH-padB-8)*v/maxY }
	fmt.Fprintf(w, "<figure class=\"share\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", plotW, plotH)
	axes(w, maxX, maxY, "s", "GPUs held", x, y)
	for i, q := range queues {
		color := palette[i%len(palette)]
		var held, fair strings.Builder
		for _, s := range r.Samples {
			fmt.Fprintf(&held, "%.1f,%.1f ", x(s.At), y(float64(s.Held[q])))
			fmt.Fprintf(&fair, "%.1f,%.1f ", x(s.At), y(s.Fair[q]))
		}
		fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"><title>%s held</title></polyline>\n", color, held.String(), q)
		if len(r.Samples[0].Fair) > 0 || strings.HasPrefix(r.Workload, "fairness") {
			fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-dasharray=\"4 3\" stroke-width=\"1\" points=\"%s\"><title>%s fair share</title></polyline>\n", color, fair.String(), q)
		}
		fmt.Fprintf(w, "<text x=\"%.0f\" y=\"%d\" fill=\"%s\">%s</text>\n", padL+8+float64(i)*70, 14, color, html.EscapeString(q))
	}
	fmt.Fprintf(w, "</svg><figcaption>%s: GPUs each queue holds (solid) and its fair share (dashed)</figcaption></figure>\n", html.EscapeString(r.System))
}

// latencyPlot: creation to Running, each system's percentiles.
func latencyPlot(w io.Writer, wl string, rs []*RunResult) {
	maxX := 0.0
	for _, r := range rs {
		if n := len(r.Percentiles); n > 0 {
			maxX = math.Max(maxX, r.Percentiles[n-1])
		}
	}
	if maxX == 0 {
		return
	}
	x := func(v float64) float64 { return padL + (plotW-padL-8)*v/maxX }
	y := func(p float64) float64 { return plotH - padB - (plotH-padB-8)*p/100 }
	fmt.Fprintf(w, "<figure class=\"latency\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" role=\"img\">\n", plotW, plotH)
	axes(w, maxX, 100, "s", "% of pods", x, y)
	for i, r := range rs {
		color := palette[i%len(palette)]
		var pts strings.Builder
		for p, v := range r.Percentiles {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(v), y(float64(p)))
		}
		fmt.Fprintf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"><title>%s</title></polyline>\n", color, pts.String(), r.System)
		fmt.Fprintf(w, "<text x=\"%.0f\" y=\"%d\" fill=\"%s\">%s</text>\n", padL+8+float64(i)*110, 14, color, html.EscapeString(r.System))
	}
	fmt.Fprintf(w, "</svg><figcaption>%s: time from a Job's creation to its pod Running (share of pods by then)</figcaption></figure>\n", html.EscapeString(wl))
}

func axes(w io.Writer, maxX, maxY float64, xUnit, yLabel string, x, y func(float64) float64) {
	fmt.Fprintf(w, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>\n", padL, y(0), plotW-8, y(0))
	fmt.Fprintf(w, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#333\"/>\n", padL, y(0), padL, y(maxY))
	for i := 0; i <= 4; i++ {
		vx, vy := maxX*float64(i)/4, maxY*float64(i)/4
		fmt.Fprintf(w, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", x(vx), plotH-padB+14, short(vx))
		fmt.Fprintf(w, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", padL-4, y(vy)+4, short(vy))
	}
	fmt.Fprintf(w, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>\n", plotW-8, plotH-2, xUnit)
	fmt.Fprintf(w, "<text x=\"4\" y=\"%.0f\" transform=\"rotate(-90 10 %.0f)\">%s</text>\n", plotH/2, plotH/2, html.EscapeString(yLabel))
}

func short(v float64) string {
	if v >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
