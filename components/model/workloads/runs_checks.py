"""Rules of pathways:runs that span keys (runs.py)."""

from __future__ import annotations

from components.model.errors import Problem, config_key
from components.model.resolved import queue_shards
from components.model.stack import StackConfig
from components.model.workloads.runs import run_queue


def run_queue_names(cfg: StackConfig) -> list[Problem]:
    """Each declared workload has a LocalQueue of its own name (manifests/kueue.py) in the namespace where the run
    queues live: a workload named like a run queue would make two objects of one name."""
    if cfg.runs is None or not cfg.kubernetes.kueue.enabled:
        return []
    shared = cfg.kubernetes.kueue.cluster_queue
    taken = {run_queue(name) for name in ([shared] if shared else [n for n, _ in queue_shards(tuple(cfg.slices))])}
    return [
        Problem(config_key(("workloads", i, "name")), (
            f"{w.name!r} is the name of the ad-hoc runs' LocalQueue (pathways:runs); choose another name"))
        for i, w in enumerate(cfg.workloads) if w.name in taken and cfg.workload_namespace(w) == cfg.kubernetes.namespace
    ]


def run_file_systems(cfg: StackConfig) -> list[Problem]:
    """runs.fileSystems names declared file systems."""
    if cfg.runs is None:
        return []
    declared = [f.name for f in cfg.storage.file_systems]
    return [Problem(config_key(("runs", "fileSystems", i, "name")), (
        f"{f.name!r} is not a file system of pathways:storage.fileSystems ({', '.join(declared) or 'none declared'})"))
        for i, f in enumerate(cfg.runs.file_systems) if f.name not in declared]


RULES = (run_queue_names, run_file_systems)
