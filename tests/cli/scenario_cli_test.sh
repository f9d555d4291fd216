#!/usr/bin/env bash
# The real `gpuq` binary on scenario files: exit 0 and JSON on stdout for a good file; exit 2 and
# an error naming the file and the field on stderr for a bad one. Then `gpuq sim fill`, and
# `gpuq sim synth` + `gpuq sim run` end to end: the outputs, byte-stable reruns, the report drawn
# in headless Chromium, the published traces in data/traces, bad input and
# node failures.
set -u
gpuq=$1
dir=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
traces=$root/data/traces
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0 failed=0
check() {
  if ! eval "$2"; then
    echo "FAIL: $1"; fail=1; failed=$((failed + 1))
  else
    echo "ok: $1"; passed=$((passed + 1))
  fi
}

"$gpuq" sim scenario "$dir/worked-example-2-reclaim.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "good file exits 0" "[ $rc -eq 0 ]"
check "good file prints the four lists" "grep -q '\"admitted\"' $tmp/out && grep -q '\"rejected\"' $tmp/out"
check "good file prints nothing on stderr" "[ ! -s $tmp/err ]"

printf 'queues:\n  - name: q\n    weight: zero\n' >"$tmp/bad.yaml"
"$gpuq" sim scenario "$tmp/bad.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "bad file exits 2" "[ $rc -eq 2 ]"
check "error names file, line, column and field" "grep -Eq 'bad.yaml:3:13: queues\[0\].weight' $tmp/err"
check "bad file prints nothing on stdout" "[ ! -s $tmp/out ]"

"$gpuq" sim scenario "$tmp/missing.yaml" >/dev/null 2>"$tmp/err"
rc=$?
check "missing file exits 2" "[ $rc -eq 2 ]"
check "missing file is named" "grep -q 'missing.yaml' $tmp/err"

# gpuq sim fill on a tiny openb-format cluster and pod list.
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,32000,65536,2,T4\nn1,32000,65536,2,T4\n' >"$tmp/nodes.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,1000\np1,1000,1024,1,500\np2,1000,1024,2,1000\n' >"$tmp/pods.csv"
"$gpuq" sim fill --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --target 1.3 --seeds 1-3 --policy pack,frag-aware --json >"$tmp/out" 2>"$tmp/err"
rc=$?
check "fill exits 0" "[ $rc -eq 0 ]"
check "fill prints one summary per policy" "grep -q '\"policy\":\"pack\"' $tmp/out && grep -q '\"policy\":\"frag-aware\"' $tmp/out && grep -q '\"alloc_ratio_mean\"' $tmp/out"
"$gpuq" sim fill --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --seeds 1-3 --json >"$tmp/again" 2>/dev/null
"$gpuq" sim fill --nodes "$tmp/nodes.csv" --pods "$tmp/pods.csv" --seeds 1-3 --json >"$tmp/again2" 2>/dev/null
check "same inputs and seeds give the same bytes" "cmp -s $tmp/again $tmp/again2"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,abc\np1,1000,1024,1,500\n' >"$tmp/badpods.csv"
"$gpuq" sim fill --nodes "$tmp/nodes.csv" --pods "$tmp/badpods.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "bad trace exits 2" "[ $rc -eq 2 ]"
check "bad trace error names file, line and column" "grep -q 'badpods.csv:2:5: column \"gpu_milli\"' $tmp/err"
"$gpuq" sim fill --nodes "$tmp/nodes.csv" --pods "$tmp/badpods.csv" --skip-bad-rows --json >"$tmp/out" 2>"$tmp/err"
rc=$?
check "skip-bad-rows exits 0 and says how many" "[ $rc -eq 0 ] && grep -q 'skipped 1 malformed rows' $tmp/err"

# ---- gpuq sim synth: a trace, a cluster and queues; the same options give the same bytes. ----
# (The checks below are single-quoted: eval expands them when they run.)
synth=(sim synth --jobs 300 --gpus 32 --queues 3 --load 1.3 --seed 5)
"$gpuq" "${synth[@]}" --out "$tmp/trace.csv" --cluster-out "$tmp/cluster.yaml" --queues-out "$tmp/q.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "synth exits 0 and writes the trace, the cluster and the queues" \
  '[ $rc -eq 0 ] && [ -s "$tmp/trace.csv" ] && [ -s "$tmp/cluster.yaml" ] && [ -s "$tmp/q.yaml" ]'
check "synth's trace is native CSV with 300 jobs" \
  '[ "$(head -n 1 "$tmp/trace.csv" | cut -d, -f1-3)" = "id,submit,queue" ] && [ $(wc -l <"$tmp/trace.csv") -eq 301 ]'
