"""Node pools in lanes: each waits on the one `concurrency` places before it (model/capacity/rollout.py says why)."""

from __future__ import annotations

import pulumi

from components.model.capacity.rollout import lane_predecessor


class NodePoolLanes:
    """Hands each node pool, in creation order, the pool it must wait for."""

    def __init__(self, concurrency: int):
        self._concurrency = concurrency
        self._pools: list[pulumi.Resource] = []

    def after(self) -> list[pulumi.Resource]:
        """depends_on for the next pool."""
        before = lane_predecessor(len(self._pools), self._concurrency)
        return [] if before is None else [self._pools[before]]

    def add(self, pool: pulumi.Resource) -> pulumi.Resource:
        self._pools.append(pool)
        return pool
