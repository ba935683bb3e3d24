"""JobSetController: the JobSet controller and CRD from the upstream Helm chart, on the system pool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from .labels import ROLE_LABEL

CHART = "oci://registry.k8s.io/jobset/charts/jobset"
NAMESPACE = "jobset-system"


@dataclass(frozen=True)
class JobSetControllerArgs:
    version: str
    """Chart version (pinned; the chart has no `latest`)."""
    system_role: str
    """Value of the pathways/role label on the system pool, where the controller runs."""


class JobSetController(pulumi.ComponentResource):
    release: k8s.helm.v3.Release
    """The Helm release: JobSets depend on it, so the CRD and webhook exist first."""

    def __init__(self, name: str, args: JobSetControllerArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:JobSetController", name, None, opts)
        self.release = k8s.helm.v3.Release(
            name,
            name="jobset",
            chart=CHART,
            version=args.version,
            namespace=NAMESPACE,
            create_namespace=True,
            # Wait for the webhook to serve: a JobSet created before it is rejected.
            atomic=True,
            timeout=600,
            values={"controller": {"nodeSelector": {ROLE_LABEL: args.system_role}}},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"status": self.release.status})
