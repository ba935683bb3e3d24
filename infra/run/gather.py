"""What `why` and `list` read from the cluster, once for the whole namespace (one kubectl call a kind), and the
stack's view `why` judges it against (from the stack's resolved model)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional

from components.manifests.kueue_api import QUEUE_LABEL
from infra.run.kube import Kubectl, KubeError
from infra.run.status import workload_of
from infra.run.why_facts import JOBSET_LABEL, Declared, Evidence, Group, StackView, meta


def stack_view(stack: Any, team: Optional[str] = None) -> StackView:
    """The facts of a ResolvedStack `why` needs: in the stack's namespace, or a team's (its run queue, its workloads)."""
    groups = {g.name: Group(g.name, g.count, g.tpu.hosts, g.tpu.topology, g.reservation, g.queued_provisioning) for g in stack.slices}
    chosen = stack.team(team)
    namespace = chosen.team_namespace if chosen is not None else stack.namespace
    declared = {w.name: Declared(w.name, w.state, w.local_queue, w.fail_on_exit_codes) for w in stack.workloads if w.namespace == namespace}
    runs = stack.runs
    if chosen is not None:
        return StackView(stack=stack.stack, namespace=namespace, groups=groups, declared=declared,
                         run_queues=(stack.team_run_queue(chosen),) if runs is not None else (),
                         runs_account=stack.run_service_account if runs is not None else "",
                         runs_buckets=tuple(b.name for b in chosen.buckets), buckets_key=f"teams[{list(stack.teams).index(chosen)}].buckets")
    return StackView(stack=stack.stack, namespace=namespace, groups=groups, declared=declared,
                     run_queues=tuple(sorted(set(stack.run_queues.values()))) if runs is not None else (),
                     runs_account=stack.run_service_account if runs is not None else "",
                     runs_buckets=tuple(b.name for b in runs.buckets) if runs is not None else ())


@dataclass
class Snapshot:
    """The namespace's objects, read once; what could not be read (RBAC) is said in `unread`."""
    namespace: str
    jobsets: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    cluster_queues: list[dict[str, Any]] = field(default_factory=list)
    provisioning_requests: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)
    now: float = 0.0


def _read(kube: Kubectl, snap: Snapshot, resource: str, namespace: Optional[str]) -> list[dict[str, Any]]:
    try:
        return kube.items(resource, namespace) if namespace else kube.cluster_items(resource)
    except KubeError as e:
        snap.unread.append(f"{resource}: {e}")
        return []


def snapshot(kube: Kubectl, namespace: str, kueue: bool, only: Optional[str] = None) -> Snapshot:
    """`only`: the JobSet `why` is asked about (its queue's places in line alone are read); None for `list`."""
    snap = Snapshot(namespace, now=time.time())
    snap.jobsets = kube.items("jobsets.jobset.x-k8s.io", namespace)  # without these nothing is known: its error stands
    snap.jobs = _read(kube, snap, "jobs.batch", namespace)
    snap.pods = _read(kube, snap, "pods", namespace)
    snap.events = _read(kube, snap, "events", namespace)
    snap.nodes = _read(kube, snap, "nodes", None)
    if kueue:
        snap.workloads = _read(kube, snap, "workloads.kueue.x-k8s.io", namespace)
        snap.local_queues = _read(kube, snap, "localqueues.kueue.x-k8s.io", namespace)
        snap.cluster_queues = _read(kube, snap, "clusterqueues.kueue.x-k8s.io", None)
        snap.provisioning_requests = _read(kube, snap, "provisioningrequests.autoscaling.x-k8s.io", namespace)
        mine = [(meta(j).get("labels") or {}).get(QUEUE_LABEL) for j in snap.jobsets if only is None or meta(j).get("name") == only]
        known = {meta(q).get("name") for q in snap.local_queues}
        for queue in sorted({str(q) for q in mine if q} & known):
            answer = kube.pending_workloads(namespace, queue)
            if isinstance(answer, str):
                if "NotFound" not in answer:  # a held queue is not listed: its workloads have no place to give
                    snap.unread.append(f"pending workloads of {queue}: {answer}")
            else:
                snap.pending[queue] = answer
    return snap


def evidence(snap: Snapshot, name: str) -> Evidence:
    """Everything in the snapshot about JobSet `name`."""
    js = next((j for j in snap.jobsets if meta(j).get("name") == name), None)
    wl = workload_of(js, snap.workloads) if js is not None else None
    jobs = [j for j in snap.jobs if (meta(j).get("labels") or {}).get(JOBSET_LABEL) == name]
    pods = [p for p in snap.pods if (meta(p).get("labels") or {}).get(JOBSET_LABEL) == name]
    about = {name, *(meta(o).get("name") for o in (*jobs, *pods)), *([meta(wl).get("name")] if wl else [])}
    events = [e for e in snap.events if (e.get("involvedObject") or {}).get("name") in about]
    queue = (meta(js).get("labels") or {}).get(QUEUE_LABEL) if js else None
    lq = next((q for q in snap.local_queues if meta(q).get("name") == queue), None)
    cq_name = (((wl or {}).get("status") or {}).get("admission") or {}).get("clusterQueue") or ((lq or {}).get("spec") or {}).get("clusterQueue")
    cq = next((c for c in snap.cluster_queues if meta(c).get("name") == cq_name), None)
    workload_events = [e for e in snap.events if (e.get("involvedObject") or {}).get("kind") == "Workload"]
    return Evidence(name=name, jobset=js, workload=wl, jobs=jobs, pods=pods, events=events, workload_events=workload_events,
                    local_queues=snap.local_queues,
                    cluster_queue=cq, workloads=snap.workloads, pending=snap.pending.get(queue or "", []),
                    provisioning_requests=snap.provisioning_requests, nodes=snap.nodes, now=snap.now, unread=tuple(snap.unread))
