"""SharedServiceClients: what a Shared Pathways Service's clients need besides the service JobSet:
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
from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from .labels import PROXY_ROLE, ROLE_LABEL
from .node_defaults import node_config, pool_locations
from .node_pool_lanes import NodePoolLanes
from .resource_types import SHARED_SERVICE_ACCESS


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
            node_config=node_config(args.machine_type, args.service_account, {ROLE_LABEL: PROXY_ROLE}),
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.lanes.after()),
        )
        args.lanes.add(pool)
        self.register_outputs({})


@dataclass(frozen=True)
class SharedServiceAccessArgs:
    role: dict[str, Any]
    """The clients' Role (components.manifests.service_access)."""
    role_binding: dict[str, Any]
    """Its RoleBinding to the configured users and groups."""
    namespace_labels: dict[str, str]
    """Pod Security labels for the service's namespace, as the workload namespace has them."""


class SharedServiceAccess(pulumi.ComponentResource):
    """The clients' access in the service's namespace and that namespace's Pod Security labels."""

    def __init__(self, name: str, args: SharedServiceAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(SHARED_SERVICE_ACCESS, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # `default` exists in every cluster: patch its labels (server-side apply), never own the namespace.
        k8s.core.v1.NamespacePatch(
            f"{name}-namespace-labels",
            metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=args.role["metadata"]["namespace"], labels=args.namespace_labels),
            opts=child,
        )
        role = k8s.rbac.v1.Role(f"{name}-role", metadata=args.role["metadata"], rules=args.role["rules"], opts=child)
        if args.role_binding["subjects"]:
            k8s.rbac.v1.RoleBinding(
                f"{name}-role-binding", metadata=args.role_binding["metadata"], role_ref=args.role_binding["roleRef"],
                subjects=args.role_binding["subjects"], opts=pulumi.ResourceOptions(parent=self, depends_on=[role]),
            )
        self.register_outputs({})
