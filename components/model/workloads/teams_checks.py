"""Rules of pathways:teams that span keys (teams.py): shares the pools can give, whole slices (the model's),
namespaces of their own, submitters in one team unless said, and what teams need of the stack."""

from __future__ import annotations

from components.model.cluster.kubernetes import PLATFORM_NAMESPACES
from components.model.errors import Problem, config_key
from components.model.resolved import GROUPS_PER_QUEUE
from components.model.stack import StackConfig
from components.model.workloads import metrics_adapter
from components.model.workloads.teams import USAGE_NAMESPACE

# the controllers' namespaces (their charts'): a team's pods there would run beside Kueue and JobSet
CONTROLLER_NAMESPACES = ("jobset-system", "kueue-system", "lws-system", "default")


def teams_need(cfg: StackConfig) -> list[Problem]:
    """Teams are Kueue queues and run namespaces: the stack's own Kueue objects, pathways:runs, one resource group."""
    if not cfg.teams:
        return []
    key = config_key(("teams",))
    needs = [
        (not cfg.kubernetes.kueue.enabled, "needs Kueue (kubernetes.kueue.enabled): each team is a Kueue ClusterQueue"),
        (cfg.kubernetes.kueue.cluster_queue is not None, (
            "needs the stack's own ClusterQueues, not kubernetes.kueue.clusterQueue (made elsewhere): a team's queue "
            "borrows from the stack's in its cohort")),
        (cfg.runs is None, "needs pathways:runs (`runs: {}`): a team submits runs with python -m infra.run submit --team"),
        (len(cfg.slices) > GROUPS_PER_QUEUE, (
            f"{len(cfg.slices)} slice groups; teams share at most {GROUPS_PER_QUEUE} (one Kueue resource group a queue)")),
    ]
    return [Problem(key, message) for bad, message in needs if bad]


def team_names(cfg: StackConfig) -> list[Problem]:
    """Each team, namespace and parent once; no team namespace the platform, a controller or the stack owns."""
    problems: list[Problem] = []
    seen_names: set[str] = set()
    seen_ns: dict[str, str] = {}
    owned = {cfg.kubernetes.namespace: "the stack's own namespace (kubernetes.namespace)",
             # made whenever a serve workload autoscales: a team's runs there could become endpoints of the
             # custom-metrics API the autoscalers read (security #73.6; tests/test_teams.py derives the set from plans)
             metrics_adapter.NAMESPACE: "the metrics adapter's namespace, which the stack makes for autoscaled serving",
             # the teams' usage records: a team there could write its own (security #73.7)
             USAGE_NAMESPACE: "the usage recorder's namespace, where the stack keeps the teams' usage records"}
    for w in cfg.workloads:
        if w.mode == "service":
            owned[w.service_settings.namespace] = f"workload {w.name}'s service namespace"
    for i, t in enumerate(cfg.teams):
        if t.name in seen_names:
            problems.append(Problem(config_key(("teams", i, "name")), f"{t.name!r} names two teams; name each once"))
        seen_names.add(t.name)
        ns = t.team_namespace
        where = config_key(("teams", i, "namespace"))
        if ns in PLATFORM_NAMESPACES or ns in CONTROLLER_NAMESPACES or ns.startswith(("kube-", "gke-", "gmp-")):
            problems.append(Problem(where, f"{ns!r} is a system or controller namespace; give the team one of its own "
                                           f"(default team-{t.name})"))
        elif ns in owned:
            problems.append(Problem(where, f"{ns!r} is {owned[ns]}; give the team one of its own (default team-{t.name})"))
        elif ns in seen_ns:
            problems.append(Problem(where, f"{ns!r} is team {seen_ns[ns]}'s namespace too; give each team its own"))
        seen_ns.setdefault(ns, t.name)
    names = [t.name for t in cfg.teams]
    for i, t in enumerate(cfg.teams):
        for j, other in enumerate(t.shares_submitters_with):
            if other not in names or other == t.name:
                problems.append(Problem(config_key(("teams", i, "sharesSubmittersWith", j)), (
                    f"{other!r} is not another team of this stack ({', '.join(n for n in names if n != t.name) or 'none'})")))
    return problems


