"""The TPU catalog against GKE's TPU facts (PLATFORM-FACTS §3)."""

import pytest

from components.model.capacity import tpu
from components.model.capacity.tpu import Placement, TpuError

# name -> (topology, machine type, chips/VM, hosts, chips, accelerator label, --instance_type, placement)
CASES = {
    # v4: 3-D, 2 TensorCores per chip, 4-chip VMs
    "v4-8": ("2x2x1", "ct4p-hightpu-4t", 4, 1, 4, "tpu-v4-podslice", "tpuv4:2x2x1", Placement.SINGLE_HOST),
    "v4-16": ("2x2x2", "ct4p-hightpu-4t", 4, 2, 8, "tpu-v4-podslice", "tpuv4:2x2x2", Placement.COMPACT),
    "v4-128": ("4x4x4", "ct4p-hightpu-4t", 4, 16, 64, "tpu-v4-podslice", "tpuv4:4x4x4", Placement.COMPACT),
    # v5e: 2-D, 1 TensorCore per chip; 1t/4t/8t single-host shapes
    "v5e-1": ("1x1", "ct5lp-hightpu-1t", 1, 1, 1, "tpu-v5-lite-podslice", "tpuv5e:1x1", Placement.SINGLE_HOST),
    "v5e-4": ("2x2", "ct5lp-hightpu-4t", 4, 1, 4, "tpu-v5-lite-podslice", "tpuv5e:2x2", Placement.SINGLE_HOST),
    "v5e-8": ("2x4", "ct5lp-hightpu-8t", 8, 1, 8, "tpu-v5-lite-podslice", "tpuv5e1t:2x4", Placement.SINGLE_HOST),
    "v5litepod-16": ("4x4", "ct5lp-hightpu-4t", 4, 4, 16, "tpu-v5-lite-podslice", "tpuv5e:4x4", Placement.COMPACT),
    "v5e-256": ("16x16", "ct5lp-hightpu-4t", 4, 64, 256, "tpu-v5-lite-podslice", "tpuv5e:16x16", Placement.COMPACT),
    # v5p: 3-D, 2 TensorCores per chip
    "v5p-8": ("2x2x1", "ct5p-hightpu-4t", 4, 1, 4, "tpu-v5p-slice", "tpuv5:2x2x1", Placement.SINGLE_HOST),
    "v5p-128": ("4x4x4", "ct5p-hightpu-4t", 4, 16, 64, "tpu-v5p-slice", "tpuv5:4x4x4", Placement.COMPACT),
    "v5p-256": ("4x4x8", "ct5p-hightpu-4t", 4, 32, 128, "tpu-v5p-slice", "tpuv5:4x4x8", Placement.COMPACT),
    # v6e (Trillium)
    "v6e-1": ("1x1", "ct6e-standard-1t", 1, 1, 1, "tpu-v6e-slice", "tpuv6e:1x1", Placement.SINGLE_HOST),
    "v6e-4": ("2x2", "ct6e-standard-4t", 4, 1, 4, "tpu-v6e-slice", "tpuv6e:2x2", Placement.SINGLE_HOST),
    "v6e-8": ("2x4", "ct6e-standard-8t", 8, 1, 8, "tpu-v6e-slice", "tpuv6e1t:2x4", Placement.SINGLE_HOST),
    "v6e-16": ("4x4", "ct6e-standard-4t", 4, 4, 16, "tpu-v6e-slice", "tpuv6e:4x4", Placement.COMPACT),
    "v6e-256": ("16x16", "ct6e-standard-4t", 4, 64, 256, "tpu-v6e-slice", "tpuv6e:16x16", Placement.COMPACT),
    # tpu7x (Ironwood): multi-host placement is a workload policy
    "tpu7x-8": ("2x2x1", "tpu7x-standard-4t", 4, 1, 4, "tpu7x", "tpu7x:2x2x1", Placement.SINGLE_HOST),
    "tpu7x-128": ("4x4x4", "tpu7x-standard-4t", 4, 16, 64, "tpu7x", "tpu7x:4x4x4", Placement.WORKLOAD_POLICY),
    # tpu7x's single-chip VM (PLATFORM-FACTS §6; xpk and Cluster Toolkit hardware.go list tpu7x-standard-1t 1x1x1)
    "tpu7x-2": ("1x1x1", "tpu7x-standard-1t", 1, 1, 1, "tpu7x", "tpu7x:1x1x1", Placement.SINGLE_HOST),
}

