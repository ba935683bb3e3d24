"""What `python -m infra.run why` reads (the stack's view and the cluster's objects) and what it answers, with the
small readers of Kubernetes objects it shares (pure). infra/run/why.py names the sources."""


from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from components.constants import SLICE_GROUP_LABEL

JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"  # the JobSet controller's label on its Jobs and pods
IMAGE_WAITING = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
SIGTERM = 143  # a container stopped because its pod was deleted: a consequence, never the cause


@dataclass(frozen=True)
class Group:
    """A slice group as the stack file makes it."""
    name: str
    count: int
    hosts: int
    topology: str
    reservation: Optional[str] = None
    queued: bool = False


@dataclass(frozen=True)
class Declared:
    """A workload the stack file declares."""
    name: str
    state: str
    local_queue: Optional[str]
    fail_on_exit_codes: tuple[int, ...] = ()


@dataclass(frozen=True)
class StackView:
    """What `why` needs of the stack's model (built from it by infra/run/gather.py stack_view)."""
    stack: str
    namespace: str
    groups: dict[str, Group]
    declared: dict[str, Declared]
    run_queues: tuple[str, ...]
    runs_account: str = ""
    runs_buckets: tuple[str, ...] = ()
    buckets_key: str = "runs.buckets"  # where the namespace's run buckets are listed: runs.buckets, or teams[i].buckets


@dataclass(frozen=True)
class Evidence:
    """What the cluster holds about one JobSet, gathered with the user's kubeconfig."""
    name: str
    jobset: Optional[dict[str, Any]]
    workload: Optional[dict[str, Any]] = None
    jobs: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Events in the namespace about the JobSet, its Jobs, pods and Workload."""
    workload_events: list[dict[str, Any]] = field(default_factory=list)
    """Every event in the namespace about a Workload: Kueue's words on an equivalent one (infra/run/kueue_verdict.py)."""
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    cluster_queue: Optional[dict[str, Any]] = None
    workloads: list[dict[str, Any]] = field(default_factory=list)
    """Every Workload of the namespace: who holds the quota, who preempted."""
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Kueue's visibility API: the LocalQueue's pending workloads with their places."""
    provisioning_requests: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    now: float = 0.0
    """When it was gathered (epoch seconds): for how long things have been as they are."""
    unread: tuple[str, ...] = ()
    """Kinds the user's kubeconfig could not read (RBAC): their absence proves nothing."""


@dataclass(frozen=True)
class Diagnosis:
    reason: str
    summary: str
    evidence: tuple[str, ...]
    fix: str
    detail: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "summary": self.summary, "evidence": list(self.evidence), "fix": self.fix,
                "detail": list(self.detail)}

    def text(self, verbose: bool = False) -> str:
        lines = [f"{self.reason}: {self.summary}", *(f"  {e}" for e in self.evidence), f"  fix: {self.fix}"]
        if verbose:
            lines += [f"  - {d}" for d in self.detail]
        return "\n".join(lines) + "\n"


# --- small readers ----------------------------------------------------------------------------------------------

def conditions(obj: Optional[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(((obj or {}).get("status") or {}).get("conditions") or [])


def meta(obj: Optional[dict[str, Any]]) -> dict[str, Any]:
    return (obj or {}).get("metadata") or {}


def one_line(text: Any, limit: int = 300) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= limit else s[:limit - 3] + "..."


def parse_time(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def events_of(ev: Evidence, *reasons: str) -> list[dict[str, Any]]:
    found = [e for e in ev.events if e.get("reason") in reasons]
    return sorted(found, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")


def role_of(pod: dict[str, Any]) -> str:
    labels = meta(pod).get("labels") or {}
    job = labels.get("jobset.sigs.k8s.io/replicatedjob-name", "")
    index = labels.get("jobset.sigs.k8s.io/job-index")
    return "head" if "head" in job else f"worker (slice {index})" if index is not None else job or "pod"


def group_of(pod: dict[str, Any], view: StackView) -> Optional[Group]:
    spec = pod.get("spec") or {}
    selector = spec.get("nodeSelector") or {}
    name = selector.get(SLICE_GROUP_LABEL)
    if name is None:
        for term in (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
                "nodeSelectorTerms") or []:
            for expr in term.get("matchExpressions") or []:
                if expr.get("key") == SLICE_GROUP_LABEL and expr.get("values"):
                    name = expr["values"][0]
    return view.groups.get(name) if name else None


def restarts_left(jobset: dict[str, Any]) -> str:
    policy = (jobset.get("spec") or {}).get("failurePolicy") or {}
    status = jobset.get("status") or {}
    most = int(policy.get("maxRestarts") or 0)
    spent = int(status.get("restartsCountTowardsMax") or status.get("restarts") or 0)
    return f"{max(0, most - spent)} of {most}"
