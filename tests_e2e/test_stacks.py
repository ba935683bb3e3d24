"""Every committed stack on the real control plane: every object accepted by the API server with strict
field validation, every JobSet through JobSet's and Kueue's webhooks, admitted by Kueue under the derived
quotas, and every pod Running where it belongs: the head on the head pool, one worker per TPU host, each
slice on its own pool."""

from __future__ import annotations

import pytest

from components.model.config import load, resolve
from infra.offline.stackfile import load_config, raw_values, stack_path
from tests.conftest import STACKS, stack_plan
from tests_e2e.helpers import condition, is_true, nodes, placement, pods, wait_running, workload


def model(name: str):
    config, secrets = load_config(stack_path(name))
    return resolve(load(raw_values(config), name, frozenset(secrets)))


PRIORITY = {"serving": 2_000_000, "training": 1_000_000, "interactive": 500_000, "experiment": 100_000}


def expected_admission(m) -> tuple[list, list]:
    """(admitted, waiting): per slice group, Kueue admits by priority while the group's slices last."""
    admitted, waiting = [], []
    free = {g.name: g.count for g in m.slices}
    # serve workloads (LeaderWorkerSets) have their own scenario: tests_e2e/test_serving.py
    for w in sorted((w for w in m.jobset_workloads if w.state == "running"), key=lambda w: -PRIORITY[w.priority]):
        if w.slices <= free[w.group.name]:
            free[w.group.name] -= w.slices
            admitted.append(w)
        else:
            waiting.append(w)
    return admitted, waiting


@pytest.mark.parametrize("name", STACKS)
def test_committed_stack_runs_where_it_belongs(cluster, stack, name):
    m = model(name)
    stack(stack_plan(name), m.region, m.zone)
    labels = nodes(cluster)
    admitted, waiting = expected_admission(m)
    for w in admitted:
        cluster.wait_for(f"Kueue admits {w.name}", lambda w=w: is_true(workload(cluster, w.namespace, w.name), "Admitted"))
        hosts = w.group.tpu.hosts
        ps = wait_running(cluster, w.namespace, w.name, 1 + w.slices * hosts)
        jobs = placement(cluster, ps)
        (head_pool,) = jobs[("pathways-head", 0)]
        assert head_pool == "pathways-head"
        worker_jobs = {k: v for k, v in jobs.items() if k[0] == w.worker_job}
        assert sorted(i for _, i in worker_jobs) == list(range(w.slices))
        for pools in worker_jobs.values():
            assert len(pools) == hosts and len(set(pools)) == 1, pools  # one slice, one pool, all its hosts
        assert len({p[0] for p in worker_jobs.values()}) == w.slices  # each slice on its own pool
        tpu_nodes = [p["spec"]["nodeName"] for p in ps if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == w.worker_job]
        assert len(set(tpu_nodes)) == len(tpu_nodes)  # one worker per TPU host
        for node in tpu_nodes:
            assert labels[node]["cloud.google.com/gke-tpu-accelerator"] == w.group.tpu.accelerator
            assert labels[node]["cloud.google.com/gke-tpu-topology"] == w.group.tpu.topology
            assert labels[node]["pathways/slice-group"] == w.group.name

    for w in waiting:
        # more slices wanted than the group has: Kueue holds the lower priority, its JobSet stays suspended
        wl = workload(cluster, w.namespace, w.name)
        assert not is_true(wl, "Admitted"), w.name
        assert "insufficient" in (condition(wl, "QuotaReserved") or {}).get("message", ""), wl
        assert cluster.get("jobset", "-n", w.namespace, w.name)["spec"]["suspend"] is True
        assert pods(cluster, w.namespace, w.name) == []
