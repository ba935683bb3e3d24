"""Kueue's last word on why a workload waits, seen through its scheduling-equivalence shortcut (pure).

Kueue v0.19.2 (pkg/features/kube_features.go: SchedulingEquivalenceHashing, Beta and on by default since 0.18) keeps,
per BestEffortFIFO ClusterQueue, the scheduling hash of each workload that did not fit, with its reason (pkg/cache/
queue/cluster_queue.go requeueIfNotPresent, handleInadmissibleHash; the hash is the priority and each pod set's
count, minCount, topology request and pod-spec shape: pkg/workload/workload.go computeSchedulingHash, pkg/util/pod
SpecShape). A workload with a recorded hash is set aside unevaluated, and with UnadmittedWorkloadsObservability on
(the stack turns it on) the Workload controller writes QuotaReserved=False with the hash's reason and the message
BYPASSED, though only over a placeholder reason: none, PendingEvaluation, Pending, Deactivated or Suspended; the
scheduler's own reasons it keeps (pkg/controller/core/workload_controller.go shouldCheckEquivalenceHash).

So a workload the scheduler did evaluate ends so too once its reason went back to a placeholder while its hash was
recorded: evicted or preempted (PendingEvaluation), deactivated and reactivated, or its queue stopped and started
(Suspended; seen once in the real-engine tier on a pool-set workload released from a held LocalQueue). It stays so
until a cluster event clears the hashes (pkg/cache/queue/inadmissible_workloads.go queueInadmissibleWorkloads).

The scheduler's words survive in its Warning event on the Workload (pkg/scheduler/scheduler.go requeueAndUpdate:
the condition's reason and message, the message cut to 1 KiB by pkg/util/api TruncateEventMessage; the API server
keeps events for its TTL, an hour by default), or on an equivalent workload's condition or event. Only words from
since the condition last changed count: older ones are from before an admission."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from infra.run.why_facts import conditions, meta, parse_time

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
    `events` may hold any events of the namespace; those about this Workload (and its equivalents) are read.
    `workloads` are the others of the namespace, for an equivalent one the scheduler did evaluate."""
    cond = _condition(wl, "QuotaReserved")
    if cond is None or cond.get("status") != "False":
        return None
    reason, message = str(cond.get("reason") or ""), str(cond.get("message") or "")
    if message != BYPASSED:
        return Verdict(reason, message, "condition")
    said = _said(events, wl or {}, reason)
    if said:
        return Verdict(reason, said[1], "event")
    # the equivalents Kueue set aside with it: the reason on a bypassed condition is the one recorded for the hash
    name, shape = meta(wl).get("name"), _shape(wl)
    twins = [(w, c) for w in workloads or [] if meta(w).get("name") != name and _shape(w) == shape
             and (c := _condition(w, "QuotaReserved")) is not None and c.get("status") == "False" and c.get("reason") == reason]
    heard = [(*found, meta(w).get("name")) for w, _ in twins if (found := _said(events, w, reason))]
    if heard:
        _, words, who = max(heard)
        return Verdict(reason, words, f"workload {who}")
    written = next(((w, c["message"]) for w, c in twins if c.get("message") not in (None, "", BYPASSED)), None)
    if written is not None:
        return Verdict(reason, str(written[1]), f"workload {meta(written[0]).get('name')}")
    return Verdict(reason, message, "bypassed")


def _condition(obj: Optional[dict[str, Any]], kind: str) -> Optional[dict[str, Any]]:
    return next((c for c in conditions(obj) if c.get("type") == kind), None)


def _said(events: list[dict[str, Any]], wl: dict[str, Any], reason: str) -> Optional[tuple[float, str]]:
    """(when, words) of the scheduler's latest Warning event on Workload `wl` since its QuotaReserved condition
    last changed (its reason, or Pending without the observability gate), or None."""
    own = meta(wl)
    since = parse_time((_condition(wl, "QuotaReserved") or {}).get("lastTransitionTime")) or 0.0
    found = []
    for e in events:
        about = e.get("involvedObject") or e.get("regarding") or {}
        if (about.get("kind") != "Workload" or about.get("name") != own.get("name")
                or (about.get("uid") and own.get("uid") and about["uid"] != own["uid"])):
            continue
        when = parse_time(_when(e)) or 0.0
        if e.get("type") == "Warning" and e.get("reason") in (reason, "Pending") and e.get("message") and when >= since:
            found.append((when, str(e["message"])))
    return max(found) if found else None


def _when(event: dict[str, Any]) -> str:
    # an events.k8s.io event seen through core/v1: eventTime, and series.lastObservedTime once it repeats
    return str(((event.get("series") or {}).get("lastObservedTime")) or event.get("lastTimestamp") or event.get("eventTime") or "")


_SPEC_SHAPE = ("nodeSelector", "affinity", "tolerations", "runtimeClassName", "priority", "topologySpreadConstraints",
               "overhead", "resourceClaims")


def _shape(wl: Optional[dict[str, Any]]) -> str:
    """What Kueue's scheduling hash covers, as the Workload shows it (pkg/workload/workload.go computeSchedulingHash,
    pkg/util/pod/pod.go SpecShape), and its queue: two workloads alike in it are set aside together."""
    spec = (wl or {}).get("spec") or {}
    sets = []
    for ps in spec.get("podSets") or []:
        pod = (ps.get("template") or {}).get("spec") or {}
        containers = {kind: [{"requests": (c.get("resources") or {}).get("requests"), "ports": c.get("ports")}
                             for c in pod.get(kind) or []] for kind in ("containers", "initContainers")}
        sets.append({"name": ps.get("name"), "count": ps.get("count"), "minCount": ps.get("minCount"),
                     "topologyRequest": ps.get("topologyRequest"), **containers,
                     **{k: pod.get(k) for k in _SPEC_SHAPE}, "resources": (pod.get("resources") or {}).get("requests")})
    return json.dumps([spec.get("priority"), spec.get("queueName"), sets], sort_keys=True, default=str)
