"""tpu7x dynamic slicing: what the platform needs and which slice shapes it forms (Pulumi-free).

A pool set is a slice group over whole sub-blocks of an All Capacity mode reservation: one 16-VM node pool per
sub-block (a 4x4x4 cube), provisioned once. GKE forms a slice of any legal topology on them when a workload is
admitted: a sub-slice inside one cube, or a super-slice of whole cubes of one block. Kueue's topology-aware scheduling
chooses the cubes and hosts; the slice controller (Kueue admission check `accelerator.gke.io/slice`) makes a Slice of
them and lets the workload start once GKE reports it Ready. docs/dynamic-slicing.md gives every fact with its source;
the tables below are the one place to correct them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

# The sub-block: GKE's All Capacity mode table (1 sub-block = 1 cube = 4x4x4 = 64 chips = 16 hosts; 144 sub-blocks a
# block) and the slice controller's TPUsPerCube.
SUB_BLOCK_FAMILY = "tpu7x"
SUB_BLOCK_TOPOLOGY = "4x4x4"
SUB_BLOCK_MACHINE_TYPE = "tpu7x-standard-4t"
CHIPS_PER_HOST = 4
CUBE_CHIPS = 64
CUBE_HOSTS = CUBE_CHIPS // CHIPS_PER_HOST
MAX_CUBES = 144
# Sub-slices, largest first: each halves the one above it (the slice controller's SupportedSubsliceTopologies; its
# sub-slice test cluster nests 2x4x4 > 2x2x4 > 2x2x2 > 2x2x1 partitions in a cube).
SUB_SLICE_TOPOLOGIES = ("2x4x4", "2x2x4", "2x2x2", "2x2x1")
# GKE "Use dynamic slicing": super-slices from 1.35.2-gke.1842000, sub-slices from 1.36.0-gke.3712000, a Standard
# cluster on the Rapid channel.
SUPER_SLICING_MIN_GKE = "1.35.2-gke.1842000"
SUB_SLICING_MIN_GKE = "1.36.0-gke.3712000"
RELEASE_CHANNEL = "RAPID"

# Node labels GKE sets on a pool set's nodes, and the pod-template keys of the platform (the slice controller's
# internal/core/constants.go; Kueue v0.19.2 apis/kueue/v1beta2/topology_types.go).
BLOCK_LABEL = "cloud.google.com/gce-topology-block"
SLICE_TOPOLOGY_ANNOTATION = "cloud.google.com/gke-tpu-slice-topology"
SLICE_CONTROLLER = "accelerator.gke.io/slice"
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
HOSTNAME_LABEL = "kubernetes.io/hostname"
PARTITION_STATES = ("HEALTHY", "DEGRADED")  # the slice controller's default: a degraded cube still serves


def topology_name(group: str) -> str:
    """A pool set's Kueue Topology and slice AdmissionCheck: slices-<group>."""
    return f"slices-{group}"


def flavor_name(group: str) -> str:
    """Any slice group's Kueue ResourceFlavor: tpu-<group> (components/manifests/kueue.py flavor_name)."""
    return f"tpu-{group}"


def partition_label(shape: str) -> str:
    """The node label naming the partition of this shape a host belongs to."""
    return f"cloud.google.com/gke-tpu-partition-{shape}-id"


def partition_state_label(shape: str) -> str:
    return f"cloud.google.com/gke-tpu-partition-{shape}-state"


def partition_shapes(sub_slicing: bool) -> tuple[str, ...]:
    """The partition levels a pool set's nodes carry, largest first: the cube, and the sub-slice shapes when on."""
    return (SUB_BLOCK_TOPOLOGY, *SUB_SLICE_TOPOLOGIES) if sub_slicing else (SUB_BLOCK_TOPOLOGY,)


def topology_levels(sub_slicing: bool) -> list[str]:
    """The Kueue Topology's levels for a pool set: block, each partition, host."""
    return [BLOCK_LABEL, *(partition_label(s) for s in partition_shapes(sub_slicing)), HOSTNAME_LABEL]


def hosts_of(shape: str) -> int:
    return math.prod(int(d) for d in shape.split("x")) // CHIPS_PER_HOST


