"""KubernetesObject: any Kubernetes object from its manifest, top-level fields and all."""

from __future__ import annotations

from typing import Any, Optional

import pulumi
from pulumi_kubernetes import _utilities as k8s_utilities


class KubernetesObject(pulumi.CustomResource):
    """Any object, top-level fields and all (apiextensions.CustomResource takes only `spec`, while e.g. a
    WorkloadPriorityClass has `value` at the top and an APIService or a ClusterRole no spec at all). Registered
    exactly as the provider's own classes register themselves: type kubernetes:<group>/<version>:<kind>, the core
    group as `core`, handled by the Kubernetes provider."""

    def __init__(self, name: str, obj: dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s_utilities.get_version()))
        api_version = "core/v1" if obj["apiVersion"] == "v1" else obj["apiVersion"]
        super().__init__(f"kubernetes:{api_version}:{obj['kind']}", name, dict(obj), opts)
