"""Which nodes the head pods and a slice group's workers select, in one place for the JobSets, the LeaderWorkerSets,
the Kueue flavors and the guards (pure Python).

The stack's own pools carry this project's labels (components/constants.py). A pool made elsewhere (xpk, Cluster Toolkit)
named in the stack file (headPool.nodePool, slices[].nodePools) is selected by GKE's own label on every node,
cloud.google.com/gke-nodepool, beside GKE's TPU accelerator and topology labels: its nodes need nothing of ours.
"""

from __future__ import annotations

from typing import Any, Optional

from components.constants import (
    HEAD_ROLE,
    NODE_POOL_LABEL,
    ROLE_LABEL,
    SLICE_GROUP_LABEL,
    SPOT_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL,
)
from components.model.capacity.pools import Capacity, SliceGroup
from components.model.resolved import ResolvedStack
from components.model.workloads.isolation import ISOLATION_LABEL


def head_selector(stack: ResolvedStack) -> dict[str, str]:
    """The head pods' node selector, and the head flavor's nodeLabels."""
    if stack.head_node_pool is not None:
        return {NODE_POOL_LABEL: stack.head_node_pool}
    return {ROLE_LABEL: HEAD_ROLE}


def group_selector(group: SliceGroup) -> dict[str, str]:
    """A slice group's nodes by exact labels: the workers' node selector, and the group's flavor's nodeLabels. A group
    on named pools is told by its pools' names in the workers' affinity (pool_affinity), which a flavor cannot hold (its
    nodeLabels are exact values); existing_checks.named_flavors keeps two such groups of one TPU shape apart."""
    selector = {TPU_ACCELERATOR_LABEL: group.tpu.accelerator, TPU_TOPOLOGY_LABEL: group.tpu.topology}
    if group.dynamic:
        # A pool set's nodes carry their pool's physical topology, not the slice formed on them: selecting on it
        # would keep a reshaped slice off them (docs/dynamic-slicing.md).
        del selector[TPU_TOPOLOGY_LABEL]
    if not group.node_pools:
        selector[SLICE_GROUP_LABEL] = group.name
    return selector


def pool_affinity(group: SliceGroup) -> Optional[dict[str, Any]]:
    """A required node affinity to a named group's pools, None for a group on the stack's labels."""
    if not group.node_pools:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": NODE_POOL_LABEL, "operator": "In", "values": list(group.node_pools)}]}]}}}


def named_pools(stack: ResolvedStack) -> tuple[str, ...]:
    """Every pool the stack names (head first): the guards judge a template selecting one as reaching the Pathways nodes."""
    return tuple(dict.fromkeys([*([stack.head_node_pool] if stack.head_node_pool else []),
                                *(p for g in stack.slices for p in g.node_pools)]))


def cluster_pools(stack: ResolvedStack) -> list[dict[str, Any]]:
    """On a cluster made elsewhere: the pools the stack expects to find, as the labels their nodes must carry (the
    stack output `clusterPools`): the head pool, then each slice's pool (by its name, or by this project's labels).
    The offline render checks the workloads' placement against these, as it checks a made cluster's against its
    NodePools."""
    pools: list[dict[str, Any]] = [{"pool": stack.head_node_pool or "head", "labels": head_selector(stack)}]
    # an isolation domain's head pool, and its groups' pools, carry its label (and taint: docs/teams.md, Isolation)
    pools += [{"pool": d.head_pool, "labels": {**head_selector(stack), ISOLATION_LABEL: d.name}} for d in stack.domains]
    for g in stack.slices:
        domain = stack.group_domain(g.name)
        tpu = {TPU_ACCELERATOR_LABEL: g.tpu.accelerator, TPU_TOPOLOGY_LABEL: g.tpu.topology,
               **({SPOT_LABEL: "true"} if g.capacity is Capacity.SPOT else {}), **({ISOLATION_LABEL: domain.name} if domain else {})}
        names = list(g.node_pools) or [f"{g.name}-{i}" for i in range(g.pools)]
        for name in names:
            labels = {NODE_POOL_LABEL: name, **tpu} if g.node_pools else {SLICE_GROUP_LABEL: g.name, **tpu}
            pools.append({"pool": name, "labels": labels, "chipsPerVm": g.tpu.chips_per_vm, "hosts": g.tpu.hosts})
    return pools
