"""The network holds what the plan allows (issue #72.3): every pool's largest size against the subnet's node and pod
ranges, with GKE's pod block per node (components/model/cluster/address_space.py)."""

from __future__ import annotations

import ipaddress

import pytest

from components.model.cluster import address_space
from components.model.config import load
from infra.errors import InvalidStackConfig
from infra.offline import stackfile
from tests.conftest import MADE_STACKS, config_with, every_stack, in_zone_of, plan_of, stack_config, stack_plan

POOL = "gcp:container/nodePool:NodePool"


@pytest.mark.parametrize("max_pods,block", [(8, 16), (15, 32), (16, 32), (17, 64), (32, 64), (33, 128), (64, 128), (65, 256), (110, 256)])
def test_the_pod_block_is_gkes_table(max_pods, block):
    # GKE "Configure maximum Pods per node": 8 -> /28, 9-16 -> /27, 17-32 -> /26, 33-64 -> /25, 65-110 -> /24
    assert address_space.pod_block(max_pods) == block


def test_tpu_and_head_pools_take_a_small_pod_block_and_keep_one_made_before():
    plan = plan_of(config_with())
    pools = {p.input("name"): p for p in plan.by_type(POOL)}
    assert pools["tpu-main-0"].input("maxPodsPerNode") == 15  # xpk's multi-host TPU pools: --max-pods-per-node 15
    assert pools["pathways-head"].input("maxPodsPerNode") == 32
    assert pools["system"].input("maxPodsPerNode") is None  # GKE's 110: the controllers and kube-system live there
    # a pool made by an earlier version without it is kept, not replaced (the input forces a new pool)
    for name in ("tpu-main-0", "pathways-head"):
        assert "maxPodsPerNode" in pools[name].options["ignoreChanges"]


# stacks that make their subnet (an existing one's ranges are read by the live preflight, not offline)
SUBNET_STACKS = [s for s in MADE_STACKS if not (stack_config(s).get("pathways:network") or {}).get("existingSubnetwork")]


@every_stack(stacks=SUBNET_STACKS)
def test_every_made_stack_fits_its_subnet(stack):
    # derived from the stack's own file: its pools' largest sizes against its ranges
    flat, secrets = stackfile.load_config(stackfile.stack_path(stack))
    model = load(stackfile.raw_values(flat), stack, frozenset(secrets))
    need = address_space.need(address_space.stack_pools(model))
    assert need.nodes <= address_space.primary_capacity(model.network.nodes_cidr)
    assert need.pod_addresses <= address_space.range_capacity(model.network.pods_cidr)
    plan = stack_plan(stack)
    tpu_nodes = sum(p.input("nodeCount") or (p.input("autoscaling") or {}).get("maxNodeCount", 0)
                    for p in plan.by_type(POOL) if p.input("maxPodsPerNode") == address_space.TPU_MAX_PODS)
    assert tpu_nodes == sum(p.nodes for p in need.pools if p.max_pods == address_space.TPU_MAX_PODS)


def test_a_pod_range_too_small_for_the_slices_is_refused_with_the_range_the_need_and_the_fix():
    # 64 v5p-128 slices: 1,024 TPU hosts at a /27 each = 32,768 addresses, over a /18's 16,384
    config = config_with(slices=[{"name": "main", "tpu": "v5p-128", "count": 64}], network={"podsCidr": "10.4.0.0/18"},
                         **in_zone_of("v5p"))
    with pytest.raises(InvalidStackConfig) as err:
        plan_of(config)
    [line] = [ln for ln in str(err.value).splitlines() if ln.startswith("pathways:network.podsCidr")]
    assert "10.4.0.0/18 holds 16,384 pod addresses" in line
    assert "a /27 per node of tpu-main-*, 15 pods each" in line
    need = 1024 * 32 + (3 + 1) * 256 + (1 + 1) * 64  # TPU hosts, system pool (+1 surge), head pool (+1 surge)
    assert f"take {need:,}" in line and "use a /16 or larger" in line


def test_a_node_range_too_small_is_refused():
    config = config_with(slices=[{"name": "main", "tpu": "v5p-128", "count": 20}], network={"nodesCidr": "10.0.0.0/24"},
                         **in_zone_of("v5p"))
    with pytest.raises(InvalidStackConfig) as err:
        plan_of(config)
    [line] = [ln for ln in str(err.value).splitlines() if ln.startswith("pathways:network.nodesCidr")]
    assert line.endswith("10.0.0.0/24 holds 252 nodes, and the stack's pools reach 326 (upgrade surges included); use a /23 or larger")


def test_at_gkes_110_pods_the_default_pod_range_held_a_tenth_of_what_the_plan_allows():
    # the finding: a /14 at a /24 a node holds 1,024 nodes; at a /27 a TPU node, eight times as many
    default = ipaddress.ip_network("10.4.0.0/14").num_addresses
    assert default // address_space.pod_block(110) == 1024
    assert default // address_space.pod_block(address_space.TPU_MAX_PODS) == 8192


def test_a_superpod_pool_set_plans_within_the_default_ranges():
    # an Ironwood superpod: 144 sub-blocks (4x4x4 cubes, 16 hosts each) = 2,304 TPU hosts, in the default /20 and /14
    blocks = [f"sb-{i}" for i in range(144)]
    config = config_with(slices=[{"name": "pod", "tpu": "tpu7x-128", "reservation": "r/reservationBlocks/b", "subBlocks": blocks}],
                         cluster={"releaseChannel": "RAPID"}, **in_zone_of("tpu7x"))
    plan = plan_of(config)
    pools = [p for p in plan.by_type(POOL) if p.input("maxPodsPerNode") == address_space.TPU_MAX_PODS]
    assert len(pools) == 144 and sum(p.input("nodeCount") for p in pools) == 2304
