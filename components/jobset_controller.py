"""JobSetController: the JobSet controller, webhook and CRD from the upstream Helm chart, on the system pool.

Installed with Pulumi's helm.v4.Chart, not helm.v3.Release: Helm (and so a Release) installs a chart's
crds/ only when absent and never upgrades them (Helm docs, "Custom Resource Definitions: limitations";
PLATFORM-FACTS §6), so bumping kubernetes.jobsetVersion would run a new controller on an old CRD. A v4
Chart renders the chart (`helm template`, CRDs included) and Pulumi applies every object, the CRD too,
server-side: a version bump updates the CRD in the same `pulumi up`, and `pulumi preview` shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from .labels import ROLE_LABEL
from .manifests.guardrails import CONTROLLER_NAMESPACE_LEVEL, psa_labels

NAMESPACE = "jobset-system"


@dataclass(frozen=True)
class JobSetControllerArgs:
    version: str
    """Chart version (pinned; the chart has no `latest`)."""
    chart: str
    """oci://registry.k8s.io/jobset/charts/jobset, or a local chart directory (air-gapped clusters)."""
    system_role: str
    """Value of the pathways/role label on the system pool, where the controller runs."""


class JobSetController(pulumi.ComponentResource):
    ready: pulumi.Resource
    """Depend on this: the CRD is applied and the controller and webhook are ready (Pulumi awaits the
    Deployment), so a JobSet created afterwards is admitted."""

    def __init__(self, name: str, args: JobSetControllerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:JobSetController", name, None, opts)
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE, labels=psa_labels(CONTROLLER_NAMESPACE_LEVEL)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        chart = k8s.helm.v4.Chart(
            name,
            chart=args.chart,
            # A local chart directory is the version it holds; a registry is asked for the pinned one.
            version=args.version if args.chart.startswith("oci://") else None,
            namespace=NAMESPACE,
            skip_crds=False,  # the CRD is one of the chart's objects: applied and upgraded with it
            values={
                "controller": {"nodeSelector": {ROLE_LABEL: args.system_role}},
                # The chart's default renders a ServiceMonitor (monitoring.coreos.com), a CRD GKE does not
                # install: the apply would fail (charts/jobset/templates/prometheus/service_monitor.yaml).
                "prometheus": {"enable": False},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
        )
        self.ready = chart
        self.register_outputs({})
