#!/usr/bin/env bash
# The FGD fill experiment (sim/FGD.md) on the three openb pod lists at 130% of the 6,212 GPUs,
# seeds 42-51, with each placement policy; prints the summaries and the wall time of each call.
# Usage: bench/fill_bench.sh [BUILD_DIR] [TRACE_DIR]   (defaults: build, data/traces)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
traces=${2:-data/traces}/alibaba-gpu-v2023
gpuq=$build/cli/gpuq
for list in default gpushare40 multigpu20; do
  for policy in pack spread frag-aware; do
    start=$(date +%s.%N)
    "$gpuq" sim fill --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$traces/openb_pod_list_$list.csv" \
      --target 1.3 --seeds 42-51 --policy "$policy" | tail -n 1 | sed "s/^/$list  /"
    echo "  ($(echo "$(date +%s.%N) - $start" | bc) s for 10 seeds)"
  done
done
