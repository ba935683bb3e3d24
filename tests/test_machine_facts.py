"""Compute Engine and Cloud TPU machine facts, written out from their documentation pages (not read
from components/model/machines.py), so a changed size or shape fails here (issue #19)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from components.model import machines

# Compute Engine "General-purpose machine family" and "Compute-optimized machine family" tables:
# the vCPU counts each series and kind comes in.
SIZES = {
    "n2-standard": "2 4 8 16 32 48 64 80 96 128",
    "n2-highmem": "2 4 8 16 32 48 64 80 96 128",
    "n2-highcpu": "2 4 8 16 32 48 64 80 96",
    "n2d-standard": "2 4 8 16 32 48 64 80 96 128 224",
    "n2d-highmem": "2 4 8 16 32 48 64 80 96",
    "n2d-highcpu": "2 4 8 16 32 48 64 80 96 128 224",
    "e2-standard": "2 4 8 16 32",
    "e2-highmem": "2 4 8 16",
    "e2-highcpu": "2 4 8 16 32",
    "n4-standard": "2 4 8 16 32 48 64 80",
    "n4-highmem": "2 4 8 16 32 48 64 80",
    "n4-highcpu": "2 4 8 16 32 48 64 80",
    "c3-standard": "4 8 22 44 88 176",
    "c3-highmem": "4 8 22 44 88 176",
    "c3-highcpu": "4 8 22 44 88 176",
    "c3d-standard": "4 8 16 30 60 90 180 360",
    "c3d-highmem": "4 8 16 30 60 90 180 360",
    "c3d-highcpu": "4 8 16 30 60 90 180 360",
    "c4-standard": "2 4 8 16 24 32 48 96 144 192 288",
    "c4-highmem": "2 4 8 16 24 32 48 96 144 192 288",
    "c4-highcpu": "2 4 8 16 24 32 48 96 144 192 288",
}
# GiB of memory per vCPU (same pages): standard 4, highmem 8, highcpu 1 (N2, N2D, E2) or 2 (N4, C3,
# C3D, C4); C4 standard 3.75 and highmem 7.75.
GIB_PER_VCPU = {
    "n2-standard": "4", "n2-highmem": "8", "n2-highcpu": "1", "n2d-standard": "4", "n2d-highmem": "8", "n2d-highcpu": "1",
    "e2-standard": "4", "e2-highmem": "8", "e2-highcpu": "1", "n4-standard": "4", "n4-highmem": "8", "n4-highcpu": "2",
    "c3-standard": "4", "c3-highmem": "8", "c3-highcpu": "2", "c3d-standard": "4", "c3d-highmem": "8", "c3d-highcpu": "2",
    "c4-standard": "3.75", "c4-highmem": "7.75", "c4-highcpu": "2",
}


@pytest.mark.parametrize("kind", list(SIZES))
def test_every_documented_size_exists_with_its_memory(kind):
    sizes = [int(n) for n in SIZES[kind].split()]
    for n in sizes:
        shape = machines.shape(f"{kind}-{n}")
        assert (shape.vcpus, shape.memory_gib) == (n, Decimal(GIB_PER_VCPU[kind]) * n)
        if n + 1 not in sizes:
            with pytest.raises(machines.MachineError, match=f"{kind}-{n + 1} does not exist; {kind} comes with {', '.join(map(str, sizes))} vCPUs"):
                machines.shape(f"{kind}-{n + 1}")


# Cloud TPU VM shapes (vCPUs, GiB): Cloud TPU "TPU v4", "TPU v5e" (GKE "About TPUs in GKE" table),
# "TPU v5p", "TPU v6e" configurations and the "TPU7x (Ironwood)" system architecture table; the
# tpu7x 1-chip VM is unpublished and assumed the smallest TPU VM (see machines.py).
TPU_VMS = {
    "ct4p-hightpu-4t": (240, 407),
    "ct5lp-hightpu-1t": (24, 48), "ct5lp-hightpu-4t": (112, 192), "ct5lp-hightpu-8t": (224, 384),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176), "ct6e-standard-4t": (180, 720), "ct6e-standard-8t": (180, 1440),
    "tpu7x-standard-4t": (224, 960), "tpu7x-standard-1t": (24, 48),
}


def test_tpu_vm_shapes():
    assert {m: (s.vcpus, s.memory_gib) for m in TPU_VMS for s in [machines.tpu_vm_shape(m)]} == {
        m: (v, Decimal(g)) for m, (v, g) in TPU_VMS.items()}
    assert set(machines.TPU_VM_SHAPES) == set(TPU_VMS)


def test_allocatable_of_small_and_large_nodes():
    # GKE reservations ("Plan node sizes"): CPU 6% of core 1, 1% of core 2, 0.5% of cores 3-4, 0.25%
    # above; memory 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112,
    # 2% above 128, plus 100 MiB for eviction; then 1 vCPU and 2 GiB for our DaemonSets.
    e2_2 = machines.shape("e2-standard-2")  # 2 vCPU, 8 GiB
    assert e2_2.allocatable_cpu == Decimal(2) - Decimal("0.07") - 1
    assert e2_2.allocatable_memory_gib == Decimal(8) - (Decimal(1) + Decimal("0.8")) - Decimal(100) / 1024 - 2
    e2_16 = machines.shape("e2-standard-16")  # 16 vCPU, 64 GiB
    assert e2_16.allocatable_cpu == Decimal(16) - (Decimal("0.06") + Decimal("0.01") + Decimal("0.01") + Decimal("0.03")) - 1
    reserved = Decimal(1) + Decimal("0.8") + Decimal("0.8") + Decimal("0.06") * 48
    assert e2_16.allocatable_memory_gib == Decimal(64) - reserved - Decimal(100) / 1024 - 2
    one = machines.MachineShape("one", 1, Decimal(2))
    assert one.allocatable_cpu == Decimal(1) - Decimal("0.06") - 1
    assert one.allocatable_memory_gib == Decimal(2) - Decimal("0.5") - Decimal(100) / 1024 - 2


def test_smallest_fitting_head_machine():
    assert machines.smallest_fitting(Decimal(48), Decimal("232")) == "n2-standard-64"
    assert machines.smallest_fitting(Decimal(60), Decimal("300")) == "n2-highmem-64"
    assert machines.smallest_fitting(Decimal(200), Decimal(10)) == (
        "none of n2-standard-64, n2-highmem-64, n2-standard-80, n2-highmem-80, n2-standard-96, n2-highmem-96, "
        "n2-standard-128, n2-highmem-128")
