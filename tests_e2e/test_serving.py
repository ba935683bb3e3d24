"""Real-time serving on the real control plane: the LeaderWorkerSet controller (with its webhooks) and Kueue's
LeaderWorkerSet integration run a serve workload's replicas on fake TPU nodes as Google's shape needs them:
each replica (LWS group) on its own slice, the leader on that slice's pool, one worker per TPU host,
LWS_LEADER_ADDRESS injected into every container, the HTTP Service selecting the leaders; disaggregated
replicas spread prefill and decode over two slices; and only the LWS controller may make TPU StatefulSets."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import yaml

from components.model.workload import serve_service_name
from infra.offline.render import manifests
from tests.conftest import config_with, plan_of, stack_plan
from tests_e2e.helpers import is_true, nodes, running

LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
POOL = "cloud.google.com/gke-nodepool"


def lws_pods(cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return cluster.get("pods", "-n", namespace, "-l", f"{LWS_NAME}={name}")["items"]


def wait_lws_running(cluster, namespace: str, name: str, count: int) -> list[dict[str, Any]]:
    def done():
        ps = [p for p in lws_pods(cluster, namespace, name) if running(p)]
        return ps if len(ps) == count else None
    return cluster.wait_for(f"{count} running pods of LeaderWorkerSet {namespace}/{name}", done, timeout=180)


def groups_of(ps: list[dict[str, Any]]) -> dict[int, dict[int, dict[str, Any]]]:
    """group index -> worker index (0: the leader) -> pod."""
    out: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for p in ps:
        labels = p["metadata"]["labels"]
        out[int(labels[GROUP_INDEX])][int(labels[WORKER_INDEX])] = p
    return dict(out)


def check_leader_address(ps: list[dict[str, Any]], name: str, namespace: str) -> None:
    """LWS's pod webhook puts LWS_LEADER_ADDRESS first in every container's env (the RM, proxy and workers
    find each other by it)."""
    for p in ps:
        group = p["metadata"]["labels"][GROUP_INDEX]
        for c in p["spec"]["containers"]:
            first = (c.get("env") or [{}])[0]
            assert first == {"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{group}.{name}.{namespace}"}, (p["metadata"]["name"], c["name"], first)


def test_serving_stack_runs_each_replica_on_its_own_slice(cluster, stack):
    plan = stack_plan("serving")
    stack(plan)
    lws = next(o for o in manifests(plan) if o["kind"] == "LeaderWorkerSet")
    name, namespace = lws["metadata"]["name"], lws["metadata"]["namespace"]
    replicas, size = lws["spec"]["replicas"], lws["spec"]["leaderWorkerTemplate"]["size"]
    assert (replicas, size) == (2, 5)  # two replicas of a four-host v6e-16 slice plus the leader

    # Kueue's LeaderWorkerSet integration admits each group as one workload of the serving priority
    def admitted():
        wls = cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        ours = [w for w in wls if any(o.get("kind") == "LeaderWorkerSet" and o.get("name") == name
                                      for o in w["metadata"].get("ownerReferences", []))]
        return ours if len(ours) == replicas and all(is_true(w, "Admitted") for w in ours) else None
    wls = cluster.wait_for(f"Kueue admits the {replicas} groups of {name}", admitted, timeout=180)
    assert {w["spec"].get("priority") for w in wls} == {2_000_000}  # pathways-serving, above training

    ps = wait_lws_running(cluster, namespace, name, replicas * size)
    labels = nodes(cluster)
    groups = groups_of(ps)
    assert sorted(groups) == list(range(replicas))
    pools_used = []
    for g, members in groups.items():
        assert sorted(members) == list(range(size))
        pools = {labels[p["spec"]["nodeName"]][POOL] for p in members.values()}
        assert len(pools) == 1, (g, pools)  # the whole replica, leader included, on one slice's pool
        pools_used += pools
        workers = [p["spec"]["nodeName"] for i, p in members.items() if i > 0]
        assert len(set(workers)) == len(workers) == size - 1  # one worker per TPU host
        for node in workers:
            assert labels[node]["pathways/slice-group"] == "serve"
            assert labels[node]["cloud.google.com/gke-tpu-topology"] == "4x4"
        leader = members[0]
        assert [c["name"] for c in leader["spec"]["containers"]] == ["pathways-proxy", "pathways-rm", "jax-tpu", "jetstream-http"]
        assert leader["spec"]["priorityClassName"] == "pathways-serving"
        assert "google.com/tpu" not in str(leader["spec"]["containers"])  # the leader takes no chips
    assert len(set(pools_used)) == replicas  # each replica on its own slice
    check_leader_address(ps, name, namespace)

    # the HTTP Service selects exactly the leaders, on port 8000
    svc = cluster.get("service", "-n", namespace, serve_service_name(name))
    assert svc["spec"]["ports"][0]["port"] == 8000 and svc["spec"]["type"] == "LoadBalancer"
    assert svc["metadata"]["annotations"]["networking.gke.io/load-balancer-type"] == "Internal"
    selected = cluster.get("pods", "-n", namespace, "-l", ",".join(f"{k}={v}" for k, v in svc["spec"]["selector"].items()))["items"]
    assert sorted(p["metadata"]["name"] for p in selected) == sorted(m[0]["metadata"]["name"] for m in groups.values())


def test_disaggregated_replica_spans_two_slices(cluster, stack):
    config = config_with(pathwaysVersion="jax-0.7.2", workloads=[{
        "name": "disagg", "mode": "serve",
        "serve": {"model": "llama3.1-8b", "weights": "gs://test-models/llama3.1-8b", "disaggregated": True},
    }])
    plan = plan_of(config, "disagg")
    stack(plan)
    ps = wait_lws_running(cluster, "pathways", "disagg", 2 * 4 + 1)
    labels = nodes(cluster)
    (members,) = groups_of(ps).values()
    by_pool: dict[str, list[int]] = defaultdict(list)
    for i, p in members.items():
        by_pool[labels[p["spec"]["nodeName"]][POOL]].append(i)
    # prefill and decode each own a slice: the leader and workers 1-4 on one pool, workers 5-8 on the other
    assert sorted(sorted(v) for v in by_pool.values()) == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    check_leader_address(ps, "disagg", "pathways")
    rm = next(c for c in members[0]["spec"]["containers"] if c["name"] == "pathways-rm")
    assert "--instance_count=2" in rm["args"]


def test_only_the_lws_controller_makes_tpu_statefulsets(cluster, stack):
    stack(stack_plan("serving"))
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sneaky", "namespace": "pathways"},
           "spec": {"serviceName": "sneaky", "selector": {"matchLabels": {"app": "sneaky"}},
                    "template": {"metadata": {"labels": {"app": "sneaky"}}, "spec": {
                        "containers": [{"name": "c", "image": "x:1"}],
                        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(sts), check=False)
    assert proc.returncode != 0 and "pathways-workload-templates" in proc.stderr, proc.stderr
    del sts["spec"]["template"]["spec"]["tolerations"]
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(sts), check=False)
    assert proc.returncode == 0, proc.stderr  # an ordinary StatefulSet is none of the guard's business
