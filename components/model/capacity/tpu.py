"""TPU catalog: what GKE and Pathways need to know about one TPU slice.

Pure data and functions, no Pulumi. A slice is named either by its common name (``v6e-16``,
``v5p-128``, ``tpu7x-128``; ``<family>-<TensorCores>``) or by family + topology (``v6e`` + ``4x4``).
Everything else (machine type, hosts, accelerator label, Pathways ``--instance_type``, placement,
minimum GKE version) is derived here so that node pools, manifests and policies agree.

Facts: GKE's TPU pages (the authority before widening this), xpk and Cluster Toolkit (pkg/config/hardware.go).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum
from typing import Optional


class TpuError(ValueError):
    """A TPU name, family, topology or machine type that GKE would not accept."""


class Placement(str, Enum):
    """How GKE places the hosts of one slice."""

    SINGLE_HOST = "single-host"  # one VM: no placement policy, never tpu_topology
    COMPACT = "compact"  # multi-host: placement_policy {type: COMPACT, tpu_topology}
    WORKLOAD_POLICY = "workload-policy"  # tpu7x multi-host: compute resource policy via policy_name


@dataclass(frozen=True)
class TpuFamily:
    name: str
    aliases: tuple[str, ...]
    accelerator: str  # cloud.google.com/gke-tpu-accelerator
    instance_prefix: str  # Pathways --instance_type prefix
    cores_per_chip: int  # TensorCores per chip, for the common name
    dims: int  # 2-D or 3-D topology
    # machine type -> chips per VM
    machine_types: dict[str, int]
    max_chips: int
    ascending_dims: bool  # 3-D families that require A <= B <= C (above the small shapes)
    min_gke_version: str
    small_topologies: tuple[str, ...] = ()  # 3-D shapes below the 4x4x4 cube, exactly as GKE writes them


# Minimum GKE versions, floors to validate a requested version against (never versions to request):
# - multislice needs 1.27.4-gke.900 (GKE docs, "Deploy TPU Multislice in GKE": "Standard supports
#   Multislice in version 1.27.4-gke.900 and later"); Pathways runs every family as multislice;
# - v6e needs 1.31.1-gke.1146000 (GKE docs, "Plan TPUs in GKE", TPU version availability);
# - tpu7x needs 1.34.0-gke.2201000 (GKE docs, Ironwood (TPU7x) on GKE: workload-policy placement).
_MULTISLICE_MIN_GKE = "1.27.4-gke.900"

# 3-D shapes below the 4x4x4 cube, as GKE lists them ("Plan TPUs in GKE", topology tables; the same
# lists in Cluster Toolkit pkg/config/hardware.go and xpk's system characteristics). tpu7x adds the
# single-chip 1x1x1 (tpu7x-standard-1t).
SMALL_TOPOLOGIES_3D = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")
# No 3-D dimension above 256: no peer lists one and GKE's topology tables end well below it.
MAX_DIMENSION_3D = 256

FAMILIES: dict[str, TpuFamily] = {
    f.name: f
    for f in (
        TpuFamily(
            name="v4",
            aliases=(),
            accelerator="tpu-v4-podslice",
            instance_prefix="tpuv4",
            cores_per_chip=2,
            dims=3,
            machine_types={"ct4p-hightpu-4t": 4},
            max_chips=4096,
            ascending_dims=False,
            min_gke_version=_MULTISLICE_MIN_GKE,
            small_topologies=SMALL_TOPOLOGIES_3D,
        ),
        TpuFamily(
            name="v5e",
            aliases=("v5litepod",),
            accelerator="tpu-v5-lite-podslice",
            instance_prefix="tpuv5e",
            cores_per_chip=1,
            dims=2,
            machine_types={"ct5lp-hightpu-1t": 1, "ct5lp-hightpu-4t": 4, "ct5lp-hightpu-8t": 8},
            max_chips=256,
            ascending_dims=True,
            min_gke_version=_MULTISLICE_MIN_GKE,
        ),
        TpuFamily(
            name="v5p",
            aliases=(),
            accelerator="tpu-v5p-slice",
            instance_prefix="tpuv5",
            cores_per_chip=2,
            dims=3,
            machine_types={"ct5p-hightpu-4t": 4},
            max_chips=8960,
            ascending_dims=True,
            min_gke_version=_MULTISLICE_MIN_GKE,
            small_topologies=SMALL_TOPOLOGIES_3D,
        ),
        TpuFamily(
            name="v6e",
            aliases=("trillium",),
            accelerator="tpu-v6e-slice",
            instance_prefix="tpuv6e",
            cores_per_chip=1,
            dims=2,
            machine_types={"ct6e-standard-1t": 1, "ct6e-standard-4t": 4, "ct6e-standard-8t": 8},
            max_chips=256,
            ascending_dims=True,
            min_gke_version="1.31.1-gke.1146000",
        ),
        TpuFamily(
            name="tpu7x",
            aliases=("ironwood",),
            accelerator="tpu7x",
            instance_prefix="tpu7x",
            cores_per_chip=2,
            dims=3,
            machine_types={"tpu7x-standard-1t": 1, "tpu7x-standard-4t": 4},
            max_chips=9216,
            ascending_dims=True,
            min_gke_version="1.34.0-gke.2201000",
            small_topologies=("1x1x1", *SMALL_TOPOLOGIES_3D),
        ),
    )
}

_FAMILY_BY_ALIAS = {alias: f for f in FAMILIES.values() for alias in (f.name, *f.aliases)}

# 2-D (v5e, v6e) slice shapes GKE offers.
TOPOLOGIES_2D = ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")

_TOPOLOGY_RE = re.compile(r"^[1-9][0-9]*(x[1-9][0-9]*)+$")


@dataclass(frozen=True)
class TpuSlice:
    """One TPU slice as GKE provisions it and Pathways addresses it."""

    family: str
    topology: str
    machine_type: str
    chips_per_vm: int

    @property
    def tpu_family(self) -> TpuFamily:
        return FAMILIES[self.family]

    @property
    def chips(self) -> int:
        return math.prod(int(d) for d in self.topology.split("x"))

    @property
    def hosts(self) -> int:
        """VMs (= GKE nodes = Pathways worker pods) in one slice."""
        return self.chips // self.chips_per_vm

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1

    @property
    def name(self) -> str:
        """Common name, e.g. v6e-16 or v5p-128."""
        return f"{self.family}-{self.chips * self.tpu_family.cores_per_chip}"

    @property
    def accelerator(self) -> str:
        """Value of the node label cloud.google.com/gke-tpu-accelerator."""
        return self.tpu_family.accelerator

    @property
    def instance_type(self) -> str:
        """Pathways resource manager --instance_type, e.g. tpuv6e:4x4 (tpuv6e1t:2x4 on an 8-chip VM)."""
        prefix = self.tpu_family.instance_prefix
        if self.chips_per_vm == 8:
            prefix += "1t"
        return f"{prefix}:{self.topology}"

    @property
    def placement(self) -> Placement:
        if not self.multi_host:
            return Placement.SINGLE_HOST
        if self.family == "tpu7x":
            return Placement.WORKLOAD_POLICY
        return Placement.COMPACT

    @property
    def min_gke_version(self) -> str:
        return self.tpu_family.min_gke_version


def is_tpu_machine(machine_type: str) -> bool:
    """Whether a node machine type is a TPU VM of a family this catalog knows."""
    return any(machine_type in f.machine_types for f in FAMILIES.values())


def family(name: str) -> TpuFamily:
    try:
        return _FAMILY_BY_ALIAS[name.strip().lower()]
    except KeyError:
        raise TpuError(
            f"unknown TPU family {name!r}; valid: {', '.join(FAMILIES)}"
        ) from None


def _dims(topology: str) -> list[int]:
    return [int(d) for d in topology.split("x")]


def _valid_3d(fam: TpuFamily, dims: list[int]) -> bool:
    if len(dims) != 3 or math.prod(dims) > fam.max_chips or max(dims) > MAX_DIMENSION_3D:
        return False
    # Small shapes only exactly as GKE writes them (v4 too: 1x2x2 is not a v4 topology).
    if "x".join(map(str, dims)) in fam.small_topologies:
        return True
    if fam.ascending_dims and dims != sorted(dims):
        return False  # v5p and tpu7x write A <= B <= C; v4 accepts any order of the large shapes
    return all(d % 4 == 0 for d in dims)


def valid_topologies_text(fam: TpuFamily) -> str:
    if fam.dims == 2:
        return ", ".join(TOPOLOGIES_2D)
    order = " in ascending order" if fam.ascending_dims else ""
    return (
        f"{', '.join(fam.small_topologies)}, or AxBxC with every dimension a multiple of 4 and at most "
        f"{MAX_DIMENSION_3D}{order}, at most {fam.max_chips} chips in all (e.g. 4x4x4, 4x4x8, 4x8x8)"
    )


def check_topology(fam: TpuFamily, topology: str) -> str:
    """Return the normalised topology or raise TpuError with the valid list."""
    topo = str(topology).strip().lower()
    ok = bool(_TOPOLOGY_RE.fullmatch(topo))
    if ok:
        dims = _dims(topo)
        ok = topo in TOPOLOGIES_2D if fam.dims == 2 else _valid_3d(fam, dims)
    if not ok:
        raise TpuError(
            f"topology {topology} is not a {fam.name} topology; valid: {valid_topologies_text(fam)}"
        )
    return topo


def machine_types_for(fam: TpuFamily, topology: str) -> list[str]:
    """Machine types that can host a slice of this topology, the default first."""
    chips = math.prod(_dims(topology))
    by_chips = {c: m for m, c in fam.machine_types.items()}
    if chips == 1:
        return [by_chips[1]] if 1 in by_chips else []
    if chips == 8 and 8 in by_chips:
        # 2x4 fits one 8-chip VM (the default, as Cluster Toolkit and the PathwaysJob controller do)
        # or two 4-chip hosts (what xpk 1.16 creates): machineType chooses.
        return [by_chips[8], by_chips[4]]
    return [by_chips[4]] if chips >= 4 and 4 in by_chips else []


def resolve(
    family_name: str, topology: str, machine_type: Optional[str] = None
) -> TpuSlice:
    """A slice from family + topology (and, where GKE offers two, an explicit machine type)."""
    fam = family(family_name)
    topo = check_topology(fam, topology)
    choices = machine_types_for(fam, topo)
    if not choices:
        raise TpuError(
            f"topology {topo} has no {fam.name} machine type; valid: {valid_topologies_text(fam)}"
        )
    mt = choices[0]
    if machine_type is not None:
        if machine_type not in choices:
            raise TpuError(
                f"machine type {machine_type} cannot host a {fam.name} {topo} slice; "
                f"valid: {', '.join(choices)}"
            )
        mt = machine_type
    return TpuSlice(family=fam.name, topology=topo, machine_type=mt, chips_per_vm=fam.machine_types[mt])


def _canonical_3d(fam: TpuFamily, chips: int) -> Optional[str]:
    """The most cube-like valid 3-D topology with this many chips, dimensions ascending:
    the shortest longest side, then the longest shortest side (1024 chips: 8x8x16, not 4x16x16,
    as xpk and Cluster Toolkit name v5p-2048)."""
    for small in fam.small_topologies:
        if math.prod(_dims(small)) == chips:
            return small
    if chips > fam.max_chips:
        return None
    best = None
    for a in range(4, round(chips ** (1 / 3)) + 5, 4):
        for b in range(a, chips // a + 1, 4):
            if (chips % (a * b)) or (c := chips // (a * b)) < b or c % 4 or c > MAX_DIMENSION_3D:
                continue
            key = (c, -a)
            if best is None or key < best[0]:
                best = (key, f"{a}x{b}x{c}")
    return best[1] if best else None


def valid_sizes(fam: TpuFamily) -> list[str]:
    """Common names this catalog accepts for a family (3-D ones up to 1024 chips, for messages)."""
    if fam.dims == 2:
        chips = [math.prod(_dims(t)) for t in TOPOLOGIES_2D]
    else:
        chips = [c for c in (1, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if _canonical_3d(fam, c)]
    return [f"{fam.name}-{c * fam.cores_per_chip}" for c in chips]


def from_name(name: str) -> TpuSlice:
    """A slice from its common name, e.g. v6e-16, v5litepod-8, v5p-128, tpu7x-128."""
    m = re.fullmatch(r"\s*([a-z0-9]+?)-([0-9]+)\s*", str(name).lower())
    if not m:
        raise TpuError(
            f"{name!r} is not a TPU name; use <family>-<TensorCores> (e.g. v6e-16, v5p-128) "
            f"with family one of {', '.join(FAMILIES)}, or give family and topology"
        )
    fam = family(m.group(1))
    cores = int(m.group(2))
    chips, rest = divmod(cores, fam.cores_per_chip)
    topo = None
    if not rest and chips:
        if fam.dims == 2:
            topo = next((t for t in TOPOLOGIES_2D if math.prod(_dims(t)) == chips), None)
        else:
            topo = _canonical_3d(fam, chips)
    if topo is None:
        raise TpuError(
            f"{name} is not a {fam.name} slice size; valid: {', '.join(valid_sizes(fam))}"
            + (", … (or give family and topology)" if fam.dims == 3 else "")
        )
    return resolve(fam.name, topo)
