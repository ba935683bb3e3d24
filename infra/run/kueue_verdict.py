"""Kueue's last word on why a workload waits, seen through its scheduling-equivalence shortcut (pure).

Kueue v0.19.2 (pkg/features/kube_features.go: SchedulingEquivalenceHashing, Beta and on by default since 0.18) keeps,
per ClusterQueue, the scheduling hashes of workloads that did not fit (pkg/cache/queue/cluster_queue.go
requeueIfNotPresent; the hash is the priority and each pod set's spec shape, count, requests and topology request:
pkg/workload/workload.go computeSchedulingHash). A workload whose hash is there is set aside without being evaluated,
and the Workload controller writes QuotaReserved=False with the message BYPASSED in place of the scheduler's
("couldn't assign flavors ...": pkg/controller/core/workload_controller.go resolveGranularUnadmittedQuotaReservedCondition).
That also happens to the workload the scheduler did evaluate: the controller may read the workload before the
scheduler's status patch lands and write over it, and the scheduler does not look again until a cluster event
clears the hashes. Either way the scheduler's own words survive in its event on the Workload (pkg/scheduler/
scheduler.go requeueAndUpdate: a Warning with the condition's reason and the same message), or on the
equivalent workload it did evaluate; `why` and the real-engine tier read them there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

BYPASSED = "Bypassed scheduling evaluation because an equivalent workload recently failed"
PENDING_EVALUATION = "PendingEvaluation"


@dataclass(frozen=True)
class Verdict:
    """Why Kueue has not reserved quota: its reason, its message, and where the message was read."""
    reason: str
    message: str
    source: str
    """"condition", "event" (the scheduler's on this Workload), "workload <name>" (an equivalent one's condition)
    or "bypassed" (only Kueue's shortcut message was found)."""

    @property
    def evaluated(self) -> bool:
        """The scheduler has judged it (or one just like it): not a workload still waiting for its first look."""
        return bool(self.message) and self.reason != PENDING_EVALUATION


def quota_verdict(wl: Optional[dict[str, Any]], events: list[dict[str, Any]],
                  workloads: Optional[list[dict[str, Any]]] = None) -> Optional[Verdict]:
    """Kueue's verdict on an unadmitted Workload, None while it has no QuotaReserved=False condition.
    `events` may hold any events of the namespace; those about this Workload are read. `workloads` are the others
    of the namespace, for the equivalent one the scheduler did evaluate."""
    cond = _condition(wl, "QuotaReserved")
    if cond is None or cond.get("status") != "False":
        return None
    reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
    if message != BYPASSED:
        return Verdict(reason, message, "condition")
    name = (wl or {}).get("metadata", {}).get("name")
    said = _said(events, name, reason)
    if said:
        return Verdict(reason, said, "event")
    shape = _shape(wl)
    for other in workloads or []:
        other_name = other.get("metadata", {}).get("name")
        c = _condition(other, "QuotaReserved")
        if other_name == name or _shape(other) != shape or c is None or c.get("status") != "False":
            continue
        if c.get("message") and c.get("message") != BYPASSED and c.get("reason") != PENDING_EVALUATION:
            return Verdict(str(c.get("reason") or reason), str(c["message"]), f"workload {other_name}")
        if c.get("message") == BYPASSED and (said := _said(events, other_name, str(c.get("reason") or ""))):
            return Verdict(reason, said, f"workload {other_name}")
    return Verdict(reason, message, "bypassed")


def _said(events: list[dict[str, Any]], name: Optional[str], reason: str) -> str:
    """The scheduler's latest words on Workload `name` (its Warning events carry the condition's reason, or Pending)."""
    said = [e for e in events if _about(e, name) and e.get("type") == "Warning" and e.get("reason") in (reason, "Pending")
            and e.get("message")]
    return str(max(said, key=_when)["message"]) if said else ""


def _condition(obj: Optional[dict[str, Any]], kind: str) -> Optional[dict[str, Any]]:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def _about(event: dict[str, Any], name: Optional[str]) -> bool:
    regarding = event.get("involvedObject") or event.get("regarding") or {}
    return regarding.get("kind") == "Workload" and regarding.get("name") == name


def _when(event: dict[str, Any]) -> str:
    # an events.k8s.io event seen through core/v1: eventTime, and series.lastObservedTime once it repeats
    return str(((event.get("series") or {}).get("lastObservedTime")) or event.get("lastTimestamp") or event.get("eventTime") or "")


def _shape(wl: Optional[dict[str, Any]]) -> tuple[Any, ...]:
    """What Kueue's scheduling hash covers that the Workload shows: its priority and each pod set's name, count,
    topology request and requests (the pod template's containers)."""
    spec = (wl or {}).get("spec") or {}
    sets = []
    for ps in spec.get("podSets") or []:
        containers = ((ps.get("template") or {}).get("spec") or {}).get("containers") or []
        sets.append((ps.get("name"), ps.get("count"), repr(ps.get("topologyRequest")),
                     repr([((c.get("resources") or {}).get("requests") or {}) for c in containers])))
    return spec.get("priority"), spec.get("queueName"), tuple(sets)
