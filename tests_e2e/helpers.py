"""What the scenarios read back from the API server: pods, nodes, Kueue Workloads."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import yaml

from infra.run.kueue_verdict import Verdict, quota_verdict
from tools.cluster.local import ClusterError, LocalCluster

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"


def nodes(cluster: LocalCluster) -> dict[str, dict[str, str]]:
    """Node name -> labels."""
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in cluster.get("nodes")["items"]}


def pods(cluster: LocalCluster, namespace: str, jobset: str) -> list[dict[str, Any]]:
    return cluster.get("pods", "-n", namespace, "-l", f"{JOBSET_NAME}={jobset}")["items"]


def running(pod: dict[str, Any]) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")


def wait_running(cluster: LocalCluster, namespace: str, jobset: str, count: int, timeout: float = 120) -> list[dict[str, Any]]:
    """The JobSet's pods once exactly `count` of them run."""
    def done():
        ps = [p for p in pods(cluster, namespace, jobset) if running(p)]
        return ps if len(ps) == count else None
    try:
        return cluster.wait_for(f"{count} running pods of JobSet {namespace}/{jobset}", done, timeout=timeout)
    except ClusterError as e:  # say where each pod is: the scheduler's reason for a pending one
        def where(p: dict[str, Any]) -> str:
            scheduled = next((c for c in p.get("status", {}).get("conditions") or [] if c.get("type") == "PodScheduled"), {})
            return f"{p['metadata']['name']}: {p.get('status', {}).get('phase')} on {p['spec'].get('nodeName')} {scheduled.get('message') or ''}"
        nodes_now = [f"{n['metadata']['name']} {n['status'].get('allocatable')}" for n in cluster.get("nodes")["items"]]
        raise ClusterError(f"{e}\npods: {[where(p) for p in pods(cluster, namespace, jobset)]}\nnodes: {nodes_now}") from None


def workload(cluster: LocalCluster, namespace: str, jobset: str) -> dict[str, Any] | None:
    """The Kueue Workload of a JobSet (Kueue names it after the JobSet and owns it through it)."""
    for w in cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"]:
        if any(o.get("kind") == "JobSet" and o.get("name") == jobset for o in w["metadata"].get("ownerReferences", [])):
            return w
    return None


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    # a condition list may be null (a CRD's status before the API server has judged it)
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


def is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    c = condition(obj, kind)
    return bool(c and c["status"] == "True")


def kueue_judged(cluster: LocalCluster, namespace: str, find: Callable[[], dict[str, Any] | None], what: str, says: str,
                 timeout: float = 60) -> tuple[dict[str, Any], Verdict]:
    """The unadmitted Workload `find` returns, once Kueue's scheduler has judged it with words that contain `says`:
    read through Kueue's scheduling-equivalence shortcut, which may leave the condition saying only "Bypassed ..."
    (its event, or an equivalent workload's, has them: infra/run/kueue_verdict.py). A timeout names the last verdict."""
    seen: list[Verdict | None] = [None]

    def judged() -> tuple[dict[str, Any], Verdict] | None:
        wl = find()
        if wl is None or is_true(wl, "Admitted"):
            return None
        events = cluster.get("events", "-n", namespace, "--field-selector", "involvedObject.kind=Workload")["items"]
        seen[0] = verdict = quota_verdict(wl, events, cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"])
        ok = verdict is not None and verdict.evaluated and verdict.source != "bypassed" and says in verdict.message
        return (wl, verdict) if ok else None
    try:
        return cluster.wait_for(f"Kueue judges {what}", judged, timeout=timeout)
    except ClusterError as e:
        raise ClusterError(f"{e}; Kueue's last verdict: {seen[0]}") from None


def placement(cluster: LocalCluster, jobset_pods: list[dict[str, Any]]) -> dict[tuple[str, int], list[str]]:
    """(replicatedJob, job index) -> the node pools its pods run on."""
    labels = nodes(cluster)
    out: dict[tuple[str, int], list[str]] = defaultdict(list)
    for p in jobset_pods:
        meta = p["metadata"]["labels"]
        out[(meta[REPLICATED_JOB], int(meta[JOB_INDEX]))].append(labels[p["spec"]["nodeName"]]["cloud.google.com/gke-nodepool"])
    return dict(out)


CONTROLLER_NAMESPACES = ("jobset-system", "kueue-system", "lws-system")


def controller_pods(cluster: LocalCluster) -> dict[str, list[dict[str, Any]]]:
    """Namespace -> the pods the controllers' Deployments run there (those namespaces that exist)."""
    out = {}
    existing = {n["metadata"]["name"] for n in cluster.get("namespaces")["items"]}
    for ns in CONTROLLER_NAMESPACES:
        if ns in existing:
            out[ns] = [p for p in cluster.get("pods", "-n", ns)["items"] if not p["metadata"].get("deletionTimestamp")]
    return out


def user_stack_file(cluster: LocalCluster, config: dict[str, Any], directory: Path, name: str) -> Path:
    """The stack file a user of this cluster has: the same config, on the cluster made elsewhere."""
    from tools.cluster.deploy import existing_mode

    path = directory / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": existing_mode(config, cluster)}))
    return path
