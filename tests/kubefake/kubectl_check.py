#!/usr/bin/python3
"""kube-fake against the official Kubernetes Python client (python3-kubernetes).

Every call below must deserialize into the client's models without error: that is the point,
the fake's JSON shapes match what the client's generated models require. Prints one "ok:" line
per check and exits non-zero on the first failure.

Usage: kubectl_check.py KUBECONFIG
"""
import datetime
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "default"


def ok(what):
    print("ok: python " + what, flush=True)


def expect_status(code, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        if e.status != code:
            raise AssertionError("expected HTTP %d, got %d: %s" % (code, e.status, e.body))
        return e
    raise AssertionError("expected HTTP %d, the call succeeded" % code)


def gpu_pod(name, labels=None):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(
            scheduler_name="gpuq",
            restart_policy="Never",
            containers=[client.V1Container(
                name="main", image="busybox:1.36",
                resources=client.V1ResourceRequirements(limits={"nvidia.com/gpu": "1"}))]))


def bind(v1, name, node):
    body = client.V1Binding(metadata=client.V1ObjectMeta(name=name),
                            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node))
    try:
        v1.create_namespaced_pod_binding(name, NS, body)
    except ValueError as e:
        # The server answers a Status, which client 22 tries to read as a V1Binding.
        if "target" not in str(e):
            raise


def wait_for(what, fn, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def check_core(v1):
    nodes = v1.list_node()
    assert len(nodes.items) == 3, nodes.items
    assert nodes.items[0].status.allocatable["nvidia.com/gpu"] == "8"
    ok("list_node (3 nodes, V1NodeList)")
    created = v1.create_namespaced_pod(NS, gpu_pod("py-a", {"app": "py"}))
    assert created.metadata.uid and created.kind == "Pod" and created.status.phase == "Pending"
    ok("create_namespaced_pod")
    pods = v1.list_namespaced_pod(NS, label_selector="app=py")
    assert [p.metadata.name for p in pods.items] == ["py-a"]
    ok("list_namespaced_pod with a label selector")
    return pods.metadata.resource_version


def check_watch(v1, rv):
    def change():
        time.sleep(0.3)
        v1.create_namespaced_pod(NS, gpu_pod("py-b", {"app": "py"}))
        v1.patch_namespaced_pod("py-a", NS, {"metadata": {"labels": {"seen": "yes"}}})
    t = threading.Thread(target=change)
    t.start()
    seen = []
    for ev in watch.Watch().stream(v1.list_namespaced_pod, NS, resource_version=rv, timeout_seconds=2):
        assert isinstance(ev["object"], client.V1Pod), ev
        seen.append((ev["type"], ev["object"].metadata.name))
    t.join()
    assert ("ADDED", "py-b") in seen and ("MODIFIED", "py-a") in seen, seen
    ok("watch from a resourceVersion sees ADDED and MODIFIED (%d events)" % len(seen))


def check_binding(v1):
    bind(v1, "py-a", "node-00000")
    pod = v1.read_namespaced_pod("py-a", NS)
    assert pod.spec.node_name == "node-00000"
    ok("create_namespaced_pod_binding")
    e = expect_status(409, bind, v1, "py-a", "node-00001")
    assert "already assigned to node" in e.body, e.body
    ok("a second binding is 409 Conflict")
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="py-b"),
                            target=client.V1ObjectReference(kind="Node", name="node-00001"))
    try:
        v1.create_namespaced_binding(NS, body)
    except ValueError as e:
        if "target" not in str(e):
            raise
    assert v1.read_namespaced_pod("py-b", NS).spec.node_name == "node-00001"
    ok("create_namespaced_binding")
    for name in ("py-a", "py-b"):
        wait_for(name + " Running", lambda n=name: v1.read_namespaced_pod(n, NS).status.phase == "Running")
    pod = v1.read_namespaced_pod("py-a", NS)
    assert pod.status.container_statuses[0].ready and pod.metadata.annotations["sim.gpuq.io/devices"]
    ok("the kubelet runs bound pods (V1ContainerStatus, devices annotation)")


def check_budget_and_eviction(v1):
    policy = client.PolicyV1Api()
    pdb = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="py-pdb"),
        spec=client.V1PodDisruptionBudgetSpec(
            min_available=2, selector=client.V1LabelSelector(match_labels={"app": "py"})))
    made = policy.create_namespaced_pod_disruption_budget(NS, pdb)
    assert made.status.disruptions_allowed == 0 and made.metadata.generation == 1
    ok("create_namespaced_pod_disruption_budget")
    wait_for("budget status", lambda: policy.read_namespaced_pod_disruption_budget(
        "py-pdb", NS).status.current_healthy == 2)
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="py-a", namespace=NS),
                                 delete_options=client.V1DeleteOptions(grace_period_seconds=0))
    e = expect_status(429, v1.create_namespaced_pod_eviction, "py-a", NS, eviction)
    assert "DisruptionBudget" in e.body and "needs 2 healthy pods and has 2 currently" in e.body, e.body
    ok("an eviction the budget forbids is 429 with a DisruptionBudget cause")
    policy.patch_namespaced_pod_disruption_budget("py-pdb", NS, {"spec": {"minAvailable": 1}})
    wait_for("budget allows one", lambda: policy.read_namespaced_pod_disruption_budget(
        "py-pdb", NS).status.disruptions_allowed == 1)
    result = v1.create_namespaced_pod_eviction("py-a", NS, eviction)
    assert isinstance(result, client.V1Eviction)
    wait_for("py-a gone", lambda: "py-a" not in [p.metadata.name for p in v1.list_namespaced_pod(NS).items])
    ok("create_namespaced_pod_eviction (policy/v1) allowed by the budget deletes the pod")


def check_lease():
    coord = client.CoordinationV1Api()
    now = datetime.datetime.now(datetime.timezone.utc)
    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="gpuq"),
                           spec=client.V1LeaseSpec(holder_identity="gpuqd-a", lease_duration_seconds=15,
                                                   acquire_time=now, renew_time=now))
    made = coord.create_namespaced_lease(NS, lease)
    assert made.spec.holder_identity == "gpuqd-a" and made.spec.renew_time is not None
    ok("create_namespaced_lease")
    made.spec.holder_identity = "gpuqd-b"
    renewed = coord.replace_namespaced_lease("gpuq", NS, made)
    assert renewed.metadata.resource_version != made.metadata.resource_version
    made.spec.holder_identity = "gpuqd-c"  # still carries the old resourceVersion
    e = expect_status(409, coord.replace_namespaced_lease, "gpuq", NS, made)
    assert "the object has been modified" in e.body, e.body
    ok("replace_namespaced_lease with a stale resourceVersion is 409 Conflict")


def check_events(v1):
    ev = client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="py-b.1"),
        involved_object=client.V1ObjectReference(kind="Pod", name="py-b", namespace=NS),
        reason="Scheduled", message="assigned by gpuq", type="Normal")
    v1.create_namespaced_event(NS, ev)
    got = v1.list_namespaced_event(NS, field_selector="involvedObject.name=py-b")
    assert [e.reason for e in got.items] == ["Scheduled"], got.items
    ok("create_namespaced_event and list by involvedObject.name")


def main():
    config.load_kube_config(config_file=sys.argv[1])
    v1 = client.CoreV1Api()
    rv = check_core(v1)
    check_watch(v1, rv)
    check_binding(v1)
    check_budget_and_eviction(v1)
    check_lease()
    check_events(v1)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line saying what failed, then the trace
        print("FAIL: python client: %r" % (e,), flush=True)
        raise
