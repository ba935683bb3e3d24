"""What each ClusterQueue the stack makes holds of each fixed slice group, in slices, and the most of a group a
workload on it can ever be admitted to (pure; the one quota model the Kueue manifests render and the plan proves
admission from: components/manifests/kueue.py multiplies these counts by one slice's cpu, memory and chips).

Kueue v0.19.2 (apis/kueue/v1beta2/clusterqueue_types.go; pkg/cache/scheduler resource_node.go): a ClusterQueue may
use its nominalQuota of a flavor, plus what it borrows from its cohort tree, at most its borrowingLimit (absent: no
limit). What the tree can lend is each other queue's lendable quota: its lendingLimit, or all its nominal quota when
it has none. Cohorts the stack makes carry no quota or limits of their own (kueue.cohorts), so the whole tree under
the stack's cohort lends to every queue in it. A workload is admitted on one flavor a pod set (a slice group's, or a
rung of its ladder), so the most it can ever hold is the best flavor's ceiling when nothing else runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from components.model.capacity.pools import SliceGroup
from components.model.resolved import queue_shards
from components.model.workloads.isolation import DOMAIN_COHORT_PREFIX, DOMAIN_QUEUE_PREFIX, group_domains, shared_groups
from components.model.workloads.teams import Team


@dataclass(frozen=True)
class SliceShare:
    """A ClusterQueue's quota of one slice group, in whole slices."""

    nominal: int
    borrowing_limit: Optional[int] = None  # None: may borrow all the cohort lends
    lending_limit: Optional[int] = None  # None: lends all its nominal quota while idle

    @property
    def lendable(self) -> int:
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)


@dataclass(frozen=True)
class QueueShares:
    """One ClusterQueue: its cohort (None: alone) and its share of each fixed group it lists."""

    name: str
    cohort: Optional[str]
    groups: dict[str, SliceShare]
    team: Optional[str] = None


@dataclass(frozen=True)
class Ceiling:
    """The most of a group a workload on `queue` can hold with nothing else running, and how it adds up."""

    queue: str
    group: str
    slices: int
    owned: int
    borrowable: int  # what the cohort tree lends it, within its borrowing limit
    lent: int  # what the tree lends, before its borrowing limit
    borrowing_limit: Optional[int]


def stack_queues(slices: Sequence[SliceGroup], teams: Sequence[Team], cohort: str,
                 available: Optional[dict[str, int]] = None) -> list[QueueShares]:
    """The stack's own ClusterQueues (one per shard of fixed groups) and each team's, with their slice shares.
    `available`: slices each group gives Kueue now (default: its count; none before a future reservation's delivery).
    A pool set (slices[].subBlocks) is left out: its own queue holds the whole set and its topologies are judged by
    dynamic_slicing_checks. An isolation domain's groups (isolation.py) are its own: its queue domain-<name> holds
    what its teams do not own, in its own cohort with its teams', and no other queue lists them."""
    isolated = group_domains(teams)
    shared = shared_groups(slices, teams)
    fixed = tuple(g for g in slices if not g.dynamic)
    have = {g.name: (available or {}).get(g.name, g.count) for g in fixed}
    shards = queue_shards(shared)
    sharded = len(shards) > 1 or bool(teams)  # as kueue.cluster_queues: otherwise the one queue has no cohort
    out: list[QueueShares] = []
    for name, groups in shards:
        own = {g.name: SliceShare(nominal=max(0, have[g.name] - _team_owned(teams, g.name)))
               for g in groups if not g.dynamic}
        if own:
            out.append(QueueShares(name=name, cohort=cohort if sharded else None, groups=own))
    for domain in dict.fromkeys(t.isolation_domain for t in teams if t.isolation_domain):
        out.append(QueueShares(name=f"{DOMAIN_QUEUE_PREFIX}{domain}", cohort=f"{DOMAIN_COHORT_PREFIX}{domain}", groups={
            g.name: SliceShare(nominal=max(0, have[g.name] - _team_owned(teams, g.name))) for g in fixed if isolated.get(g.name) == domain}))
    for t in teams:
        shares = {}
        for g in fixed:
            if isolated.get(g.name) != t.isolation_domain:
                continue  # another domain's (or, for a domain's team, the shared groups): not listed at all
            s = t.slices.get(g.name)
            shares[g.name] = (SliceShare(nominal=0) if s is None else
                              SliceShare(nominal=s.slices, borrowing_limit=s.borrow, lending_limit=s.lend))
        own_cohort = f"{DOMAIN_COHORT_PREFIX}{t.isolation_domain}" if t.isolation_domain else t.cohort or cohort
        out.append(QueueShares(name=t.cluster_queue, cohort=own_cohort, groups=shares, team=t.name))
    return out


def _team_owned(teams: Sequence[Team], group: str) -> int:
    return sum(t.slices[group].slices for t in teams if group in t.slices)


def ceiling(queues: Sequence[QueueShares], queue: str, group: str, root_of: dict[str, str]) -> Ceiling:
    """The most of `group` a workload on `queue` can hold when nothing else runs. `root_of`: cohort -> the root of
    its tree (the stack's cohort for a team's parent cohort)."""
    me = next(q for q in queues if q.name == queue)
    share = me.groups.get(group, SliceShare(nominal=0))
    lent = 0
    if me.cohort is not None:
        root = root_of.get(me.cohort, me.cohort)
        lent = sum(q.groups[group].lendable for q in queues
                   if q.name != queue and q.cohort is not None and root_of.get(q.cohort, q.cohort) == root and group in q.groups)
    borrowable = lent if share.borrowing_limit is None else min(lent, share.borrowing_limit)
    return Ceiling(queue=queue, group=group, slices=share.nominal + borrowable, owned=share.nominal,
                   borrowable=borrowable, lent=lent, borrowing_limit=share.borrowing_limit)
