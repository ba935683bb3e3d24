"""CustomMetricsAdapter: the Custom Metrics Stackdriver Adapter, which serves Managed Service for Prometheus
metrics to the HorizontalPodAutoscalers of autoscaled serve workloads (custom.metrics.k8s.io), in a namespace
of its own. Its project role (roles/monitoring.viewer for its Kubernetes service account, through Workload
Identity Federation for GKE) is granted by the bootstrap, which grants the stacks' project roles
(bootstrap/program.py): the deploy identity grants none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.dependencies import Dependency, all_of
from components.kubernetes.kubernetes_object import KubernetesObject
from components.manifests.guardrails import psa_labels
from components.model.workloads import metrics_adapter as ma


@dataclass(frozen=True)
class CustomMetricsAdapterArgs:
    objects: list[dict[str, Any]]
    """components.manifests.metrics_adapter.objects (pure)."""
    after: tuple[Dependency, ...] = ()
    """The stack's namespaces and controller charts. While an aggregated API is registered and not served, the
    namespace controller cannot finish deleting any namespace (NamespaceDeletionDiscoveryFailure, seen in the
    real-engine tier): the APIServices are made after, and so deleted before, every one of them."""


class CustomMetricsAdapter(pulumi.ComponentResource):
    ready: list[Dependency]

    def __init__(self, name: str, args: CustomMetricsAdapterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:CustomMetricsAdapter", name, None, opts)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=ma.NAMESPACE, labels=psa_labels(ma.POD_SECURITY)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        made: list[pulumi.Resource] = []
        server: list[pulumi.Resource] = []
        for obj in args.objects:
            meta = obj["metadata"]
            # an APIService after its server (the Service and Deployment) and everything in `after`: a destroy
            # removes it first, before its server stops answering and before any namespace is deleted
            depends = [ns, *server, *args.after] if obj["kind"] == "APIService" else [ns]
            made.append(KubernetesObject(
                f"{name}-{obj['kind'].lower()}-{meta['name']}", obj,
                opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(depends)),
            ))
            if obj["kind"] in ("Deployment", "Service"):
                server.append(made[-1])
        self.ready = [ns, *made]
        self.register_outputs({})