"$gpuq" "${synth[@]}" --out "$tmp/trace2.csv" --cluster-out "$tmp/cluster2.yaml" --queues-out "$tmp/q-again.yaml" 2>/dev/null
check "synth twice gives the same bytes" \
  'cmp -s "$tmp/trace.csv" "$tmp/trace2.csv" && cmp -s "$tmp/cluster.yaml" "$tmp/cluster2.yaml" && cmp -s "$tmp/q.yaml" "$tmp/q-again.yaml"'
"$gpuq" sim synth --jobs 300 --gpus 32 --queues 3 --load 1.3 --seed 6 >"$tmp/trace-seed6.csv" 2>/dev/null
check "synth with another seed gives another trace (on stdout without --out)" \
  '[ -s "$tmp/trace-seed6.csv" ] && ! cmp -s "$tmp/trace.csv" "$tmp/trace-seed6.csv"'

# A second queue configuration: the same queues, q0 weighted 2 with a larger nominal quota.
printf '%s\n' \
  'queues:' \
  '  - name: q0' \
  '    cohort: all' \
  '    weight: 2' \
  '    quotas:' \
  '      - flavor: default' \
  '        resources:' \
  '          gpu: {nominal: 16}' \
  '          cpu: {nominal: 128}' \
  '          memory: {nominal: 1024Gi}' \
  '    preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any}' \
  '  - name: q1' \
  '    cohort: all' \
  '    quotas:' \
  '      - flavor: default' \
  '        resources: {gpu: {nominal: 8}, cpu: {nominal: 64}, memory: {nominal: 512Gi}}' \
  '    preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any}' \
  '  - name: q2' \
  '    cohort: all' \
  '    quotas:' \
  '      - flavor: default' \
  '        resources: {gpu: {nominal: 8}, cpu: {nominal: 64}, memory: {nominal: 512Gi}}' \
  '    preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any}' >"$tmp/q2.yaml"

# overall.finished of a summary.json (python3 parses it; grep where there is no python3).
finished_of() {
  if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["overall"]["finished"])' "$1" 2>/dev/null
  else
    sed -n '/"overall"/,/}/s/.*"finished": *\([0-9]*\).*/\1/p' "$1" | head -n 1
  fi
}

