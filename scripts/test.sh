#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: once in an optimised build and once
# under AddressSanitizer + UndefinedBehaviorSanitizer. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh
# Go builds tests/kubecluster (a real Kubernetes control plane, from Kubernetes' Go modules) for
# the Kubernetes binder's tests; its module and build caches (~/go/pkg/mod, ~/.cache/go-build)
# are kept between runs on one machine.
scripts/go-check.sh
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"

jobs=${GPUQ_JOBS:-$(nproc)}

echo "== release build =="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUQ_WERROR=ON -DGPUQ_KUBE_CLUSTER=ON >/dev/null
cmake --build build --parallel "$jobs"
ctest --test-dir build --output-on-failure --parallel "$jobs"

echo "== asan+ubsan build =="
# -g1: line tables only, enough for the sanitizers' stack traces (file:line), and a tenth less
# compile time than -g's full debug information (api/services.cpp: 48.7 s against 53.9 s).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DGPUQ_WERROR=ON \
  -DGPUQ_SANITIZE=ON -DGPUQ_BUILD_BENCH=OFF -DGPUQ_KUBE_CLUSTER=ON >/dev/null
cmake --build build-asan --parallel "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure --parallel "$jobs"
