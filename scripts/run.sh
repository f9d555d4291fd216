#!/usr/bin/env bash
# Installs what is missing, builds, and starts gpuqd with the example configuration
# (examples/gpuqd.yaml: two queues in a cohort, four 8-GPU nodes, its own state file
# gpuqd-example.db in the working directory). Stop it with Ctrl-C; the state stays on disk.
# Extra arguments go to gpuqd (e.g. --grpc 127.0.0.1:7533).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target gpuqd gpuq

cat <<'MSG'

gpuqd is starting (gRPC 127.0.0.1:7433, metrics http://127.0.0.1:7434/metrics). In another terminal:
  build/cli/gpuq queues
  build/cli/gpuq submit --queue research --gpus 2 --name train -- python train.py
  build/cli/gpuq ls
  build/cli/gpuq watch
  build/cli/gpuq sim scenario examples/scenarios/reclaim-and-priority.yaml

MSG
exec build/daemon/gpuqd --config examples/gpuqd.yaml "$@"
