"""Ad-hoc runs: experiments submitted with `python -m infra.run`, without a stack-file edit (Pulumi-free).

`pathways:runs` (opt-in) gives a stack what such runs need: a Kueue LocalQueue in the stack's namespace for each
ClusterQueue (``run_queue``), head-pool room for their head pods (``headNodes``), and a Role for the people who
submit them. A run spec is a small workload (batch or interactive): ``config.load_run`` validates it with the same
model, rules and JobSet builder as a declared workload, so a bad spec gets the same one-line errors, keyed
``run.<key>``. A run's JobSet is created with the user's kubeconfig and carries no Pulumi ownership: `pulumi up`
neither sees nor deletes it, and the offline `diff` reads stack files only.
"""

from __future__ import annotations

import re
from typing import Literal, Optional

from pydantic import Field, ValidationInfo, field_validator

from components.model.common import INT32_MAX, MAX_NODES_PER_POOL_ZONE, _Model
from components.model.errors import ConfigError, Problem
from components.model.workloads.service import ServiceClient
from components.model.workloads.storage import RunBucket, RunFileSystem, listed_once

# Who created a JobSet: app.kubernetes.io/managed-by (Kubernetes' recommended label). The stack's JobSets say pulumi.
RUN_MANAGER = "pathways-run"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
RUN_QUEUE_PREFIX = "runs-"
# What a run spec may set: a batch program (or an interactive head for a notebook) on some slices of a group.
# Profiling without the stack's token (a Secret): the run's server listens on the head's loopback only. Not serve
# or service modes (stack-managed endpoints).
RUN_KEYS = (
    "name", "mode", "sliceGroup", "slices", "topology", "image", "command", "args", "env", "cpu", "memory", "priority",
    "maxRestarts", "workerRestartsPerHost", "onFailure", "persistence", "xlaFlags", "dataLoaderWorkers", "shmSize", "colocatedPython",
    "ttlSecondsAfterFinished", "terminationGracePeriodSeconds", "subdomain", "mounts", "profiling", "team",
)
RUN_MODES = ("batch", "interactive")
TIME_LIMIT_KEY = "timeLimitSeconds"  # a run's own (`--time-limit`): Kueue's maximum execution time, a label on its JobSet
MAX_TIME_LIMIT = 90 * 24 * 3600
RUN_PRIORITIES = ("training", "interactive", "experiment")  # highest first
# A run's pods carry the product's labels (pathways/workload = the run's name, pathways/team = its team) and the keys
# runs.podLabels allows; never a key of these prefixes, which Kubernetes, the controllers and the stack's own
# selectors read (LeaderWorkerSet's name label makes a pod a serving endpoint and a member of its network policy).
RESERVED_POD_LABEL_PREFIXES = ("pathways/", "kubernetes.io/", "k8s.io/", "leaderworkerset.sigs.k8s.io/", "jobset.sigs.k8s.io/",
                               "kueue.x-k8s.io/", "batch.kubernetes.io/", "cloud.google.com/", "app.kubernetes.io/")
