"""A capacity ladder with queued provisioning on the stack the real `pulumi up` deployed: group `res` (a reservation on
GKE; plain nodes here) climbs to `flex` (flex-start with queued provisioning) and then `spot`. The real Kueue picks each
workload's rung in the ClusterQueue's flavor order; on `flex` it admits a workload only once the ProvisioningRequest it
made (its admission check on that flavor alone) is provisioned, and the pools of that rung have no node before.
The harness's stand-in for GKE (tools/cluster/cloud.py QueuedProvisioner) serves a request with whole pools of the
plan, or fails it when a scenario asks; Kueue retries a failed one with a new request.

What this tier cannot show: GKE's own provisioning (which capacity Dynamic Workload Scheduler finds, and when), and a
reservation's own capacity (the tier's `res` nodes are the plan's, as for on-demand). What Kueue, the JobSet controller
and the scheduler do with the answers is theirs."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.conftest import config_with
from tests_e2e.helpers import is_true, nodes, pods, wait_running, workload

VERSION = "jax-0.9.0"
IMAGE = "example.com/trainer:1"
NS = "pathways"
SLICES = [
    {"name": "res", "tpu": "v6e-16", "count": 1, "reservation": "e2e-reservation", "ladder": ["flex", "spot"]},
    {"name": "flex", "tpu": "v6e-16", "count": 2, "flexStart": True, "queuedProvisioning": True},
    {"name": "spot", "tpu": "v6e-16", "count": 1, "spot": True},
]
RUNS = [{"name": f"run-{i}", "image": IMAGE, "slices": 1, "sliceGroup": "res"} for i in range(4)]
# four head nodes from the start: the fourth run's head needs one, and `pulumi up` of the changed stack makes no node here
CONFIG = config_with(pathwaysVersion=VERSION, slices=SLICES, workloads=RUNS[:3], headPool={"nodeCount": 4})
CHECK = "queued-flex"
HOSTS = 4  # v6e-16: four ct6e-standard-4t VMs a slice
GROUP = "pathways/slice-group"


def requests(cluster) -> list[dict[str, Any]]:
    return cluster.get("provisioningrequests.autoscaling.x-k8s.io", "-n", NS)["items"]


def check_state(wl: dict[str, Any] | None) -> str | None:
    return next((c.get("state") for c in (wl or {}).get("status", {}).get("admissionChecks") or [] if c["name"] == CHECK), None)


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    return any(c["type"] == kind and c["status"] == "True" for c in obj.get("status", {}).get("conditions") or [])


def rung(wl: dict[str, Any]) -> str:
    """The flavor Kueue admitted the workload's TPU workers on."""
    flavors = {f for ps in wl["status"]["admission"]["podSetAssignments"] for r, f in (ps.get("flavors") or {}).items()
               if r == "google.com/tpu"}
    (flavor,) = flavors
    return flavor


def owned_by(pr: dict[str, Any], wl: dict[str, Any]) -> bool:
    return any(o.get("kind") == "Workload" and o["name"] == wl["metadata"]["name"] for o in pr["metadata"].get("ownerReferences") or [])


def admitted(cluster, names: list[str]) -> dict[str, dict[str, Any]]:
    for name in names:
        wait_running(cluster, NS, name, 1 + HOSTS, timeout=300)
    out = {}
    for name in names:
        wl = workload(cluster, NS, name)
        assert wl is not None and is_true(wl, "Admitted"), (wl or {}).get("status")
        out[name] = wl
    return out


def placed_on_its_rung(cluster, name: str, wl: dict[str, Any]) -> None:
    labels = nodes(cluster)
    workers = [p for p in pods(cluster, NS, name) if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] != "pathways-head"]
    assert len(workers) == HOSTS
    assert {labels[p["spec"]["nodeName"]][GROUP] for p in workers} == {rung(wl).removeprefix("tpu-")}


@pytest.fixture(scope="module")
def deployed(cluster, stacks):
    assert cluster.provisioner is not None
    # GKE has no capacity for the first request it sees: Kueue must retry it
    cluster.provisioner.fail(1)
    return stacks.use("capacity", CONFIG)


