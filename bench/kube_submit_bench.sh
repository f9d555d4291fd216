#!/usr/bin/env bash
# Jobs from the command line on Kubernetes (docs/tasks/kubernetes.md, "Jobs from the command line on Kubernetes"),
# measured on the real local control plane (tests/kubecluster) next to pods created with kubectl
# and placed by kube-scheduler, on the same cluster, in one run:
#   1. latency: one job at a time, N times: `gpuq submit` returning, and the job Running (its pod
#      Running in the API), against `kubectl create -f pod.yaml` returning and that pod Running;
#   2. throughput: M one-GPU jobs in one command (`gpuq submit --array 0-(M-1)`) against M pods in
#      one `kubectl create -f` (kube-scheduler), from the command until every pod is Running.
# Prints one table with the ratios gpuq/kubectl (lower is better; started per second: higher).
# Containers are `sleep`. Running is polled with kubectl (every 50 ms for one pod, 500 ms for a
# batch: each poll is a process that takes CPU from the control plane on a small machine).
# Usage: bench/kube_submit_bench.sh [BUILD_DIR] [N=20] [M=200]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build=${1:-build}
n=${2:-20}
m=${3:-200}
nodes=$(((m + 7) / 8 + 1))
work=$(mktemp -d)
kc=$build/tests/kubecluster/kube-cluster
cleanup() {
  [[ -f $work/gpuqd.pid ]] && kill "$(cat "$work/gpuqd.pid")" 2>/dev/null || true
  [[ -f $work/kc.pid ]] && kill "$(cat "$work/kc.pid")" 2>/dev/null || true
  sleep 1
  rm -rf "$work"
}
trap cleanup EXIT
"$kc" up --dir "$work/c" --nodes "$nodes" --quiet --apply deploy/kubernetes/namespace.yaml \
  --apply deploy/kubernetes/serviceaccount.yaml --apply deploy/kubernetes/clusterrole.yaml \
  --apply deploy/kubernetes/clusterrolebinding.yaml >"$work/up.out" 2>"$work/up.err" &
echo $! >"$work/kc.pid"
for _ in $(seq 1 120); do grep -q "kube-cluster ready" "$work/up.out" && break; sleep 1; done
grep -q "kube-cluster ready" "$work/up.out" || { cat "$work/up.err" >&2; exit 1; }
k() { kubectl --kubeconfig "$work/c/admin.kubeconfig" "$@"; }
for ns in team-a plain; do k create namespace "$ns" >/dev/null; done
k -n team-a create role gpuq-jobs --verb=create,delete --resource=pods >/dev/null
k -n team-a create rolebinding gpuq-jobs --role=gpuq-jobs --serviceaccount=gpuq-system:gpuq >/dev/null
for _ in $(seq 1 100); do k -n plain get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
cat >"$work/gpuqd.yaml" <<EOF
grpc: 127.0.0.1:0
http: 127.0.0.1:0
binder: kubernetes
kubernetes: {kubeconfig: $work/c/gpuqd.kubeconfig}
queues:
  - name: team-a
    quotas: [{flavor: default, resources: {gpu: {nominal: $((nodes * 8))}}}]
    kubernetes: {namespace: team-a, defaultImage: busybox}
EOF
"$build/daemon/gpuqd" --config "$work/gpuqd.yaml" --state-file "$work/state.db" >"$work/gpuqd.out" 2>&1 &
echo $! >"$work/gpuqd.pid"
for _ in $(seq 1 100); do grep -q "gpuqd listening" "$work/gpuqd.out" && break; sleep 0.1; done
export GPUQ_SERVER=unix:$work/state.sock
gpuq=$build/cli/gpuq
pod_yaml() {  # NAME: a one-GPU pod for kube-scheduler
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: plain}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers: [{name: main, image: busybox, command: [sleep, "600"], resources: {limits: {nvidia.com/gpu: "1"}}}]
EOF
}
now() { date +%s.%N; }
running() {  # NAMESPACE: pods Running
  k -n "$1" get pods --no-headers 2>/dev/null | awk '$3 == "Running"' | wc -l
}
wait_running() {  # NAMESPACE COUNT [POLL_SECONDS]: each poll is a kubectl process, which costs CPU
  while [[ $(running "$1") -lt $2 ]]; do sleep "${3:-0.05}"; done
}

# 1. One at a time.
ids=()
: >"$work/lat"
for i in $(seq 1 "$n"); do
  t0=$(now)
  ids+=("$("$gpuq" submit --queue team-a --gpus 1 -- sleep 600 | sed -n 's|^job/\([^ ]*\) submitted.*|\1|p')")
  t1=$(now)
  wait_running team-a "$i"
  t2=$(now)
  pod_yaml "p$i" >"$work/p.yaml"
  t3=$(now)
  k create -f "$work/p.yaml" >/dev/null
  t4=$(now)
  wait_running plain "$i"
  t5=$(now)
  echo "$t0 $t1 $t2 $t3 $t4 $t5" >>"$work/lat"
done
"$gpuq" cancel --force "${ids[@]}" >/dev/null
k -n plain delete pods --all --grace-period 0 --force >/dev/null 2>&1
for _ in $(seq 1 600); do
  [[ $(k -n team-a get pods --no-headers 2>/dev/null | wc -l) -eq 0 && $(k -n plain get pods --no-headers 2>/dev/null | wc -l) -eq 0 ]] && break
  sleep 0.2
done

# 2. M at once.
for i in $(seq 1 "$m"); do pod_yaml "q$i"; echo ---; done >"$work/many.yaml"
t0=$(now)
array=$("$gpuq" submit --array "0-$((m - 1))" --queue team-a --gpus 1 -- sleep 600 | sed -n 's|^array/\([^ ]*\) submitted.*|\1|p')
wait_running team-a "$m" 0.5
t1=$(now)
# The cluster holds one batch at a time: gpuq's go before kubectl's come.
"$gpuq" cancel --force "$array" >/dev/null
while [[ $(k -n team-a get pods --no-headers 2>/dev/null | wc -l) -gt 0 ]]; do sleep 0.2; done
t1b=$(now)
k create -f "$work/many.yaml" >/dev/null
wait_running plain "$m" 0.5
t2=$(now)

python3 - "$work/lat" "$t0" "$t1" "$t1b" "$t2" "$m" "$n" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
t0, t1, t1b, t2 = (float(a) for a in sys.argv[2:6])
m, n = int(sys.argv[6]), int(sys.argv[7])
def med(xs): return statistics.median(xs)
g_cmd = med([r[1] - r[0] for r in rows]); g_run = med([r[2] - r[0] for r in rows])
k_cmd = med([r[4] - r[3] for r in rows]); k_run = med([r[5] - r[3] for r in rows])
g_all, k_all = t1 - t0, t2 - t1b
print(f"{'':44}{'gpuq submit':>14}{'kubectl create':>16}{'ratio':>8}")
print(f"{'command returns, median of %d (s)' % n:44}{g_cmd:14.3f}{k_cmd:16.3f}{g_cmd / k_cmd:8.2f}")
print(f"{'command to Running, median of %d (s)' % n:44}{g_run:14.3f}{k_run:16.3f}{g_run / k_run:8.2f}")
print(f"{'%d one-GPU jobs: command to all Running (s)' % m:44}{g_all:14.2f}{k_all:16.2f}{g_all / k_all:8.2f}")
print(f"{'  started per second':44}{m / g_all:14.1f}{m / k_all:16.1f}{(m / g_all) / (m / k_all):8.2f}")
PY
