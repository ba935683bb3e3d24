"""Rules of isolation domains (teams[].isolationDomain, isolation.py): nothing crosses a domain's boundary.

A domain's nodes are its own only while every way onto them is its own: its groups listed by its teams alone, no
other workload placed there, no ladder to another domain's group, no parent cohort that would lend across, and
the guards that hold it, and pools told apart by the domain's label (not a head or slice pool named from elsewhere).
"""

from __future__ import annotations

from components.model.cluster.bucket import check_bucket_name
from components.model.errors import Problem, config_key
from components.model.stack import SERVICE_ACCOUNT_ID, StackConfig
from components.model.workloads.isolation import domains, group_domains, team_domain


def _where(domain: str | None) -> str:
    return f"isolation domain {domain}" if domain else "no isolation domain"


def domain_groups(cfg: StackConfig) -> list[Problem]:
    """A domain's groups are listed by its teams only; its teams list its groups only, and no parent cohort."""
    problems: list[Problem] = []
    isolated = group_domains(cfg.teams)
    for i, t in enumerate(cfg.teams):
        for group in t.slices:
            owner = isolated.get(group)
            if owner is not None and owner != t.isolation_domain:
                first = next(o.name for o in cfg.teams if o.isolation_domain == owner and group in o.slices)
                problems.append(Problem(config_key(("teams", i, "slices", group)), (
                    f"{group} belongs to isolation domain {owner} (team {first} lists it), and team {t.name} is in "
                    f"{_where(t.isolation_domain)}: a domain's slice groups are its teams' alone (their nodes run as "
                    f"its identity); give team {t.name} isolationDomain: {owner}, or another group")))
        if t.isolation_domain is not None and t.parent is not None:
            problems.append(Problem(config_key(("teams", i, "parent")), (
                f"{t.parent!r}: team {t.name} is in isolation domain {t.isolation_domain}, whose teams share a cohort "
                f"of their own (isolated-{t.isolation_domain}) and borrow from no one else; remove parent")))
    first = {t.isolation_domain: i for i, t in reversed(list(enumerate(cfg.teams))) if t.isolation_domain}
    for domain, i in first.items():
        if domain not in isolated.values():
            problems.append(Problem(config_key(("teams", i, "isolationDomain")), (
                f"{domain}: no team of this isolation domain lists a slice group, so it would have no nodes to run on; "
                f"give team {cfg.teams[i].name} slices of a group of its own (slices: {{<group>: {{slices: N}}}})")))
    return problems


def domain_workloads(cfg: StackConfig) -> list[Problem]:
    """A workload runs on a group of its own team's domain (or of none when it has none), as one kind the domain
    serves (batch and interactive), and a ladder climbs within one domain."""
    problems: list[Problem] = []
    if not any(t.isolation_domain for t in cfg.teams):
        return problems
    isolated = group_domains(cfg.teams)
    groups = {g.name: g for g in cfg.slices}
    for i, w in enumerate(cfg.workloads):
        group = w.slice_group or (cfg.slices[0].name if len(cfg.slices) == 1 else None)
        if group is None or group not in groups:
            continue  # workload_checks.slice_group says so
        mine, theirs = team_domain(cfg.teams, w.team), isolated.get(group)
        if mine != theirs:
            who = f"team {w.team}" if w.team else "the stack (no team)"
            problems.append(Problem(config_key(("workloads", i, "sliceGroup")), (
                f"{group} is in {_where(theirs)}, and workload {w.name} belongs to {who}, in {_where(mine)}: a "
                "workload runs only on its own domain's groups; pick a group of its team's")))
        elif mine is not None and w.mode in ("serve", "service"):
            problems.append(Problem(config_key(("workloads", i, "mode")), (
                f"{w.mode}: workload {w.name}'s team is in isolation domain {mine}, whose nodes take batch and "
                "interactive workloads (a serving gateway or shared proxy pool would reach them from outside it); run it "
                "on a group of no domain")))
    for i, g in enumerate(cfg.slices):
        for j, rung in enumerate(g.ladder):
            if isolated.get(rung) != isolated.get(g.name):
                problems.append(Problem(config_key(("slices", i, "ladder", j)), (
                    f"{rung} is in {_where(isolated.get(rung))} and {g.name} in {_where(isolated.get(g.name))}: a "
                    "ladder's rungs are one domain's; remove it from the ladder")))
    return problems


