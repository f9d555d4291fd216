#!/usr/bin/env bash
# Installs what is missing, builds, and shows the engine at work. gpuqd (the daemon) does not
# exist yet; when it lands this script starts it on its embedded default instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target gpuq

for f in examples/scenarios/*.yaml; do
  echo "== gpuq sim scenario $f"
  build/cli/gpuq sim scenario "$f"
done
echo
echo "gpuqd is not built yet (see README: Status). Try your own state with:"
echo "  build/cli/gpuq sim scenario FILE.yaml    # format: ../shared/SCENARIOS.md"
