#!/usr/bin/env bash
# gpuq as a Kubernetes scheduler on this machine, without a cluster: installs what is missing,
# builds, starts a local control plane (tests/kubecluster: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler from Kubernetes' Go modules, and three simulated
# nodes of 8 GPUs), starts gpuqd as its secondary scheduler with deploy/kubernetes's RBAC and
# ConfigMap, creates the pods of examples/kubernetes/ and one that must wait for quota, and shows
# `kubectl get pods -o wide`, `kubectl describe` of the waiting pod, `kubectl logs` of a pod and
# `gpuq queues`. Both keep running in the background (state, logs and kubeconfigs under
# var/kube-demo/) until `scripts/kube-demo.sh stop`.
#
# The pods' containers run as local processes (the image is ignored), as the account nobody when
# this runs as root; `nvidia-smi -L` in them lists the simulated GPUs they were given.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DEMO=$ROOT/var/kube-demo

stop() {
  for name in gpuqd kube-cluster; do
    if [[ -f $DEMO/$name.pid ]]; then
      pid=$(cat "$DEMO/$name.pid")
      if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
      rm -f "$DEMO/$name.pid"
    fi
  done
}

if [[ ${1:-} == stop ]]; then
  stop
  echo "Stopped (what they wrote is in $DEMO)."
  exit 0
fi

scripts/deps.sh
scripts/go-check.sh
[[ -x /usr/local/go/bin/go ]] && export PATH="$PATH:/usr/local/go/bin"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUQ_WERROR=ON -DGPUQ_KUBE_CLUSTER=ON >/dev/null
echo "Building gpuqd, gpuq and kube-cluster (the first time, Kubernetes' components take minutes)..."
cmake --build build --target gpuqd gpuq kube_cluster

stop
rm -rf "$DEMO"
mkdir -p "$DEMO"
GPUQ=$ROOT/build/cli/gpuq
D=deploy/kubernetes

echo "Starting the control plane (3 nodes, 8 GPUs each)..."
nohup build/tests/kubecluster/kube-cluster up --dir "$DEMO/cluster" --nodes 3 --gpus-per-node 8 \
  --apply $D/namespace.yaml --apply $D/serviceaccount.yaml --apply $D/clusterrole.yaml \
  --apply $D/clusterrolebinding.yaml --apply $D/flowschema.yaml --apply $D/configmap.yaml \
  >"$DEMO/kube-cluster.out" 2>"$DEMO/kube-cluster.log" </dev/null &
echo $! >"$DEMO/kube-cluster.pid"
for _ in $(seq 1 600); do
  grep -q "^kube-cluster ready" "$DEMO/kube-cluster.out" 2>/dev/null && break
  if ! kill -0 "$(cat "$DEMO/kube-cluster.pid")" 2>/dev/null; then
    echo "kube-cluster did not start; the end of $DEMO/kube-cluster.log says why:" >&2
    tail -n 20 "$DEMO/kube-cluster.log" >&2
    exit 1
  fi
  sleep 0.2
done
export KUBECONFIG=$DEMO/cluster/admin.kubeconfig
kubectl wait --for=condition=Ready node --all --timeout=60s >/dev/null
# The not-ready taint a node is registered with goes once the node lifecycle controller saw it.
for _ in $(seq 1 100); do
  kubectl get nodes -o jsonpath='{.items[*].spec.taints}' | grep -q not-ready || break
  sleep 0.2
done

# gpuqd with the deployment's own configuration (its ConfigMap, as the API server holds it), as
# the service account deploy/ binds its roles to; where it listens, keeps its state and finds the
# reservation pods' script change for this machine.
kubectl -n gpuq-system get configmap gpuqd-config -o jsonpath='{.data.gpuqd\.yaml}' >"$DEMO/gpuqd.yaml"
RESERVE=$(mktemp -d /tmp/gpuq-reserve-XXXXXX)  # the script where the containers' account can run it
chmod 755 "$RESERVE"
install -m 755 $D/gpuq-reserve "$RESERVE/gpuq-reserve"
sed -i "s|reservationCommand: .*|reservationCommand: $RESERVE/gpuq-reserve|" "$DEMO/gpuqd.yaml"
KUBECONFIG=$DEMO/cluster/gpuqd.kubeconfig nohup build/daemon/gpuqd --config "$DEMO/gpuqd.yaml" \
  --state-file "$DEMO/gpuqd.db" --grpc 127.0.0.1:0 --http 127.0.0.1:0 \
  >"$DEMO/gpuqd.log" 2>&1 </dev/null &
echo $! >"$DEMO/gpuqd.pid"
export GPUQ_SERVER=unix:$DEMO/gpuqd.sock
for _ in $(seq 1 100); do
  "$GPUQ" queues >/dev/null 2>&1 && break
  if ! kill -0 "$(cat "$DEMO/gpuqd.pid")" 2>/dev/null; then
    echo "gpuqd did not start; the end of $DEMO/gpuqd.log says why:" >&2
    tail -n 20 "$DEMO/gpuqd.log" >&2
    exit 1
  fi
  sleep 0.2
done

echo "Creating the pods of examples/kubernetes/, and one of team-b that asks for more than its queue has left..."
kubectl apply -f examples/kubernetes/ >/dev/null
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: big-train
  labels: {gpuq.io/queue: team-b}
spec:
  schedulerName: gpuq
  restartPolicy: Never
  containers:
    - name: main
      image: nvidia/cuda:12.4.1-base-ubuntu22.04
      command: ["sh", "-c", "nvidia-smi -L && sleep 600"]
      resources: {limits: {nvidia.com/gpu: 8}}
EOF
kubectl wait --for=jsonpath='{.status.phase}'=Running pod/gpu-smoke --timeout=60s >/dev/null
sleep 6  # gpuqd says why a pod waits every statusInterval (5 s)

run() {
  echo
  echo "\$ $*"
  "$@"
}
run kubectl get pods -A -o wide
run kubectl describe pod big-train
run kubectl get pod big-train -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}'
run kubectl logs gpu-smoke
run "$GPUQ" queues

cat <<EOF

The control plane and gpuqd run in the background; to look around:
  export KUBECONFIG=$KUBECONFIG GPUQ_SERVER=$GPUQ_SERVER
  kubectl get pods -A -o wide          $GPUQ ls          $GPUQ explain <job>
  kubectl delete pod gpu-smoke         (team-b's big-train gets room once others end)
Logs: $DEMO (gpuqd.log, kube-cluster.log, cluster/*.log). Stop both: scripts/kube-demo.sh stop
EOF
