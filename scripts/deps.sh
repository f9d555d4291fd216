#!/usr/bin/env bash
# Installs the Debian 12 packages gpuq builds with, when any is missing.
# Silent and quick when everything is present; uses sudo when not root.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-graph1.81-dev
  libyaml-dev libcli11-dev doctest-dev libnghttp2-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libspdlog-dev libssl-dev prometheus-cpp-dev
  chromium
  python3-kubernetes
  ccache  # compilations kept between builds and clones (CMakeLists.txt: GPUQ_CCACHE)
  curl  # tests/kubernetes/reserve_script_test.sh runs deploy/kubernetes/gpuq-reserve
  bash-completion zsh  # gpuq's completion scripts, run by tests/integration/cli_fast_test.cpp
  go-md2man man-db  # the man pages, from docs/reference (packaging/CMakeLists.txt), and man -l
  dpkg-dev lintian debootstrap  # the Debian package: dpkg-shlibdeps, its check, a fresh root to install it in
  python3  # tests/docs/docs_test.py
)
# kubectl checks the fake Kubernetes API server against a real client (tests/kubefake). Debian's
# kubernetes-client, unless a kubectl is there already (it would conflict with, e.g., the Google
# Cloud SDK's).
command -v kubectl >/dev/null || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
