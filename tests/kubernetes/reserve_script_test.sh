#!/bin/sh
# deploy/kubernetes/gpuq-reserve against the fake API server: it annotates its own pod with the
# GPU in NVIDIA_VISIBLE_DEVICES, with the service account's CA and token, then holds.
# Usage: reserve_script_test.sh KUBE_FAKE SCRIPT
set -eu
fake="$1"; script="$2"
dir=$(mktemp -d); trap 'kill $fake_pid $hold_pid 2>/dev/null || true; rm -rf "$dir"' EXIT
"$fake" --kubeconfig "$dir/kc" > "$dir/fake.out" 2>&1 & fake_pid=$!
for i in $(seq 100); do grep -q listening "$dir/fake.out" 2>/dev/null && break; sleep 0.05; done
url=$(sed -n 's/.*listening \([^ ]*\).*/\1/p' "$dir/fake.out")
mkdir "$dir/sa"
# The kubeconfig has the CA as base64 data and the token.
sed -n 's/.*certificate-authority-data: *//p' "$dir/kc" | base64 -d > "$dir/sa/ca.crt"
sed -n 's/.*token: *//p' "$dir/kc" > "$dir/sa/token"
curl -sS --fail --cacert "$dir/sa/ca.crt" -H "Authorization: Bearer $(cat "$dir/sa/token")" \
  -H 'Content-Type: application/json' -X POST "$url/api/v1/namespaces/default/pods" \
  --data '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"r"},"spec":{"containers":[{"name":"c","image":"x"}]}}' > /dev/null
NVIDIA_VISIBLE_DEVICES=GPU-3 POD_NAME=r POD_NAMESPACE=default GPUQ_SERVICE_ACCOUNT_DIR="$dir/sa" \
  GPUQ_API_SERVER="$url" GPUQ_DEVICE_ANNOTATION=gpuq.io/gpu-device sh "$script" > "$dir/hold.out" 2>&1 & hold_pid=$!
for i in $(seq 100); do grep -q holding "$dir/hold.out" 2>/dev/null && break; sleep 0.05; done
got=$(curl -sS --fail --cacert "$dir/sa/ca.crt" -H "Authorization: Bearer $(cat "$dir/sa/token")" \
  "$url/api/v1/namespaces/default/pods/r")
echo "$got" | grep -q '"gpuq.io/gpu-device":"GPU-3"' || { echo "no annotation: $got"; cat "$dir/hold.out"; exit 1; }
kill -0 $hold_pid  # still holding
# Without NVIDIA_VISIBLE_DEVICES it refuses to start, saying why.
if NVIDIA_VISIBLE_DEVICES= POD_NAME=r POD_NAMESPACE=default sh "$script" 2> "$dir/err"; then exit 1; fi
grep -q "NVIDIA_VISIBLE_DEVICES" "$dir/err"
echo "ok"
