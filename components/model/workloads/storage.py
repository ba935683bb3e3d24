"""Storage a Pathways program mounts: GCS buckets through Cloud Storage FUSE, and existing Filestore and Managed
Lustre instances (Pulumi-free).

Sources, for what is rendered:
- GCS FUSE: GKE's "Mount Cloud Storage buckets as CSI ephemeral volumes" (inline volume, driver
  gcsfuse.csi.storage.gke.io, pod annotation gke-gcsfuse/volumes: "true"); the driver's volume attributes
  (GoogleCloudPlatform/gcs-fuse-csi-driver pkg/csi_driver/utils.go: bucketName, mountOptions,
  skipCSIBucketAccessCheck, hostNetworkPodKSA, gcsfuseMetadataPrefetchOnMount). Pathways pods are on the host
  network: the driver serves them only through the pod's Kubernetes service account and Workload Identity, with
  hostNetworkPodKSA: "true" (its docs/authentication.md; docs/releases.md: GKE 1.33.3-gke.1226000 or later).
  Access: roles/storage.objectViewer (read-only) or roles/storage.objectUser (read-write) on the bucket to that
  service account's principal (docs/authentication.md; docs/troubleshooting.md, "Validate Workload Identity
  Federation"). The webhook's sidecars: pkg/webhook (sidecar_spec.go, injection.go), deploy/base/webhook.
- The mount options Google gives for TPU training reads and checkpoint writes: GoogleCloudPlatform/gcsfuse
  samples/gke-csi-yaml/tpu/training-pv.yaml and checkpointing-pv.yaml (both also set skipCSIBucketAccessCheck and
  gcsfuseMetadataPrefetchOnMount).
- Filestore: GKE's "Access existing Filestore instances": a PersistentVolume (driver filestore.csi.storage.gke.io,
  volumeHandle modeInstance/<location>/<instance>/<share>, volumeAttributes ip and volume, ReadWriteMany) bound to
  a PersistentVolumeClaim by claimRef and volumeName, storageClassName "". Add-on GcpFilestoreCsiDriver.
- Managed Lustre: GKE's "Access existing Managed Lustre instances": the same PV shape with driver
  lustre.csi.storage.gke.io, volumeHandle <project>/<zone>/<instance>, volumeAttributes ip and filesystem. Add-on
  LustreCsiDriver.
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
from typing import Any, Literal, Optional

from pydantic import Field, field_validator, model_validator

from components.model import quantity
from components.model.common import _dns_label, _Model

GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
FILESTORE_DRIVER = "filestore.csi.storage.gke.io"
LUSTRE_DRIVER = "lustre.csi.storage.gke.io"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
# The GKE version from which the managed driver mounts buckets into host-network pods (hostNetworkPodKSA).
GCSFUSE_HOST_NETWORK_MIN_GKE = "1.33.3-gke.1226000"
READ_ROLE = "roles/storage.objectViewer"
WRITE_ROLE = "roles/storage.objectUser"
# training-pv.yaml: metadata cached for the run, no negative cache (a file written later is found).
DATA_OPTIONS = (
    "implicit-dirs", "metadata-cache:negative-ttl-secs:0", "metadata-cache:ttl-secs:-1",
    "metadata-cache:stat-cache-max-size-mb:-1",
)
# checkpointing-pv.yaml: the above, an unbounded file cache (restores read whole files), parallel downloads,
# kernel read-ahead, streaming writes (a checkpoint file is uploaded while it is written, not staged on disk).
CHECKPOINT_OPTIONS = (
    *DATA_OPTIONS, "metadata-cache:type-cache-max-size-mb:-1", "file-cache:max-size-mb:-1",
    "file-cache:cache-file-for-range-read:true", "file-cache:enable-parallel-downloads:true", "read_ahead_kb=1024",
    "write:enable-streaming-writes:true",
)
# What GKE's webhook gives the FUSE sidecar it adds to the pod (a native sidecar, first of the init containers):
# requests 250m CPU, 256Mi memory (and 5Gi ephemeral storage), no limits (gcs-fuse-csi-driver
# deploy/base/webhook/deployment.yaml --sidecar-*-request, --sidecar-*-limit=0); the head node must hold them.
GCSFUSE_SIDECAR_REQUESTS = ("250m", "256Mi")
# gcsfuseMetadataPrefetchOnMount adds a second, small sidecar (gke-gcsfuse-metadata-prefetch): 10m CPU, 10Mi.
GCSFUSE_PREFETCH_REQUESTS = ("10m", "10Mi")
GOOGLE_ATTRIBUTES = {"skipCSIBucketAccessCheck": "true", "gcsfuseMetadataPrefetchOnMount": "true"}
# Paths a mount may not take: the root, the system's own trees, and what the stack already mounts.
RESERVED_MOUNT_PATHS = ("/", "/bin", "/dev", "/dev/shm", "/etc", "/lib", "/lib64", "/proc", "/sbin", "/sys", "/usr", "/var/run")
_BUCKET = re.compile(r"[a-z0-9][a-z0-9_-]{1,61}[a-z0-9]")
_OPTION = re.compile(r"[a-z0-9][a-z0-9_:.=-]{0,127}")
# Options whose value the stack decides (the driver's own, or what hostNetworkPodKSA requires).
_FORBIDDEN_OPTIONS = ("key-file", "token-url", "reuse-token-from-url", "o=", "foreground", "app-name", "temp-dir")
MAX_MOUNTS = 10


def first_repeated(names: list[str]) -> Optional[str]:
    """The first (in sort order) name listed more than once, or None."""
    return min((n for n in names if names.count(n) > 1), default=None)


def listed_once(names: list[str], what: str, fix: str = "list each once") -> None:
    """A validator's refusal of a list that names one thing twice: "<what> '<name>' is listed twice; <fix>"."""
    dup = first_repeated(names)
    if dup:
        raise ValueError(f"{what} {dup!r} is listed twice; {fix}")


