"""The deploy's critical path: the longest chain of slow resources in the plan's dependency graph.

Slow resources are the ones a deploy waits minutes on: the cluster, node pools, Helm releases and
JobSets. A resource waits on its dependencies and its provider; the chain that matters is the one
with the most slow resources on it. It must not grow with the number of slices.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .engine import Plan, Registration

SLOW_TYPES = (
    "gcp:container/cluster:Cluster",
    "gcp:container/nodePool:NodePool",
    "kubernetes:helm.sh/v3:Release",
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
)


@dataclass(frozen=True)
class CriticalPath:
    chain: tuple[Registration, ...]  # slow resources only, in deploy order

    @property
    def length(self) -> int:
        return len(self.chain)

    def describe(self) -> str:
        if not self.chain:
            return "Deploy critical path: no slow resources"
        steps = " -> ".join(f"{r.name} ({r.type.split(':')[-1]})" for r in self.chain)
        return f"Deploy critical path ({self.length} slow resources in sequence): {steps}"


def critical_path(plan: Plan) -> CriticalPath:
    by_urn = {r.urn: r for r in plan.resources}

    def waits_on(r: Registration) -> list[Registration]:
        deps = [by_urn[d] for d in r.dependencies if d in by_urn]
        provider = r.options.get("provider")
        if provider in by_urn:
            deps.append(by_urn[provider])
        return deps

    @functools.lru_cache(maxsize=None)
    def longest(urn: str) -> tuple[Registration, ...]:
        r = by_urn[urn]
        best: tuple[Registration, ...] = ()
        for d in waits_on(r):
            chain = longest(d.urn)
            if len(chain) > len(best):
                best = chain
        return best + ((r,) if r.type in SLOW_TYPES else ())

    result: tuple[Registration, ...] = ()
    for r in plan.resources:
        chain = longest(r.urn)
        if len(chain) > len(result):
            result = chain
    return CriticalPath(result)
