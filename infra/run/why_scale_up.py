"""`why` on pods waiting for a node pool the cluster autoscaler is scaling up (#74.7; pure): a scale-to-zero slice
group has no nodes until a run asks, and TPU VMs take minutes to come up, which is starting, not missing capacity.

The cluster autoscaler's events on the pods say which (kubernetes/autoscaler, cluster-autoscaler FAQ "What events
are emitted by CA?"): TriggeredScaleUp ("pod triggered scale-up: [{<group> 0->4 (max: 4)}]"), then either nodes, or
FailedScaleUp (e.g. "GCE out of resources") / NotTriggerScaleUp ("pod didn't trigger scale-up"), which are not."""

from __future__ import annotations

from typing import Optional

from infra.run.why_facts import Diagnosis, Evidence, duration, events_of, one_line, parse_time


def scaling_up(ev: Evidence, group: str, have: int, wanted: int, evidence: tuple[str, ...]) -> Optional[Diagnosis]:
    said = events_of(ev, "TriggeredScaleUp", "FailedScaleUp", "NotTriggerScaleUp")
    if not said or said[-1].get("reason") != "TriggeredScaleUp":
        return None  # never asked, or the last word is that it cannot: the caller's no-capacity
    last = said[-1]
    at = parse_time(last.get("lastTimestamp") or last.get("eventTime"))
    since = f", asked {duration(ev.now - at)} ago" if at and ev.now else ""
    return Diagnosis("starting", f"group {group}'s nodes are coming up: the cluster autoscaler is scaling it up ({have} of {wanted} "
                     f"nodes{since})", (*evidence, f"autoscaler: {one_line(last.get('message'))}"),
                     "wait: TPU VMs take minutes to come up; `why` says so if GKE cannot make them (FailedScaleUp: a stock-out, quota)")
