"""The plan's capacity ladders (slices[].ladder): each ladder's rungs, chips and prices (Pulumi-free)."""

from __future__ import annotations

from typing import Any

from components.model.cost.pricing import tpu_chip_price
from components.model.resolved import ResolvedStack


def ladders_summary(stack: ResolvedStack) -> list[dict[str, Any]]:
    """Each capacity ladder (slices[].ladder): its rungs in Kueue's order with their chips and list price per hour,
    and what the ladder costs idle (only the rungs that never scale down) and with every rung full. No price on a
    cluster made elsewhere (its nodes are the owner's)."""
    by_name = {g.name: g for g in stack.slices}
    out = []
    for top in stack.slices:
        if not top.ladder:
            continue
        rungs = []
        for g in (top, *(by_name[n] for n in top.ladder)):
            chips = g.count * g.tpu.chips
            price, basis = (None, "the cluster owner's") if stack.existing_cluster else tpu_chip_price(g.tpu.family, g.capacity, stack.prices)
            rungs.append({"group": g.name, "capacity": g.capacity.value, "queuedProvisioning": g.queued_provisioning,
                          "chips": chips, "scalesToZero": g.autoscaled, "hourly": None if price is None else round(price * chips, 2),
                          "basis": basis})
        known = all(r["hourly"] is not None for r in rungs)
        out.append({"group": top.name, "rungs": rungs,
                    "idleHourly": round(sum(r["hourly"] for r in rungs if not r["scalesToZero"]), 2) if known else None,
                    "fullHourly": round(sum(r["hourly"] for r in rungs), 2) if known else None})
    return out