RESERVED_POD_LABEL_KEYS = ("k8s-app", "controller-uid", "job-name", "pod-template-hash", "statefulset.kubernetes.io/pod-name")
_LABEL_KEY = re.compile(r"^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def team_run_priorities(ceiling: str) -> tuple[str, ...]:
    """The run priorities a team whose priority is `ceiling` may take: that one and those below it."""
    return RUN_PRIORITIES[RUN_PRIORITIES.index(ceiling):]


class Runs(_Model):
    """Ad-hoc runs (python -m infra.run): their queues, head-pool room and who may submit them."""

    head_nodes: int = Field(default=1, ge=0, le=MAX_NODES_PER_POOL_ZONE, description=(
        "Head-pool nodes for ad-hoc runs' head pods, beside the declared workloads' (one head pod a node); Kueue counts "
        "them as CPU and memory. Ignored when headPool.nodeCount is set."))
    priority: Literal["training", "interactive", "experiment"] = Field(default="experiment", description=(
        "A run's priority unless it asks for another: experiment, the lowest, so declared workloads preempt runs."))
    ttl_seconds_after_finished: int = Field(default=7 * 86400, ge=0, le=INT32_MAX, description=(
        "Delete a finished run's JobSet (pods, logs) after this long (default a week); nothing re-creates a run."))
    notebook_idle_stop_seconds: int = Field(default=2 * 3600, ge=0, le=INT32_MAX, description=(
        "A notebook run (submit --notebook) stops after this long idle, freeing its slice: JupyterLab's own idle "
        "shutdown (idle kernels culled, then the server exits); `--idle-stop` overrides it per notebook; 0 never."))
    max_runs: int = Field(default=500, ge=1, le=10_000, description=(
        "The most run JobSets a namespace holds at once (the stack's, and each team's), finished ones until their TTL "
        "included: a ResourceQuota where submitters write, beside the stack's own JobSets, so that no one floods the "
        "API server and Kueue with objects."))
    max_workdirs: int = Field(default=100, ge=0, le=10_000, description=(
        "The most `submit --workdir` code ConfigMaps a namespace holds at once (up to 1 MiB each, kept with their run): "
        "the same ResourceQuota's ConfigMap count, so that no one fills etcd."))
    submitters: list[ServiceClient] = Field(default_factory=list, max_length=50, description=(
        "Who may submit, list, follow, describe and delete runs: a Role in the stack's namespace (JobSets, their "
        "pods, logs, events and Kueue workloads; port-forward for notebooks) and read access to nodes. They can run "
        "any program on the Pathways nodes, with the nodes' rights."))
    buckets: list[RunBucket] = Field(default_factory=list, max_length=20, description=(
        "Buckets runs may mount (mounts[].bucket): the bootstrap grants the runs' Kubernetes service account "
        "(pathways-runs-<stack>) roles/storage.objectViewer on each, or objectUser where readOnly is false."))

    file_systems: list[RunFileSystem] = Field(default_factory=list, max_length=20, description=(
        "Declared file systems (pathways:storage.fileSystems) runs may mount, read-only unless readOnly: false; a run "
        "mounts no other, and the runs' admission policy lets a run's pods claim only these (and nothing else of a "
        "node or a network file server)."))

    pod_labels: list[str] = Field(default_factory=list, max_length=20, description=(
        "Label keys a run's pods may carry beside the product's own (pathways/workload, the run's name; pathways/team, "
        "its team): the runs' admission policy refuses any other, so that no run becomes a member of what the stack "
        "selects by label (a serving endpoint, its network policy, a scrape). Keys of Kubernetes', the controllers' "
        "and the stack's prefixes are refused."))

    @field_validator("pod_labels")
    @classmethod
    def _pod_label_keys(cls, v: list[str]) -> list[str]:
        for key in v:
            if not _LABEL_KEY.match(key) or len(key.partition("/")[0 if "/" in key else 2]) > 253:
                raise ValueError(f"{key[:80]!r} is not a label key; valid: [prefix/]name, name at most 63 characters "
                                 "of letters, digits, '-', '_', '.'")
            if key.startswith(RESERVED_POD_LABEL_PREFIXES) or key in RESERVED_POD_LABEL_KEYS or ".kubernetes.io/" in key or ".k8s.io/" in key:
                raise ValueError(f"{key!r} is a label Kubernetes, the controllers or the stack read; valid: a key of your own "
                                 "(e.g. example.com/experiment)")
        listed_once(v, "label key")
        return v

    @field_validator("buckets", "file_systems")
    @classmethod
    def _unique(cls, v: list[RunBucket] | list[RunFileSystem], info: ValidationInfo) -> list[RunBucket] | list[RunFileSystem]:
        listed_once([entry.name for entry in v], "bucket" if info.field_name == "buckets" else "file system")
        return v


def run_service_account(stack: str) -> str:
    """The Kubernetes service account of a run that mounts buckets (runs.buckets' grants go to it), named after the
    stack: Workload Identity's principal names the project's pool, the namespace and the account, not the cluster, so
    two stacks of one project with one name would share each other's bucket grants."""
    slug = re.sub(r"[^a-z0-9-]+", "-", stack.lower()).strip("-") or "stack"
    return f"pathways-runs-{slug}"[:63].rstrip("-")


def run_queue(cluster_queue: str) -> str:
    """The LocalQueue ad-hoc runs use, in the stack's namespace, for one ClusterQueue."""
    return f"{RUN_QUEUE_PREFIX}{cluster_queue}"


def time_limit(value: object, kueue: bool) -> Optional[int]:
    """A run's time limit in seconds (timeLimitSeconds), or None; ConfigError keyed run.timeLimitSeconds."""
    if value is None:
        return None
    key = f"run.{TIME_LIMIT_KEY}"
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TIME_LIMIT:
        raise ConfigError([Problem(key, f"{str(value)[:40]!r} is not a time limit; valid: 1 to {MAX_TIME_LIMIT} seconds (--time-limit 2h)")])
    if not kueue:
        raise ConfigError([Problem(key, "a time limit is Kueue's (its maximum execution time), and this stack runs without Kueue")])
    return value
