"""Compute Engine and Cloud TPU machine facts, written out from their documentation pages (not read
from components/model/capacity/machines.py), so a changed size or shape fails here (issue #19)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from components.model.capacity import machines, tpu

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
# tpu7x-standard-1t: 56 vCPU / 240 GB (Compute Engine's machine-type list; tools/cluster/gke-nodes.yaml S1).
TPU_VMS = {
    "ct4p-hightpu-4t": (240, 407),
    "ct5lp-hightpu-1t": (24, 48), "ct5lp-hightpu-4t": (112, 192), "ct5lp-hightpu-8t": (224, 384),
    "ct5p-hightpu-4t": (208, 448),
    "ct6e-standard-1t": (44, 176), "ct6e-standard-4t": (180, 720), "ct6e-standard-8t": (180, 1440),
    "tpu7x-standard-4t": (224, 960), "tpu7x-standard-1t": (56, 240),
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


# --- the project's tables against GKE's own node facts (tools/cluster/gke-nodes.yaml: public sources only) ---

GKE_NODES = yaml.safe_load((Path(__file__).resolve().parents[1] / "tools" / "cluster" / "gke-nodes.yaml").read_text())
GKE_MACHINES = {m["machineType"]: m for m in GKE_NODES["machineTypes"]}
# GKE's node memory moves by a few MiB between versions (the OS reservation it measures per version): CPU is
# compared exactly, memory within this.
MEMORY_TOLERANCE_MIB = 64


def _cpu(q: str) -> Decimal:
    return Decimal(q[:-1]) / 1000 if q.endswith("m") else Decimal(q)


def _mib(q: str) -> Decimal:
    assert q.endswith("Ki"), q
    return Decimal(q[:-2]) / 1024


@pytest.mark.parametrize("machine_type", sorted(machines.TPU_VM_SHAPES))
def test_tpu_vm_shapes_are_gkes(machine_type):
    facts = GKE_MACHINES[machine_type]
    shape = machines.tpu_vm_shape(machine_type)
    assert shape.vcpus == int(facts["capacity"]["cpu"]), "CPUs a node of this machine type has"
    assert shape.memory_gib == Decimal(facts["memoryGiB"])
    # the reservation formula the model uses gives GKE's allocatable (before the DaemonSets' share)
    assert shape.allocatable_cpu + machines.DAEMONSET_CPU == _cpu(facts["allocatable"]["cpu"])
    ours = (shape.allocatable_memory_gib + machines.DAEMONSET_MEMORY_GIB) * 1024
    gke = _mib(facts["allocatable"]["memory"])
    assert abs(ours - gke) <= MEMORY_TOLERANCE_MIB + _os_reserved_mib(facts), (machine_type, ours, gke)


def _os_reserved_mib(facts) -> Decimal:
    """What the OS keeps of a VM's memory before the kubelet reports capacity (GKE measures it per version;
    the model does not count it): physical less capacity."""
    return Decimal(facts["memoryGiB"]) * 1024 - _mib(facts["capacity"]["memory"])


@pytest.mark.parametrize("machine_type", sorted(m for m in GKE_MACHINES if "chips" in GKE_MACHINES[m]))
def test_tpu_catalog_is_gkes(machine_type):
    facts = GKE_MACHINES[machine_type]
    family = next(f for f in tpu.FAMILIES.values() if machine_type in f.machine_types)
    assert family.machine_types[machine_type] == facts["chips"]
    assert family.accelerator == facts["labels"]["cloud.google.com/gke-tpu-accelerator"]
    assert str(facts["chips"]) == facts["capacity"]["google.com/tpu"] == facts["labels"]["cloud.google.com/gke-accelerator-count"]
    # a single-host slice of this machine type has the topology GKE labels its node with
    single = [s for s in map(tpu.from_name, tpu.valid_sizes(family)) if s.machine_type == machine_type and s.hosts == 1]
    assert [s.topology for s in single] in ([], [facts["singleHostTopology"]])


def test_head_and_system_machines_are_gkes():
    for name in ("n2-standard-64", "n2-standard-32", "e2-standard-4", "e2-standard-8", "e2-standard-16"):
        facts, shape = GKE_MACHINES[name], machines.shape(name)
        assert shape.vcpus == int(facts["capacity"]["cpu"]) and shape.memory_gib == Decimal(facts["memoryGiB"])
        assert shape.allocatable_cpu + machines.DAEMONSET_CPU == _cpu(facts["allocatable"]["cpu"])
        ours = (shape.allocatable_memory_gib + machines.DAEMONSET_MEMORY_GIB) * 1024
        assert abs(ours - _mib(facts["allocatable"]["memory"])) <= MEMORY_TOLERANCE_MIB + _os_reserved_mib(facts), name


def test_every_fact_names_its_sources():
    for m in GKE_NODES["machineTypes"]:
        assert m["sources"] and set(m["provenance"]) == {"labels", "capacity", "allocatable"}, m["machineType"]
        for ref in m["sources"]:
            assert ref.split()[0] in GKE_NODES["sources"] or "https://" in ref, (m["machineType"], ref)