# Default topology for a chip count, as the peers name the slices (xpk system characteristics,
# Cluster Toolkit pkg/config/hardware.go, GKE's v5p topology table): the most cube-like shape,
# written out here rather than recomputed.
PEER_3D_DEFAULTS = {
    "v5p-1024": "8x8x8",
    "v5p-1152": "4x12x12",
    "v5p-1536": "8x8x12",
    "v5p-2048": "8x8x16",  # not 4x16x16
    "v5p-4096": "8x16x16",
    "v4-2048": "8x8x16",
    "tpu7x-2048": "8x8x16",
    "tpu7x-8192": "16x16x16",
}


@pytest.mark.parametrize("name", sorted(PEER_3D_DEFAULTS))
def test_default_3d_topology_is_the_most_cube_like(name):
    assert tpu.from_name(name).topology == PEER_3D_DEFAULTS[name]


@pytest.mark.parametrize("family,topology", [("v5p", "4x4x268"), ("v4", "4x4x260"), ("tpu7x", "4x8x260"), ("v5p", "4x8x264")])
def test_no_3d_dimension_above_256(family, topology):
    with pytest.raises(TpuError, match="at most 256"):
        tpu.resolve(family, topology)


@pytest.mark.parametrize("family,topology", [("v5p", "4x4x256"), ("v4", "4x4x256"), ("tpu7x", "4x8x256")])
def test_a_3d_dimension_of_exactly_256_is_accepted(family, topology):
    # PLATFORM-FACTS §3 (TPU catalog edges, from xpk and Cluster Toolkit): "no dimension above 256"
    assert tpu.resolve(family, topology).topology == topology


def test_no_slice_name_needs_a_dimension_above_256():
    # v5p-8576 = 4288 chips = 4x4x268 only: no valid topology, so no such slice
    with pytest.raises(TpuError, match="v5p-8576 is not a v5p slice size"):
        tpu.from_name("v5p-8576")


@pytest.mark.parametrize("topology", ["1x2x2", "2x1x2", "4x2x2", "2x2x4x1", "1x2x4"])
def test_v4_small_shapes_only_as_gke_writes_them(topology):
    with pytest.raises(TpuError, match="not a v4 topology"):
        tpu.resolve("v4", topology)


@pytest.mark.parametrize("family", ["v4", "v5p"])
def test_single_chip_3d_is_tpu7x_only(family):
    with pytest.raises(TpuError, match=f"not a {family} topology"):
        tpu.resolve(family, "1x1x1")


@pytest.mark.parametrize("name", sorted(CASES))
def test_common_names_derive_everything(name):
    topo, machine, per_vm, hosts, chips, accel, instance, placement = CASES[name]
    s = tpu.from_name(name)
    assert (s.topology, s.machine_type, s.chips_per_vm, s.hosts, s.chips) == (topo, machine, per_vm, hosts, chips)
    assert (s.accelerator, s.instance_type, s.placement) == (accel, instance, placement)
    assert s.multi_host == (hosts > 1)
    # family + topology gives the same slice
    assert tpu.resolve(s.family, topo) == s


def test_min_gke_versions():
    assert tpu.from_name("v5p-128").min_gke_version == "1.27.4-gke.900"
    assert tpu.from_name("v6e-16").min_gke_version == "1.31.1-gke.1146000"
    assert tpu.from_name("tpu7x-128").min_gke_version == "1.34.0-gke.2201000"


# Written out from GKE's "TPUs in GKE" tables (v5e and v6e: topology -> chips, VMs, machine type with
# the default, single-VM shape for 2x4), not computed: a wrong host count in the catalog fails here.
TABLE_2D = {
    "1x1": (1, 1, "1t"), "2x2": (4, 1, "4t"), "2x4": (8, 1, "8t"), "4x4": (16, 4, "4t"),
    "4x8": (32, 8, "4t"), "8x8": (64, 16, "4t"), "8x16": (128, 32, "4t"), "16x16": (256, 64, "4t"),
}
MACHINE_PREFIX = {"v5e": "ct5lp-hightpu-", "v6e": "ct6e-standard-"}


