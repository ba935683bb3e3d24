"""The deploy's critical path: the chain of slow resources a deploy waits on longest.

Slow resources are the cluster, node pools, Helm releases and JobSets. A resource waits on its
dependencies and its provider. Each slow resource weighs what a deploy may wait for it: its create
timeout from the plan (or the provider's default), so the chain shown is the worst case, e.g. a TPU
pool's 180 minutes. Neither the chain nor its bound may grow with the number of slices.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from components.resource_types import CLUSTER, HELM_CHART, HELM_RELEASE, JOBSET, NODE_POOL

from .engine import Plan, Registration, duration_seconds

SLOW_TYPES = (CLUSTER, NODE_POOL, HELM_RELEASE, HELM_CHART, JOBSET)

# Provider defaults where the plan sets no create timeout (pulumi-gcp: cluster 40m, node pool 30m).
DEFAULT_CREATE_MINUTES = {CLUSTER: 40, NODE_POOL: 30}
HELM_DEFAULT_SECONDS = 300
# A helm.v4.Chart is done when Pulumi's await logic sees its objects ready: 10 minutes by default
# for a Deployment (pulumi-kubernetes await defaults).
CHART_AWAIT_MINUTES = 10


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

    @property
    def length(self) -> int:
        return len(self.chain)

    @property
    def minutes(self) -> float:
        return sum(worst_case_minutes(r) for r in self.chain)

    def describe(self) -> str:
        if not self.chain:
            return "Deploy critical path: no slow resources"
        steps = " -> ".join(f"{r.name} ({r.type.split(':')[-1]}, <= {worst_case_minutes(r):g}m)" for r in self.chain)
        return (
            f"Deploy critical path ({self.length} slow resources in sequence, worst case {self.minutes:g} min "
            f"by create timeouts): {steps}"
        )


def critical_path(plan: Plan) -> CriticalPath:
    by_urn = {r.urn: r for r in plan.resources}

    def waits_on(r: Registration) -> list[Registration]:
        deps = [by_urn[d] for d in r.dependencies if d in by_urn]
        provider = r.options.get("provider")
        if provider in by_urn:
            deps.append(by_urn[provider])
        return deps

    def weight(chain: tuple[Registration, ...]) -> tuple[float, int]:
        return sum(worst_case_minutes(r) for r in chain), len(chain)

    @functools.lru_cache(maxsize=None)
    def longest(urn: str) -> tuple[Registration, ...]:
        r = by_urn[urn]
        best: tuple[Registration, ...] = ()
        for d in sorted(waits_on(r), key=lambda d: d.urn):  # sorted: ties resolve the same way every run
            chain = longest(d.urn)
            if weight(chain) > weight(best):
                best = chain
        return best + ((r,) if r.type in SLOW_TYPES else ())

    result: tuple[Registration, ...] = ()
    for r in plan.resources:
        chain = longest(r.urn)
        if weight(chain) > weight(result):
            result = chain
    return CriticalPath(result)
