"""What each kind of failure does to a workload, in words: the plan prints it and docs/resilience.md explains it.

Pure: read from the resolved workload, the same facts the JobSet and LeaderWorkerSet builders render (JobSet
v0.12.0 failurePolicy and the Jobs' podFailurePolicy; LWS RecreateGroupOnPodRestart). Sources are in
docs/resilience.md.
"""

from __future__ import annotations

from components.model.common import UNLIMITED_RESTARTS_PER_HOST
from components.model.resolved import ResolvedWorkload

DISRUPTION = "disruption (eviction, preemption, node maintenance)"


def _restart(w: ResolvedWorkload) -> str:
    if w.restarts == 0:
        return "fails the JobSet (maxRestarts 0)"
    spares = f"; the restart may land on the group's {w.group.spares} spare slice(s)" if w.group.spares else ""
    return f"restarts the JobSet and spends 1 of {w.restarts} maxRestarts (then it fails){spares}"


def _worker_retries(w: ResolvedWorkload) -> str:
    where = "in a new pod on its slice" if w.spec.on_failure else "in place on its host"
    if w.worker_backoff_limit >= UNLIMITED_RESTARTS_PER_HOST:
        return f"retried {where} without limit"
    return f"retried {where}, up to {w.worker_backoff_limit} times a slice (backoffLimit), then: {_restart(w)}"


def _worker_replaced(w: ResolvedWorkload) -> str:
    """Without rules an evicted worker pod is not restarted in place: it is gone, and its Job makes a new pod, which
    the Job counts as a failure like a crash (no podFailurePolicy to ignore the DisruptionTarget condition)."""
    if w.worker_backoff_limit >= UNLIMITED_RESTARTS_PER_HOST:
        return "its pod is gone: the worker's Job makes a new one on its slice, without limit"
    return (f"its pod is gone: the worker's Job makes a new one on its slice and counts it as a failure, up to "
            f"{w.worker_backoff_limit} a slice with the crashes (backoffLimit), then: {_restart(w)}")


def failure_handling(w: ResolvedWorkload) -> list[tuple[str, str]]:
    """(kind of failure, what happens), in the order a reader meets them."""
    if w.mode == "serve":
        return [("any pod of a replica fails or is evicted",
                 "the LeaderWorkerSet recreates that replica's group (leader and workers); the other replicas keep serving")]
    rules = w.spec.on_failure
    if rules is None:
        return [
            ("no failure rules", "every failure counts, disruptions included (onFailure: {} turns the rules on)"),
            (f"head pod fails, or a {DISRUPTION}", _restart(w)),
            ("worker crashes", _worker_retries(w)),
            (f"{DISRUPTION} of a worker", _worker_replaced(w)),
        ]
    out = [
        (f"{DISRUPTION} of the head",
         f"restarts the JobSet without spending maxRestarts (restartStrategy {rules.restart_strategy})"),
        (f"{DISRUPTION} of a worker",
         "the slice's pod is replaced when it can run again, the program keeps the other slices (elastic), no restart spent"
         if w.spec.elastic else f"restarts the JobSet without spending maxRestarts (restartStrategy {rules.restart_strategy}), "
         "unless the program exits on losing the worker before the worker's Job has failed: then it spends 1"),
    ]
    if w.fail_on_exit_codes:
        codes = ", ".join(str(c) for c in w.fail_on_exit_codes)
        out.append((f"program exits {codes}", "fails the JobSet at once, no restart (the program is wrong, not the slices)"))
    out += [
        ("head pod fails otherwise", _restart(w)),
        ("worker crashes", _worker_retries(w)),
    ]
    return out
