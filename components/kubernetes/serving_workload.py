"""ServingWorkload: one serve workload's LeaderWorkerSet (a split endpoint's three, and its roles' Services), the
Service of its HTTP port, the NetworkPolicy of its ports;
when it autoscales, its HorizontalPodAutoscaler and the PodMonitoring that scrapes its metric; with serve.gateway,
the inferencepool chart (InferencePool and endpoint picker), the GKE Gateway and the HTTPRoute to the pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.dependencies import Dependency, all_of
from components.manifests.lws import API_VERSION, KIND, REPLACE_ON_CHANGES


@dataclass(frozen=True)
class ServingWorkloadArgs:
    workload: str
    """The serve workload's name: its LeaderWorkerSet <workload>, or a split endpoint's <workload>-<role>."""
    leader_worker_sets: tuple[dict[str, Any], ...]
    """Built by components.manifests.lws_direct (pure) from the resolved stack."""
    service: dict[str, Any]
    network_policy: dict[str, Any]
    autoscaler: Optional[dict[str, Any]]
    """With serve.autoscale: its HorizontalPodAutoscaler and the PodMonitoring that feeds it."""
    pod_monitoring: Optional[dict[str, Any]]
    depends_on: tuple[Dependency, ...]
    """The LWS controller (CRD and webhooks), the namespace, the PriorityClass, the slices, the queues."""
    autoscaler_depends_on: tuple[Dependency, ...] = ()
    """The custom metrics adapter the autoscaler reads its metric through, when the stack installs it."""
    gateway: Optional["GatewayArgs"] = None
    """With serve.gateway.enabled."""
    role_services: tuple[dict[str, Any], ...] = ()
    """A split endpoint's roles' Services, which its proxy calls."""


@dataclass(frozen=True)
class GatewayArgs:
    chart: str
    """The inferencepool chart: its OCI reference, or a local chart directory."""
    version: str
    chart_values: dict[str, Any]
    """components/manifests/inference_gateway.py chart_values (the offline render expands the same)."""
    gateway: dict[str, Any]
    http_route: dict[str, Any]
    backend_policies: tuple[dict[str, Any], ...] = ()
    """With clientRanges: the pool's HealthCheckPolicy and GCPBackendPolicy naming its Cloud Armor policy."""
    armor: tuple[Dependency, ...] = ()
    """The Cloud Armor policy they name, made first."""


class ServingWorkload(pulumi.ComponentResource):
    def __init__(self, name: str, args: ServingWorkloadArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:ServingWorkload", name, None, opts)
        netpol = args.network_policy
        # created before the pods it guards, so that no port is open while the set starts
        self.network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-ingress", metadata=netpol["metadata"], spec=netpol["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(args.depends_on)),
        )
        # A template change rolls the replicas one group at a time (LWS's rollingUpdate default, maxUnavailable 1):
        # an update in place, not a replacement; only the subgroup policy cannot change in place. A split endpoint's
        # sets are resources of their own (serve-<workload>-<role>): scaling one role leaves the others untouched.
        self.leader_worker_sets = [k8s.apiextensions.CustomResource(
            f"{name}{lws['metadata']['name'][len(args.workload):]}", api_version=API_VERSION, kind=KIND,
            metadata=lws["metadata"], spec=lws["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of((*args.depends_on, self.network_policy)),
                                        replace_on_changes=list(REPLACE_ON_CHANGES), delete_before_replace=True),
        ) for lws in args.leader_worker_sets]
        self.leader_worker_set = self.leader_worker_sets[0]
        lws = args.leader_worker_sets[0]
        for svc in args.role_services:
            # not awaited (pulumi.com/skipAwait): an engine may load its model for hours
            k8s.core.v1.Service(f"{name}-{svc['metadata']['name'][len(args.workload) + 1:]}", metadata=svc["metadata"],
                                spec=svc["spec"], opts=pulumi.ResourceOptions(parent=self, depends_on=self.leader_worker_sets))
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
                opts=pulumi.ResourceOptions(parent=self, depends_on=all_of((*self.leader_worker_sets, *args.autoscaler_depends_on))),
            )
        if args.gateway is not None:
            self._gateway(name, lws["metadata"], args.gateway, args.depends_on)
        svc = args.service
        self.service = k8s.core.v1.Service(
            f"{name}-http", metadata=svc["metadata"], spec=svc["spec"],
            # not awaited (its pulumi.com/skipAwait annotation, components/manifests/lws.py http_service)
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.leader_worker_sets),
        )
        self.register_outputs({})

    def _gateway(self, name: str, lws_metadata: dict[str, Any], args: GatewayArgs, depends_on: tuple[Dependency, ...]) -> None:
        # The release is the workload's name: the chart names the InferencePool after it, and the HTTPRoute sends there.
        chart = k8s.helm.v4.Chart(
            f"{name}-inference-pool", name=lws_metadata["name"], namespace=lws_metadata["namespace"], chart=args.chart,
            version=args.version if args.chart.startswith("oci://") else None, values=args.chart_values,
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(depends_on)),
        )
        gw, route = args.gateway, args.http_route
        gateway = k8s.apiextensions.CustomResource(
            f"{name}-gateway", api_version=gw["apiVersion"], kind=gw["kind"], metadata=gw["metadata"], spec=gw["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(depends_on)),
        )
        # the pool's backend policies before the route sends anyone there: with clientRanges, no moment without Cloud Armor
        policies = [k8s.apiextensions.CustomResource(
            f"{name}-{p['kind'].lower()}", api_version=p["apiVersion"], kind=p["kind"], metadata=p["metadata"], spec=p["spec"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=all_of([chart, *args.armor])),
        ) for p in args.backend_policies]
        k8s.apiextensions.CustomResource(
            f"{name}-route", api_version=route["apiVersion"], kind=route["kind"], metadata=route["metadata"],
            spec=route["spec"], opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway, chart, *policies]),
        )
