"""The deploy's critical path and deploy-time estimate: the chain of slow resources a deploy waits on longest.

Slow resources are the cluster, node pools, Helm charts and JobSets. A resource waits on its
dependencies and its provider. Two weights per slow resource:
- worst case: what a deploy may wait for it, its create timeout from the plan (or the provider's
  default), e.g. a TPU pool's 180 minutes;
- expected: a typical create time (EXPECTED_MINUTES: planning assumptions, not figures GKE documents).
Node pools wait in lanes (components/model/capacity/rollout.py), so the chain grows by one pool per
`concurrency` pools: the estimate says so instead of assuming that 256 pools come up at once. Where GKE
may still enforce its 2023 quota of 5 concurrent operations, the estimate under that quota is given too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from components.constants import CLUSTER, HELM_CHART, HELM_RELEASE, JOBSET, NODE_POOL
from components.model.capacity.rollout import EXPECTED_MINUTES, LEGACY_GKE_QUOTA, waves
from components.model.capacity.tpu import is_tpu_machine
from infra.offline.engine import Plan, Registration, duration_seconds

SLOW_TYPES = (CLUSTER, NODE_POOL, HELM_RELEASE, HELM_CHART, JOBSET)
# The deploy workflow's `up` job: GitHub-hosted runners stop a job after 6 hours (GitHub Actions "Usage
# limits"), and .github/workflows/pulumi-stack.yml sets that (a test keeps the two equal).
UP_JOB_TIMEOUT_MINUTES = 360

# Provider defaults where the plan sets no create timeout (pulumi-gcp: cluster 40m, node pool 30m).
DEFAULT_CREATE_MINUTES = {CLUSTER: 40, NODE_POOL: 30}
HELM_DEFAULT_SECONDS = 300
# A helm.v4.Chart is done when Pulumi's await logic sees its objects ready: 10 minutes by default
# for a Deployment (pulumi-kubernetes await defaults).
CHART_AWAIT_MINUTES = 10




def expected_minutes(r: Registration) -> float:
    """A typical create time for this resource (EXPECTED_MINUTES)."""
    if r.type == CLUSTER:
        return EXPECTED_MINUTES["cluster"]
    if r.type in (HELM_RELEASE, HELM_CHART):
        return EXPECTED_MINUTES["chart"]
    if r.type == NODE_POOL:
        if r.input("initialNodeCount") == 0 and r.input("nodeCount") is None:
            return EXPECTED_MINUTES["empty-pool"]
        if is_tpu_machine(r.input("nodeConfig.machineType") or ""):
            return EXPECTED_MINUTES["tpu-pool-multi-host" if r.input("placementPolicy") else "tpu-pool"]
        return EXPECTED_MINUTES["cpu-pool"]
    return 0.0


def worst_case_minutes(r: Registration) -> float:
    """How long a deploy may wait for this resource to be created."""
    if r.type == HELM_RELEASE:
        return (r.input("timeout") or HELM_DEFAULT_SECONDS) / 60  # helm waits up to `timeout`
    if r.type == HELM_CHART:
        return CHART_AWAIT_MINUTES
    if r.type == JOBSET:
        return 0.0  # created without waiting for its pods
    create = r.options.get("customTimeouts", {}).get("create")
    return duration_seconds(create) / 60 if create else DEFAULT_CREATE_MINUTES.get(r.type, 0.0)


@dataclass(frozen=True)
class CriticalPath:
    chain: tuple[Registration, ...]  # slow resources only, in deploy order
    expected_chain: tuple[Registration, ...] = ()  # the longest chain by expected create times
    pools: int = 0  # node pools the stack creates
    concurrency: int = LEGACY_GKE_QUOTA  # node pool operations in flight at once (the lanes)

    @property
    def length(self) -> int:
        return len(self.chain)

    @property
    def minutes(self) -> float:
        """Worst case: the longest chain by create timeouts."""
        return sum(worst_case_minutes(r) for r in self.chain)

    @property
    def expected(self) -> float:
        """Expected: the longest chain by typical create times."""
        return sum(expected_minutes(r) for r in self.expected_chain)

    @property
    def expected_at_legacy_quota(self) -> float:
        """Expected if GKE allowed only 5 node-pool operations at once: the lane of the expected chain
        grows from waves(pools, concurrency) to waves(pools, 5) pools, each as slow as its slowest."""
        lane = [expected_minutes(r) for r in self.expected_chain if r.type == NODE_POOL]
        extra_waves = waves(self.pools, LEGACY_GKE_QUOTA) - waves(self.pools, self.concurrency)
        return self.expected + max(0, extra_waves) * max(lane, default=0.0)

    @property
    def workflow_warning(self) -> Optional[str]:
        """Said when the deploy workflow's `up` job could stop before `pulumi up` ends."""
        if self.minutes <= UP_JOB_TIMEOUT_MINUTES:
            return None
        which = "expected" if self.expected > UP_JOB_TIMEOUT_MINUTES else "worst-case"
        minutes = self.expected if which == "expected" else self.minutes
        return (f"Warning: the {which} deploy time ({minutes:g} min) exceeds the {UP_JOB_TIMEOUT_MINUTES} min the deploy workflow's "
                "up job may run on GitHub-hosted runners (.github/workflows/pulumi-stack.yml); run it on a self-hosted runner "
                "with a longer timeout-minutes, or roll the slice groups out over several changes (docs/deploying.md)")

    def describe(self) -> str:
        if not self.chain:
            return "Deploy critical path: no slow resources"
        # The chain the expected time comes from, each step with its typical and its longest create time; the
        # worst-case chain too when it differs. A JobSet is created without waiting for its pods.
        def step(r: Registration) -> str:
            kind = r.type.split(":")[-1]
            if r.type == JOBSET:
                return f"{r.name} ({kind}, created at once)"
            return f"{r.name} ({kind}, ~{expected_minutes(r):g}m, <= {worst_case_minutes(r):g}m)"

        def chain_text(chain: tuple[Registration, ...]) -> str:
            steps = [step(r) for r in chain]
            if len(steps) > 8:  # a long lane of pools: its ends say enough
                steps = [*steps[:4], f"... {len(steps) - 6} more in the same lane ...", *steps[-2:]]
            return " -> ".join(steps)
        expected_chain = self.expected_chain or self.chain
        legacy = ""
        if self.concurrency > LEGACY_GKE_QUOTA and self.expected_at_legacy_quota > self.expected:
            legacy = (f"; ~{self.expected_at_legacy_quota:g} min where GKE still allows only {LEGACY_GKE_QUOTA} node-pool "
                      f"operations at once (set cluster.nodePoolConcurrency: {LEGACY_GKE_QUOTA} there)")
        lines = [
            f"Deploy time: expected ~{self.expected:g} min with {self.concurrency} node-pool operations at once{legacy}; "
            f"worst case {self.minutes:g} min by create timeouts (typical create times are assumptions: "
            f"infra/offline/critical_path.py)",
            f"Deploy critical path ({len(expected_chain)} resources in sequence): {chain_text(expected_chain)}",
        ]
        if [r.urn for r in self.chain] != [r.urn for r in expected_chain]:
            lines.append(f"Worst-case chain ({self.length} resources, by create timeouts): {chain_text(self.chain)}")
        if self.workflow_warning:
            lines.append(self.workflow_warning)
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"expectedMinutes": self.expected, "worstCaseMinutes": self.minutes,
                "expectedMinutesAtLegacyQuota": self.expected_at_legacy_quota, "nodePoolConcurrency": self.concurrency,
                "chain": [r.urn for r in self.chain], "expectedChain": [r.urn for r in self.expected_chain]}


