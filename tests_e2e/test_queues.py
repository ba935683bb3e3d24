"""Kueue with the real controller: suspension holds (Kueue un-suspends what it admits, so the stack holds
the workload's LocalQueue instead), a higher priority preempts a lower one, and a stack with more slice
groups than one ClusterQueue resource group holds gets queues Kueue accepts."""

from __future__ import annotations

import time

from tests.conftest import config_with
from tests_e2e.helpers import condition, is_true, over_the_ceiling_is_never_admitted, pods, resolved, wait_running, workload

VERSION = "jax-0.9.0"


def batch(name: str, **extra) -> dict:
    return {"name": name, "image": "example.com/trainer:1", **extra}


def suspended(cluster, name: str) -> bool:
    return cluster.get("jobset", "-n", "pathways", name)["spec"].get("suspend") is True


def test_a_suspended_workload_stays_suspended_and_resumes(cluster, stacks):
    running = config_with(pathwaysVersion=VERSION, workloads=[batch("train", slices=1)])
    held = config_with(pathwaysVersion=VERSION, workloads=[batch("train", slices=1, state="suspended")])
    stacks.use("queues", running)
    wait_running(cluster, "pathways", "train", 1 + 4)
    stack = resolved(running, "queues")  # #76.1: its own queue's ceiling is the real Kueue's
    over_the_ceiling_is_never_admitted(cluster, stack, next(w for w in stack.workloads if w.name == "train"))
    # suspend (a `pulumi up` of state: suspended): the LocalQueue's HoldAndDrain evicts the admitted Workload;
    # Kueue suspends the JobSet
    stacks.update(held)
    cluster.wait_for("train evicted and suspended", lambda: suspended(cluster, "train") and not pods(cluster, "pathways", "train"))
    time.sleep(5)  # and it stays that way (Kueue would un-suspend an admitted JobSet)
    assert suspended(cluster, "train") and not is_true(workload(cluster, "pathways", "train"), "Admitted")
    assert not pods(cluster, "pathways", "train")
    # resume
    stacks.update(running)
    wait_running(cluster, "pathways", "train", 1 + 4)
    assert not suspended(cluster, "train")


def test_a_workload_created_suspended_never_starts(cluster, stacks):
    stacks.use("queues", config_with(pathwaysVersion=VERSION, workloads=[batch("later", state="suspended")]))
    cluster.wait_for("the JobSet exists", lambda: cluster.kubectl("get", "jobset", "-n", "pathways", "later", check=False).returncode == 0)
    time.sleep(8)
    assert suspended(cluster, "later") and not pods(cluster, "pathways", "later")
    assert not is_true(workload(cluster, "pathways", "later"), "Admitted")


def test_a_higher_priority_takes_the_slices_of_a_lower_one(cluster, stacks):
    low = batch("explore", slices=2, priority="experiment")
    high = batch("pretrain", slices=2)
    stacks.use("queues", config_with(pathwaysVersion=VERSION, headPool={"nodeCount": 2}, workloads=[low]))
    wait_running(cluster, "pathways", "explore", 1 + 2 * 4)
    stacks.update(config_with(pathwaysVersion=VERSION, headPool={"nodeCount": 2}, workloads=[low, high]))
    wait_running(cluster, "pathways", "pretrain", 1 + 2 * 4)
    cluster.wait_for("explore preempted", lambda: suspended(cluster, "explore") and not pods(cluster, "pathways", "explore"))
    evicted = condition(workload(cluster, "pathways", "explore"), "Evicted") or condition(workload(cluster, "pathways", "explore"), "Preempted")
    assert evicted and evicted["status"] == "True", workload(cluster, "pathways", "explore")


def test_more_slice_groups_than_one_resource_group_holds(cluster, stacks):
    # 64 groups + the head flavor would be 65 flavors in one resource group: the v1beta2 CRD allows 64
    groups = [{"name": f"g{i}", "tpu": "v6e-4"} for i in range(64)]
    stacks.use("groups", config_with(slices=groups, pathwaysVersion=VERSION, headPool={"nodeCount": 2},
                                     workloads=[batch("first", sliceGroup="g0"), batch("last", sliceGroup="g63")]))
    # Kueue judges both ClusterQueues valid (Active: their flavors exist, the resource groups within its limits)
    active = cluster.wait_for("both ClusterQueues active", lambda: (lambda qs: qs if len(qs) == 2 and all(is_true(q, "Active") for q in qs) else None)(
        cluster.get("clusterqueues")["items"]))
    assert sorted(q["metadata"]["name"] for q in active) == ["pathways-0", "pathways-1"]
    for name, queue in (("first", "pathways-0"), ("last", "pathways-1")):
        wait_running(cluster, "pathways", name, 1 + 1)
        wl = workload(cluster, "pathways", name)
        assert wl is not None, name
        admission = wl["status"]["admission"]
        assert admission["clusterQueue"] == queue
        flavors = {a["name"]: a["flavors"] for a in admission["podSetAssignments"]}
        # the head on the head flavor (lent across the cohort to pathways-1), the workers on their group's
        assert set(flavors["pathways-head"].values()) == {"pathways-head"}
        assert set(flavors["worker"].values()) == {f"tpu-{'g0' if name == 'first' else 'g63'}"}
