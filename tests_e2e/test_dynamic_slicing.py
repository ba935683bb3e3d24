"""A pool set (tpu7x dynamic slicing, docs/dynamic-slicing.md) on the real Kueue, with the tier's stand-in for the slice
controllers (tools/cluster/slices.py): the example stack `ironwood`, which test_stacks leaves running with its
workloads placed where the plan said (tests_e2e/pool_sets.py):

- a slice the pool set cannot form beside the others waits with the reason the plan gave (the flavor's quota: too few
  free chips; or no cubes or partitions of its shape), and `why` says so and names who holds them;
- reshaping a workload (another topology) replaces its JobSet only: no node comes or goes, the new slice lands where
  the product's placement predicts beside the slices that stay, and the stand-in forms it of that shape's partition."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

from components.model.capacity import dynamic_slicing as ds
from components.model.capacity.slice_placement import PoolSet
from components.model.cost.summary import stack_summary
from tests_e2e.helpers import JOB_INDEX, REPLICATED_JOB, is_true, nodes, wait_running, workload
from tests_e2e.pool_sets import cluster_workload_name, expand, held, release_in_order
from tests_e2e.test_stacks import example_model, example_stack_config
from tools.cluster.local import ROOT, LocalCluster

EXAMPLE = "ironwood"


def deployed(cluster: LocalCluster, stacks: Any) -> None:
    """The example running, its pool set's workloads placed in the plan's order (already so after test_stacks)."""
    m = example_model(EXAMPLE)
    stacks.use(EXAMPLE, held(example_stack_config(EXAMPLE), m))
    queues = {q["metadata"]["name"]: q["spec"].get("stopPolicy") for q in cluster.get("localqueues", "-A")["items"]}
    if any(queues.get(w.local_queue) == "HoldAndDrain" for w in m.workloads if w.group.dynamic and w.state == "running"):
        release_in_order(cluster, m)  # asserts each placement
    stacks.changed()


def why(cluster: LocalCluster, tmp_path, name: str) -> dict[str, Any]:
    stack_file = tmp_path / f"Pulumi.{EXAMPLE}.yaml"
    stack_file.write_text(json.dumps({"config": example_stack_config(EXAMPLE)}))
    proc = subprocess.run([sys.executable, "-m", "infra.run", "why", "--config", str(stack_file), "--kubeconfig", str(cluster.kubeconfig),
                           name, "--json"], cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_slice_the_pool_set_cannot_form_now_waits_and_why_names_who_holds_its_cubes(cluster, stacks, tmp_path):
    deployed(cluster, stacks)
    m = example_model(EXAMPLE)
    (ps,) = stack_summary(m)["poolSets"]
    waiting = [p for p in ps["placements"] if p["waits"]]
    assert waiting, "the example keeps one workload waiting for the others' cubes"
    for p in waiting:
        w = next(w for w in m.workloads if w.name == p["workload"])
        wl = workload(cluster, w.namespace, w.name)
        assert not is_true(wl, "Admitted") and cluster.get("jobset", "-n", w.namespace, w.name)["spec"]["suspend"] is True
        got = why(cluster, tmp_path, w.name)
        holders = sorted(x["workload"] for x in ps["placements"] if not x["waits"])
        # Kueue's reason as the plan gave it: too few free chips (the flavor's quota), or no cubes or partitions of
        # the shape among them (topology-aware scheduling)
        if p["waits"].startswith("insufficient unused quota"):
            assert got["reason"] == "waiting-for-quota", got
            assert got["summary"].startswith("waiting in line for quota") and "held by" in got["summary"], got
        else:
            assert got["reason"] == "topology", got
            assert got["summary"].startswith(f"pool set {ps['group']} has no free cubes or partitions in the shape of its slice now: held by "), got
        assert all(h in got["summary"] for h in holders), (got, holders)
        assert p["waits"] in got["evidence"][0], got


def test_reshaping_a_slice_replaces_its_jobset_and_touches_no_node(cluster, stacks):
    deployed(cluster, stacks)
    m = example_model(EXAMPLE)
    (ps,) = stack_summary(m)["poolSets"]
    group = next(g for g in m.slices if g.dynamic)
    placed = [p for p in ps["placements"] if not p["waits"]]
    target = placed[1]  # reshape the second: the first keeps its cubes
    new_topology = next(t for t in ds.SUB_SLICE_TOPOLOGIES if t != target["topology"] and ds.hosts_of(t) < ds.hosts_of(target["topology"]))
    w = next(w for w in m.workloads if w.name == target["workload"])
    w_old = workload(cluster, w.namespace, w.name)
    assert w_old is not None
    before = {n["metadata"]["name"]: n["metadata"]["uid"] for n in cluster.get("nodes")["items"]}
    js_before = {p["workload"]: cluster.get("jobset", "-n", w.namespace, p["workload"])["metadata"]["uid"] for p in placed}

    # what the product predicts: the others keep their hosts, the reshaped one is placed beside them
    pool = PoolSet(group.count, group.forms_sub_slices, ds.topology_name(group.name))
    index = {sb: i for i, sb in enumerate(group.sub_blocks)}
    for p in placed:
        if p is not target:
            pool.used |= {(index[h["subBlock"]], i) for s in p["slices"] for h in s["hosts"] for i in expand(h["hosts"])}
    count = w.slices
    want = pool.place(target["workload"], new_topology, count)
    assert want.waits is None

    config = example_stack_config(EXAMPLE)
    for entry in config["pathways:workloads"]:
        if entry["name"] == target["workload"]:
            entry["topology"] = new_topology
    result = stacks.update(config)
    assert re.search(r"\b1 replaced\b", result.output), result.output[-3000:]

    cluster.wait_for(f"Kueue admits the reshaped {w.name}", lambda: (lambda x: x if x and x["metadata"]["uid"] != w_old["metadata"]["uid"]
                                                                     and is_true(x, "Admitted") else None)(workload(cluster, w.namespace, w.name)), timeout=180)
    hosts = ds.hosts_of(new_topology)
    pods = wait_running(cluster, w.namespace, w.name, 1 + count * hosts)
    labels = nodes(cluster)
    cube_of = {f"tpu-{group.name}-{i}": i for i in range(group.count)}
    got = sorted((cube_of[labels[p["spec"]["nodeName"]]["cloud.google.com/gke-nodepool"]], int(p["spec"]["nodeName"].rsplit("-", 1)[1]))
                 for p in pods if p["metadata"]["labels"][REPLICATED_JOB] == w.worker_job)
    assert got == sorted(h for s in want.slices for h in s.hosts), (got, want)
    assert {int(p["metadata"]["labels"][JOB_INDEX]) for p in pods if p["metadata"]["labels"][REPLICATED_JOB] == w.worker_job} == set(range(count))
    # the reshape touched no node, and no other workload's JobSet
    assert {n["metadata"]["name"]: n["metadata"]["uid"] for n in cluster.get("nodes")["items"]} == before
    for name, uid in js_before.items():
        now = cluster.get("jobset", "-n", w.namespace, name)["metadata"]["uid"]
        assert (now == uid) == (name != target["workload"]), name
    # the stand-in formed its Slices of the new shape
    assert cluster.slices is not None
    formed = cluster.slices.formed_for(w.namespace, cluster_workload_name(cluster, w))
    assert [t for t, _ in formed] == [new_topology] * count
    stacks.changed()
