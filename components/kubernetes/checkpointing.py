"""CheckpointConfigurations: multi-tier checkpointing's Kubernetes objects (resilience.mtc;
components/model/workloads/resilience.py has the sources), one per TPU machine type, after the cluster exists (its
add-on installs the CRD) and before the workloads that mount the RAM disk. The backups' bucket is
components/gcp/checkpoint_backups.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.dependencies import Dependency, all_of
from components.kubernetes.kubernetes_object import KubernetesObject


@dataclass(frozen=True)
class CheckpointConfigurationsArgs:
    objects: list[dict[str, Any]]
    """components.manifests.checkpointing.checkpoint_configurations (pure)."""
    after: tuple[Dependency, ...] = ()
    """What must exist first: the backups' bucket and its grant (the driver mounts it at once)."""


class CheckpointConfigurations(pulumi.ComponentResource):
    ready: list[Dependency]

    def __init__(self, name: str, args: CheckpointConfigurationsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:CheckpointConfigurations", name, None, opts)
        self.ready = [
            KubernetesObject(f"{name}-{obj['metadata']['name']}", obj,
                             opts=pulumi.ResourceOptions(parent=self, depends_on=all_of(list(args.after))))
            for obj in args.objects
        ]
        self.register_outputs({})
