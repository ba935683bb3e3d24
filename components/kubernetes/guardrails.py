"""ClusterGuardrails: the cluster-wide objects that keep the Pathways nodes to Pathways pods, and the
PriorityClasses its pods name. Built from components.manifests.guardrails (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import ci_preview, guardrails, isolation_guard
from components.model.workloads.isolation import IsolationDomain


@dataclass(frozen=True)
class ClusterGuardrailsArgs:
    workload_namespace: str
    """The namespace allowed onto the Pathways head and TPU nodes."""
    extra_namespaces: tuple[str, ...] = ()
    """Other namespaces Pathways pods run in (a Shared Pathways Service's, for its clients' tooling)."""
    proxy_namespace: Optional[str] = None
    """A Shared Pathways Service's namespace, where its clients create their hostNetwork proxy Jobs."""
    proxy_clients: tuple[tuple[str, str], ...] = ()
    """Those clients, as (RBAC subject kind, name)."""
    guards: bool = True
    """The node and template guards (kubernetes.guards.enabled)."""
    exempt_namespaces: tuple[str, ...] = ()
    """Namespaces the node guard does not judge (kubernetes.guards.exemptNamespaces)."""
    domains: tuple[IsolationDomain, ...] = ()
    """teams[].isolationDomain: the guard pathways-isolation keeps each domain's nodes to its teams' namespaces."""
    node_pools: tuple[str, ...] = ()
    """Pools made elsewhere the stack selects by name: a template selecting one reaches the Pathways nodes."""
    ci_preview_user: Optional[str] = None
    """The CI preview identity as the cluster authenticates it (its service account's email), given server-side dry
    runs and nothing else (components/manifests/ci_preview.py); None: no such access."""


class ClusterGuardrails(pulumi.ComponentResource):
    priority_classes: dict[str, pulumi.Resource]
    """By name; pods name one: a JobSet waits for its own."""

    def __init__(self, name: str, args: ClusterGuardrailsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:ClusterGuardrails", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.priority_classes = {
            pc["metadata"]["name"]: k8s.scheduling.v1.PriorityClass(
                f"{name}-{pc['metadata']['name']}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=pc["metadata"]["name"]),
                value=pc["value"], global_default=pc["globalDefault"], preemption_policy=pc["preemptionPolicy"],
                description=pc["description"],
                # The API server refuses a change of value or preemptionPolicy (immutable), and pulumi-kubernetes
                # would try it in place: replace instead.
                opts=pulumi.ResourceOptions(parent=self, replace_on_changes=["value", "preemptionPolicy"], delete_before_replace=True),
            )
            for pc in guardrails.priority_classes()
        }
        self.policies: list[pulumi.Resource] = []
        guards = (
            ("node-guard", guardrails.node_guard_policy(args.workload_namespace, args.extra_namespaces, args.exempt_namespaces)),
            ("template-guard", guardrails.template_guard_policy(
                args.workload_namespace, args.extra_namespaces, proxy_namespace=args.proxy_namespace,
                proxy_clients=args.proxy_clients, node_pools=args.node_pools)),
        ) if args.guards else ()
        if args.guards and args.domains:
            guards = (*guards, ("isolation-guard", isolation_guard.isolation_guard_policy(args.domains)))
        for suffix, policy in guards:
            guard = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{suffix}", metadata=policy["metadata"], spec=policy["spec"], opts=child,
            )
            binding = guardrails.guard_binding(policy["metadata"]["name"])
            self.policies.append(k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{suffix}", metadata=binding["metadata"], spec=binding["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[guard]),
            ))
        if args.ci_preview_user:
            policy, binding, role, role_binding = ci_preview.objects(args.ci_preview_user, (args.workload_namespace, *args.extra_namespaces))
            guard = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-ci-preview", metadata=policy["metadata"], spec=policy["spec"], opts=child)
            in_force = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-ci-preview", metadata=binding["metadata"], spec=binding["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[guard]))
            grant = k8s.rbac.v1.ClusterRole(f"{name}-ci-preview", metadata=role["metadata"], rules=role["rules"], opts=child)
            # bound only once the policy that keeps the grant to dry runs is in force
            k8s.rbac.v1.ClusterRoleBinding(f"{name}-ci-preview", metadata=role_binding["metadata"], role_ref=role_binding["roleRef"],
                                           subjects=role_binding["subjects"], opts=pulumi.ResourceOptions(parent=self, depends_on=[in_force, grant]))
        self.register_outputs({})
