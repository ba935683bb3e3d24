"""Kueue cannot stall the cluster (issue #72.6), on the real engines: the dev stack's Kueue (two replicas, its
webhooks scoped to the namespaces the stack labels) is scaled down as an outage would take it, and the real API
server, controller-manager and Kueue say what still works.

- Kueue at 0: a Deployment in a namespace of nobody's, and the JobSet controller's own Deployment, are admitted (the
  race a fresh install had, "service kueue-webhook-service not found", cannot happen: no webhook of Kueue's sees
  those namespaces); a JobSet in the stack's namespace is refused, never run unadmitted; a namespace's deletion
  waits, as Kubernetes' namespace controller waits for every aggregated API (Kueue's visibility API among them), and
  finishes once Kueue answers again, with nothing done by hand.
- One of two replicas down (a drain, an upgrade, a crash): admission and namespace deletion go on."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests_e2e.test_stacks import example_stack_config
from tools.cluster.local import LocalCluster

KUEUE = ("-n", "kueue-system")
DEPLOYMENT = "deployment/kueue-controller-manager"
VISIBILITY = "v1beta2.visibility.kueue.x-k8s.io"


def scale(cluster: LocalCluster, replicas: int) -> None:
    cluster.kubectl("scale", DEPLOYMENT, *KUEUE, f"--replicas={replicas}")

    def settled() -> bool:
        pods = [p for p in cluster.get("pods", *KUEUE, "-l", "control-plane=controller-manager")["items"]
                if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])]
        return len(pods) == replicas and len(ready) == replicas
    cluster.wait_for(f"Kueue at {replicas} ready replica(s)", settled, timeout=240, interval=1)


def available(cluster: LocalCluster, apiservice: str) -> bool:
    status = cluster.get("apiservice", apiservice).get("status") or {}
    return any(c["type"] == "Available" and c["status"] == "True" for c in status.get("conditions") or [])


def deployment(name: str, namespace: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "securityContext": {
                    "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True, "runAsUser": 65532,
                    "seccompProfile": {"type": "RuntimeDefault"}}}]}}}}


def jobset(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {
        "name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "notebook"}},
        "spec": {"replicatedJobs": [{"name": "r", "replicas": 1, "template": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}}]}}


def delete_namespace(cluster: LocalCluster, name: str) -> None:
    cluster.kubectl("delete", "namespace", name, "--wait=false")


def gone(cluster: LocalCluster, name: str) -> bool:
    return not any(n["metadata"]["name"] == name for n in cluster.get("namespaces")["items"])


def deletion_condition(cluster: LocalCluster, name: str) -> dict[str, Any] | None:
    ns = next((n for n in cluster.get("namespaces")["items"] if n["metadata"]["name"] == name), None)
    return next((c for c in ((ns or {}).get("status") or {}).get("conditions") or []
                 if c["type"] == "NamespaceDeletionDiscoveryFailure" and c["status"] == "True"), None)


@pytest.fixture(scope="module")
def dev(cluster: LocalCluster, stacks):
    stacks.use("dev", example_stack_config("dev"))
    yield
    scale(cluster, 2)  # as the stack declares it, whatever a scenario left
    for name in ("outside", "outside-2"):
        cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=180s", check=False)


def test_kueue_at_zero_stops_only_its_own_namespaces_and_namespace_deletion_resumes(cluster, dev):
    assert cluster.get("deployment", "kueue-controller-manager", *KUEUE)["spec"]["replicas"] == 2
    cluster.kubectl("create", "namespace", "outside")
    scale(cluster, 0)
    cluster.wait_for(f"{VISIBILITY} unavailable", lambda: not available(cluster, VISIBILITY), timeout=120, interval=1)
    # a Deployment anywhere else, the controllers' own namespaces included, is admitted with Kueue down
    for name, namespace in (("web", "outside"), ("probe", "jobset-system")):
        proc = cluster.apply([deployment(name, namespace)], check=False)
        assert proc.returncode == 0 and "kueue" not in proc.stderr, proc.stderr
    cluster.kubectl("delete", "deployment", "probe", "-n", "jobset-system")
    # the stack's own namespace fails closed: no run starts unadmitted
    proc = cluster.apply([jobset("while-down", "pathways")], check=False)
    assert proc.returncode != 0 and "kb.io" in proc.stderr and "kueue-webhook-service" in proc.stderr, proc.stderr
    # a namespace's deletion waits for every aggregated API (Kubernetes' namespace controller): it says which
    t0 = time.monotonic()
    delete_namespace(cluster, "outside")
    waiting = cluster.wait_for("outside's deletion to wait on discovery", lambda: deletion_condition(cluster, "outside"),
                               timeout=120, interval=1)
    assert "visibility.kueue.x-k8s.io" in waiting["message"], waiting
    assert not gone(cluster, "outside")
    # Kueue back: the namespace goes, with nothing done by hand (the controller retries at least every minute)
    scale(cluster, 2)
    cluster.wait_for("outside deleted once Kueue answers", lambda: gone(cluster, "outside"), timeout=180, interval=2)
    print(f"namespace deletion with Kueue at 0, resumed: {time.monotonic() - t0:.0f} s")


def test_one_replica_down_keeps_admission_and_namespace_deletion(cluster, dev):
    scale(cluster, 1)
    cluster.wait_for(f"{VISIBILITY} available on one replica", lambda: available(cluster, VISIBILITY), timeout=120, interval=1)
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=__import__("yaml").safe_dump(jobset("one-left", "pathways")),
                           check=False)
    assert "failed calling webhook" not in proc.stderr, proc.stderr
    cluster.kubectl("create", "namespace", "outside-2")
    cluster.apply([deployment("web", "outside-2")])
    t0 = time.monotonic()
    delete_namespace(cluster, "outside-2")
    cluster.wait_for("outside-2 deleted", lambda: gone(cluster, "outside-2"), timeout=120, interval=1)
    assert deletion_condition(cluster, "outside-2") is None
    print(f"namespace deletion with one Kueue replica: {time.monotonic() - t0:.0f} s")
    scale(cluster, 2)
