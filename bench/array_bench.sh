#!/usr/bin/env bash
# array_bench.sh [MEMBERS] [ROUNDS] [BUILD_DIR]: a job array through a real gpuqd (none binder,
# a fresh state file, one queue whose 8 GPUs hold 8 one-GPU members, so the rest stay pending):
# the wall time of `gpuq submit --array 0-(MEMBERS-1)` (one call, one durable transaction), then
# of `gpuq ls -q q` over the queue holding it (pending members folded into one row) and of
# `gpuq ls -q q -r` (one row each), each a whole process, ROUNDS times; prints the median and
# the range of each. BUILD_DIR is a Release build (default: build).
set -euo pipefail
members=${1:-10000}
rounds=${2:-5}
build=${3:-build}
gpuqd="$build/daemon/gpuqd"
gpuq="$build/cli/gpuq"
[[ -x $gpuqd && -x $gpuq ]] || { echo "array_bench.sh: build $build first" >&2; exit 2; }
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/gpuqd.yaml" <<CONF
grpc: 127.0.0.1:0
http: 127.0.0.1:0
stateFile: $dir/state.db
binder: none
queues:
  - name: q
    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]
nodes:
  - {name: n0, flavor: default, capacity: {gpu: 8}}
CONF
"$gpuqd" --config "$dir/gpuqd.yaml" > "$dir/out" 2> "$dir/err" &
pid=$!
for _ in $(seq 100); do [[ -S $dir/state.sock ]] && break; sleep 0.1; done
export GPUQ_SERVER=unix:$dir/state.sock
ms() { local s e; s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N); echo $(((e - s) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {printf "%d ms (%d-%d)", a[int((NR+1)/2)], a[1], a[NR]}'; }
submit=() lsf=() lsr=()
for r in $(seq "$rounds"); do
  submit+=("$(ms "$gpuq" submit -q q --gpus 1 --array "0-$((members - 1))" -- true)")
  lsf+=("$(ms "$gpuq" ls -q q)")
  lsr+=("$(ms "$gpuq" ls -q q -r)")
done
rows=$("$gpuq" ls -q q | wc -l)
echo "array_bench: $members members x $rounds arrays; the queue held up to $((members * rounds)) jobs"
echo "  submit --array:  $(printf '%s\n' "${submit[@]}" | median)"
echo "  ls (folded):     $(printf '%s\n' "${lsf[@]}" | median)   ($rows lines at the end)"
echo "  ls -r (each):    $(printf '%s\n' "${lsr[@]}" | median)"