def team_shares(cfg: StackConfig) -> list[Problem]:
    """Shares name slice groups and, summed over the teams, fit in each group's slices; a team lends only its own."""
    problems: list[Problem] = []
    groups = {g.name: g for g in cfg.slices}
    owned: dict[str, int] = {}
    for i, t in enumerate(cfg.teams):
        for group, share in t.slices.items():
            key = config_key(("teams", i, "slices", group))
            if group not in groups:
                problems.append(Problem(key, f"{group!r} is not a slice group of this stack ({', '.join(groups)})"))
                continue
            owned[group] = owned.get(group, 0) + share.slices
            if share.lend is not None and share.lend > share.slices:
                problems.append(Problem(config_key(("teams", i, "slices", group, "lend")), (
                    f"{share.lend} slices, more than the team owns of {group} ({share.slices}); a team lends only its own")))
    manager = cfg.fleet is not None and cfg.fleet.role == "manager"
    for group, total in owned.items():
        # a manager's groups are its workers' slices, summed: judged when it deploys (infra/fleet.py)
        if not manager and total > groups[group].count:
            who = ", ".join(f"{t.name} {t.slices[group].slices}" for t in cfg.teams if group in t.slices)
            problems.append(Problem(config_key(("teams",)), (
                f"the teams own {total} slices of {group} ({who}), but the group has {groups[group].count} "
                f"(slices.{group}.count); lower the shares to {groups[group].count} in all, or add slices")))
    return problems


def team_submitters(cfg: StackConfig) -> list[Problem]:
    """A person or group who submits for two teams can spend either's share: only where the teams say so."""
    problems: list[Problem] = []
    first: dict[tuple[str, str], int] = {}
    for i, t in enumerate(cfg.teams):
        for j, s in enumerate(t.submitters):
            k = (s.kind, s.name.lower())
            if k in first and first[k] != i:
                other = cfg.teams[first[k]]
                if other.name not in t.shares_submitters_with and t.name not in other.shares_submitters_with:
                    problems.append(Problem(config_key(("teams", i, "submitters", j, "name")), (
                        f"{s.name} submits for team {other.name} too; list each submitter in one team, or say so with "
                        f"sharesSubmittersWith: [{other.name}] on team {t.name}")))
            first.setdefault(k, i)
    return problems


def workload_teams(cfg: StackConfig) -> list[Problem]:
    """A workload's team is declared; a shared service lives where pathwaysutils' client reads it, in no team."""
    names = [t.name for t in cfg.teams]
    problems = []
    for i, w in enumerate(cfg.workloads):
        if w.team is None:
            continue
        key = config_key(("workloads", i, "team"))
        if w.team not in names:
            problems.append(Problem(key, f"{w.team!r} is not a team of pathways:teams ({', '.join(names) or 'none declared'})"))
        elif w.mode == "service":
            problems.append(Problem(key, (
                f"{w.team!r}: a shared service runs in service.namespace, where its clients find it, on the stack's own "
                "queue; remove team")))
    return problems


def team_workers(cfg: StackConfig) -> list[Problem]:
    """teams[].workers name a fleet manager's workers; anywhere else nothing dispatches."""
    manager = cfg.fleet is not None and cfg.fleet.role == "manager"
    names = [w.name for w in cfg.fleet.workers] if cfg.fleet is not None else []
    problems = []
    for i, t in enumerate(cfg.teams):
        for j, w in enumerate(t.workers):
            key = config_key(("teams", i, "workers", j))
            if not manager:
                problems.append(Problem(key, f"{w!r}: only a fleet manager dispatches a team's runs to workers; remove workers"))
                break
            if w not in names:
                problems.append(Problem(key, f"{w!r} is not a worker of this fleet ({', '.join(names)})"))
            elif w in t.workers[:j]:
                # its MultiKueueConfig lists them: Kueue v0.19.2's v1beta2 CRD refuses clusters that repeat ("must be unique")
                problems.append(Problem(key, f"{w!r} is listed twice; name each worker once, in the order Kueue tries them"))
    return problems


RULES = (teams_need, team_names, team_shares, team_submitters, workload_teams, team_workers)
