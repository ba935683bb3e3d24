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
import pulumi_gcp as gcp

from .dependencies import Dependency, all_of
from .kubernetes_object import KubernetesObject


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
        bucket = gcp.storage.Bucket(
            name,
            project=args.project,
            name=args.bucket,
            location=args.region,
            storage_class="STANDARD",
            uniform_bucket_level_access=True,  # a hierarchical namespace requires it
            hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True),
            public_access_prevention="enforced",
            soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=args.soft_delete_days * 86400),
            force_destroy=False,
            labels=args.labels,
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
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
