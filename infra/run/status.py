"""Where each run stands, from what the JobSet controller and Kueue wrote (pure: objects in, rows out).

Kueue v0.19 (apis/kueue/v1beta2/workload_types.go): a JobSet's Workload (owner reference to the JobSet) carries
the conditions QuotaReserved, Admitted, Evicted (reason Preempted, InactiveWorkload, ...), Preempted, Requeued and
Finished; while it waits, QuotaReserved is False with Kueue's reason in its message ("couldn't assign flavors to
pod set worker: insufficient quota for google.com/tpu in flavor ..."). Its place in line comes from Kueue's
visibility API (pendingworkloads of a LocalQueue: positionInClusterQueue, positionInLocalQueue). The JobSet
controller's own conditions (jobset_types.go): Completed, Failed, Suspended.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from components.model.workloads.runs import MANAGED_BY_LABEL, RUN_MANAGER
from infra.run.kueue_verdict import quota_verdict


@dataclass(frozen=True)
class Position:
    cluster_queue: int
    local_queue: int


@dataclass(frozen=True)
class RunRow:
    name: str
    owner: str
    """run (python -m infra.run) or stack (declared in the stack file, managed by Pulumi)."""
    state: str
    queue: str
    position: str
    priority: str
    age: str
    why: str
    cluster: str = "-"
    reason: str = "-"
    """`why`'s dominant reason (infra/run/why.py)."""
    """On a fleet manager: the worker cluster MultiKueue dispatched it to (Workload.status.clusterName)."""

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)


def condition(obj: Optional[dict[str, Any]], kind: str) -> Optional[dict[str, Any]]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c
    return None


def is_true(obj: Optional[dict[str, Any]], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def owner(jobset: dict[str, Any]) -> str:
    labels = (jobset.get("metadata") or {}).get("labels") or {}
    return "run" if labels.get(MANAGED_BY_LABEL) == RUN_MANAGER else "stack"


def workload_of(jobset: dict[str, Any], workloads: list[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """The Kueue Workload Kueue made for this JobSet (its owner reference), the newest if several."""
    uid = (jobset.get("metadata") or {}).get("uid")
    mine = [w for w in workloads if any(r.get("kind") == "JobSet" and r.get("uid") == uid
                                        for r in (w.get("metadata") or {}).get("ownerReferences") or [])]
    return max(mine, key=lambda w: (w.get("metadata") or {}).get("creationTimestamp", ""), default=None)


def _message(c: Optional[dict[str, Any]]) -> str:
    return " ".join(str((c or {}).get("message") or (c or {}).get("reason") or "").split())


def state(jobset: dict[str, Any], workload: Optional[dict[str, Any]], kueue: bool, position: Optional[Position]) -> tuple[str, str, str]:
    """(state, position, why) of one JobSet."""
    if is_true(jobset, "Completed"):
        return "finished", "-", _message(condition(jobset, "Completed")) or "succeeded"
    if is_true(jobset, "Failed"):
        return "failed", "-", _message(condition(jobset, "Failed"))
    if not kueue:
        if (jobset.get("spec") or {}).get("suspend"):
            return "suspended", "-", "spec.suspend"
        return "running", "-", ""
    if workload is None:
        return "created", "-", "Kueue has not made its Workload yet"
    if is_true(workload, "Finished"):
        return "finished", "-", _message(condition(workload, "Finished"))
    place = "-" if position is None else f"{position.cluster_queue + 1} in ClusterQueue, {position.local_queue + 1} in LocalQueue"
    # before Admitted: a workload being preempted or deactivated stays Admitted until its pods are gone
    evicted = condition(workload, "Evicted")
    if evicted is not None and evicted.get("status") == "True":
        reason = evicted.get("reason") or ""
        label = "preempted" if reason == "Preempted" else f"evicted ({reason})" if reason else "evicted"
        return label, place, _message(evicted)
    if is_true(workload, "Admitted"):
        return "admitted", "-", _message(condition(workload, "Admitted"))
    if is_true(workload, "QuotaReserved"):
        checks = [f"{c.get('name')}: {c.get('state')}" + (f" ({c['message']})" if c.get("message") else "")
                  for c in (workload.get("status") or {}).get("admissionChecks") or []]
        return "admission checks", "-", "; ".join(checks) or _message(condition(workload, "Admitted"))
    active = ((workload.get("spec") or {}).get("active"))
    if active is False:
        return "inactive", "-", _message(condition(workload, "Requeued")) or "spec.active is false"
    return "waiting", place, _message(condition(workload, "QuotaReserved")) or "not yet considered by Kueue"


def age(created: str, now: float) -> str:
    """kubectl's style: 45s, 12m, 3h, 2d."""
    from datetime import datetime

    if not created:
        return "-"
    seconds = max(0, int(now - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def rows(jobsets: list[dict[str, Any]], workloads: list[dict[str, Any]], positions: dict[str, Position],
         kueue: bool, now: float, reasons: Optional[dict[str, str]] = None,
         events: Optional[list[dict[str, Any]]] = None) -> list[RunRow]:
    """One row per JobSet: runs and the stack's own, oldest first. `positions`: Workload name -> place in line;
    `reasons`: JobSet name -> `why`'s reason; `events`: the namespace's, for Kueue's words where its condition says
    only that it bypassed the workload (infra/run/kueue_verdict.py)."""
    out = []
    for js in sorted(jobsets, key=lambda j: ((j.get("metadata") or {}).get("creationTimestamp", ""), j["metadata"]["name"])):
        meta = js.get("metadata") or {}
        labels = meta.get("labels") or {}
        wl = workload_of(js, workloads)
        wl_name = ((wl or {}).get("metadata") or {}).get("name", "")
        st, place, why = state(js, wl, kueue, positions.get(wl_name))
        verdict = quota_verdict(wl, events or [], workloads) if st == "waiting" else None
        if verdict is not None and verdict.source != "condition":
            why = " ".join(verdict.message.split())
        out.append(RunRow(
            name=meta.get("name", ""), owner=owner(js), state=st,
            queue=labels.get("kueue.x-k8s.io/queue-name", "-"), position=place,
            priority=labels.get("kueue.x-k8s.io/priority-class", "-"),
            age=age(meta.get("creationTimestamp", ""), now), why=why,
            cluster=str(((wl or {}).get("status") or {}).get("clusterName") or "-"),
            reason=(reasons or {}).get(meta.get("name", ""), "-"),
        ))
    return out


def positions(pending: list[dict[str, Any]]) -> dict[str, Position]:
    """Workload name -> its place, from the items of pendingworkloads answers."""
    return {
        (p.get("metadata") or {}).get("name", ""): Position(int(p.get("positionInClusterQueue", 0)), int(p.get("positionInLocalQueue", 0)))
        for p in pending
    }


def table(found: list[RunRow]) -> str:
    # CLUSTER only where MultiKueue dispatched something (a fleet manager): elsewhere every row would say "-"
    fleet = any(r.cluster != "-" for r in found)
    headers = ("NAME", "OWNER", "STATE", *(("CLUSTER",) if fleet else ()), "QUEUE", "POSITION", "PRIORITY", "AGE", "REASON", "WHY")
    cells = [headers, *((r.name, r.owner, r.state, *((r.cluster,) if fleet else ()), r.queue, r.position, r.priority, r.age, r.reason, r.why)
                        for r in found)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers) - 1)]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(headers) - 1)) + "  " + c[-1] for c in cells) + "\n"
