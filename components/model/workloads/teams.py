"""Several teams on one stack (pathways:teams, docs/teams.md): each a Kueue ClusterQueue in the stack's cohort, a
namespace with a run queue, its submitters' access there only, and a chip-hour budget (Pulumi-free).

Kueue v0.19.2 does the sharing (apis/kueue/v1beta2): a ClusterQueue's nominalQuota is what a team owns,
borrowingLimit how much more it may take from the cohort, lendingLimit how much of its own it may lend; with fair
sharing on (the Configuration's fairSharing, cmd/kueue/main.go), idle capacity goes to the queue whose share
(usage above nominal over the cohort's lendable, divided by spec.fairSharing.weight) is lowest, and a queue under
its fair share preempts one over it (preemptionStrategies). Teams own whole slices: a slice group's quota is its
slices x hosts x chips per VM, and a share that is not whole slices would admit a workload no slice can hold.
The slices no team owns stay in the stack's own ClusterQueue, which lends them to the cohort.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, field_validator

from components.model.cluster.fleet import MULTIKUEUE_CHECK
from components.model.common import MAX_TPU_POOLS, _dns_label, _Model
from components.model.workloads.service import ServiceClient
from components.model.workloads.storage import RunBucket, listed_once

TEAM_LABEL = "pathways/team"
# On a team's ClusterQueue held for its budget by the usage recorder (components/manifests/usage_record.py): what it
# used, of what, in which month.
BUDGET_HOLD_ANNOTATION = "pathways/budget-hold"
# Where the usage recorder keeps the teams' records (components/manifests/usage.py): no team may take it.
USAGE_NAMESPACE = "pathways-usage"
TEAM_QUEUE_PREFIX = "team-"
TEAM_COHORT_PREFIX = "teams-"
MAX_TEAMS = 50
MAX_DOMAIN = 10


def _whole(v: Any) -> int:
    """A count of slices: an integer (2 or 2.0), never 1.5."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError(f"{v!r} is not a whole number of slices: a team owns whole slices (a slice's chips "
                         "serve one workload at a time; part of one admits work no slice can hold)")
    return int(v)


class TeamShare(_Model):
    """A team's part of one slice group."""

    slices: int = Field(ge=0, le=MAX_TPU_POOLS, description="Slices of the group the team owns (Kueue nominalQuota): whole slices.")
    borrow: Optional[int] = Field(default=None, ge=0, le=MAX_TPU_POOLS, description=(
        "Slices beyond its own it may borrow from the cohort (borrowingLimit); absent, any idle slice."))
    lend: Optional[int] = Field(default=None, ge=0, le=MAX_TPU_POOLS, description=(
        "Slices of its own it may lend while idle (lendingLimit); absent, all of them. Kueue reclaims lent slices "
        "when the team needs them (the borrower's workloads are preempted)."))

    @field_validator("slices", "borrow", "lend", mode="before")
    @classmethod
    def _whole_slices(cls, v: Any) -> Any:
        return v if v is None else _whole(v)