@pytest.mark.parametrize("family,topology", [(f, t) for f in ("v5e", "v6e") for t in tpu.TOPOLOGIES_2D])
def test_every_2d_topology_is_accepted(family, topology):
    s = tpu.resolve(family, topology)
    assert (s.chips, s.hosts, s.machine_type) == (TABLE_2D[topology][0], TABLE_2D[topology][1], MACHINE_PREFIX[family] + TABLE_2D[topology][2])


def test_2d_table_covers_every_topology():
    assert set(tpu.TOPOLOGIES_2D) == set(TABLE_2D)


# v4, v5p and Ironwood put 4 chips on every VM (GKE's tables): topology -> (chips, VMs)
TABLE_3D = {
    "2x2x1": (4, 1), "2x2x2": (8, 2), "2x2x4": (16, 4), "2x4x4": (32, 8), "4x4x4": (64, 16),
    "4x4x8": (128, 32), "4x8x8": (256, 64), "8x8x8": (512, 128), "8x8x16": (1024, 256), "16x16x16": (4096, 1024),
}


@pytest.mark.parametrize("family", ["v4", "v5p", "tpu7x"])
@pytest.mark.parametrize("topology", list(TABLE_3D))
def test_3d_topologies_accepted(family, topology):
    s = tpu.resolve(family, topology)
    assert (s.chips, s.hosts) == TABLE_3D[topology]
    assert s.multi_host == (topology != "2x2x1")


def test_v2x4_can_be_two_four_chip_hosts():
    s = tpu.resolve("v6e", "2x4", "ct6e-standard-4t")
    assert (s.hosts, s.placement, s.instance_type) == (2, Placement.COMPACT, "tpuv6e:2x4")
    with pytest.raises(TpuError, match="valid: ct6e-standard-8t, ct6e-standard-4t"):
        tpu.resolve("v6e", "2x4", "ct6e-standard-1t")


def test_v4_accepts_any_order_v5p_needs_ascending():
    assert tpu.resolve("v4", "8x4x4").hosts == 32
    with pytest.raises(TpuError, match="not a v5p topology.*ascending"):
        tpu.resolve("v5p", "8x4x4")


@pytest.mark.parametrize(
    "family,topology,message",
    [
        ("v6e", "4x5", "topology 4x5 is not a v6e topology; valid: 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16"),
        ("v5e", "32x32", "not a v5e topology"),
        ("v6e", "4x4x4", "not a v6e topology"),
        ("v5p", "4x4x6", "every dimension a multiple of 4"),
        ("v5p", "2x2", "not a v5p topology"),
        ("v4", "32x32x8", "at most 4096 chips"),  # 8192 chips
        ("v5p", "16x20x32", "at most 8960 chips"),
        ("tpu7x", "16x24x28", "at most 9216 chips"),
        ("v5p", "abc", "not a v5p topology"),
    ],
)
def test_invalid_topologies_list_the_valid_ones(family, topology, message):
    with pytest.raises(TpuError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tpu.resolve(family, topology)


def test_largest_slices():
    assert tpu.from_name("v5p-17920").topology == "16x20x28"
    assert tpu.from_name("tpu7x-18432").chips == 9216


@pytest.mark.parametrize(
    "name,message",
    [
        ("v7-8", "unknown TPU family 'v7'; valid: v4, v5e, v5p, v6e, tpu7x"),
        ("v6e-12", "v6e-12 is not a v6e slice size; valid: v6e-1, v6e-4, v6e-8, v6e-16"),
        ("v5p-6", "v5p-6 is not a v5p slice size"),
        ("v5p-7", "v5p-7 is not a v5p slice size"),  # odd TensorCore count
        ("tpu", "is not a TPU name"),
    ],
)
def test_bad_names(name, message):
    with pytest.raises(TpuError, match=message):
        tpu.from_name(name)
