"""Multi-tier checkpointing (MTC): the stack-level settings and the facts they resolve to (Pulumi-free).

Sources (docs/resilience.md quotes them): GKE's how-to "Train using multi-tier checkpointing" (minimum version,
the HighScaleCheckpointing and GcsFuseCsiDriver add-ons, a hierarchical-namespace bucket); xpk
src/xpk/core/mtc.py (the bucket grant to GKE's checkpointing principal, the CheckpointConfiguration per TPU
machine type, the JobSet controller's resources); GoogleCloudPlatform/high-scale-checkpointing-controller
apis/checkpointing.gke.io/v1/types.go and its README (the CheckpointConfiguration's fields, the recommended
gcsfuse options); MaxText docs/guides/checkpointing_solutions/multi_tier_checkpointing.md and Orbax's
multi_tier_checkpointing/initialization.py (on Pathways the local checkpoints are written from the
colocated-Python sidecar).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import Field, field_validator

from components.model import quantity
from components.model.cluster.bucket import check_bucket_name
from components.model.common import _Model

# GKE's MTC how-to, "Requirements" (MaxText's guide gives 1.32.3-gke.1170000; GKE's page is the one GKE keeps).
MTC_MIN_GKE_VERSION = "1.32.4-gke.1415000"
# The inline CSI volume the workers mount (HSC example/multitier-jobset.yaml; xpk core/docker_resources.py).
MTC_CSI_DRIVER = "multitier-checkpoint.csi.storage.gke.io"
MTC_VOLUME = "mtc-local-checkpoints"
# MaxText's Pathways command and Cluster Toolkit's generated manifest mount it here (local_checkpoint_directory).
DEFAULT_MOUNT_PATH = "/tmp/mtc_checkpoints"
# The principal GKE's checkpointing node driver acts as (xpk core/mtc.py): granted roles/storage.objectUser on
# the backup bucket.
MTC_NAMESPACE = "gke-managed-checkpointing"
MTC_SERVICE_ACCOUNT = "gke-checkpointing-multitier-node"
MTC_BUCKET_ROLE = "roles/storage.objectUser"
# The JobSet controller as xpk resizes it for an MTC cluster (update_jobset_manifest: requests at least 1 CPU and
# 1Gi, memory limit at least 2Gi); the chart's own limits (2 CPU, 4Gi) already exceed those.
MTC_JOBSET_CONTROLLER_REQUESTS = {"cpu": "1", "memory": "1Gi"}
# The options HSC's README recommends for the backup mount ("GCS Fuse Options").
DEFAULT_GCSFUSE_OPTIONS = (
    "implicit-dirs",
    "metadata-cache:negative-ttl-secs:0",
    "metadata-cache:ttl-secs:-1",
    "metadata-cache:stat-cache-max-size-mb:-1",
    "metadata-cache:type-cache-max-size-mb:-1",
    "file-cache:max-size-mb:-1",
    "file-cache:cache-file-for-range-read:true",
    "file-system:kernel-list-cache-ttl-secs:0",
    "file-cache:enable-parallel-downloads:true",
    "read_ahead_kb=1024",
    "write:enable-streaming-writes:true",
)
_MOUNT_PATH = re.compile(r"/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_MOUNT_OPTION = re.compile(r"[A-Za-z0-9_:=.,-]{1,200}")
# Where a Pathways pod keeps things the MTC volume must not shadow (/tmp/shared-memory: the sidecar's directory).
_RESERVED_PATHS = ("/tmp", "/tmp/shared-memory", "/dev", "/dev/shm", "/proc", "/sys", "/var/run/secrets")


class MultiTierCheckpointing(_Model):
    in_memory_volume_size: str = Field(description=(
        "RAM disk on each TPU host for the local checkpoints (CheckpointConfiguration inMemoryVolumeSize, a "
        "Kubernetes quantity such as 100Gi). MaxText's guide: about twice a host's share of the training state "
        "(parameters and optimizer state, ~12 bytes a parameter with Adam) plus 10-15 %. It is taken from the "
        "worker's memory request, as the shared-memory directory is."
    ))
    mount_path: str = Field(default=DEFAULT_MOUNT_PATH, max_length=255, description=(
        "Where the workers and the colocated-Python sidecar see the RAM disk: the program's "
        "local_checkpoint_directory (MaxText)."
    ))
    bucket: Optional[str] = Field(default=None, description=(
        "Bucket of the asynchronous backups (hierarchical namespace on); default <bucket.name>-checkpoints, "
        "created by the stack. Required with cluster.existing (the stack creates no bucket there)."
    ))
    gcs_fuse_mount_options: tuple[str, ...] = Field(default=DEFAULT_GCSFUSE_OPTIONS, max_length=50, description=(
        "gcsfuse options of the backup mount (CheckpointConfiguration gcsFuseMountOptions); default the "
        "high-scale-checkpointing controller's recommended set."
    ))

    @field_validator("in_memory_volume_size", mode="before")
    @classmethod
    def _size(cls, v: Any) -> str:
        size = quantity.parse(v)
        if size < quantity.GIB:
            raise ValueError(f"{v!r} is less than 1Gi; a RAM disk for checkpoints is sized in Gi (e.g. 100Gi)")
        return str(v)

    @field_validator("mount_path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not _MOUNT_PATH.fullmatch(v) or ".." in v.split("/"):
            raise ValueError(f"{v!r} is not an absolute path; use e.g. {DEFAULT_MOUNT_PATH}")
        if v.rstrip("/") in _RESERVED_PATHS or any(v.startswith(p + "/") for p in ("/dev", "/proc", "/sys", "/var/run/secrets")):
            raise ValueError(f"{v!r} would shadow a directory the pods need; use a directory of its own such as {DEFAULT_MOUNT_PATH}")
        return v

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else check_bucket_name(v)

    @field_validator("gcs_fuse_mount_options")
    @classmethod
    def _options(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [o for o in v if not _MOUNT_OPTION.fullmatch(o)]
        if bad:
            raise ValueError(f"{bad[0][:80]!r} is not a gcsfuse option; use e.g. implicit-dirs or file-cache:max-size-mb:-1")
        return v

    @property
    def size_gib(self):
        return quantity.parse(self.in_memory_volume_size) / quantity.GIB


class ResilienceConfig(_Model):
    mtc: Optional[MultiTierCheckpointing] = Field(default=None, description=(
        "Multi-tier checkpointing (GKE's HighScaleCheckpointing add-on): local checkpoints on a RAM disk of every "
        "TPU host, replicated to peers and backed up to Cloud Storage; for batch workloads, whose colocated-Python "
        "sidecar writes them (docs/resilience.md)."
    ))


def checkpointing_member(project: str, project_number: str) -> str:
    """GKE's checkpointing node driver as an IAM principal (Workload Identity Federation for GKE; xpk core/mtc.py)."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{MTC_NAMESPACE}/sa/{MTC_SERVICE_ACCOUNT}")


def backups_condition(bucket: str) -> tuple[str, str]:
    """(title, expression): the grant holds on the backups' bucket and its objects only (identities.py explains the
    form: the name itself, or the name and a slash)."""
    return ("checkpoint-backups-only",
            f"resource.name == 'projects/_/buckets/{bucket}' || resource.name.startsWith('projects/_/buckets/{bucket}/')")


def checkpoint_configuration_name(slice_group: str) -> str:
    """One CheckpointConfiguration per slice group whose workloads mount the RAM disk (xpk applies one per cluster,
    selecting its one machine type: here another group of that type, a serving one, would get the driver too)."""
    return f"pathways-mtc-{slice_group}"
