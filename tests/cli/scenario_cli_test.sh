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

[ $fail -eq 0 ] && echo "8 passed, 0 failed" || echo "some checks failed"
exit $fail
