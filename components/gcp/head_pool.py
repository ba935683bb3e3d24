"""HeadPool: dedicated CPU nodes for Pathways head pods (resource manager + IFRT proxy + user program).

One head pod per node (the JobSet asks for exclusive placement by hostname), so the node count is
the number of workloads that may run at once. A label and a taint keep everything else off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.constants import HEAD_ROLE, HEAD_TAINT, ROLE_LABEL
from components.gcp.node_defaults import KEEP_MAX_PODS, node_config, pool_locations
from components.gcp.node_pool_lanes import NodePoolLanes
from components.model.cluster.address_space import HEAD_MAX_PODS


@dataclass(frozen=True)
class HeadPoolArgs:
    project: str
    """Project of the cluster."""
    cluster: pulumi.Input[str]
    """Cluster name."""
    location: str
    """Cluster location (region or zone)."""
    zone: str
    """The stack's one zone."""
    regional: bool
    """Whether the cluster is regional (then node_locations pins the zone)."""
    machine_type: str
    """Head machine type, checked by the config model to fit the head pod."""
    node_count: int
    """Nodes: one per concurrently running workload."""
    service_account: pulumi.Input[str]
    """Email of the Pathways node SA (it holds the bucket grant: head pods are hostNetwork)."""
    lanes: NodePoolLanes
    """The stack's node-pool lanes (GKE's concurrent-operations limit): the pool waits its turn."""
    scale_to_zero: bool = False
    """Autoscale between 0 and node_count nodes instead of keeping node_count up."""
    pool: str = "pathways-head"
    """GKE node pool name: an isolation domain's is pathways-head-<domain>."""
    isolation: Optional[tuple[str, str, str]] = None
    """An isolation domain's taint (key, value, effect): its nodes carry it, and its key=value as a label."""


class HeadPool(pulumi.ComponentResource):
    pool_name: pulumi.Output[str]
    """GKE node pool name."""

    def __init__(self, name: str, args: HeadPoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:HeadPool", name, None, opts)
        pool = gcp.container.NodePool(
            name,
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            name=args.pool,
            node_locations=pool_locations(args.regional, args.zone),
            node_count=None if args.scale_to_zero else args.node_count,
            initial_node_count=0 if args.scale_to_zero else None,
            # The pool lives in one zone: per-zone limits are the pool's limits.
            autoscaling=gcp.container.NodePoolAutoscalingArgs(min_node_count=0, max_node_count=args.node_count)
            if args.scale_to_zero else None,
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            max_pods_per_node=HEAD_MAX_PODS,  # a /26 a node (components/model/cluster/address_space.py)
            node_config=node_config(
                args.machine_type, args.service_account,
                {ROLE_LABEL: HEAD_ROLE, **({args.isolation[0]: args.isolation[1]} if args.isolation else {})},
                taints=(HEAD_TAINT, *((args.isolation,) if args.isolation else ())),
            ),
            opts=pulumi.ResourceOptions(
                parent=self, custom_timeouts=pulumi.CustomTimeouts(create="30m", update="30m", delete="30m"),
                # a fixed name: a replacement created first would collide with it (infra/offline/change_rules.py NAME_SCOPE)
                delete_before_replace=True,
                depends_on=args.lanes.after(),
                # The autoscaler owns the node count of a pool that scales to zero.
                ignore_changes=[*(["nodeCount", "initialNodeCount"] if args.scale_to_zero else []), *KEEP_MAX_PODS],
            ),
        )
        args.lanes.add(pool)
        self.pool_name = pool.name
        self.register_outputs({"poolName": self.pool_name})