def _bucket(v: str) -> str:
    if not _BUCKET.fullmatch(v) or ".." in v or v.startswith("goog"):
        raise ValueError(f"{v[:80]!r} is not a bucket name (3-63 lowercase letters, digits, '-' and '_'; no gs://, no dots)")
    return v


class Mount(_Model):
    """A storage mount of a batch workload's program (and, with onWorkers, of each worker pod's containers)."""

    path: str = Field(description="Absolute path in the container, e.g. /data.")
    bucket: Optional[str] = Field(default=None, description=(
        "A GCS bucket (its name) mounted with Cloud Storage FUSE; the bootstrap grants the workload's own Kubernetes "
        "service account roles/storage.objectViewer on it (readOnly) or roles/storage.objectUser."))
    file_system: Optional[str] = Field(default=None, description="A file system of pathways:storage.fileSystems, by its name.")
    read_only: bool = Field(default=True, description="Mounted read-only (the default); false to write (checkpoints).")
    use: Optional[Literal["data", "checkpoints"]] = Field(default=None, description=(
        "bucket: Google's GCS FUSE options for training reads (data) or checkpoint writes (checkpoints: a file "
        "cache, parallel downloads, streaming writes); default data when readOnly, else checkpoints."))
    extra_options: list[str] = Field(default_factory=list, max_length=20, description=(
        "bucket: more gcsfuse mount options (e.g. file-cache:max-size-mb:102400), after the profile's."))
    on_workers: bool = Field(default=False, description=(
        "Also mount it on every worker pod (the Pathways server and a colocated-Python sidecar, which loads data "
        "on the TPU hosts); a bucket mount then runs one FUSE sidecar per TPU VM."))

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        # normpath keeps a leading "//" (POSIX leaves its meaning to the system): refused, so "//etc" is not a way past
        norm = posixpath.normpath(v) if v.startswith("/") and not v.startswith("//") else ""
        if not norm or norm != v or len(v) > 255 or not re.fullmatch(r"[A-Za-z0-9_./-]+", v):
            raise ValueError(f"{v[:80]!r} is not an absolute, normalised path (e.g. /data)")
        clash = sorted((r for r in RESERVED_MOUNT_PATHS if v == r or (r != "/" and v.startswith(r + "/"))), key=len, reverse=True)
        if clash:
            raise ValueError(f"{v} is under {clash[0]}, which the system or the stack mounts; use a path such as /data")
        return v

    @field_validator("bucket")
    @classmethod
    def _bucket_name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _bucket(v)

    @field_validator("file_system")
    @classmethod
    def _fs_name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 63)

    @field_validator("extra_options")
    @classmethod
    def _options(cls, v: list[str]) -> list[str]:
        for o in v:
            if o.startswith(_FORBIDDEN_OPTIONS):
                raise ValueError(f"{o[:80]!r} is set by the driver or the stack; leave it out")
            if not _OPTION.fullmatch(o):
                raise ValueError(f"{o[:80]!r} is not a gcsfuse mount option (e.g. file-cache:max-size-mb:102400)")
        return v

    @model_validator(mode="after")
    def _one_source(self) -> "Mount":
        if (self.bucket is None) == (self.file_system is None):
            raise ValueError(f"mount {self.path}: give exactly one of bucket (GCS FUSE) or fileSystem (pathways:storage)")
        if self.file_system is not None and (self.use is not None or self.extra_options):
            raise ValueError(f"mount {self.path}: use and extraOptions are GCS FUSE options; a file system takes neither")
        return self

    @property
    def profile(self) -> str:
        return self.use or ("data" if self.read_only else "checkpoints")

    @property
    def mount_options(self) -> tuple[str, ...]:
        """The profile's options, less those extraOptions set again, then extraOptions: the driver keeps one value per
        option (the one that sorts last), so an extra option replaces the profile's rather than joining it."""
        base = DATA_OPTIONS if self.profile == "data" else CHECKPOINT_OPTIONS
        overridden = {option_key(o) for o in self.extra_options}
        return (*(o for o in base if option_key(o) not in overridden), *self.extra_options)

    @property
    def role(self) -> str:
        return READ_ROLE if self.read_only else WRITE_ROLE