def domain_needs(cfg: StackConfig) -> list[Problem]:
    """A domain needs what makes it a boundary: the stack's own head and slice pools (on a cluster made elsewhere, pools
    the owner makes as the plan's notice says), the guards, and a cluster of no fleet."""
    first = next((i for i, t in enumerate(cfg.teams) if t.isolation_domain), None)
    if first is None:
        return []
    key = config_key(("teams", first, "isolationDomain"))
    named = [g.name for g in cfg.slices if g.node_pools and g.name in group_domains(cfg.teams)]
    mtc = cfg.resilience.mtc is not None
    needs = [
        (cfg.head_pool.node_pool is not None, "needs the stack's own head pools, not headPool.nodePool (made elsewhere)"),
        (bool(named), f"needs pools the stack makes for its groups, not slices[].nodePools ({', '.join(named)})"),
        (cfg.fleet is not None, "cannot join a fleet: a manager dispatches runs across clusters outside the domain's "
                                "nodes; isolate the team on a stack of its own"),
        (not cfg.kubernetes.guards.enabled, "needs the admission guards (kubernetes.guards.enabled): they keep every "
                                            "other namespace off the domain's nodes"),
        (mtc, "cannot use resilience.mtc yet: its RAM-disk backups bucket is granted to one principal for every group; "
              "remove it or the domain"),
    ]
    exempt = [t.team_namespace for t in cfg.teams if t.isolation_domain and t.team_namespace in cfg.kubernetes.guards.exempt_namespaces]
    needs.append((bool(exempt), f"cannot have its namespace {', '.join(exempt)} in kubernetes.guards.exemptNamespaces: the node "
                                "guard would let any pod there onto the Pathways nodes; remove it from the list"))
    return [Problem(key, f"{cfg.teams[first].isolation_domain}: an isolation domain {message}") for bad, message in needs if bad]


def domain_names(cfg: StackConfig) -> list[Problem]:
    """A domain's derived names are names GCP takes, and its buckets are no other bucket of the stack."""
    problems: list[Problem] = []
    taken = {b: what for b, what in ((cfg.bucket_name, "the scratch bucket (bucket.name)"),
                                     (cfg.artifacts_bucket_name, "the artifacts bucket (bucket.artifactsName)"),
                                     (cfg.mtc_bucket_name, "the checkpoint backups' bucket")) if b}
    first = {t.isolation_domain: i for i, t in reversed(list(enumerate(cfg.teams))) if t.isolation_domain}
    for d in domains(cfg):
        key = config_key(("teams", first[d.name], "isolationDomain"))
        for bucket in (d.bucket_name, d.artifacts_bucket_name):
            try:
                check_bucket_name(bucket)
            except ValueError as e:
                problems.append(Problem(key, f"{d.name}: its bucket's derived {e}; shorten bucket.name or the domain's name"))
            if bucket in taken:
                problems.append(Problem(key, f"{d.name}: its bucket {bucket} would be {taken[bucket]}; name the domain otherwise"))
            taken.setdefault(bucket, f"isolation domain {d.name}'s")
        if not SERVICE_ACCOUNT_ID.fullmatch(d.node_account_id):
            problems.append(Problem(key, f"{d.name}: its node service account ID {d.node_account_id!r} is not 6-30 lowercase "
                                         "letters, digits or '-'; use a cluster name of at least 3 characters"))
    return problems


RULES = (domain_groups, domain_workloads, domain_needs, domain_names)
