#!/usr/bin/env bash
# The real `gpuq` binary on scenario files: exit 0 and JSON on stdout for a good file; exit 2 and
# an error naming the file and the field on stderr for a bad one.
set -u
gpuq=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

"$gpuq" sim scenario "$dir/worked-example-2-reclaim.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "good file exits 0" "[ $rc -eq 0 ]"
check "good file prints the four lists" "grep -q '\"admitted\"' $tmp/out && grep -q '\"rejected\"' $tmp/out"
check "good file prints nothing on stderr" "[ ! -s $tmp/err ]"

printf 'queues:\n  - name: q\n    weight: zero\n' >"$tmp/bad.yaml"
"$gpuq" sim scenario "$tmp/bad.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "bad file exits 2" "[ $rc -eq 2 ]"
check "error names file and field" "grep -q 'bad.yaml: queues\[0\].weight' $tmp/err"
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

[ $fail -eq 0 ] && echo "14 passed, 0 failed" || echo "some checks failed"
exit $fail
