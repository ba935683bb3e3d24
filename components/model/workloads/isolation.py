"""Isolation domains (teams[].isolationDomain, security #73.2): teams that must not trust the others (Pulumi-free).

Every Pathways pod uses the host network, so it calls Google as its node's service account and is reached on its
node's ports (components/manifests/guardrails.py): teams that share nodes share one identity, the scratch bucket it
writes, and the firewall rules that trust it. A Kueue quota keeps a team's chips apart, never its data. A domain
gives its teams what a boundary needs, each made once per domain:

- its slice groups: the groups its teams list, which no other team lists and no other workload runs on; their
  pools, and a head pool of its own (pathways-head-<domain>), run as the domain's node service account
  (<cluster>-iso-<domain>, made by the bootstrap like the stack's two) and carry the label and NoSchedule taint
  pathways/isolation=<domain>;
- firewall rules of its own: the Pathways ports of its nodes open to its own nodes only, closed to every other
  source, the stack's Pathways nodes included (and theirs closed to its nodes by the stack's own pair);
- a scratch and an artifacts bucket of its own, granted to its node account only: its workloads' compilation cache,
  profiles and HLO dumps go there;
- Kueue: its teams' ClusterQueues in a cohort of their own (isolated-<domain>), beside a ClusterQueue domain-<domain>
  that holds its head pool and the slices of its groups no team owns (as the stack's own queue does for the
  others), so that its teams borrow only from each other; its flavors tolerate its taint;
- the admission guard pathways-isolation: a pod may tolerate the domain's taint only in its teams' namespaces,
  and no pod outside the system namespaces may tolerate every taint or be created bound to a node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from components.model.capacity.pools import SliceGroup
from components.model.common import MAX_NODES_PER_POOL_ZONE
from components.model.stack import StackConfig, service_account_id
from components.model.workloads.teams import Team

ISOLATION_LABEL = "pathways/isolation"
DOMAIN_QUEUE_PREFIX = "domain-"
DOMAIN_COHORT_PREFIX = "isolated-"
HEAD_POOL = "pathways-head"


@dataclass(frozen=True)
class IsolationDomain:
    name: str
    teams: tuple[str, ...]
    namespaces: tuple[str, ...]
    """Its teams' namespaces: the only ones whose pods may tolerate its taint."""
    groups: tuple[str, ...]
    node_account_id: str
    bucket_name: str
    artifacts_bucket_name: str
    cache_location: str
    artifacts_location: str
    head_nodes: int
    """Its head pool's most nodes (it scales from zero): one head a running workload, each on at least one slice."""

    @property
    def taint(self) -> tuple[str, str, str]:
        return (ISOLATION_LABEL, self.name, "NO_SCHEDULE")

    @property
    def head_pool(self) -> str:
        return f"{HEAD_POOL}-{self.name}"

    @property
    def head_flavor(self) -> str:
        return f"{HEAD_POOL}-{self.name}"

    @property
    def cluster_queue(self) -> str:
        """Holds its head pool and its groups' slices no team owns, and lends them to its teams."""
        return f"{DOMAIN_QUEUE_PREFIX}{self.name}"

    @property
    def cohort(self) -> str:
        return f"{DOMAIN_COHORT_PREFIX}{self.name}"


def node_account_id(cluster_name: str, domain: str) -> str:
    return service_account_id(cluster_name, f"iso-{domain}")


def group_domains(teams: Sequence[Team]) -> dict[str, str]:
    """Slice group -> the domain of the teams that list it (the first, where two disagree: the checks refuse it)."""
    out: dict[str, str] = {}
    for t in teams:
        if t.isolation_domain is not None:
            for group in t.slices:
                out.setdefault(group, t.isolation_domain)
    return out


def shared_groups(slices: Sequence[SliceGroup], teams: Sequence[Team]) -> tuple[SliceGroup, ...]:
    """The groups of no domain: the stack's own ClusterQueues and the teams without a domain use these only."""
    isolated = group_domains(teams)
    return tuple(g for g in slices if g.name not in isolated)


def domain_bucket_name(bucket_name: str, domain: str) -> str:
    return f"{bucket_name[:62 - len(domain)].rstrip('-_')}-{domain}"


def domains(cfg: StackConfig) -> tuple[IsolationDomain, ...]:
    """Each domain once, in the order its first team is declared."""
    names = list(dict.fromkeys(t.isolation_domain for t in cfg.teams if t.isolation_domain is not None))
    isolated = group_domains(cfg.teams)
    out = []
    for name in names:
        teams = [t for t in cfg.teams if t.isolation_domain == name]
        bucket = domain_bucket_name(cfg.bucket_name, name)
        artifacts = f"{bucket[:53].rstrip('-_')}-artifacts"
        out.append(IsolationDomain(
            name=name, teams=tuple(t.name for t in teams), namespaces=tuple(t.team_namespace for t in teams),
            groups=tuple(g.name for g in cfg.slices if isolated.get(g.name) == name),
            node_account_id=node_account_id(cfg.cluster_name, name),
            bucket_name=bucket, artifacts_bucket_name=artifacts,
            cache_location=f"gs://{bucket}/{cfg.bucket.cache_prefix}",
            artifacts_location=f"gs://{artifacts}/{cfg.bucket.artifacts_prefix}",
            head_nodes=min(MAX_NODES_PER_POOL_ZONE, sum(g.count for g in cfg.slices if isolated.get(g.name) == name)),
        ))
    return tuple(out)


def team_domain(teams: Sequence[Team], team: Optional[str]) -> Optional[str]:
    return next((t.isolation_domain for t in teams if t.name == team), None) if team else None
