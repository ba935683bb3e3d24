"""CheckpointBackups: the bucket multi-tier checkpointing's driver backs the RAM disks up to (resilience.mtc;
components/model/workloads/resilience.py has the sources), with a hierarchical namespace (GKE's how-to: "otherwise
backups will fail"). The driver's roles/storage.objectUser on it (xpk core/mtc.py) names the project by number,
which only the bootstrap knows: the bootstrap grants it, on this bucket alone (bootstrap/program.py). The cluster's
add-ons are GkeCluster's (components/gcp/cluster.py); the CheckpointConfigurations are
components/kubernetes/checkpointing.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.gcp.scratch_bucket import stack_bucket


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
