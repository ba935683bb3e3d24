"""The deploy's critical path does not grow with the number of slices."""

from __future__ import annotations

import pytest

from infra.offline.bench import stack_config
from infra.offline.critical_path import critical_path
from tests.conftest import plan_of

POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def plans():
    return {n: plan_of(stack_config(n)["config"], stack=f"bench{n}") for n in (1, 256)}


def test_same_chain_for_1_and_256_slices(plans):
    small, large = critical_path(plans[1]), critical_path(plans[256])
    assert large.length == small.length == 3
    assert large.minutes == small.minutes == 45 + 180  # cluster, then one TPU pool: pools come up in parallel
    assert [r.type for r in large.chain] == [r.type for r in small.chain] == [
        "gcp:container/cluster:Cluster",
        "gcp:container/nodePool:NodePool",
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    ]
    assert large.chain[1].input("name").startswith("tpu-")
    assert len([r for r in plans[256].by_type(POOL) if r.input("name").startswith("tpu-")]) == 256


def test_worst_case_weights_come_from_the_plan():
    from infra.offline.critical_path import worst_case_minutes

    plan = plan_of(stack_config(1)["config"], stack="bench1")
    weights = {r.name: worst_case_minutes(r) for r in plan.resources if r.custom or r.type == "kubernetes:helm.sh/v4:Chart"}
    assert weights["cluster"] == 45 and weights["slices-v6e-0"] == 180 and weights["head-pool"] == 30
    assert weights["cluster-system"] == 30  # provider default: no custom timeout
    assert weights["jobset"] == 10  # the chart: Pulumi awaits its Deployment, 10 minutes by default
    assert weights["workload-train"] == 0


def test_no_pool_waits_on_another_pool(plans):
    plan = plans[256]
    pools = {r.urn for r in plan.by_type(POOL)}
    cluster = plan.one("gcp:container/cluster:Cluster").urn
    for r in plan.by_type(POOL):
        assert cluster in r.dependencies
        assert not pools & set(r.dependencies), r.name


def test_controller_and_workloads_wait_only_on_what_they_need(plans):
    plan = plans[256]
    chart = plan.one("kubernetes:helm.sh/v4:Chart", "jobset")
    provider = plan.get(chart.options["provider"])
    names = lambda urns: {plan.get(u).name for u in urns}
    assert names(provider.dependencies) <= {"cluster", "cluster-system"}  # the kubeconfig and schedulable nodes
    assert names(chart.dependencies) == {"jobset-namespace"}
    assert plan.get(chart.dependencies[0]).dependencies == ()
    train = plan.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "workload-train")
    deps = names(train.dependencies)
    buckets = {"scratch", "scratch-artifacts", "scratch-role"} | {r.name for r in plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
    # and Kueue: the chart (webhooks) and the queue objects it is admitted through
    kueue = {r.name for r in plan.resources if r.name == "kueue" or r.name.startswith("kueue-") and "kueue.x-k8s.io" in r.type}
    assert deps == {"jobset", "workloads", "head-pool", "guardrails-pathways-training"} | {f"slices-v6e-{i}" for i in range(128)} | buckets | kueue
    # Kueue, like the JobSet controller, waits only for the namespace it runs in (and the provider: the system pool)
    kueue_chart = plan.one("kubernetes:helm.sh/v4:Chart", "kueue")
    assert names(kueue_chart.dependencies) == {"kueue-namespace"} and kueue_chart.options["provider"] == chart.options["provider"]


def test_plan_text_shows_the_chain(capsys):
    from infra.offline.__main__ import main

    assert main(["plan", "--stack", "dev"]) == 0
    assert ("Deploy critical path (3 slow resources in sequence, worst case 225 min by create timeouts): "
            "cluster (Cluster, <= 45m) -> slices-dev-0 (NodePool, <= 180m) -> workload-notebook (JobSet, <= 0m)") in capsys.readouterr().out
