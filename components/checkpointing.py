"""Multi-tier checkpointing's resources (resilience.mtc; components/model/resilience.py has the sources).

CheckpointBackups (GCP): the bucket the checkpointing driver backs the RAM disks up to, with a hierarchical
namespace (GKE's how-to: "otherwise backups will fail"). The driver's roles/storage.objectUser on it (xpk
core/mtc.py) names the project by number, which only the bootstrap knows: the bootstrap grants it, on this bucket
alone (bootstrap/program.py, checkpointing_member below). The cluster's add-ons are GkeCluster's
(components/cluster.py).

CheckpointConfigurations (Kubernetes): one per TPU machine type, after the cluster exists (its add-on installs
the CRD) and before the workloads that mount the RAM disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from .dependencies import Dependency, all_of
from .kubernetes_object import KubernetesObject
from .scratch_bucket import stack_bucket


@dataclass(frozen=True)
class CheckpointBackupsArgs:
    project: str
    region: str
    bucket: str
    soft_delete_days: int
    protect: bool
    labels: dict[str, str]


class CheckpointBackups(pulumi.ComponentResource):
    bucket_name: pulumi.Output[str]

    def __init__(self, name: str, args: CheckpointBackupsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:CheckpointBackups", name, None, opts)
        # hierarchical namespace: GKE's how-to ("otherwise backups will fail"); no lifecycle rule (Orbax deletes its own)
        bucket = stack_bucket(name, project=args.project, region=args.region, name=args.bucket, soft_delete_days=args.soft_delete_days,
                              labels=args.labels, protect=args.protect, parent=self, hierarchical_namespace=True)
        self.bucket_name = bucket.name
        self.register_outputs({"bucketName": self.bucket_name})


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
