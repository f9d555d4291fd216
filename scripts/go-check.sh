#!/usr/bin/env bash
# Says whether Go (1.26 or newer) is there for tests/kubecluster, which builds Kubernetes'
# components from their Go modules (go.mod pins them). Debian 12's golang-go is 1.19, too old
# for them; the project's machines have Go 1.26 (at /usr/local/go). Exits 1 with what to do.
set -euo pipefail
go=$(command -v go || true)
[[ -z "$go" && -x /usr/local/go/bin/go ]] && go=/usr/local/go/bin/go
if [[ -z "$go" ]]; then
  echo "go-check: no go command: tests/kubecluster needs Go 1.26 or newer (put it on PATH, or build without it: cmake -DGPUQ_KUBE_CLUSTER=OFF)" >&2
  exit 1
fi
version=$("$go" env GOVERSION)  # go1.26.8
IFS=. read -r major minor _ <<<"${version#go}"
if (( major < 1 || (major == 1 && minor < 26) )); then
  echo "go-check: $go is $version; tests/kubecluster needs Go 1.26 or newer" >&2
  exit 1
fi
