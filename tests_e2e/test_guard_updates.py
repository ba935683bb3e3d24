"""Issue #36.4 on the real API server: the workload-template guard (pathways-workload-templates) judges who
changes a Job's or StatefulSet's pod template, not only who creates it. A user with `edit` in the workload
namespace (RBAC, not system:masters) creates an ordinary StatefulSet and a suspended Job there, then edits
each onto the Pathways nodes: refused with the guard's message. An update that leaves the template alone
passes. The node guard refuses an update that makes a pending pod tolerate the TPU taint.

Kubernetes lets these edits through its own validation: a StatefulSet's template is mutable, and a suspended
Job that never ran may change its nodeSelector and tolerations ("mutable scheduling directives", GA in 1.27);
its hostNetwork is immutable, so the Job is only edited by toleration and node selector."""

from __future__ import annotations

import json

import pytest

from components.manifests.guardrails import NODE_GUARD, TEMPLATE_GUARD, TEMPLATE_MESSAGE
from tests_e2e.test_stacks import example_stack_config
from tools.cluster.local import LocalCluster

NAMESPACE = "pathways"  # the dev stack's workload namespace (stacks/Pulumi.dev.yaml keeps the default)
EDITOR = "erin@example.com"
PAUSE = "registry.k8s.io/pause:3.10"
TPU_TOLERATION = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
TPU_SELECTOR = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}


def statefulset(name: str) -> dict:
    # replicas 0: the object is what is judged; no pod needs to run
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"replicas": 0, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": PAUSE}]}}}}


def suspended_job(name: str) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"suspend": True, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": PAUSE}]}}}}


@pytest.fixture(scope="module")
def dev(cluster: LocalCluster, stacks):
    stacks.use("dev", example_stack_config("dev"))
    yield
    for kind, name in (("statefulset", "edited-sts"), ("job", "edited-job"), ("pod", "pending"), ("rolebinding", "erin-edit")):
        cluster.kubectl("delete", kind, name, "-n", NAMESPACE, "--ignore-not-found", "--wait=false", check=False)


@pytest.fixture(scope="module")
def editor(cluster: LocalCluster, dev):
    """A namespace editor: the built-in `edit` ClusterRole bound in the workload namespace, nothing cluster-wide."""
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "erin-edit", "namespace": NAMESPACE},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": EDITOR}]}
    cluster.apply([binding])
    kubeconfig = cluster.user_kubeconfig(EDITOR)
    cluster.wait_for("erin may create StatefulSets", lambda: cluster.kubectl(
        "auth", "can-i", "create", "statefulsets.apps", "-n", NAMESPACE, kubeconfig=kubeconfig, check=False).stdout.strip() == "yes")
    return kubeconfig


def patch(cluster: LocalCluster, kubeconfig, kind: str, name: str, body: dict):
    return cluster.kubectl("patch", kind, name, "-n", NAMESPACE, "--type", "merge", "-p", json.dumps(body), kubeconfig=kubeconfig, check=False)


def template_patch(spec: dict) -> dict:
    return {"spec": {"template": {"spec": spec}}}


@pytest.fixture(scope="module")
def edited_sts(cluster, editor):
    created = cluster.apply([statefulset("edited-sts")], server_side=False, kubeconfig=editor, check=False)
    assert created.returncode == 0, created.stderr  # an ordinary StatefulSet: nothing to guard
    return "edited-sts"


@pytest.fixture(scope="module")
def edited_job(cluster, editor):
    created = cluster.apply([suspended_job("edited-job")], server_side=False, kubeconfig=editor, check=False)
    assert created.returncode == 0, created.stderr
    return "edited-job"


@pytest.mark.parametrize("change", [{"tolerations": TPU_TOLERATION}, {"nodeSelector": TPU_SELECTOR}, {"hostNetwork": True}],
                         ids=["toleration", "node-selector", "host-network"])
def test_an_editor_cannot_update_a_statefulset_onto_the_pathways_nodes(cluster, editor, edited_sts, change):
    proc = patch(cluster, editor, "statefulset", edited_sts, template_patch(change))
    assert proc.returncode != 0 and TEMPLATE_GUARD in proc.stderr and TEMPLATE_MESSAGE in proc.stderr, proc.stderr
    after = cluster.get("statefulset", edited_sts, "-n", NAMESPACE)["spec"]["template"]["spec"]
    assert "tolerations" not in after and "nodeSelector" not in after and not after.get("hostNetwork")


@pytest.mark.parametrize("change", [{"tolerations": TPU_TOLERATION}, {"nodeSelector": TPU_SELECTOR}],
                         ids=["toleration", "node-selector"])
def test_an_editor_cannot_update_a_suspended_job_onto_the_pathways_nodes(cluster, editor, edited_job, change):
    proc = patch(cluster, editor, "job", edited_job, template_patch(change))
    assert proc.returncode != 0 and TEMPLATE_GUARD in proc.stderr and TEMPLATE_MESSAGE in proc.stderr, proc.stderr


def test_an_update_that_leaves_the_template_alone_passes(cluster, editor, edited_sts, edited_job):
    for kind, name in (("statefulset", edited_sts), ("job", edited_job)):
        proc = cluster.kubectl("label", kind, name, "-n", NAMESPACE, "team=a", "--overwrite", kubeconfig=editor, check=False)
        assert proc.returncode == 0, proc.stderr
    scaled = patch(cluster, editor, "statefulset", edited_sts, {"spec": {"replicas": 0, "minReadySeconds": 5}})
    assert scaled.returncode == 0, scaled.stderr


def test_an_editor_cannot_make_a_pending_pod_tolerate_the_tpu_taint(cluster, editor):
    # Kubernetes lets anyone who may update a pod add tolerations; a pod that selects the TPU nodes but does not
    # tolerate their taint stays Pending, until such an update would let the scheduler place it there
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": NAMESPACE},
           "spec": {"nodeSelector": TPU_SELECTOR, "containers": [{"name": "c", "image": PAUSE}]}}
    created = cluster.apply([pod], server_side=False, kubeconfig=editor, check=False)
    assert created.returncode == 0, created.stderr
    proc = patch(cluster, editor, "pod", "pending", {"spec": {"tolerations": TPU_TOLERATION}})
    assert proc.returncode != 0 and NODE_GUARD in proc.stderr and "may not be changed to tolerate" in proc.stderr, proc.stderr
