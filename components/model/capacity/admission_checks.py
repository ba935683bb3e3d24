"""Admissible by construction (issue #76.1): every declared workload, and every serve replica up to its autoscaler
maximum, fits what its ClusterQueue can ever hold of its slice group when nothing else runs (queue_shares.ceiling:
the quota model the Kueue manifests render). A workload over it waits for ever in Kueue (QuotaReserved=False,
"couldn't assign flavors ... insufficient quota"), so the plan refuses it. Registered in ``checks``.

Not judged here: a pool set's topologies (dynamic_slicing_checks.topology), the head pool (pools_checks.head_pool),
a fleet manager's queues (its workers' summed quota, judged when it deploys) and a ClusterQueue made elsewhere
(kubernetes.kueue.clusterQueue, whose quota the stack does not know).
"""

from __future__ import annotations

from components.model.capacity.queue_shares import Ceiling, QueueShares, ceiling, stack_queues
from components.model.errors import Problem, config_key
from components.model.resolved import QUEUE, cluster_queue_name
from components.model.stack import StackConfig
from components.model.workloads.workload import Workload


def _slices_key(w: Workload, i: int) -> str:
    if w.mode == "serve" and w.serve is not None:
        leaf = ("autoscale", "maxReplicas") if w.serve.autoscale else ("replicas",)
        return config_key(("workloads", i, "serve", *leaf))
    return config_key(("workloads", i, "slices"))


def _who(cfg: StackConfig, q: QueueShares) -> str:
    return f"team {q.team}'s ClusterQueue {q.name}" if q.team else f"the stack's ClusterQueue {q.name}"


def _how(cfg: StackConfig, q: QueueShares, c: Ceiling) -> str:
    """How the ceiling adds up, in the stack file's words."""
    if q.team is None:
        total = next(g.count for g in cfg.slices if g.name == c.group)
        kept = f"keeps {c.owned} of {c.group} ({total} less the teams' shares)" if cfg.teams else f"holds {c.owned} of {c.group}"
        return f"{kept} and the cohort lends at most {c.lent}"
    limit = "" if c.borrowing_limit is None else f", may borrow at most {c.borrowing_limit}"
    return f"owns {c.owned} of {c.group}{limit}, and the cohort lends at most {c.lent}"


def _fix(cfg: StackConfig, q: QueueShares, c: Ceiling, most: int) -> str:
    ask = f"ask for at most {most}" if most else "run it on a group the queue holds"
    if q.team is not None:
        i = next(k for k, t in enumerate(cfg.teams) if t.name == q.team)
        return f"{ask}, or raise teams[{i}].slices.{c.group} (slices or borrow) or the other teams' lend"
    return f"{ask}, or lower the teams' shares or raise their lend of {c.group}"


def admissible(cfg: StackConfig) -> list[Problem]:
    """Each workload's slices within its queue's ceiling for its group (or the best rung of its ladder)."""
    if (not cfg.kubernetes.kueue.enabled or cfg.kubernetes.kueue.cluster_queue is not None
            or (cfg.fleet is not None and cfg.fleet.role == "manager")):
        return []
    groups = {g.name: g for g in cfg.slices}
    if len(groups) != len(cfg.slices):
        return []  # repeated group names: pools_checks.unique_group_names says so
    if any(g not in groups for t in cfg.teams for g in t.slices):
        return []  # a share of no group: teams_checks.team_shares says so
    queues = {q.name: q for q in stack_queues(tuple(cfg.slices), cfg.teams, QUEUE)}
    root_of = {t.cohort: QUEUE for t in cfg.teams if t.cohort}  # teams-<parent> Cohorts sit under the stack's
    problems: list[Problem] = []
    for i, w in enumerate(cfg.workloads):
        group = groups.get(w.slice_group or cfg.slices[0].name)
        if group is None or group.dynamic or (w.team is not None and cfg.team(w.team) is None):
            continue  # an unknown group or team, or a pool set: other rules judge them
        team = cfg.team(w.team)
        queue = queues[team.cluster_queue if team is not None else cluster_queue_name(tuple(cfg.slices), group)]
        rungs = [group.name, *(n for n in group.ladder if n in groups)]
        best = max((ceiling(list(queues.values()), queue.name, r, root_of) for r in rungs if r in queue.groups),
                   key=lambda c: c.slices, default=None)
        need = cfg.workload_slices(w)
        if need > max(groups[r].count for r in rungs):
            continue  # more than the group has: pools_checks.workload_slices (serving_checks for endpoints) says so
        if best is None or need <= best.slices:
            continue
        per = f" ({w.serve.max_replicas} replicas x {w.serve.slices_per_replica})" if w.mode == "serve" and w.serve else ""
        where = best.group if len(rungs) == 1 else f"{best.group}, the best rung of its ladder"
        problems.append(Problem(_slices_key(w, i), (
            f"workload {w.name} needs {need} slices of {where}{per}, but {_who(cfg, queue)} can hold at most "
            f"{best.slices} even with nothing else running ({_how(cfg, queue, best)}): Kueue would never admit it; "
            f"{_fix(cfg, queue, best, best.slices // (w.serve.slices_per_replica if w.mode == 'serve' and w.serve else 1))}")))
    return problems


RULES = (admissible,)
