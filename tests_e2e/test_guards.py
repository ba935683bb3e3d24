"""The admission guards as the real API server evaluates them (ValidatingAdmissionPolicy CEL, Pod
Security admission), against a user who may create anything (system:masters passes RBAC, not admission)."""

from __future__ import annotations

import pytest

from tests_e2e.test_stacks import example_stack_config
from tools.cluster.local import LocalCluster

TPU_TOLERATION = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
POD_MESSAGE = "only namespace(s) pathways may run pods on the Pathways head and TPU nodes or on the host network"


def pod(name: str, namespace: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], **spec}}


def job(name: str, namespace: str, **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}], **spec}}}}


@pytest.fixture(scope="module")
def alice(cluster: LocalCluster):
    return cluster.user_kubeconfig("alice@example.com", ("system:masters",))


def create(cluster: LocalCluster, kubeconfig, obj: dict):
    return cluster.apply([obj], server_side=False, kubeconfig=kubeconfig, check=False)


def tpu_node(cluster: LocalCluster) -> str:
    return next(n["metadata"]["name"] for n in cluster.get("nodes")["items"] if "cloud.google.com/gke-tpu-accelerator" in n["metadata"]["labels"])


@pytest.fixture(scope="module")
def dev(cluster, stacks):
    stacks.use("dev", example_stack_config("dev"))
    cluster.kubectl("create", "namespace", "team-a")
    yield
    cluster.kubectl("delete", "namespace", "team-a", "--wait=true", check=False)


@pytest.mark.parametrize("name,namespace,spec,message", [
    ("tolerates-tpu", "team-a", {"tolerations": TPU_TOLERATION}, POD_MESSAGE),
    ("tolerates-all", "team-a", {"tolerations": [{"operator": "Exists"}]}, POD_MESSAGE),
    ("host-network", "team-a", {"hostNetwork": True}, POD_MESSAGE),
    ("bare-in-pathways", "pathways", {"tolerations": TPU_TOLERATION, "hostNetwork": True}, "come from Pathways Jobs only"),
])
def test_pods_that_would_act_as_the_pathways_node_identity_are_refused(cluster, dev, alice, name, namespace, spec, message):
    proc = create(cluster, alice, pod(name, namespace, **spec))
    assert proc.returncode != 0 and "pathways-nodes-reserved" in proc.stderr and message in proc.stderr, proc.stderr


def test_a_pod_bound_to_a_tpu_node_by_name_is_refused(cluster, dev, alice):
    # spec.nodeName skips the scheduler and the kubelet checks only NoExecute taints: without the guard
    # this pod would run on a TPU node, NoSchedule taint or not
    proc = create(cluster, alice, pod("bound", "team-a", nodeName=tpu_node(cluster)))
    assert proc.returncode != 0 and "a pod may not be created bound to a node" in proc.stderr, proc.stderr


def test_ordinary_pods_elsewhere_are_admitted(cluster, dev, alice):
    assert create(cluster, alice, pod("plain", "team-a")).returncode == 0


@pytest.mark.parametrize("name,spec,message", [
    ("onto-tpus", {"tolerations": TPU_TOLERATION}, "only the JobSet controller (Jobs) and the LeaderWorkerSet controller (StatefulSets) create workloads"),
    ("privileged", {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "securityContext": {"privileged": True}}]},
     "no privileged container and no added capability"),
    ("host-path", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, "no hostPID, hostIPC or hostPath volume"),
])
def test_jobs_in_the_pathways_namespace_are_limited(cluster, dev, alice, name, spec, message):
    proc = create(cluster, alice, job(name, "pathways", **spec))
    assert proc.returncode != 0 and "pathways-workload-templates" in proc.stderr and message in proc.stderr, proc.stderr


def test_pod_security_keeps_the_controllers_namespace_restricted(cluster, dev, alice):
    proc = create(cluster, alice, pod("root", "jobset-system", hostNetwork=True))
    assert proc.returncode != 0 and "violates PodSecurity \"restricted:latest\"" in proc.stderr, proc.stderr


def test_the_api_server_type_checks_every_guard_expression_clean(cluster, dev):
    # the API server type-checks CEL against the real schemas (cel-python in the unit tier cannot)
    for policy in cluster.get("validatingadmissionpolicies")["items"]:
        if policy["metadata"]["name"].startswith("pathways-"):
            status = cluster.wait_for(f"{policy['metadata']['name']} type-checked",
                                      lambda p=policy: cluster.get("validatingadmissionpolicy", p["metadata"]["name"]).get("status"))
            assert status.get("typeChecking", {}).get("expressionWarnings", []) == [], status
