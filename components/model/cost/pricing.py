"""What the stack costs to keep running: an estimate from list prices, never a quote.

The price table is data with its sources. List prices differ by region and change; Spot prices change
up to once a month and flex-start, reservation (committed-use) and negotiated prices are per contract.
So every figure the table lacks is either taken from `pathways:prices` (your contract) or shown as an
upper bound at the on-demand list price, and the estimate says which.
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import Field, field_validator

from components.model.capacity import tpu as tpu_catalog
from components.model.capacity.pools import Capacity
from components.model.common import _Model

CURRENCY = "USD"
HOURS_PER_MONTH = 730  # Google Cloud's pricing calculator and SKU pages: 730 hours a month
PRICE_SOURCES = (
    "https://cloud.google.com/tpu/pricing (on-demand, per chip-hour, us-central1/us-east5 list)",
    "https://cloud.google.com/compute/vm-instance-pricing (on-demand per vCPU-hour and GiB-hour, us-central1)",
    "https://cloud.google.com/kubernetes-engine/pricing (cluster management fee, Standard)",
)
PRICES_AS_OF = "2025 list prices, not re-checked from this offline machine"

# On-demand list price per TPU chip-hour (the TPU VM's host is included). tpu7x (Ironwood) has no
# public per-chip list price: set pathways:prices.tpuChipHour.tpu7x.
TPU_CHIP_HOUR: dict[str, float] = {"v4": 3.22, "v5e": 1.20, "v5p": 4.20, "v6e": 2.70}
# On-demand per vCPU-hour and per GiB-hour by machine series (standard/highmem/highcpu share them).
VM_VCPU_HOUR: dict[str, float] = {"n2": 0.031611, "n2d": 0.027502, "e2": 0.021811}
VM_GIB_HOUR: dict[str, float] = {"n2": 0.004237, "n2d": 0.003686, "e2": 0.002923}
CLUSTER_HOUR = 0.10  # GKE Standard management fee per cluster (the free tier credit is per billing account)

_CAPACITIES = tuple(c.value for c in Capacity)


class PricesConfig(_Model):
    """Your prices (committed-use, negotiated, Spot this month), over the list-price table."""

    tpu_chip_hour: dict[str, dict[str, float]] = Field(default_factory=dict, max_length=20, description=(
        "Per TPU family, per capacity mode (on-demand, spot, flex-start, reservation): price per chip-hour, "
        "e.g. {v6e: {spot: 1.1, reservation: 1.89}}."
    ))
    machine_hour: dict[str, float] = Field(default_factory=dict, max_length=50, description=(
        "Per CPU machine type: price per VM-hour, e.g. {n2-standard-64: 2.2}."
    ))
    cluster_hour: Optional[float] = Field(default=None, ge=0, le=1000, description="GKE management fee per cluster-hour.")

    @field_validator("tpu_chip_hour")
    @classmethod
    def _tpu(cls, v: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for fam, modes in v.items():
            tpu_catalog.family(fam)  # TpuError names the families
            for mode, price in modes.items():
                if mode not in _CAPACITIES:
                    raise ValueError(f"{fam}.{mode[:40]}: not a capacity mode; valid: {', '.join(_CAPACITIES)}")
                _check_price(f"{fam}.{mode}", price)
        return v

    @field_validator("machine_hour")
    @classmethod
    def _machines(cls, v: dict[str, float]) -> dict[str, float]:
        from components.model.capacity import machines

        for machine, price in v.items():
            machines.shape(machine)  # MachineError names what exists
            _check_price(machine, price)
        return v


def _check_price(where: str, price: float) -> None:
    if not math.isfinite(price) or not 0 <= price <= 10_000:
        raise ValueError(f"{where}: {price} is not a price per hour; use 0..10000 ({CURRENCY})")


def tpu_chip_price(fam: str, capacity: Capacity, prices: PricesConfig) -> tuple[Optional[float], str]:
    """(price per chip-hour, basis) for a family in a capacity mode."""
    yours = prices.tpu_chip_hour.get(fam, {})
    if capacity.value in yours:
        return yours[capacity.value], "your price"
    listed = yours.get(Capacity.ON_DEMAND.value, TPU_CHIP_HOUR.get(fam))
    if listed is None:
        return None, f"no price: set pathways:prices.tpuChipHour.{fam}.{capacity.value}"
    if capacity is Capacity.ON_DEMAND:
        return listed, "list"  # your on-demand price was returned above
    return listed, "upper bound (your on-demand price)" if Capacity.ON_DEMAND.value in yours else "upper bound (on-demand list)"


def vm_price(machine_type: str, prices: PricesConfig) -> tuple[Optional[float], str]:
    """(price per VM-hour, basis) for a CPU machine type."""
    from components.model.capacity import machines

    if machine_type in prices.machine_hour:
        return prices.machine_hour[machine_type], "your price"
    shape = machines.shape(machine_type)
    series = machine_type.split("-")[0]
    if series not in VM_VCPU_HOUR:
        return None, f"no price: set pathways:prices.machineHour.{machine_type}"
    return shape.vcpus * VM_VCPU_HOUR[series] + float(shape.memory_gib) * VM_GIB_HOUR[series], "list"
