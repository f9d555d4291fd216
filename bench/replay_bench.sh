#!/usr/bin/env bash
# gpuq sim run at scale: a synthetic trace of JOBS jobs (default 1,000,000) on GPUS GPUs (default
# 10,000) in nodes of 8, four queues in one cohort with priority preemption and reclaim, replayed
# once per placement policy given. Prints gpuq's own line (events, cycles, wall time, events/s),
# /usr/bin/time's peak memory, and the comparison table. The trace, the cluster, the queues and
# the outputs go to a temporary folder, removed at the end.
# Usage: bench/replay_bench.sh [BUILD_DIR] [JOBS] [GPUS] [POLICY[,POLICY...]] [LOAD]
#        (defaults: build-bench 1000000 10000 pack 0.9)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build-bench}
jobs=${2:-1000000}
gpus=${3:-10000}
policy=${4:-pack}
load=${5:-0.9}
gpuq=$build/cli/gpuq
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s.%N)
"$gpuq" sim synth --jobs "$jobs" --gpus "$gpus" --queues 4 --load "$load" --seed 1 \
  --out "$work/trace.csv" --cluster-out "$work/cluster.yaml" --queues-out "$work/queues.yaml"
echo "synth: $(wc -l < "$work/trace.csv") lines in $(echo "$(date +%s.%N) - $start" | bc) s"
timer=(); [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f "peak RSS %M KiB, %e s wall")
"${timer[@]}" "$gpuq" sim run --trace "$work/trace.csv" \
  --cluster "$work/cluster.yaml" --queues "$work/queues.yaml" --policy "$policy" --out "$work/out"