class TopologyError(ValueError):
    """A slice topology dynamic slicing cannot form."""


@dataclass(frozen=True)
class SliceShape:
    """A slice formed on a pool set: a sub-slice of one cube or a super-slice of whole cubes."""

    topology: str

    @property
    def chips(self) -> int:
        return math.prod(int(d) for d in self.topology.split("x"))

    @property
    def hosts(self) -> int:
        return self.chips // CHIPS_PER_HOST

    @property
    def sub_slice(self) -> bool:
        return self.topology in SUB_SLICE_TOPOLOGIES

    @property
    def cubes(self) -> int:
        """Whole cubes a super-slice spans (a sub-slice: 0, it takes part of one)."""
        return 0 if self.sub_slice else self.chips // CUBE_CHIPS

    @property
    def partition(self) -> str:
        """The partition level each of its pieces fills: its own shape, or the cube for a super-slice."""
        return self.topology if self.sub_slice else SUB_BLOCK_TOPOLOGY

    @property
    def piece_hosts(self) -> int:
        """Hosts in one piece (Kueue's podset-slice-size): the sub-slice, or one cube."""
        return self.hosts if self.sub_slice else CUBE_HOSTS


def legal_text(sub_slicing: bool) -> str:
    subs = f"sub-slices {', '.join(reversed(SUB_SLICE_TOPOLOGIES))}; " if sub_slicing else ""
    return (f"{subs}super-slices 4Ax4Bx4C of whole cubes, A <= B <= C, at most {MAX_CUBES} cubes "
            "(4x4x4, 4x4x8, 4x8x8, 8x8x8, ...)")


def parse(topology: str, *, sub_slicing: bool, cubes: int) -> SliceShape:
    """A topology the pool set can form, or TopologyError naming the nearest legal one."""
    topo = str(topology).strip().lower()
    parts = topo.split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise TopologyError(f"{topology!r} is not a 3-D topology AxBxC; legal: {legal_text(sub_slicing)}")
    dims = [int(p) for p in parts]
    if topo in SUB_SLICE_TOPOLOGIES:
        if not sub_slicing:
            raise TopologyError(f"{topo} is a sub-slice, and the group has subSlicing off; set subSlicing: true "
                                f"(GKE {SUB_SLICING_MIN_GKE} or later) or use {nearest(math.prod(dims), False, cubes)}")
        return SliceShape(topo)
    legal = all(d % 4 == 0 for d in dims) and dims == sorted(dims) and math.prod(dims) // CUBE_CHIPS <= MAX_CUBES
    if not legal:
        raise TopologyError(f"{topo} is not a slice dynamic slicing forms; nearest legal: "
                            f"{nearest(math.prod(dims), sub_slicing, cubes)} (legal: {legal_text(sub_slicing)})")
    return SliceShape(topo)


def super_topology(cube_count: int) -> Optional[str]:
    """The most cube-like super-slice of this many cubes (4x4x8 for 2, 4x8x8 for 4), if any."""
    best = None
    for a in range(1, round(cube_count ** (1 / 3)) + 2):
        for b in range(a, cube_count // a + 1):
            if cube_count % (a * b) or (c := cube_count // (a * b)) < b:
                continue
            key = (c, -a)
            if best is None or key < best[0]:
                best = (key, f"{4 * a}x{4 * b}x{4 * c}")
    return best[1] if best else None


def nearest(chips: int, sub_slicing: bool, cubes: int) -> str:
    """The legal topology nearest in chips to a request (at most the pool set's cubes, ties to the smaller)."""
    options = [(s, math.prod(int(d) for d in s.split("x"))) for s in (SUB_SLICE_TOPOLOGIES if sub_slicing else ())]
    for n in range(1, max(1, min(cubes, MAX_CUBES)) + 1):
        t = super_topology(n)
        if t:
            options.append((t, n * CUBE_CHIPS))
    return min(options, key=lambda o: (abs(o[1] - chips), o[1]))[0]


def partition_index(host: int, shape: str) -> int:
    """Which partition of this shape, within its cube, host `host` (0..15) belongs to: each level halves the one
    above, in host order (the layout the tier's nodes carry; GKE names partitions by opaque IDs)."""
    return host // hosts_of(shape)
