"""Pool sets on the real Kueue (docs/dynamic-slicing.md): each workload's slices placed by Kueue's topology-aware
scheduling and formed by the tier's stand-in slice controllers (tools/cluster/slices.py), judged against the plan.

The plan places a pool set's workloads in Kueue's order, each admitted before the next arrives; `pulumi up` makes
their JobSets at once, and Kueue breaks ties between workloads made in the same second by UID. So a scenario deploys
the stack with those workloads held (state: suspended: their LocalQueues HoldAndDrain) and releases them one at a
time in the plan's order, waiting for each to be admitted or refused, as the plan assumes."""

from __future__ import annotations

import copy
from typing import Any

from components.model.capacity import dynamic_slicing as ds
from components.model.cost.summary import stack_summary
from components.model.resolved import ResolvedStack
from tests_e2e.helpers import JOB_INDEX, REPLICATED_JOB, is_true, kueue_judged, nodes, wait_running, workload
from tools.cluster.local import LocalCluster

TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"


def pool_set_workloads(m: ResolvedStack) -> set[str]:
    return {w.name for w in m.workloads if w.group.dynamic and w.state == "running"}


def held(config: dict[str, Any], m: ResolvedStack) -> dict[str, Any]:
    """The stack's config with its running pool-set workloads suspended (held by their LocalQueues)."""
    out = copy.deepcopy(config)
    names = pool_set_workloads(m)
    for w in out.get("pathways:workloads") or []:
        if w["name"] in names:
            w["state"] = "suspended"
    return out


def _release(cluster: LocalCluster, namespace: str, queue: str) -> None:
    cluster.kubectl("patch", "localqueue", "-n", namespace, queue, "--type", "merge", "-p", '{"spec":{"stopPolicy":"None"}}')


def _host(node: str) -> int:
    """The host index of a tier node (gke-<pool>-<hash>-<i>, tools/cluster/gke_nodes.py)."""
    return int(node.rsplit("-", 1)[1])


def release_in_order(cluster: LocalCluster, m: ResolvedStack) -> tuple[int, int]:
    """Release the pool sets' workloads in the plan's order; each must be admitted on exactly the hosts the plan
    names, formed into Slices of the partitions those hosts are in, or wait with the reason the plan gives.
    Returns (placements as predicted, placements compared)."""
    summary = stack_summary(m)["poolSets"] or []
    by_name = {w.name: w for w in m.workloads}
    equal = compared = 0
    for ps in summary:
        group = next(g for g in m.slices if g.name == ps["group"])
        cube_of = {f"tpu-{group.name}-{i}": sb for i, sb in enumerate(group.sub_blocks)}  # pool -> its sub-block
        for p in ps["placements"]:
            w = by_name[p["workload"]]
            assert w.local_queue is not None
            _release(cluster, w.namespace, w.local_queue)
            if p["waits"]:
                _, verdict = kueue_judged(cluster, w.namespace, lambda w=w: workload(cluster, w.namespace, w.name), w.name, p["waits"])
                assert p["waits"] in verdict.message, (w.name, verdict)
                compared += 1
                equal += 1
                continue
            cluster.wait_for(f"Kueue admits {w.name}", lambda w=w: is_true(workload(cluster, w.namespace, w.name), "Admitted"), timeout=120)
            pods = wait_running(cluster, w.namespace, w.name, 1 + w.slices * w.hosts)
            labels = nodes(cluster)
            got: dict[int, list[dict[str, str]]] = {}
            for pod in pods:
                meta = pod["metadata"]["labels"]
                if meta[REPLICATED_JOB] != w.worker_job:
                    continue
                node = pod["spec"]["nodeName"]
                # the slice controller's pod-set update, and GKE's label on the slice's hosts
                assert pod["spec"]["nodeSelector"].get(TPU_TOPOLOGY) == p["topology"] == labels[node][TPU_TOPOLOGY], (w.name, node)
                got.setdefault(int(meta[JOB_INDEX]), []).append(
                    {"subBlock": cube_of[labels[node]["cloud.google.com/gke-nodepool"]], "host": str(_host(node))})
            want = {j: sorted((h["subBlock"], str(i)) for h in s["hosts"] for i in expand(h["hosts"])) for j, s in enumerate(p["slices"])}
            have = {j: sorted((h["subBlock"], h["host"]) for h in hs) for j, hs in got.items()}
            compared += 1
            equal += have == want
            assert have == want, (w.name, have, want)
            # the stand-in slice controller made one Slice a Job, of the partitions its hosts are in
            shape = ds.SliceShape(p["topology"])
            formed = cluster.slices.formed_for(w.namespace, cluster_workload_name(cluster, w)) if cluster.slices else []
            assert [t for t, _ in formed] == [p["topology"]] * w.slices, formed
            for (_, ids), s in zip(formed, p["slices"], strict=True):
                nodes_of = [n for n, lb in labels.items() if lb.get("cloud.google.com/gke-nodepool") in cube_of
                            and (cube_of[lb["cloud.google.com/gke-nodepool"]], str(_host(n))) in
                            {(h["subBlock"], str(i)) for h in s["hosts"] for i in expand(h["hosts"])}]
                level = ds.partition_label(shape.partition)
                assert sorted(ids) == sorted({labels[n][level] for n in nodes_of}), (w.name, ids)
    return equal, compared


def cluster_workload_name(cluster: LocalCluster, w: Any) -> str:
    wl = workload(cluster, w.namespace, w.name)
    assert wl is not None
    return wl["metadata"]["name"]


def expand(ranges: str) -> list[int]:
    out: list[int] = []
    for part in ranges.split(","):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out
