"""ProxyPool: the GKE half of what a Shared Pathways Service's clients need besides the service JobSet:
nodes for their proxy Jobs, the namespace-scoped access their tooling uses, and the Pod Security labels
of the namespace they share (`default`: pathwaysutils' client reads the service from there).

A client proxy (pathwaysutils 0.1.13 shared_pathways_service/yamls/pw-proxy.yaml) is hostNetwork on
port 29000 with no node selector or tolerations, so: one proxy per node, on untainted nodes big
enough for it (16 CPU / 100G limits), running as the Pathways node service account (hostNetwork pods
call Google as the node: the proxy writes the compilation cache, and the VPC firewall lets that
identity reach the resource manager). The pool carries no taint: the client's Job tolerates none, and
no admission mechanism GKE enables by default can add one. What keeps other pods from acting as that
identity is the node guard (components/manifests/guardrails.py): no hostNetwork pod outside the Pathways
namespaces, none there but from a Job, and no Job there that is privileged or mounts the host; pods
without hostNetwork on these nodes get their own Workload Identity (GKE_METADATA), not the node's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.constants import PROXY_ROLE, ROLE_LABEL
from components.gcp.node_defaults import KEEP_MAX_PODS, node_config, pool_locations
from components.gcp.node_pool_lanes import NodePoolLanes
from components.model.cluster.address_space import HEAD_MAX_PODS


@dataclass(frozen=True)
class ProxyPoolArgs:
    project: str
    """Project of the cluster."""
    cluster: pulumi.Input[str]
    """Cluster name."""
    location: str
    """Cluster location."""
    zone: str
    """The stack's one zone."""
    regional: bool
    """Whether the cluster is regional."""
    machine_type: str
    """Proxy node machine type (checked by the config model to hold one proxy)."""
    nodes: int
    """Concurrent clients: one proxy node each."""
    service_account: pulumi.Input[str]
    """Email of the Pathways node SA."""
    lanes: NodePoolLanes
    """The stack's node-pool lanes: the pool waits its turn."""


class ProxyPool(pulumi.ComponentResource):
    """Nodes for the clients' proxy Jobs (GKE only; an existing cluster brings its own)."""

    def __init__(self, name: str, args: ProxyPoolArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:ProxyPool", name, None, opts)
        pool = gcp.container.NodePool(
            f"{name}-proxy-pool",
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            name="pathways-proxy",
            node_locations=pool_locations(args.regional, args.zone),
            node_count=args.nodes,
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            max_pods_per_node=HEAD_MAX_PODS,  # one proxy Job a node: a /26 (components/model/cluster/address_space.py)
            node_config=node_config(args.machine_type, args.service_account, {ROLE_LABEL: PROXY_ROLE}),
            # a fixed name: a replacement created first would collide with it (change_rules.NAME_SCOPE)
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.lanes.after(), delete_before_replace=True,
                                        ignore_changes=KEEP_MAX_PODS),
        )
        args.lanes.add(pool)
        self.register_outputs({})