def option_key(option: str) -> str:
    """What a gcsfuse option sets: file-cache:max-size-mb of file-cache:max-size-mb:-1, uid of uid=1000."""
    if "=" in option:
        return option.split("=", 1)[0]
    return option.rsplit(":", 1)[0] if option.count(":") >= 2 else option


def check_mounts(mounts: list[Mount]) -> list[Mount]:
    """One mount per path, none inside another."""
    paths = [m.path for m in mounts]
    for i, a in enumerate(paths):
        for b in paths[i + 1:]:
            if a == b:
                raise ValueError(f"mount {b} is listed twice; give each mount its own path")
            inner, outer = (b, a) if b.startswith(a + "/") else (a, b)
            if inner.startswith(outer + "/"):
                raise ValueError(f"mount {inner} is inside mount {outer}; give each its own path")
    return mounts


class FileSystem(_Model):
    """An existing Filestore or Managed Lustre instance, made available to workloads as a PersistentVolumeClaim."""

    name: str = Field(description=(
        "The name workloads mount it by (mounts[].fileSystem); its claim is <name>-<digest of the instance and size>."))
    filestore: Optional[str] = Field(default=None, description="A Filestore instance's name (basic, zonal, regional or enterprise tier).")
    lustre: Optional[str] = Field(default=None, description="A Managed Lustre instance's name.")
    location: Optional[str] = Field(default=None, description="Its zone (Filestore: or region); default gcp:zone.")
    ip: str = Field(description=(
        "The instance's IP address on the cluster's VPC (gcloud filestore instances describe ... "
        "--format='value(networks[0].ipAddresses[0])'; gcloud lustre instances describe ... --format='value(mountPoint)' "
        "gives ip@tcp:/filesystem)."))
    share: Optional[str] = Field(default=None, description="Filestore: the file share's name (e.g. vol1).")
    filesystem: Optional[str] = Field(default=None, description="Lustre: the file system name (the part after ':/' in its mount point).")
    capacity: str = Field(description="The instance's capacity (e.g. 1Ti, 18000Gi): the PersistentVolume's, which the claim requests.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("filestore", "lustre")
    @classmethod
    def _instance(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 63)

    @field_validator("location")
    @classmethod
    def _location(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not re.fullmatch(r"[a-z]+-[a-z]+[0-9]+(-[a-z])?", v):
            raise ValueError(f"{v[:40]!r} is not a zone or region (e.g. us-central2-b)")
        return v

    @field_validator("ip")
    @classmethod
    def _ip(cls, v: str) -> str:
        try:
            addr = ipaddress.ip_address(v)
        except ValueError:
            raise ValueError(f"{v[:60]!r} is not an IP address (the instance's address on the VPC, e.g. 10.90.1.4)") from None
        if not addr.is_private:
            raise ValueError(f"{v} is not a private address; Filestore and Managed Lustre serve on the VPC")
        return v

    @field_validator("share")
    @classmethod
    def _share(cls, v: Optional[str]) -> Optional[str]:
        # the form of Filestore's file share names (a letter, then letters, digits, '_'); its tier bounds the length
        if v is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", v):
            raise ValueError(f"{v[:40]!r} is not a file share name (a letter, then letters, digits and '_', e.g. vol1)")
        return v

    @field_validator("filesystem")
    @classmethod
    def _filesystem(cls, v: Optional[str]) -> Optional[str]:
        # Managed Lustre's file system name (gcloud lustre instances create --filesystem): up to 8 letters and digits
        if v is not None and not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,7}", v):
            raise ValueError(f"{v[:40]!r} is not a Lustre file system name (a letter, then letters and digits, at most 8; e.g. lfs)")
        return v

    @field_validator("capacity", mode="before")
    @classmethod
    def _capacity(cls, v: Any) -> str:
        if quantity.parse(v) <= 0:
            raise ValueError(f"{v!r} is not a capacity (e.g. 1Ti)")
        return str(v)

    @model_validator(mode="after")
    def _kind(self) -> "FileSystem":
        if (self.filestore is None) == (self.lustre is None):
            raise ValueError(f"file system {self.name}: give exactly one of filestore or lustre (the instance's name)")
        if self.filestore is not None and self.share is None:
            raise ValueError(f"file system {self.name}: a Filestore instance needs share (its file share's name, e.g. vol1)")
        if self.lustre is not None and self.filesystem is None:
            raise ValueError(f"file system {self.name}: a Lustre instance needs filesystem (e.g. lfs from 10.90.1.4@tcp:/lfs)")
        if self.filestore is None and self.share is not None or self.lustre is None and self.filesystem is not None:
            raise ValueError(f"file system {self.name}: share is Filestore's key and filesystem Lustre's")
        if self.lustre is not None and self.location is not None and not re.fullmatch(r".*-[a-z]", self.location):
            # Managed Lustre's locations page: "For Google Cloud Managed Lustre instances, locations map to zones"
            # (cloud.google.com/managed-lustre/docs/locations); its CSI volumeHandle is <project>/<zone>/<instance>
            raise ValueError(f"file system {self.name}: location {self.location} is a region, but a Managed Lustre "
                             f"instance lives in a zone (e.g. {self.location}-a): give the instance's zone")
        return self

    @property
    def driver(self) -> str:
        return FILESTORE_DRIVER if self.filestore else LUSTRE_DRIVER

    @property
    def kind(self) -> Literal["filestore", "lustre"]:
        return "filestore" if self.filestore else "lustre"


class StorageConfig(_Model):
    file_systems: list[FileSystem] = Field(default_factory=list, max_length=20, description=(
        "Existing Filestore and Managed Lustre instances workloads may mount (one PersistentVolume and claim each, in "
        "the workload namespace; the cluster gets the instance kind's CSI driver add-on)."))

    @field_validator("file_systems")
    @classmethod
    def _unique(cls, v: list[FileSystem]) -> list[FileSystem]:
        listed_once([f.name for f in v], "file system", "give each its own name")
        return v


class RunBucket(_Model):
    """A bucket ad-hoc runs may mount: the runs' service account gets its role on it."""

    name: str = Field(description="The bucket's name.")
    read_only: bool = Field(default=True, description="Runs may only read it (roles/storage.objectViewer); false: objectUser.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _bucket(v)

    @property
    def role(self) -> str:
        return READ_ROLE if self.read_only else WRITE_ROLE


class RunFileSystem(_Model):
    """A declared file system ad-hoc runs may mount (runs.fileSystems)."""

    name: str = Field(description="A file system of pathways:storage.fileSystems, by its name.")
    read_only: bool = Field(default=True, description="Runs may only read it; false: runs may write it too.")


def volume_name(index: int) -> str:
    return f"mount-{index}"


def service_account_name(workload: str) -> str:
    """The Kubernetes service account of a workload that mounts buckets: the principal its bucket grants go to."""
    return f"{workload}-storage"


def ksa_member(project: str, project_number: str, namespace: str, service_account: str) -> str:
    """The IAM principal of a Kubernetes service account under Workload Identity Federation for GKE (GKE docs,
    "Authenticate to Google Cloud APIs from GKE workloads")."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{namespace}/sa/{service_account}")
