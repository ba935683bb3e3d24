"""LeaderWorkerSetController: the LeaderWorkerSet controller, webhooks and CRD from the upstream Helm chart,
on the system pool, for the stack's serve workloads.

Installed as the JobSet chart is (components/kubernetes/controller_chart.py): a version bump upgrades the CRD in the same
`pulumi up`, and the objects are applied server-side, which is also what the CRD's size needs: at about
1.3 MB it is far over the 256 kB last-applied annotation a client-side apply would write.
The webhooks stay on: LWS's pod webhook injects LWS_LEADER_ADDRESS, which every serve container uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.dependencies import Dependency
from components.kubernetes.controller_chart import install_chart
from components.manifests.controller_charts import LWS


@dataclass(frozen=True)
class LeaderWorkerSetControllerArgs:
    version: str
    """Chart version (pinned); the registry tags it v<version>, which Helm finds from <version>."""
    chart: str
    """oci://registry.k8s.io/lws/charts/lws, or a local chart directory (air-gapped clusters)."""
    system_role: str
    """Value of the pathways/role label on the system pool, where the controller runs."""


class LeaderWorkerSetController(pulumi.ComponentResource):
    ready: Dependency
    """Depend on this: the CRD is applied and the controller and its webhooks are ready."""

    def __init__(self, name: str, args: LeaderWorkerSetControllerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:LeaderWorkerSetController", name, None, opts)
        # The values come from components/manifests/controller_charts.py, which the offline render uses too.
        chart = install_chart(self, name, namespace=LWS.namespace, pod_security=LWS.pod_security, chart=args.chart,
                              version=args.version, values=LWS.values(args.version, args.system_role))
        self.ready = chart.resources  # the Chart and every object it made (components/dependencies.py)
        self.register_outputs({})
