"""What a fleet manager's workers publish, judged when the manager deploys (Pulumi-free): the manager reads their
`fleet` outputs through stack references, so these rules run once the outputs resolve, with the same one-line
errors as the config's own rules (fleet_checks)."""

from __future__ import annotations

from typing import Mapping

from components.model.cluster.fleet import ResolvedFleet, WorkerFacts
from components.model.errors import Problem, config_key


def fleet_problems(fleet: ResolvedFleet, workers: Mapping[str, WorkerFacts]) -> list[Problem]:
    """What MultiKueue needs of the workers, judged on their published outputs when the manager deploys (one line
    each, keyed fleet.workers[i]): the same Kueue, JobSet and LWS versions (the same integrations: the chart's, each
    the stack's own), the manager's namespaces and run queues, and the manager's slice groups with the same TPU."""
    problems: list[Problem] = []
    versions, run_queues = fleet.versions, fleet.run_queues
    namespaces = fleet.namespaces[:1]  # the manager's own; a dispatched run keeps it
    groups = {name: g["tpu"] for name, g in fleet.groups.items()}
    holders: dict[str, list[str]] = {name: [] for name in groups}
    for i, ref in enumerate(fleet.workers):
        key = config_key(("fleet", "workers", i))
        facts = workers.get(ref.name)
        if facts is None:
            continue
        differ = [f"{k} {facts.versions.get(k, 'none')} (the manager's {v})" for k, v in versions.items() if facts.versions.get(k) != v]
        if differ:
            problems.append(Problem(key, f"{ref.name} ({ref.stack}) runs {', '.join(differ)}: MultiKueue needs the same "
                                         "controllers on every cluster; deploy the worker with the manager's versions"))
        missing = [ns for ns in namespaces if ns not in facts.namespaces]
        missing += [q for q in run_queues if q not in facts.local_queues and ref.name in fleet.queue_workers.get(q, (ref.name,))]
        if missing:
            problems.append(Problem(key, f"{ref.name} ({ref.stack}) has no {', '.join(missing)}: a dispatched run keeps its "
                                         "namespace and LocalQueue, so the worker needs both; give it the manager's "
                                         "kubernetes.namespace, runs: {}, slice groups and the teams that dispatch to it"))
        for name, tpu in groups.items():
            theirs = facts.groups.get(name)
            if theirs is None:
                continue
            if theirs.get("tpu") != tpu:
                problems.append(Problem(key, f"{ref.name} ({ref.stack}) has slice group {name} of {theirs.get('tpu')}, the "
                                             f"manager's is {tpu}: a run fits its group's TPU on every worker; rename one"))
            else:
                holders[name].append(ref.name)
    for i, name in enumerate(groups):  # the stack's slice groups, in its order
        if not holders[name] and not any(p.key.startswith(config_key(("fleet",))) for p in problems):
            problems.append(Problem(config_key(("slices", i, "name")), (
                f"{name}: no worker has this slice group ({', '.join(w.name for w in fleet.workers)}); a run on it could "
                "never be dispatched; remove it, or give a worker the group")))
    return problems
