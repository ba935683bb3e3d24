"""What the scenarios read back from the API server: pods, nodes, Kueue Workloads."""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import yaml

from infra.run.kueue_verdict import Verdict, quota_verdict
from tools.cluster.local import ClusterError, LocalCluster, log

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


def over_the_ceiling_is_never_admitted(cluster: LocalCluster, m: Any, w: Any) -> None:
    """#76.1 on every stack: the plan's ceiling for an admitted workload's queue and group (the quota model the Kueue
    objects are rendered from) is the real Kueue's. A copy of its JobSet asking one slice more (what the plan refuses,
    made by hand) is judged by Kueue as over quota and never admitted; the workload itself, at or under the ceiling,
    is admitted (the caller saw it)."""
    from components.manifests import kueue as kueue_manifest
    from components.model.capacity.queue_shares import ceiling
    from components.model.resolved import QUEUE

    assert w.cluster_queue and not w.group.dynamic and not w.group.ladder, w.name

    shares = kueue_manifest.slice_shares(m)
    most = ceiling(list(shares.values()), w.cluster_queue, w.group.name, {t.cohort: QUEUE for t in m.teams if t.cohort}).slices
    assert w.slices <= most, (w.name, w.slices, most)
    jobset = cluster.get("jobset", "-n", w.namespace, w.name)
    name = f"{w.name[:30]}-over"
    copy_ = {"apiVersion": jobset["apiVersion"], "kind": "JobSet",
             "metadata": {"name": name, "namespace": w.namespace, "labels": dict(jobset["metadata"].get("labels") or {}),
                          "annotations": {k: v for k, v in (jobset["metadata"].get("annotations") or {}).items()
                                          if not k.startswith("kubectl.kubernetes.io/")}},
             "spec": copy.deepcopy(jobset["spec"])}
    copy_["spec"].pop("suspend", None)
    (worker,) = [rj for rj in copy_["spec"]["replicatedJobs"] if rj["name"] == w.worker_job]
    worker["replicas"] = most + 1
    # the workers' pod set first: Kueue's message names the first pod set it cannot fit, and the head's quota is
    # busy with the workload itself (that is "not now"; the slices over the ceiling are "never")
    copy_["spec"]["replicatedJobs"] = [worker, *(rj for rj in copy_["spec"]["replicatedJobs"] if rj is not worker)]
    cluster.apply([copy_])
    try:
        # Kueue's "never" (flavorassigner fitsResourceQuota: the request exceeds the ClusterQueue's potential
        # available, nominal quota plus what it may borrow), as against "insufficient unused quota" (not now)
        _, verdict = kueue_judged(cluster, w.namespace, lambda: workload(cluster, w.namespace, name), name, "> maximum capacity", timeout=120)
        assert "google.com/tpu" in verdict.message and f"({(most + 1) * w.group.tpu.chips})" in verdict.message, verdict
        # and Kueue's own maximum for the group's flavor is the plan's ceiling: a plan that promised more than Kueue
        # can ever give (the #76 failure) would show here as a smaller number
        maxima = dict(re.findall(r"insufficient quota for google\.com/tpu in flavor (\S+), previously considered podsets "
                                 r"requests \([^)]*\) \+ current podset request \([^)]*\) > maximum capacity \(([^)]*)\)", verdict.message))
        assert maxima.get(kueue_manifest.flavor_name(w.group)) == str(most * w.group.tpu.chips), (maxima, verdict.message)
        assert not is_true(workload(cluster, w.namespace, name), "Admitted"), verdict
        log(f"{m.stack}: {w.cluster_queue}/{w.group.name} ceiling {most}; {most + 1} slices: {verdict.message[:160]}")
    finally:
        cluster.kubectl("delete", "jobset", "-n", w.namespace, name, "--wait=true", timeout=180)


def resolved(config: dict[str, Any], stack: str) -> Any:
    """The resolved model of a stack file's config mapping, as the plan builds it."""
    from components.model.config import load, resolve
    from infra.offline.stackfile import flatten, raw_values

    flat, secrets = flatten(config)
    return resolve(load(raw_values(flat), stack, frozenset(secrets)))
