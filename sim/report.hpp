#pragma once
// report.html for `gpuq sim run`: one self-contained file (no network, no external script or
// style) that a person opens in a browser. It embeds each variant's summary.json and draws, with
// inline JavaScript into SVG: GPU use over time stacked by queue, pending jobs over time, the
// wait-time CDF per queue, and the side-by-side comparison table of the variants.
//
// A summary (sim/replay.hpp writes it; keys the report reads):
// {
//   "variant": "pack + a.yaml",            // label of this run
//   "policy": "pack", "queues_file": "a.yaml",
//   "cluster": {"nodes": 10, "gpus": 80},
//   "jobs": 1000, "events": 2000, "wall_seconds": 0.5, "events_per_second": 4000.0,
//   "overall": {
//     "jobs": 1000, "finished": 990, "unfinished": 10,
//     "wait": {"mean": 1.0, "p50": 0, "p95": 3, "p99": 9, "max": 12},        // seconds
//     "completion": {"mean": ..., "p50": ..., "p95": ..., "p99": ..., "max": ...},
//     "preemptions": 3, "gpu_hours_used": 12.5, "gpu_hours_lost": 0.5,
//     "gpu_utilization_mean": 0.8, "alloc_ratio_mean": 0.85, "fragmentation_mean": 0.02,
//     "jain_index": 0.97, "makespan": 86400
//   },
//   "queues": [ {"name": "a", "jobs": ..., "finished": ..., "wait": {...}, "completion": {...},
//                "preemptions": ..., "gpu_hours_used": ..., "gpu_hours_lost": ...,
//                "entitlement": 0.5, "share": 0.45, "share_vs_entitlement": 0.9,
//                "wait_cdf": [[seconds, fraction], ...]} ],   // fraction rises to 1
//   "timeline": {"t": [seconds...], "capacity_gpu": [...],
//                "gpu_by_queue": {"a": [...], ...},          // GPUs allocated (milli / 1000)
//                "pending_by_queue": {"a": [...], ...},      // pending jobs
//                "alloc_ratio": [...], "fragmentation": [...]}   // all arrays as long as "t"
// }
#include <string>
#include <vector>

#include <boost/json/value.hpp>

namespace gpuq::sim {

// The whole HTML document. `summaries` holds one summary per variant (at least one). Strings
// from the summaries (queue names, labels) are escaped; the embedded JSON cannot close the
// script element it sits in.
std::string render_report(const std::vector<boost::json::value>& summaries, const std::string& title);

}  // namespace gpuq::sim
