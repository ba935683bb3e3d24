"""Rules of pathways:runs that span keys (runs.py)."""

from __future__ import annotations

from components.model.errors import Problem, config_key
from components.model.resolved import queue_shards
from components.model.stack import StackConfig
from components.model.workloads.isolation import shared_groups
from components.model.workloads.runs import run_queue


def run_queue_names(cfg: StackConfig) -> list[Problem]:
    """Each declared workload has a LocalQueue of its own name (manifests/kueue.py) in its namespace; the run queues
    live in the stack's namespace and in each team's (#76: a team workload named like its team's run queue made two
    LocalQueues of one name there, which the plan let through)."""
    if cfg.runs is None or not cfg.kubernetes.kueue.enabled:
        return []
    shared = cfg.kubernetes.kueue.cluster_queue
    taken = {(cfg.kubernetes.namespace, run_queue(name)): "the ad-hoc runs' LocalQueue (pathways:runs)"
             for name in ([shared] if shared else [n for n, _ in queue_shards(shared_groups(cfg.slices, cfg.teams))])}
    taken.update({(t.team_namespace, run_queue(t.cluster_queue)): f"team {t.name}'s run queue in {t.team_namespace}"
                  for t in cfg.teams})
    return [
        Problem(config_key(("workloads", i, "name")), (
            f"{w.name!r} is the name of {taken[(cfg.workload_namespace(w), w.name)]}, and a workload's LocalQueue takes "
            "its name; choose another name"))
        for i, w in enumerate(cfg.workloads) if (cfg.workload_namespace(w), w.name) in taken
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
