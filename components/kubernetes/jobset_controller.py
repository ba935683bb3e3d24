"""JobSetController: the JobSet controller, webhook and CRD from the upstream Helm chart, on the system pool
(components/kubernetes/controller_chart.py: a version bump upgrades the CRD too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.dependencies import Dependency
from components.kubernetes.controller_chart import install_chart
from components.manifests.controller_charts import JOBSET


@dataclass(frozen=True)
class JobSetControllerArgs:
    version: str
    """Chart version (pinned; the chart has no `latest`)."""
    chart: str
    """oci://registry.k8s.io/jobset/charts/jobset, or a local chart directory (air-gapped clusters)."""
    system_role: str
    """Value of the pathways/role label on the system pool, where the controller runs."""
    mtc: bool = False
    """The cluster runs multi-tier checkpointing: the controller gets the requests xpk gives it there."""


class JobSetController(pulumi.ComponentResource):
    ready: Dependency
    """Depend on this: the CRD is applied and the controller and webhook are ready (Pulumi awaits the
    Deployment), so a JobSet created afterwards is admitted."""

    def __init__(self, name: str, args: JobSetControllerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:JobSetController", name, None, opts)
        # The values come from components/manifests/controller_charts.py, which the offline render uses too.
        chart = install_chart(self, name, namespace=JOBSET.namespace, pod_security=JOBSET.pod_security, chart=args.chart,
                              version=args.version, values=JOBSET.values(args.version, args.system_role, args.mtc))
        self.ready = chart.resources  # the Chart and every object it made (components/dependencies.py)
        self.register_outputs({})
