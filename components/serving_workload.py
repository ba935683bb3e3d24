"""ServingWorkload: one serve workload's LeaderWorkerSet, the Service of its HTTP port, the NetworkPolicy of its ports
and, when it autoscales, its HorizontalPodAutoscaler and the PodMonitoring that scrapes its metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from .dependencies import Dependency, all_of
from .manifests.lws import API_VERSION, KIND, REPLACE_ON_CHANGES


@dataclass(frozen=True)
class ServingWorkloadArgs:
    leader_worker_set: dict[str, Any]
    """Built by components.manifests.lws (pure) from the resolved stack."""
    service: dict[str, Any]
    network_policy: dict[str, Any]
    autoscaler: Optional[dict[str, Any]]
    """With serve.autoscale: its HorizontalPodAutoscaler and the PodMonitoring that feeds it."""
    pod_monitoring: Optional[dict[str, Any]]
    depends_on: tuple[Dependency, ...]
    """The LWS controller (CRD and webhooks), the namespace, the PriorityClass, the slices, the queues."""


class ServingWorkload(pulumi.ComponentResource):
    def __init__(self, name: str, args: ServingWorkloadArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:ServingWorkload", name, None, opts)
        netpol = args.network_policy
        # created before the pods it guards, so that no port is open while the set starts
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress", metadata=netpol["metadata"], spec=netpol["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(args.depends_on)),
        )
        lws = args.leader_worker_set
        # A template change rolls the replicas one group at a time (LWS's rollingUpdate default, maxUnavailable 1):
        # an update in place, not a replacement; only the subgroup policy cannot change in place.
        self.leader_worker_set = k8s.apiextensions.CustomResource(
            name, api_version=API_VERSION, kind=KIND, metadata=lws["metadata"], spec=lws["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of((*args.depends_on, self.network_policy)),
                                        replace_on_changes=list(REPLACE_ON_CHANGES), delete_before_replace=True),
        )
        if args.pod_monitoring is not None:
            pm = args.pod_monitoring
            self.pod_monitoring = k8s.apiextensions.CustomResource(
                f"{name}-metrics", api_version=pm["apiVersion"], kind=pm["kind"], metadata=pm["metadata"], spec=pm["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(args.depends_on)),
            )
        if args.autoscaler is not None:
            hpa = args.autoscaler
            self.autoscaler = k8s.autoscaling.v2.HorizontalPodAutoscaler(
                f"{name}-autoscaler", metadata=hpa["metadata"], spec=hpa["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.leader_worker_set]),
            )
        svc = args.service
        self.service = k8s.core.v1.Service(
            f"{name}-http", metadata=svc["metadata"], spec=svc["spec"],
            # not awaited (its pulumi.com/skipAwait annotation, components/manifests/lws.py http_service)
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.leader_worker_set]),
        )
        self.register_outputs({})
