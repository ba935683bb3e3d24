"""Compute Engine machine shapes and GKE node allocatable, to check that a head pod fits a node.

Only the general-purpose and compute-optimised series a Pathways head runs on; memory in GiB
(Compute Engine's "GB" in machine specs is binary).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

# GiB of memory per vCPU by series and kind.
_MEMORY_PER_VCPU: dict[str, dict[str, Decimal]] = {
    "n1": {"standard": Decimal("3.75"), "highmem": Decimal("6.5"), "highcpu": Decimal("0.9")},
    "n2": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(1)},
    "n2d": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(1)},
    "e2": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(1)},
    "n4": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(2)},
    "c3": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(2)},
    "c3d": {"standard": Decimal(4), "highmem": Decimal(8), "highcpu": Decimal(2)},
    "c4": {"standard": Decimal("3.75"), "highmem": Decimal("7.75"), "highcpu": Decimal(2)},
}
_MACHINE = re.compile(r"([a-z][a-z0-9]*)-(standard|highmem|highcpu)-([0-9]{1,4})")

# The vCPU counts each series and kind exists in (Compute Engine docs, "General-purpose machine
# family" for N1, N2, N2D, E2, N4, C3, C3D, C4 machine type tables); anything else is not a machine type.
# N1 is the first generation xpk's docs still name for the default CPU pool (n1-standard-16).
_SIZES: dict[str, dict[str, tuple[int, ...]]] = {
    "n1": {"standard": (1, 2, 4, 8, 16, 32, 64, 96), "highmem": (2, 4, 8, 16, 32, 64, 96), "highcpu": (2, 4, 8, 16, 32, 64, 96)},
    "n2": {"standard": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128), "highmem": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128),
           "highcpu": (2, 4, 8, 16, 32, 48, 64, 80, 96)},
    "n2d": {"standard": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224), "highmem": (2, 4, 8, 16, 32, 48, 64, 80, 96),
            "highcpu": (2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 224)},
    "e2": {"standard": (2, 4, 8, 16, 32), "highmem": (2, 4, 8, 16), "highcpu": (2, 4, 8, 16, 32)},
    "n4": {k: (2, 4, 8, 16, 32, 48, 64, 80) for k in ("standard", "highmem", "highcpu")},
    "c3": {k: (4, 8, 22, 44, 88, 176) for k in ("standard", "highmem", "highcpu")},
    "c3d": {k: (4, 8, 16, 30, 60, 90, 180, 360) for k in ("standard", "highmem", "highcpu")},
    "c4": {k: (2, 4, 8, 16, 24, 32, 48, 96, 144, 192, 288) for k in ("standard", "highmem", "highcpu")},
}

# What DaemonSets (logging, metadata, networking) take on every node, on top of GKE's reservation.
DAEMONSET_CPU = Decimal("1")
DAEMONSET_MEMORY_GIB = Decimal("2")

# Candidates to suggest when a head machine is too small, smallest first.
HEAD_CANDIDATES = (
    "n2-standard-64", "n2-highmem-64", "n2-standard-80", "n2-highmem-80", "n2-standard-96",
    "n2-highmem-96", "n2-standard-128", "n2-highmem-128",
)


# Candidates for the system pool (controllers, the inference gateway's endpoint picker), smallest first.
SYSTEM_CANDIDATES = ("e2-standard-4", "e2-standard-8", "e2-standard-16", "e2-standard-32")


class MachineError(ValueError):
    pass


# TPU VM shapes (vCPUs, memory GiB as Compute Engine publishes it), for the worker pods' requests.
# Sources: Cloud TPU docs "TPU7x (Ironwood)" system architecture table (4-chip VMs: v5p 208 / 448,
# v6e 180 / 720, tpu7x 224 / 960); Cloud TPU "TPU v6e" configurations (ct6e-standard-1t 44 / 176,
# -8t 180 / 1440); GKE "About TPUs in GKE" v5e table (ct5lp-hightpu-1t 24 / 48, -4t 112 / 192,
# -8t 224 / 384); Cloud TPU "TPU v4" (ct4p-hightpu-4t 240 / 407).
TPU_VM_SHAPES: dict[str, tuple[int, int]] = {
    "ct4p-hightpu-4t": (240, 407),
    "ct5lp-hightpu-1t": (24, 48),
    "ct5lp-hightpu-4t": (112, 192),
    "ct5lp-hightpu-8t": (224, 384),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176),
    "ct6e-standard-4t": (180, 720),
    "ct6e-standard-8t": (180, 1440),
    "tpu7x-standard-4t": (224, 960),
    # Compute Engine's machine-type list (gcloud compute machine-types list; tools/cluster/gke-nodes.yaml S1).
    "tpu7x-standard-1t": (56, 240),
}


def tpu_vm_shape(machine_type: str) -> "MachineShape":
    vcpus, memory = TPU_VM_SHAPES[machine_type]
    return MachineShape(machine_type, vcpus, Decimal(memory))


@dataclass(frozen=True)
class MachineShape:
    name: str
    vcpus: int
    memory_gib: Decimal

    @property
    def allocatable_cpu(self) -> Decimal:
        """GKE CPU reservation: 6% of the 1st core, 1% of the 2nd, 0.5% of the next 2, 0.25% above 4."""
        n = Decimal(self.vcpus)
        reserved = Decimal("0.06") * min(n, 1) + Decimal("0.01") * max(min(n, 2) - 1, 0)
        reserved += Decimal("0.005") * max(min(n, 4) - 2, 0) + Decimal("0.0025") * max(n - 4, 0)
        return n - reserved - DAEMONSET_CPU

    @property
    def allocatable_memory_gib(self) -> Decimal:
        """GKE memory reservation: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8,
        6% of the next 112, 2% above 128, plus the 100 MiB eviction threshold."""
        m = self.memory_gib
        tiers = ((4, "0.25"), (4, "0.20"), (8, "0.10"), (112, "0.06"))
        reserved, rest = Decimal(0), m
        for size, rate in tiers:
            part = min(rest, Decimal(size))
            reserved += part * Decimal(rate)
            rest -= part
        reserved += rest * Decimal("0.02") + Decimal(100) / 1024
        return m - reserved - DAEMONSET_MEMORY_GIB


def shape(machine_type: str) -> MachineShape:
    m = _MACHINE.fullmatch(machine_type) if isinstance(machine_type, str) else None
    if not m or m.group(1) not in _MEMORY_PER_VCPU:
        raise MachineError(
            f"{str(machine_type)[:80]!r} is not a machine type this stack knows; use <series>-<standard|highmem|highcpu>-<vCPUs> "
            f"with series one of {', '.join(_MEMORY_PER_VCPU)} (e.g. n2-standard-64)"
        )
    series, kind, vcpus = m.group(1), m.group(2), int(m.group(3))
    sizes = _SIZES[series][kind]
    if vcpus not in sizes:
        raise MachineError(
            f"{machine_type} does not exist; {series}-{kind} comes with {', '.join(map(str, sizes))} vCPUs"
        )
    return MachineShape(machine_type, vcpus, _MEMORY_PER_VCPU[series][kind] * vcpus)


def fits(machine: MachineShape, cpu: Decimal, memory_gib: Decimal) -> bool:
    return cpu <= machine.allocatable_cpu and memory_gib <= machine.allocatable_memory_gib


def smallest_fitting(cpu: Decimal, memory_gib: Decimal, candidates: tuple[str, ...] = HEAD_CANDIDATES) -> str:
    for name in candidates:
        if fits(shape(name), cpu, memory_gib):
            return name
    return "none of " + ", ".join(candidates)
