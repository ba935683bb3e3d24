"""The deploy's critical path: node pools in lanes under GKE's concurrent-operations quota."""

from __future__ import annotations

import json

import pytest
import yaml

from infra.offline.critical_path import critical_path
from tests.conftest import example_path, plan_of
from tools.bench import stack_config

POOL = "gcp:container/nodePool:NodePool"


@pytest.fixture(scope="module")
def plans():
    return {n: plan_of(stack_config(n)["config"], stack=f"bench{n}") for n in (1, 256)}


def test_pools_come_up_in_lanes_of_concurrent_operations(plans):
    # xpk creates 100 pools at once since PR #1068; the provider retries a 429 only until the create
    # timeout, so the stack queues pools itself, 100 in flight by default
    small, large = critical_path(plans[1], 100), critical_path(plans[256], 100)
    assert small.length == 3 and small.minutes == 45 + 180
    assert [r.type for r in small.chain] == ["gcp:container/cluster:Cluster", POOL, "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"]
    # 256 TPU pools + system + head = 258 pools in 100 lanes: the longest lane holds 3 pools
    assert large.length == 1 + 3 + 1
    assert large.minutes == 45 + 3 * 180
    assert small.expected == 10 + 10 and large.expected == 10 + 3 * 10
    # and where GKE still enforces its 2023 quota of 5: 52 waves of the slowest pool
    assert large.expected_at_legacy_quota == 10 + 52 * 10 and small.expected_at_legacy_quota == small.expected
    assert len([r for r in plans[256].by_type(POOL) if r.input("name").startswith("tpu-")]) == 256
    assert len([r for r in plans[256].by_type(POOL) if r.input("name").startswith("tpu-")]) == 256


def test_each_pool_waits_on_the_pool_a_concurrency_before_it(plans):
    plan = plans[256]
    by_name = {r.name: r for r in plan.by_type(POOL)}
    # program order: the system pool, the head pool, then the slice groups' pools in config order
    order = ["cluster-system", "head-pool", *(f"slices-v6e-{i}" for i in range(128)), *(f"slices-v5p-{i}" for i in range(128))]
    assert sorted(order) == sorted(by_name)
    cluster = plan.one("gcp:container/cluster:Cluster").urn
    pool_urns = {r.urn for r in by_name.values()}
    for k, name in enumerate(order):
        r = by_name[name]
        waits_on = [plan.get(d).name for d in r.dependencies if d in pool_urns]
        assert waits_on == ([order[k - 100]] if k >= 100 else []), name
        assert name == "cluster-system" or cluster in r.dependencies


def test_concurrency_is_configurable():
    cfg = stack_config(8)["config"]
    cfg["pathways:cluster"] = {"nodePoolConcurrency": 1}
    plan = plan_of(cfg, stack="bench8")
    path = critical_path(plan)
    assert path.length == 1 + 10 + 1  # every pool in one lane
    cfg["pathways:cluster"] = {"nodePoolConcurrency": 20}
    assert critical_path(plan_of(cfg, stack="bench8")).length == 3


def test_deep_chain_needs_no_recursion():
    from infra.offline.engine import Plan, Registration

    def pool(i: int) -> Registration:
        return Registration(urn=f"urn:p{i}", type=POOL, name=f"p{i}", parent="", custom=True,
                            inputs={"nodeConfig": {"machineType": "ct6e-standard-4t"}, "nodeCount": 4},
                            dependencies=(f"urn:p{i - 1}",) if i else (), options={})

    path = critical_path(Plan(stack="deep", resources=[pool(i) for i in range(3000)]))
    assert path.length == 3000 and path.minutes == 3000 * 30 and path.expected == 3000 * 6


def test_a_lane_longer_than_pulumi_can_walk_is_a_config_error():
    from components.model.config import load
    from components.model.errors import ConfigError
    from infra.offline.stackfile import raw_values
    from tools.bench import largest_config

    cfg = largest_config()["config"]
    cfg["pathways:cluster"] = {"nodePoolConcurrency": 1}
    with pytest.raises(ConfigError) as e:
        load(raw_values({k: v if isinstance(v, str) else json.dumps(v) for k, v in cfg.items()}), "largest")
    assert "pathways:cluster.nodePoolConcurrency: 1 puts 1002 of the stack's 1002 node pools in one lane; at most 250" in str(e.value)
    assert "set it to at least 5" in str(e.value)


def test_worst_case_weights_come_from_the_plan():
    from infra.offline.critical_path import worst_case_minutes

    plan = plan_of(stack_config(1)["config"], stack="bench1")
    weights = {r.name: worst_case_minutes(r) for r in plan.resources if r.custom or r.type == "kubernetes:helm.sh/v4:Chart"}
    assert weights["cluster"] == 45 and weights["slices-v6e-0"] == 180 and weights["head-pool"] == 30
    assert weights["cluster-system"] == 30  # provider default: no custom timeout
    assert weights["jobset"] == 10  # the chart: Pulumi awaits its Deployment, 10 minutes by default
    assert weights["workload-train"] == 0


