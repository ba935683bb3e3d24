"""JobSetController: the JobSet controller, webhook and CRD from the upstream Helm chart, on the system pool
(components/controller_chart.py: a version bump upgrades the CRD too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from .controller_chart import install_chart
from .labels import ROLE_LABEL
from .manifests.guardrails import CONTROLLER_NAMESPACE_LEVEL

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
        chart = install_chart(self, name, namespace=NAMESPACE, pod_security=CONTROLLER_NAMESPACE_LEVEL, chart=args.chart,
                              version=args.version, values={
                                  "controller": {"nodeSelector": {ROLE_LABEL: args.system_role}},
                                  # The chart's default renders a ServiceMonitor (monitoring.coreos.com), a CRD GKE does
                                  # not install: the apply would fail (charts/jobset/templates/prometheus/service_monitor.yaml).
                                  "prometheus": {"enable": False},
                              })
        self.ready = chart
        self.register_outputs({})