def test_a_ladder_fills_its_rungs_in_order_and_gke_fills_the_queued_rung_only_on_request(cluster, deployed):
    wls = admitted(cluster, [r["name"] for r in RUNS[:3]])
    # Kueue's flavor order is the ladder's: one slice on res, then flex's two; spot, the last rung, stays unused
    assert Counter(rung(wl) for wl in wls.values()) == {"tpu-res": 1, "tpu-flex": 2}, {n: rung(w) for n, w in wls.items()}
    served = [pr for pr in requests(cluster) if condition_true(pr, "Provisioned")]
    held = cluster.provisioner.holding()
    # every node of the queued rung came with a request Kueue made, one slice (pool) a workload
    assert sorted(p for pools in held.values() for p in pools) == ["tpu-flex-0", "tpu-flex-1"]
    assert sum(1 for labels in nodes(cluster).values() if labels.get(GROUP) == "flex") == 2 * HOSTS
    for name, wl in wls.items():
        placed_on_its_rung(cluster, name, wl)
        mine = [pr for pr in served if owned_by(pr, wl)]
        if rung(wl) != "tpu-flex":
            # the check is required on flex's flavor alone: no request, no check, for the other rungs
            assert not mine and check_state(wl) is None, (name, wl["status"].get("admissionChecks"))
            continue
        (pr,) = mine
        assert check_state(wl) == "Ready"
        spec = pr["spec"]
        assert spec["provisioningClassName"] == "queued-provisioning.gke.io"
        # managedResources google.com/tpu: the request names the TPU workers only, never the CPU head
        assert sum(ps["count"] for ps in spec["podSets"]) == HOSTS, spec["podSets"]
        workers = [p for p in pods(cluster, NS, name) if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] != "pathways-head"]
        assert {nodes(cluster)[p["spec"]["nodeName"]]["cloud.google.com/gke-nodepool"] for p in workers} == set(held[f"{NS}/{pr['metadata']['name']}"])
        assert all(p["metadata"]["annotations"].get("autoscaling.x-k8s.io/consume-provisioning-request") == pr["metadata"]["name"]
                   for p in workers), [p["metadata"].get("annotations") for p in workers]


def test_a_failed_request_is_retried_by_kueue_on_the_same_rung(cluster, deployed):
    # the stand-in failed the first request Kueue made (<workload>-queued-flex-1): Kueue evicted the workload, let its
    # retryStrategy's backoff pass, reserved quota again and asked anew (attempt 2), deleting the failed request. It
    # does not move down to spot: Kueue v0.19.2 keeps no memory of the flavor whose check failed (docs/capacity.md).
    admitted(cluster, [r["name"] for r in RUNS[:3]])
    failures = [line for line in cluster.provisioner.log if line.endswith(": Failed (as asked)")]
    assert len(failures) == 1 and failures[0].endswith(f"-{CHECK}-1: Failed (as asked)"), cluster.provisioner.log
    first = failures[0]
    failed = first.split(": ", 1)[0].removeprefix(f"provisioning request {NS}/")
    owner = failed.removesuffix(f"-{CHECK}-1")
    names = {pr["metadata"]["name"]: pr for pr in requests(cluster)}
    assert failed not in names and condition_true(names[f"{owner}-{CHECK}-2"], "Provisioned"), sorted(names)
    wl = next(w for w in cluster.get("workloads.kueue.x-k8s.io", "-n", NS)["items"] if w["metadata"]["name"] == owner)
    assert is_true(wl, "Admitted") and check_state(wl) == "Ready" and rung(wl) == "tpu-flex", wl["status"]
    events = cluster.get("events", "-n", NS, "--field-selector", f"involvedObject.kind=Workload,involvedObject.name={owner}")["items"]
    evicted = [e for e in events if e["reason"] == "EvictedDueToAdmissionCheck"]
    assert evicted and CHECK in evicted[0]["message"], sorted({e["reason"] for e in events})


def test_a_run_that_finds_the_upper_rungs_full_runs_on_the_last(cluster, stacks, deployed):
    stacks.update({**CONFIG, "pathways:workloads": RUNS})
    wls = admitted(cluster, [r["name"] for r in RUNS])
    assert rung(wls["run-3"]) == "tpu-spot" and check_state(wls["run-3"]) is None, wls["run-3"]["status"]
    placed_on_its_rung(cluster, "run-3", wls["run-3"])
    assert not [pr for pr in requests(cluster) if owned_by(pr, wls["run-3"])]