def test_controller_and_workloads_wait_only_on_what_they_need(plans):
    plan = plans[256]
    chart = plan.one("kubernetes:helm.sh/v4:Chart", "jobset")
    provider = plan.get(chart.options["provider"])
    names = lambda urns: {plan.get(u).name for u in urns}
    assert names(provider.dependencies) == {"cluster", "cluster-system"}  # the kubeconfig and schedulable nodes
    assert names(chart.dependencies) == {"jobset-namespace"}
    assert plan.get(chart.dependencies[0]).dependencies == ()
    train = plan.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "workload-train")
    deps = names(train.dependencies)
    buckets = {"scratch", "scratch-artifacts"} | {r.name for r in plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
    # and Kueue: the chart (webhooks) and the queue objects it is admitted through
    kueue = {r.name for r in plan.resources if r.name == "kueue" or r.name.startswith("kueue-") and "kueue.x-k8s.io" in r.type}
    assert deps == {"jobset", "workloads", "head-pool", "guardrails-pathways-training"} | {f"slices-v6e-{i}" for i in range(128)} | buckets | kueue
    # Kueue, like the JobSet controller, waits only for the namespace it runs in (and the provider: the system pool)
    kueue_chart = plan.one("kubernetes:helm.sh/v4:Chart", "kueue")
    assert names(kueue_chart.dependencies) == {"kueue-namespace"} and kueue_chart.options["provider"] == chart.options["provider"]


def test_plan_text_shows_the_chain(capsys):
    from infra.offline.__main__ import main

    assert main(["plan", "--config", str(example_path("dev"))]) == 0
    out = capsys.readouterr().out
    assert "Deploy time: expected ~16 min with 100 node-pool operations at once; worst case 225 min by create timeouts" in out
    # the chain the expected time comes from (10 + 4 + 2 = 16), each step typical and longest; the worst-case
    # chain apart, since it is another one; a JobSet is created without waiting for its pods
    assert ("Deploy critical path (4 resources in sequence): cluster (Cluster, ~10m, <= 45m) -> cluster-system (NodePool, ~4m, "
            "<= 30m) -> jobset (Chart, ~2m, <= 10m) -> workload-notebook (JobSet, created at once)") in out
    assert ("Worst-case chain (3 resources, by create timeouts): cluster (Cluster, ~10m, <= 45m) -> slices-dev-0 (NodePool, "
            "~3m, <= 180m) -> workload-notebook (JobSet, created at once)") in out  # dev's slice pool starts empty
    assert "Warning:" not in out and out.rstrip().splitlines()[-1] == "Verdict: OK - the policy pack passes; 53 resources, deploy ~16 min expected"


def test_a_deploy_longer_than_the_workflow_allows_is_said():
    from infra.offline.critical_path import UP_JOB_TIMEOUT_MINUTES, CriticalPath

    workflow = yaml.safe_load(open(".github/workflows/pulumi-stack.yml"))
    assert workflow["jobs"]["up"]["timeout-minutes"] == UP_JOB_TIMEOUT_MINUTES == 360  # GitHub-hosted runners' limit
    cluster = _reg(0, "gcp:container/cluster:Cluster")
    pools = [_reg(i, POOL, nodeConfig={"machineType": "ct5p-hightpu-4t"}) for i in range(1, 4)]
    for p in pools:
        p.options["customTimeouts"] = {"create": "180m"}
    path = CriticalPath(chain=(cluster, *pools), expected_chain=(cluster, *pools), pools=3, concurrency=1)
    assert path.minutes > UP_JOB_TIMEOUT_MINUTES
    assert path.workflow_warning is not None and "worst-case deploy time (580 min) exceeds the 360 min" in path.workflow_warning
    assert "self-hosted runner" in path.describe().splitlines()[-1]


def test_lane_rules():
    from components.model.capacity.rollout import lane_predecessor, waves

    assert [lane_predecessor(i, 5) for i in (0, 4, 5, 12)] == [None, None, 0, 7]
    assert [waves(n, 5) for n in (0, 1, 5, 6, 258)] == [0, 1, 1, 2, 52]
    with pytest.raises(ValueError):
        lane_predecessor(3, 0)


def _reg(i: int, type_: str = POOL, **inputs):
    from infra.offline.engine import Registration

    return Registration(urn=f"urn:r{i}", type=type_, name=f"r{i}", parent="", custom=True, inputs=inputs,
                        dependencies=(f"urn:r{i - 1}",) if i else (), options={})


def test_helm_release_weighs_its_timeout():
    from infra.offline.critical_path import worst_case_minutes

    release = "kubernetes:helm.sh/v3:Release"
    assert worst_case_minutes(_reg(0, release, timeout=600)) == 10  # helm waits up to `timeout` seconds
    assert worst_case_minutes(_reg(0, release)) == 5  # helm's default, 300 s


def test_a_long_chain_is_abbreviated_a_short_one_is_not():
    from infra.offline.engine import Plan

    def text(n: int) -> str:
        return critical_path(Plan(stack="s", resources=[_reg(i, nodeCount=4) for i in range(n)])).describe()

    assert "more in the same lane" not in text(8) and text(8).count("(NodePool") == 8
    assert "r0 (NodePool" in text(9) and "... 3 more in the same lane ..." in text(9) and text(9).count("(NodePool") == 6


def test_expected_minutes_by_kind_of_pool():
    from infra.offline.critical_path import EXPECTED_MINUTES, expected_minutes

    assert EXPECTED_MINUTES == {"cluster": 10.0, "cpu-pool": 4.0, "tpu-pool": 6.0, "tpu-pool-multi-host": 10.0, "empty-pool": 3.0, "chart": 2.0,
                                "slice-reshape": 2.0}
    tpu = {"machineType": "ct6e-standard-4t"}
    assert expected_minutes(_reg(0, nodeConfig=tpu, initialNodeCount=0)) == 3.0  # flex-start: created empty
    assert expected_minutes(_reg(0, nodeConfig=tpu, nodeCount=1)) == 6.0
    assert expected_minutes(_reg(0, nodeConfig=tpu, nodeCount=4, placementPolicy={"type": "COMPACT"})) == 10.0
    assert expected_minutes(_reg(0, nodeConfig={"machineType": "n2-standard-64"}, nodeCount=1)) == 4.0
    assert expected_minutes(_reg(0, nodeConfig={"machineType": "tpu7x-standard-4t"}, nodeCount=1)) == 6.0
    assert expected_minutes(_reg(0, "gcp:container/cluster:Cluster")) == 10.0
    assert expected_minutes(_reg(0, "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")) == 0.0


def test_a_plan_without_slow_resources():
    from infra.offline.engine import Plan

    path = critical_path(Plan("empty", [], {}))
    assert (path.chain, path.length, path.minutes) == ((), 0, 0)
    assert path.describe() == "Deploy critical path: no slow resources"


def test_provider_defaults_when_the_plan_sets_no_create_timeout():
    # pulumi-gcp's Cluster and NodePool resources: create timeouts 40m and 30m by default
    from infra.offline.critical_path import worst_case_minutes

    assert worst_case_minutes(_reg(0, "gcp:container/cluster:Cluster")) == 40
    assert worst_case_minutes(_reg(0, nodeCount=1)) == 30


def test_a_pool_is_created_empty_only_when_it_starts_at_zero_nodes():
    from infra.offline.critical_path import expected_minutes

    tpu = {"machineType": "ct6e-standard-4t"}
    assert expected_minutes(_reg(0, nodeConfig=tpu, initialNodeCount=2)) == 6.0  # autoscaled, starts with 2 nodes
    assert expected_minutes(_reg(0, nodeConfig=tpu, initialNodeCount=0, nodeCount=0)) == 6.0  # a fixed size, not flex-start


def _chain(plan) -> list[str]:
    return [r.name for r in critical_path(plan).chain]


def test_a_resource_waits_on_its_provider():
    # The Kubernetes provider is built from the cluster's kubeconfig: a chart that names only the
    # provider (no dependsOn) still waits for the cluster.
    from dataclasses import replace

    from infra.offline.engine import Plan

    cluster = _reg(0, "gcp:container/cluster:Cluster")
    provider = replace(_reg(1, "pulumi:providers:kubernetes"), name="k8s")
    chart = replace(_reg(2, "kubernetes:helm.sh/v4:Chart"), dependencies=(), options={"provider": provider.urn})
    assert _chain(Plan("p", [cluster, provider, chart])) == ["r0", "r2"]


def test_ties_resolve_to_the_first_dependency_by_urn():
    from dataclasses import replace

    from infra.offline.engine import Plan

    a, b = (replace(_reg(0, nodeCount=1), urn=f"urn:{n}", name=n) for n in ("a", "b"))
    jobset = replace(_reg(1, "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"), dependencies=("urn:b", "urn:a"))
    assert _chain(Plan("t", [b, a, jobset])) == ["a", "r1"]  # equal weights (30m each): the same pick every run


def test_the_chain_is_the_longest_by_minutes_not_by_count():
    from dataclasses import replace

    from infra.offline.engine import Plan

    short_steps = [_reg(i, nodeCount=1) for i in range(4)]  # four pools of 30m in a lane: 120m
    slow = replace(_reg(9, nodeCount=1), dependencies=(), options={"customTimeouts": {"create": "100m"}})
    jobset = replace(_reg(10, "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"), dependencies=("urn:r3", "urn:r9"))
    path = critical_path(Plan("m", [*short_steps, slow, jobset]))
    assert [r.name for r in path.chain] == ["r0", "r1", "r2", "r3", "r10"] and path.minutes == 120
    slow = replace(slow, options={"customTimeouts": {"create": "121m"}})
    path = critical_path(Plan("m", [*short_steps, slow, jobset]))
    assert [r.name for r in path.chain] == ["r9", "r10"] and path.minutes == 121
