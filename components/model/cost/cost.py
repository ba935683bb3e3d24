"""What the stack costs to keep running, from the resolved stack and the price table (pricing.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from components.model.capacity.pools import Capacity
from components.model.cost.pricing import CLUSTER_HOUR, CURRENCY, HOURS_PER_MONTH, PRICE_SOURCES, PRICES_AS_OF, tpu_chip_price, vm_price
from components.model.resolved import ResolvedStack


@dataclass(frozen=True)
class CostLine:
    item: str  # what runs: "TPU v6e (spot)", "head VMs n2-standard-64"
    quantity: int  # chips or VMs kept running
    unit: str  # "chip" | "VM" | "cluster"
    unit_price: Optional[float]  # per unit-hour; None: no price known
    basis: str  # "list" | "your price" | "upper bound (on-demand list)" | "no price"
    scales: bool = False  # an autoscaled pool kept up by running workloads: gone when they stop

    @property
    def hourly(self) -> Optional[float]:
        return None if self.unit_price is None else self.unit_price * self.quantity

    def to_json(self) -> dict:
        return {"item": self.item, "quantity": self.quantity, "unit": self.unit,
                "unitPricePerHour": None if self.unit_price is None else round(self.unit_price, 4),
                "hourly": None if self.hourly is None else round(self.hourly, 2), "basis": self.basis}


@dataclass(frozen=True)
class CostEstimate:
    lines: tuple[CostLine, ...]
    on_demand_when_used: tuple[CostLine, ...] = field(default=())  # flex-start slices: billed only while up
    existing: bool = False  # on a cluster made elsewhere the stack creates nothing that is billed

    @property
    def hourly(self) -> float:
        return sum(line.hourly or 0.0 for line in self.lines)

    @property
    def monthly(self) -> float:
        return self.hourly * HOURS_PER_MONTH

    @property
    def idle_hourly(self) -> float:
        """With no workload running: what never scales down (pools without autoscaling, the system floor, the fee)."""
        return sum(line.hourly or 0.0 for line in self.lines if not line.scales)

    @property
    def complete(self) -> bool:
        return all(line.unit_price is not None for line in self.lines)

    @property
    def upper_bound(self) -> bool:
        return any(line.basis.startswith("upper bound") for line in self.lines)

    @property
    def qualifier(self) -> str:
        """How to read the total: plain estimate, at most, or at least (items without a price)."""
        if not self.complete:
            return "at least"
        return "at most" if self.upper_bound else "about"

    def to_json(self) -> dict:
        return {
            "currency": CURRENCY, "hourly": round(self.hourly, 2), "monthly": round(self.monthly, 2),
            "idleHourly": round(self.idle_hourly, 2), "idleMonthly": round(self.idle_hourly * HOURS_PER_MONTH, 2),
            "hoursPerMonth": HOURS_PER_MONTH, "qualifier": self.qualifier,
            "lines": [line.to_json() for line in self.lines],
            "whenUsed": [line.to_json() for line in self.on_demand_when_used],
            "sources": list(PRICE_SOURCES), "pricesAsOf": PRICES_AS_OF,
            "note": ("A cluster made elsewhere (cluster.existing): the stack creates no billed resource; its nodes are the "
                     "cluster owner's." if self.existing else
                     "Estimate from list prices; not a quote. Network, storage, logging and egress are not included."),
        }


def estimate(stack: ResolvedStack) -> CostEstimate:
    """The hourly cost of what the stack keeps running: slices (flex-start ones only while used),
    the head, proxy and system VMs at their floor, and the cluster fee."""
    if stack.existing_cluster:
        return CostEstimate((), (), existing=True)  # the nodes and the cluster are someone else's to pay for
    prices = stack.prices
    lines: list[CostLine] = []
    when_used: list[CostLine] = []
    chips: dict[tuple[str, Capacity, bool], int] = {}
    held: dict[tuple[str, Capacity], int] = {}  # chips of autoscaled pools that always-on workloads keep up
    holders: dict[tuple[str, Capacity], list[str]] = {}
    for g in () if stack.fleet_manager else stack.slices:  # a fleet manager's slices are its workers'
        key = (g.tpu.family, g.capacity, g.autoscaled)
        chips[key] = chips.get(key, 0) + g.pools * g.tpu.chips
        if g.autoscaled:
            # Interactive, service and serve workloads run until they are stopped: their slices stay up.
            always_on = [w for w in stack.active_workloads if w.group is g and w.state == "running" and w.mode != "batch"]
            # an autoscaled endpoint holds its minReplicas' slices; the rest come up only as it scales
            slices = min(g.count, sum(w.idle_slices for w in always_on))
            if slices:
                held[(g.tpu.family, g.capacity)] = held.get((g.tpu.family, g.capacity), 0) + slices * g.tpu.chips
                holders.setdefault((g.tpu.family, g.capacity), []).extend(w.name for w in always_on)
    for (fam, capacity, autoscaled), n in chips.items():
        price, basis = tpu_chip_price(fam, capacity, prices)
        if autoscaled:
            # Flex-start and scale-to-zero pools sit at zero nodes until a workload scales them up.
            kept = held.get((fam, capacity), 0)
            if kept:
                who = ", ".join(holders[(fam, capacity)])
                lines.append(CostLine(f"TPU {fam} chips ({capacity.value}, kept up by {who})", kept, "chip", price, basis, scales=True))
            if n - kept:
                when_used.append(CostLine(f"TPU {fam} chips ({capacity.value})", n - kept, "chip", price, basis))
            continue
        lines.append(CostLine(f"TPU {fam} chips ({capacity.value})", n, "chip", price, basis))
    head_price, head_basis = vm_price(stack.head_machine_type, prices)
    if stack.head_scale_to_zero:
        # One head VM per head pod; the always-on workloads' heads stay up, a batch run's only while it runs.
        always_on = [w for w in stack.active_workloads if w.state == "running" and w.mode not in ("batch", "serve")]
        kept = min(stack.head_nodes, len(always_on))
        if kept:
            lines.append(CostLine(f"head VMs {stack.head_machine_type} (scale to zero, kept up by "
                                  f"{', '.join(w.name for w in always_on)})", kept, "VM", head_price, head_basis, scales=True))
        if stack.head_nodes - kept:
            when_used.append(CostLine(f"head VMs {stack.head_machine_type} (scale to zero)", stack.head_nodes - kept, "VM",
                                      head_price, head_basis))
    else:
        lines.append(CostLine(f"head VMs {stack.head_machine_type}", stack.head_nodes, "VM", head_price, head_basis))
    for d in stack.domains:  # an isolation domain's head pool scales from zero: a VM a running workload of its teams
        when_used.append(CostLine(f"head VMs {stack.head_machine_type} (isolation domain {d.name}, scale to zero)", d.head_nodes,
                                  "VM", head_price, head_basis))
    vms = [("system VMs (autoscaler minimum)", stack.system_machine_type, stack.system_min_nodes)]
    if stack.proxy_nodes and stack.proxy_machine_type:
        vms.append(("proxy VMs", stack.proxy_machine_type, stack.proxy_nodes))
    for label, machine, n in vms:
        price, basis = vm_price(machine, prices)
        lines.append(CostLine(f"{label} {machine}", n, "VM", price, basis))
    fee = prices.cluster_hour if prices.cluster_hour is not None else CLUSTER_HOUR
    lines.append(CostLine("GKE cluster fee", 1, "cluster", fee, "your price" if prices.cluster_hour is not None else "list"))
    return CostEstimate(tuple(lines), tuple(when_used))


HOURS_PER_WEEK = 7 * 24


def idle_notebook_week(stack: ResolvedStack) -> list[dict[str, Any]]:
    """A notebook left open and idle for a week on one slice of each group (its slice's chips and its head VM), with
    and without the stack's idle stop. A group whose pools scale to zero (flex-start, scaleToZero) stops billing
    when the notebook stops; a fixed pool bills anyway, and the idle stop frees the slice for the next run."""
    if stack.runs is None or stack.fleet_manager:
        return []
    head, _ = vm_price(stack.head_machine_type, stack.prices)
    stop_hours = min(HOURS_PER_WEEK, stack.runs.notebook_idle_stop_seconds / 3600) if stack.runs.notebook_idle_stop_seconds else HOURS_PER_WEEK
    out = []
    for g in stack.shared_slices:  # the stack's own runs never reach an isolation domain's groups
        chip, _ = tpu_chip_price(g.tpu.family, g.capacity, stack.prices)
        if chip is None or head is None:
            continue
        hourly = chip * g.tpu.chips + head
        out.append({"group": g.name, "hourly": round(hourly, 2), "withoutIdleStop": round(hourly * HOURS_PER_WEEK, 2),
                    "withIdleStop": round(hourly * stop_hours, 2), "billedAnyway": not g.autoscaled})
    return out