# ---- gpuq sim run: 2 queue files x 2 policies = 4 variants. ----
run=(sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml,$tmp/q2.yaml" --policy pack,frag-aware)
"$gpuq" "${run[@]}" --out "$tmp/run1" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "run with 4 variants exits 0" '[ $rc -eq 0 ]'
variants="pack-q frag-aware-q pack-q2 frag-aware-q2"
all_there=1 lines_ok=1 finished_ok=1
for v in $variants; do
  { [ -s "$tmp/run1/$v/jobs.csv" ] && [ -s "$tmp/run1/$v/summary.json" ]; } || all_there=0
  [ "$(wc -l <"$tmp/run1/$v/jobs.csv" 2>/dev/null)" = 301 ] || lines_ok=0
  [ "$(finished_of "$tmp/run1/$v/summary.json")" = 300 ] || finished_ok=0
done
check "run writes <variant>/jobs.csv and summary.json for $variants, and one report.html" \
  '[ $all_there -eq 1 ] && [ -s "$tmp/run1/report.html" ] && [ ! -e "$tmp/run1/jobs.csv" ]'
check "each jobs.csv is a header and 300 jobs" '[ $lines_ok -eq 1 ]'
check "each summary.json parses and has overall.finished 300" '[ $finished_ok -eq 1 ]'
check "run prints a row per variant and the files it wrote" \
  'grep -q "^pack + q.yaml " "$tmp/out" && grep -q "^frag-aware + q2.yaml " "$tmp/out" && grep -qx "wrote $tmp/run1/report.html" "$tmp/out"'
"$gpuq" "${run[@]}" --out "$tmp/run2" >/dev/null 2>&1
check "the same run again gives byte-identical jobs.csv and summary.json" \
  'diff -r -x report.html "$tmp/run1" "$tmp/run2" >/dev/null && [ -s "$tmp/run2/frag-aware-q2/summary.json" ]'
check "the report draws 3 charts per variant in headless Chromium" \
  '[ "$("$root/scripts/check_report.sh" "$tmp/run1/report.html" 2>&1)" = "report renders: 12 charts" ]'

# One variant: the files go straight into the folder; --json prints its summary.
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --policy pack --out "$tmp/one" --json >"$tmp/out" 2>"$tmp/err"
rc=$?
check "one variant exits 0 and writes jobs.csv, summary.json and report.html in the folder" \
  '[ $rc -eq 0 ] && [ -s "$tmp/one/jobs.csv" ] && [ -s "$tmp/one/summary.json" ] && [ -s "$tmp/one/report.html" ]'
check "--json prints summary.json on stdout" 'cmp -s "$tmp/out" "$tmp/one/summary.json" && [ "$(finished_of "$tmp/out")" = 300 ]'
check "one variant replays as the same variant of the 4-variant run" 'cmp -s "$tmp/one/jobs.csv" "$tmp/run1/pack-q/jobs.csv"'

# ---- The published traces in data/traces (the format detected; no --format); part of the checkout. ----
if [ -d "$traces/tiresias-sample" ]; then
  "$gpuq" sim run --trace "$traces/tiresias-sample/60_job.csv" --cluster "$traces/tiresias-sample/cluster_spec.csv" \
    --assign round-robin --queue-count 2 --out "$tmp/tiresias" --json >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "tiresias 60_job.csv on cluster_spec.csv: exit 0 and 60 jobs finished" \
    '[ $rc -eq 0 ] && [ "$(finished_of "$tmp/out")" = 60 ] && [ $(wc -l <"$tmp/tiresias/jobs.csv") -eq 61 ]'
  "$gpuq" sim run --trace "$traces/tiresias-sample/60_job.csv" --cluster "$traces/tiresias-sample/cluster_spec.csv" \
    --assign trace --out "$tmp/tiresias-trace" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "tiresias with --assign trace (no tenant) exits 2 and suggests round-robin or hash" \
    '[ $rc -eq 2 ] && grep -q "no tenant" "$tmp/err" && grep -q -- "--assign round-robin or --assign hash" "$tmp/err"'
else
  check "no Tiresias sample at $traces/tiresias-sample (data/traces is part of the project)" false
fi
if [ -d "$traces/gavel-philly-vc/seed0" ]; then
  "$gpuq" sim synth --gpus 512 --jobs 1 --out /dev/null --cluster-out "$tmp/cluster512.yaml" 2>/dev/null
  "$gpuq" sim run --trace "$traces/gavel-philly-vc/seed0" --cluster "$tmp/cluster512.yaml" --out "$tmp/philly" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "philly seed0 folder on 512 GPUs: exit 0 and 15264 jobs in jobs.csv" \
    '[ $rc -eq 0 ] && [ $(wc -l <"$tmp/philly/jobs.csv") -eq 15265 ]'
else
  check "no Philly traces at $traces/gavel-philly-vc/seed0 (data/traces is part of the project)" false
fi
openb=$traces/alibaba-gpu-v2023
if [ -f "$openb/openb_pod_list_default.csv" ] && [ -f "$openb/openb_node_list_gpu_node.csv" ]; then
  "$gpuq" sim run --trace "$openb/openb_pod_list_default.csv" --cluster "$openb/openb_node_list_gpu_node.csv" \
    --out "$tmp/openb" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  check "openb default pods on the openb GPU node list: exit 0 and 8152 jobs in jobs.csv" \
    '[ $rc -eq 0 ] && [ $(wc -l <"$tmp/openb/jobs.csv") -eq 8153 ]'
else
  check "no openb traces at $openb (data/traces is part of the project)" false
fi

# ---- Bad input: exit 2, the file, line and column (or the option) on stderr, nothing written. ----
printf 'id,submit,queue,gpu,duration\na,0,q0,1.5,10\nb,0,q0,1,10\n' >"$tmp/badgpu.csv"
"$gpuq" sim run --trace "$tmp/badgpu.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --out "$tmp/bad1" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a bad gpu value exits 2 naming file, line and column, and writes nothing" \
  '[ $rc -eq 2 ] && grep -q "badgpu.csv:2:4: column \"gpu\": \"1.5\"" "$tmp/err" && [ ! -s "$tmp/out" ] && [ ! -e "$tmp/bad1" ]'
"$gpuq" sim run --trace "$tmp/badgpu.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --out "$tmp/bad2" --skip-bad-rows >"$tmp/out" 2>"$tmp/err"
rc=$?
check "run --skip-bad-rows exits 0, says how many and replays the rest" \
  '[ $rc -eq 0 ] && grep -q "skipped 1 malformed rows of .*badgpu.csv" "$tmp/err" && [ $(wc -l <"$tmp/bad2/jobs.csv") -eq 2 ]'
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --format nope --out "$tmp/bad3" >/dev/null 2>"$tmp/err"
rc=$?
check "--format nope exits 2 and lists the formats" '[ $rc -eq 2 ] && grep -q "\"nope\".*native, openb, philly or tiresias" "$tmp/err"'
printf 'job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n1,1,0,100,resnet50,60,10\n' >"$tmp/tiny-tiresias.csv"
"$gpuq" sim run --trace "$tmp/tiny-tiresias.csv" --cluster "$tmp/cluster.yaml" --assign trace --out "$tmp/bad4" >/dev/null 2>"$tmp/err"
rc=$?
check "a (detected) Tiresias trace with --assign trace exits 2 and suggests round-robin or hash" \
  '[ $rc -eq 2 ] && grep -q -- "--assign round-robin or --assign hash" "$tmp/err"'
printf 'time,node,event\n100,n0,crash\n' >"$tmp/crash.csv"
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --node-events "$tmp/crash.csv" --out "$tmp/bad5" >/dev/null 2>"$tmp/err"
rc=$?
check "node event \"crash\" exits 2 naming file, line and column" \
  '[ $rc -eq 2 ] && grep -q "crash.csv:2:3: column \"event\": \"crash\"" "$tmp/err"'
printf 'time,node,event\n100,n9,down\n' >"$tmp/ghost.csv"
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --node-events "$tmp/ghost.csv" --out "$tmp/bad6" >/dev/null 2>"$tmp/err"
rc=$?
check "a node event for a node not in the cluster exits 2 naming the file and the node" \
  '[ $rc -eq 2 ] && grep -q "ghost.csv: .*node \"n9\".* not in the cluster" "$tmp/err" && [ ! -e "$tmp/bad6" ]'
printf 'id,submit,queue,gpu,duration\na,0,q0,1,10\nb,0,qx,1,10\n' >"$tmp/badqueue.csv"
"$gpuq" sim run --trace "$tmp/badqueue.csv" --cluster "$tmp/cluster.yaml" --queues "$tmp/q.yaml" --out "$tmp/bad7" >/dev/null 2>"$tmp/err"
rc=$?
check "a job's queue missing from the queue file exits 2 naming the queue and the file" \
  '[ $rc -eq 2 ] && grep -q "queue \"qx\", which .*q.yaml does not define" "$tmp/err"'
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --policy pack,bogus --out "$tmp/bad8" >/dev/null 2>"$tmp/err"
rc=$?
check "--policy bogus exits 2 naming it" '[ $rc -eq 2 ] && grep -q "\"bogus\" is not a placement policy" "$tmp/err"'
touch "$tmp/a-file"
"$gpuq" sim run --trace "$tmp/trace.csv" --cluster "$tmp/cluster.yaml" --out "$tmp/a-file/out" >/dev/null 2>"$tmp/err"
rc=$?
check "an output folder that cannot be made exits 1 naming it" \
  '[ $rc -eq 1 ] && grep -q "a-file/out: cannot create the folder" "$tmp/err"'

# ---- Node failures: the job on the node that goes down loses its run and starts over. ----
printf 'id,submit,queue,gpu,duration\na,0,q0,1,100\nb,0,q0,1,1000\n' >"$tmp/fail.csv"
printf 'nodes:\n  - {name: n0, flavor: default, capacity: {gpu: 1, cpu: 8, memory: 64Gi}}\n  - {name: n1, flavor: default, capacity: {gpu: 1, cpu: 8, memory: 64Gi}}\n' >"$tmp/fail-cluster.yaml"
printf 'time,node,event\n50,n0,down\n60,n0,up\n' >"$tmp/fail-events.csv"
"$gpuq" sim run --trace "$tmp/fail.csv" --cluster "$tmp/fail-cluster.yaml" --node-events "$tmp/fail-events.csv" --out "$tmp/fail" >/dev/null 2>"$tmp/err"
rc=$?
# field FILE ID COLUMN: the COLUMN (by header name) of job ID's row in a jobs.csv.
field() { awk -F, -v id="$2" -v col="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next } $1 == id { print $c }' "$1"; }
check "the node failure run exits 0" '[ $rc -eq 0 ]'
check "the job on the failed node shows lost_runs 1 and still succeeds; the other job none" \
  '[ "$(field "$tmp/fail/jobs.csv" a lost_runs)" = 1 ] && [ "$(field "$tmp/fail/jobs.csv" a state)" = Succeeded ] &&
   [ "$(field "$tmp/fail/jobs.csv" a placement)" = "n0[0]" ] && [ "$(field "$tmp/fail/jobs.csv" b lost_runs)" = 0 ]'
check "it finishes 60 s late (lost at 50, n0 back at 60, restarted from scratch)" \
  '[ "$(field "$tmp/fail/jobs.csv" a finish)" = 160 ] && [ "$(field "$tmp/fail/jobs.csv" a lost_work_s)" = 50 ]'

echo "$passed passed, $failed failed"
exit $fail
