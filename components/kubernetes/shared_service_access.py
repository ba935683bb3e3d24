"""SharedServiceAccess: the Kubernetes half of what a Shared Pathways Service's clients need (the proxies' nodes are
components/gcp/proxy_pool.py): the namespace-scoped access their tooling uses, and the Pod Security labels of the
namespace they share (`default`: pathwaysutils' client reads the service from there)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.constants import SHARED_SERVICE_ACCESS


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
