"""Queued provisioning on the stack the real `pulumi up` deployed: a flex-start slice group with queuedProvisioning has
no node until the real Kueue, through its ProvisioningRequest admission check on that group's flavor, asks for the
workload's slices; the harness's stand-in for GKE (tools/cluster/cloud.py QueuedProvisioner) serves the request
with whole pools of the plan, and only then does Kueue admit the workload and the scheduler place it. A request that
fails is retried by Kueue (its retryStrategy) with a new request.

What this tier cannot show: GKE's own provisioning (which capacity Dynamic Workload Scheduler finds, and when). The
stand-in serves a request at once, or fails it when a scenario asks; what Kueue, the JobSet controller and the
scheduler do with that answer is theirs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import config_with
from tests_e2e.helpers import is_true, nodes, pods, wait_running, workload

VERSION = "jax-0.7.2"
IMAGE = "example.com/trainer:1"
NS = "pathways"
GROUP = {"name": "main", "tpu": "v6e-16", "count": 2, "flexStart": True, "queuedProvisioning": True}
CONFIG = config_with(pathwaysVersion=VERSION, slices=[GROUP], workloads=[
    {"name": "train", "image": IMAGE, "slices": 1},
    {"name": "tune", "image": IMAGE, "slices": 1},
])
CHECK = "queued-main"
HOSTS = 4  # v6e-16: four ct6e-standard-4t VMs a slice


def requests(cluster) -> list[dict[str, Any]]:
    return cluster.get("provisioningrequests.autoscaling.x-k8s.io", "-n", NS)["items"]


def check_state(wl: dict[str, Any] | None) -> str | None:
    return next((c.get("state") for c in (wl or {}).get("status", {}).get("admissionChecks") or [] if c["name"] == CHECK), None)


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions") or [])


@pytest.fixture(scope="module")
def deployed(cluster, stacks):
    assert cluster.provisioner is not None
    # GKE has no capacity for the first request it sees: Kueue must retry it
    cluster.provisioner.fail(1)
    return stacks.use("capacity", CONFIG)


def test_a_queued_group_gets_nodes_only_through_the_requests_kueue_makes(cluster, deployed):
    for name in ("train", "tune"):
        wait_running(cluster, NS, name, 1 + HOSTS, timeout=300)
    tpu_nodes = {n: labels for n, labels in nodes(cluster).items() if labels.get("pathways/slice-group") == "main"}
    served = [pr for pr in requests(cluster) if condition_true(pr, "Provisioned")]
    # every TPU node of the group came with a request Kueue made: one slice (pool) a workload, nothing else
    assert len(served) == 2, [(pr["metadata"]["name"], pr.get("status")) for pr in requests(cluster)]
    held = cluster.provisioner.holding()
    assert sorted(p for pools in held.values() for p in pools) == ["tpu-main-0", "tpu-main-1"]
    assert len(tpu_nodes) == 2 * HOSTS
    for pr in served:
        spec = pr["spec"]
        assert spec["provisioningClassName"] == "queued-provisioning.gke.io"
        # managedResources google.com/tpu: the request names the TPU workers only, never the CPU head
        assert sum(ps["count"] for ps in spec["podSets"]) == HOSTS, spec["podSets"]
        for ps in spec["podSets"]:
            template = cluster.get("podtemplate", "-n", NS, ps["podTemplateRef"]["name"])["template"]["spec"]
            assert all("google.com/tpu" in (c.get("resources", {}).get("requests") or {}) for c in template["containers"]
                       if c["name"] == "pathways-worker"), template["containers"]
    for name in ("train", "tune"):
        wl = workload(cluster, NS, name)
        assert is_true(wl, "Admitted") and check_state(wl) == "Ready", (wl or {}).get("status")
        ps = pods(cluster, NS, name)
        workers = [p for p in ps if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] != "pathways-head"]
        heads = [p for p in ps if p not in workers]
        # the workers run on the pool provisioned for this workload's request; the head on the head pool, asked of no one
        prs = {pr["metadata"]["name"]: pr for pr in served
               if any(o.get("kind") == "Workload" and o["name"] == wl["metadata"]["name"] for o in pr["metadata"].get("ownerReferences") or [])}
        assert len(prs) == 1, sorted(prs)
        (pr_name,) = prs
        pools = held[f"{NS}/{pr_name}"]
        assert {tpu_nodes[p["spec"]["nodeName"]]["cloud.google.com/gke-nodepool"] for p in workers} == set(pools)
        assert all(p["metadata"]["annotations"].get("autoscaling.x-k8s.io/consume-provisioning-request") == pr_name for p in workers), \
            [p["metadata"].get("annotations") for p in workers]
        assert all(p["spec"]["nodeName"] not in tpu_nodes for p in heads)


def test_a_failed_request_is_retried_by_kueue_with_a_new_one(cluster, deployed):
    # the stand-in failed the first request Kueue made (<workload>-queued-main-1); Kueue evicted the workload, let
    # its retryStrategy's backoff pass, reserved the quota again and asked anew (attempt 2), deleting the failed one
    first = cluster.provisioner.log[0]
    assert first.endswith(f"-{CHECK}-1: Failed (as asked)"), cluster.provisioner.log
    failed = first.split(": ", 1)[0].removeprefix(f"provisioning request {NS}/")
    owner = failed.removesuffix(f"-{CHECK}-1")
    names = {pr["metadata"]["name"]: pr for pr in requests(cluster)}
    assert failed not in names and condition_true(names[f"{owner}-{CHECK}-2"], "Provisioned"), sorted(names)
    wl = next(w for w in cluster.get("workloads.kueue.x-k8s.io", "-n", NS)["items"] if w["metadata"]["name"] == owner)
    assert is_true(wl, "Admitted") and check_state(wl) == "Ready", wl["status"]
    events = cluster.get("events", "-n", NS, "--field-selector", f"involvedObject.kind=Workload,involvedObject.name={owner}")["items"]
    evicted = [e for e in events if e["reason"] == "EvictedDueToAdmissionCheck"]
    assert evicted and CHECK in evicted[0]["message"], sorted({e["reason"] for e in events})
