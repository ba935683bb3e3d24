"""The addresses a stack's nodes and pods take from its subnet, against the ranges it has (Pulumi-free).

GKE gives every node one address of the subnet's primary range and a block of the pod range sized from its pool's
maximum pods per node: twice the maximum, rounded up to a power of two ("Configure maximum Pods per node": 8 pods
a /28, 9-16 a /27, 17-32 a /26, 33-64 a /25, 65-110 a /24; container-api.json v1 IPAllocationPolicy
podCidrOverprovisionConfig: "the value of max_pods_per_node is doubled and then rounded off to next power of 2").
A pool's maximum cannot change after it is created (same page: "You cannot change this setting after the cluster or
node pool is created"; the API's UpdateNodePoolRequest has no such field), so the stack sets it when it creates one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: the model imports this module's rules
    from components.model.stack import StackConfig

# GKE Standard's default without a setting (the same page).
DEFAULT_MAX_PODS = 110
# A TPU node runs one Pathways worker or serving pod (hostNetwork, or one pod-network pod for serve) beside GKE's
# DaemonSets: xpk creates every multi-host TPU pool with --max-pods-per-node 15 (src/xpk/core/nodepool.py, since its
# first release), a /27 each. Single-host pools run the same one pod a node.
TPU_MAX_PODS = 15
# A head node runs one head pod (hostNetwork) and the DaemonSets; the client proxies' pool one proxy Job a node.
# 32 (a /26) leaves room for GKE's add-ons' DaemonSets (CSI drivers, checkpointing) beside it.
HEAD_MAX_PODS = 32
# Compute Engine keeps four addresses of every subnet's primary range (VPC docs, "Subnets": reserved addresses).
RESERVED_PRIMARY_ADDRESSES = 4


def pod_block(max_pods: int) -> int:
    """Addresses of the pod range one node takes: twice its maximum pods, rounded up to a power of two."""
    size = 1
    while size < 2 * max_pods:
        size *= 2
    return size


@dataclass(frozen=True)
class PoolAddresses:
    """One node pool at its largest: its nodes, each with its pod block."""

    name: str
    nodes: int
    max_pods: int

    @property
    def pod_addresses(self) -> int:
        return self.nodes * pod_block(self.max_pods)


@dataclass(frozen=True)
class AddressNeed:
    nodes: int
    pod_addresses: int
    pools: tuple[PoolAddresses, ...]


def surge_nodes(need: "AddressNeed") -> int:
    """The upgrade surge counted in a need: one node per pool that surges (every pool but the TPU ones)."""
    return sum(1 for p in need.pools if p.max_pods != TPU_MAX_PODS)


def need(pools: list[PoolAddresses]) -> AddressNeed:
    return AddressNeed(sum(p.nodes for p in pools), sum(p.pod_addresses for p in pools), tuple(pools))


def primary_capacity(cidr: str) -> int:
    """Nodes a subnet's primary range holds."""
    return ipaddress.ip_network(cidr, strict=False).num_addresses - RESERVED_PRIMARY_ADDRESSES


def range_capacity(cidr: str) -> int:
    return ipaddress.ip_network(cidr, strict=False).num_addresses


def smallest_prefix(addresses: int) -> int:
    """The longest prefix (smallest range) that holds this many addresses."""
    prefix = 32
    while prefix > 0 and 2 ** (32 - prefix) < addresses:
        prefix -= 1
    return prefix


def stack_pools(cfg: "StackConfig") -> list[PoolAddresses]:
    """Every node pool the stack makes at its largest, upgrades included: the system, head and proxy pools surge one
    node at a time (GKE's default surge upgrade, maxSurge 1); TPU pools never surge (components/gcp/tpu_slices.py)."""
    pools = [PoolAddresses("system", cfg.cluster.system_pool.max_nodes + 1, DEFAULT_MAX_PODS)]
    if cfg.head_nodes:
        pools.append(PoolAddresses("pathways-head", cfg.head_nodes + 1, HEAD_MAX_PODS))
    if cfg.proxy_nodes:
        pools.append(PoolAddresses("pathways-proxy", cfg.proxy_nodes + 1, HEAD_MAX_PODS))
    # each isolation domain's own head pool (teams[].isolationDomain), at its largest
    from components.model.workloads import isolation  # the model imports this module: a call-time import

    pools += [PoolAddresses(d.head_pool, d.head_nodes + 1, HEAD_MAX_PODS) for d in isolation.domains(cfg) if d.head_nodes]
    if cfg.fleet is None or cfg.fleet.role != "manager":  # a manager's groups are its workers' pools
        pools += [PoolAddresses(f"tpu-{g.name}-*", g.pools * g.tpu.hosts, TPU_MAX_PODS)
                  for g in cfg.slices]
    return pools
