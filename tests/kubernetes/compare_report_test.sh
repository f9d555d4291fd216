#!/bin/sh
# kube-cluster bench compare, small: the throughput workload (40 one-GPU Jobs, 5 nodes) through
# kube-scheduler, Kueue and gpuq, each on a control plane of its own; every system runs every
# pod, the tables print the ratios, and the report renders in headless Chromium
# (scripts/check_report.sh). A bad flag is refused, naming it. Then --backlog: kube-scheduler
# and gpuq start only once all 40 pods exist, and still run them all.
# Usage: compare_report_test.sh KUBE_CLUSTER GPUQD KUEUE KUEUE_CONFIG SOURCE_DIR
set -eu
kc="$1"; gpuqd="$2"; kueue="$3"; kueue_config="$4"; src="$5"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
if "$kc" bench compare --workloads nonsense --out "$dir/bad" > "$dir/bad.out" 2>&1; then
  echo "an unknown workload was accepted"; exit 1
fi
grep -q 'unknown workload "nonsense"' "$dir/bad.out" || { cat "$dir/bad.out"; exit 1; }
"$kc" bench compare --gpuqd "$gpuqd" --kueue "$kueue" --kueue-config "$kueue_config" \
  --deploy "$src/deploy/kubernetes" --trace "$src/data/traces/gavel-philly-vc/seed0/6214e9.trace" \
  --systems kube-scheduler,kueue,gpuq --workloads throughput --scale 0.004 --out "$dir/out" \
  > "$dir/table.out" 2> "$dir/progress.out" || { cat "$dir/progress.out" "$dir/table.out"; exit 1; }
cat "$dir/table.out"
# Every system ran all 40 pods, with no error.
for system in kube-scheduler kueue gpuq; do
  /usr/bin/python3 - "$dir/out/results.json" "$system" <<'PY' || { cat "$dir/progress.out"; exit 1; }
import json, sys
rs = [r for r in json.load(open(sys.argv[1])) if r["system"] == sys.argv[2]]
assert len(rs) == 1, f"{sys.argv[2]}: {len(rs)} results"
r = rs[0]
assert not r.get("error"), f"{sys.argv[2]}: {r.get('error')}"
assert r["finished"] and r["running"] == 40, f"{sys.argv[2]}: finished {r['finished']}, {r['running']} of 40 running"
assert r["requests"] > 0 and r["cpuSeconds"] > 0, f"{sys.argv[2]}: no requests or CPU counted"
PY
done
grep -q 'gpuq/kueue' "$dir/table.out"
grep -q 'gpuq/kube-scheduler' "$dir/table.out"
# Three share plots and one latency plot.
rendered=$("$src/scripts/check_report.sh" "$dir/out/report.html")
[ "$rendered" = "report renders: 4 charts" ] || { echo "check_report: $rendered (4 charts expected)"; exit 1; }
# A backlog: the scheduler starts once all 40 pods exist; the time counts from its start.
"$kc" bench compare --gpuqd "$gpuqd" --deploy "$src/deploy/kubernetes" \
  --trace "$src/data/traces/gavel-philly-vc/seed0/6214e9.trace" --backlog \
  --systems kube-scheduler,gpuq --workloads throughput --scale 0.004 --out "$dir/backlog" \
  > "$dir/backlog.out" 2> "$dir/backlog-progress.out" || { cat "$dir/backlog-progress.out" "$dir/backlog.out"; exit 1; }
cat "$dir/backlog.out"
/usr/bin/python3 - "$dir/backlog/results.json" <<'PY' || { cat "$dir/backlog-progress.out"; exit 1; }
import json, sys
rs = json.load(open(sys.argv[1]))
assert sorted(r["system"] for r in rs) == ["gpuq", "kube-scheduler"], [r["system"] for r in rs]
for r in rs:
    assert not r.get("error"), f"{r['system']}: {r.get('error')}"
    assert r["finished"] and r["running"] == 40, f"{r['system']}: finished {r['finished']}, {r['running']} of 40 running"
    assert r["backlog"] > 0, f"{r['system']}: no backlog recorded"
PY
grep -q 'started once all 40 pods existed' "$dir/backlog.out"
echo ok
