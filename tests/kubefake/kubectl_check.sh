#!/usr/bin/env bash
# Does kube-fake answer like a real API server to real clients? Starts it with three nodes and
# runs kubectl (when one works offline here) and the official Python client (when
# /usr/bin/python3 has the kubernetes package) against it. One "ok:" line per check, "skip:"
# for a client that is absent; exits non-zero when any check fails.
#
# Usage: kubectl_check.sh PATH/TO/kube-fake
set -u
fake=${1:?usage: kubectl_check.sh PATH/TO/kube-fake}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

"$fake" --nodes 3 --kubeconfig "$tmp/kubeconfig" >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q '^kube-fake listening https://127.0.0.1:[0-9]* kubeconfig=' "$tmp/out" && break
  sleep 0.1
done
if ! grep -q '^kube-fake listening' "$tmp/out"; then
  echo "FAIL: kube-fake did not start:"; cat "$tmp/out"; exit 1
fi
echo "ok: $(head -n1 "$tmp/out")"

failed=0
# check DESCRIPTION PATTERN COMMAND...: the command succeeds and its output matches PATTERN.
check() {
  local what=$1 pattern=$2
  shift 2
  local out
  if out=$("$@" 2>&1) && grep -Eq -- "$pattern" <<<"$out"; then
    echo "ok: $what"
  else
    echo "FAIL: $what"; echo "  command: $*"; sed 's/^/  | /' <<<"$out" | head -n 20
    failed=1
  fi
}

pod_yaml="$tmp/pod.yaml"
cat >"$pod_yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: kubectl-demo
  labels: {app: demo}
spec:
  schedulerName: gpuq
  restartPolicy: Never
  containers:
  - name: main
    image: busybox:1.36
    resources:
      limits: {nvidia.com/gpu: 2}
EOF

if command -v kubectl >/dev/null 2>&1 && timeout 30 kubectl version --client >/dev/null 2>&1; then
  k=(timeout 30 kubectl --kubeconfig "$tmp/kubeconfig" --cache-dir "$tmp/kube-cache")
  check "kubectl get nodes -o json" '"name": "node-00002"' "${k[@]}" get nodes -o json
  # kubectl asks for a meta.k8s.io/v1 Table; the fake serves one, so STATUS and VERSION show.
  check "kubectl get nodes (server-side Table)" 'node-00000 +Ready +<none> +[0-9]+s +v1\.28' "${k[@]}" get nodes
  check "kubectl create -f (pod, schedulerName gpuq)" 'pod/kubectl-demo created' "${k[@]}" create -f "$pod_yaml"
  check "kubectl get pods -A -o json" '"schedulerName": "gpuq"' "${k[@]}" get pods -A -o json
  check "kubectl get pods -l (Table)" 'kubectl-demo +0/1 +Pending' "${k[@]}" get pods -l app=demo
  check "kubectl get pod NAME (Table)" 'kubectl-demo +0/1 +Pending' "${k[@]}" get pod kubectl-demo
  check "kubectl get pod -o jsonpath={.metadata.resourceVersion}" '^[0-9]+$' \
    "${k[@]}" get pod kubectl-demo -o 'jsonpath={.metadata.resourceVersion}'
  check "kubectl delete pod" 'pod "kubectl-demo" deleted' "${k[@]}" delete pod kubectl-demo
  check "kubectl get pod after delete is NotFound" 'NotFound' \
    bash -c '! "$@"' _ "${k[@]}" get pod kubectl-demo
  check "kubectl get --raw /version" '"gitVersion":"v1\.28' "${k[@]}" get --raw /version
else
  echo "skip: kubectl is absent or does not run offline here"
fi

if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; then
  if ! timeout 120 /usr/bin/python3 "$here/kubectl_check.py" "$tmp/kubeconfig"; then failed=1; fi
else
  echo "skip: /usr/bin/python3 has no kubernetes package (Debian: python3-kubernetes)"
fi

if [ "$failed" != 0 ]; then echo "kubectl_check: FAILED"; exit 1; fi
echo "kubectl_check: all passed"