def critical_path(plan: Plan, concurrency: int = LEGACY_GKE_QUOTA) -> CriticalPath:
    pools = len(plan.by_type(NODE_POOL))
    return CriticalPath(_longest_chain(plan, worst_case_minutes), _longest_chain(plan, expected_minutes), pools, concurrency)


def _longest_chain(plan: Plan, minutes: Callable[[Registration], float]) -> tuple[Registration, ...]:
    by_urn = {r.urn: r for r in plan.resources}

    def waits_on(r: Registration) -> list[Registration]:
        deps = [by_urn[d] for d in r.dependencies if d in by_urn]
        provider = r.options.get("provider")
        if provider in by_urn:
            deps.append(by_urn[provider])
        return deps

    # Longest chain ending at each resource, with its weight; computed in dependency order without
    # recursion (a lane of 1000 pools at concurrency 1 is a chain 1000 deep).
    best: dict[str, tuple[tuple[float, int], tuple[Registration, ...]]] = {}
    for start in plan.resources:
        stack = [start.urn]
        while stack:
            urn = stack[-1]
            if urn in best:
                stack.pop()
                continue
            deps = sorted(waits_on(by_urn[urn]), key=lambda d: d.urn)  # sorted: ties resolve the same way every run
            todo = [d.urn for d in deps if d.urn not in best]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            r = by_urn[urn]
            weight, chain = (0.0, 0), ()
            for d in deps:
                if best[d.urn][0] > weight:
                    weight, chain = best[d.urn]
            if r.type in SLOW_TYPES:
                weight, chain = (weight[0] + minutes(r), weight[1] + 1), chain + (r,)
            best[urn] = (weight, chain)
    return max(best.values(), key=lambda wc: wc[0], default=((0.0, 0), ()))[1]