class Team(_Model):
    name: str = Field(description="The team's name: its ClusterQueue is team-<name>, its cost label pathways/team=<name>.")
    namespace: Optional[str] = Field(default=None, description=(
        "Where its runs and workloads live (default: team-<name>): the stack makes it, with the stack's Pod Security "
        "level and guards; its submitters may act there only."))
    submitters: list[ServiceClient] = Field(default_factory=list, max_length=50, description=(
        "Who submits the team's runs (users or Google groups): a Role in the team's namespace only."))
    shares_submitters_with: list[str] = Field(default_factory=list, max_length=MAX_TEAMS, description=(
        "Teams this one knowingly lists the same submitters as; a submitter in two teams without it is refused."))
    slices: dict[str, TeamShare] = Field(default_factory=dict, max_length=MAX_TPU_POOLS, description=(
        "Slice group -> the team's share of it ({slices, borrow, lend}); a group not listed: none owned, and it "
        "may borrow that group's idle slices."))
    weight: float = Field(default=1.0, gt=0, le=1000, description=(
        "Fair-sharing weight (ClusterQueue spec.fairSharing.weight): under contention, the idle slices are shared "
        "in proportion to the weights."))
    priority: Literal["training", "interactive", "experiment"] = Field(default="experiment", description=(
        "The highest priority the team's runs may take, and theirs unless a run asks for a lower one: the runs "
        "policy refuses a run above it (security #73.8)."))
    chip_hours_per_month: Optional[int] = Field(default=None, ge=0, le=10**9, description=(
        "The team's budget in TPU chip-hours a calendar month: the plan prices its nominal share against it and "
        "the usage recorder holds the team's queue once its runs and workloads have used more (docs/teams.md, Budgets)."))
    drain_after_minutes: Optional[int] = Field(default=60, ge=0, le=31 * 24 * 60, description=(
        "Over its budget, the team's queue is held at once (nothing new admitted, running work goes on) and drained "
        "this many minutes later (Kueue evicts what it admitted: checkpoint before then); null: held only, never "
        "drained, so that a team's running work may overspend its budget."))
    workers: list[str] = Field(default_factory=list, max_length=20, description=(
        "On a fleet manager: the workers (fleet.workers[].name) its runs may be dispatched to, in order; default: every "
        "worker. Each worker named declares the team too (its namespace and run queue)."))
    buckets: list[RunBucket] = Field(default_factory=list, max_length=20, description=(
        "Buckets the team's runs may mount (submit --team T --mount PATH=gs://BUCKET[:rw]): the bootstrap grants the "
        "runs' Kubernetes service account in the team's namespace (pathways-runs-<stack>) roles/storage.objectViewer "
        "on each, or objectUser where readOnly is false; no other team's runs, and not the stack's own, get them."))
    parent: Optional[str] = Field(default=None, description=(
        "A group of teams (a Kueue Cohort teams-<parent> under the stack's cohort): teams with one parent share "
        "idle slices among themselves first."))
    isolation_domain: Optional[str] = Field(default=None, description=(
        "Teams that must not trust the others (docs/teams.md, Isolation): the domain's teams run on slice groups "
        "only they list and on a head pool of their own, as a node service account of their own, behind firewall "
        "rules of their own, with a scratch bucket of their own, and borrow only from each other. Teams that share "
        "nodes share one identity; without a domain a team is a quota boundary, not a security one."))

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 40)

    @field_validator("buckets")
    @classmethod
    def _unique_buckets(cls, v: list[RunBucket]) -> list[RunBucket]:
        listed_once([b.name for b in v], "bucket")
        return v

    @field_validator("namespace", "parent")
    @classmethod
    def _label(cls, v: Optional[str]) -> Optional[str]:
        return v if v is None else _dns_label(v, 63)

    @field_validator("isolation_domain")
    @classmethod
    def _domain(cls, v: Optional[str]) -> Optional[str]:
        # it names a service account (<cluster>-iso-<domain>, 30 characters), a node pool and two buckets
        return v if v is None else _dns_label(v, MAX_DOMAIN)

    @property
    def team_namespace(self) -> str:
        return self.namespace or f"{TEAM_QUEUE_PREFIX}{self.name}"

    @property
    def cluster_queue(self) -> str:
        return f"{TEAM_QUEUE_PREFIX}{self.name}"

    @property
    def fleet_check(self) -> str:
        """On a fleet manager: the MultiKueue admission check its queue carries (its own when it names workers)."""
        return f"{MULTIKUEUE_CHECK}-{self.name}" if self.workers else MULTIKUEUE_CHECK

    @property
    def cohort(self) -> Optional[str]:
        return f"{TEAM_COHORT_PREFIX}{self.parent}" if self.parent else None


def expected_shares(pool: int, teams: list[tuple[str, int, Optional[int], float]]) -> dict[str, float]:
    """Slices of one group each team holds when every team wants all of them (fair sharing's equilibrium):
    its own (nominal) plus a weighted part of the `pool` no team owns, water-filled under borrowing limits.
    teams: (name, nominal, borrow limit or None, weight)."""
    got = {name: 0.0 for name, *_ in teams}
    open_ = {name: (limit, weight) for name, _, limit, weight in teams}
    left = float(pool)
    while left > 1e-9 and open_:
        total = sum(w for _, w in open_.values())
        # the team whose borrowing limit binds first at this rate
        rooms = [(limit - got[n]) / w * total for n, (limit, w) in open_.items() if limit is not None]
        step = min([left, *rooms])
        for n, (_, w) in open_.items():
            got[n] += step * w / total
        left -= step
        open_ = {n: (limit, w) for n, (limit, w) in open_.items() if limit is None or got[n] < limit - 1e-9}
    return {name: nominal + got[name] for name, nominal, _, _ in teams}
