"""The one typed model of a stack's configuration (Pulumi-free).

Stack config keys live in the project namespace (``pathways:<key>``) plus the provider's own
``gcp:project``, ``gcp:region`` and ``gcp:zone``. ``load()`` turns the raw key/value mapping into a
frozen ``StackConfig`` or raises ``ConfigError`` with one line per problem, each naming the key path,
the bad value and what would be valid. Nothing here knows about Pulumi: ``infra.config`` feeds it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal, Mapping, Optional, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from . import machines, quantity
from . import tpu as tpu_catalog
from .errors import ConfigError, Problem
from .ports import HEAD_NODE_PORTS

PROJECT_NAMESPACE = "pathways"
GCP_KEYS = ("project", "region", "zone")

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PATHWAYS_VERSION = re.compile(r"^jax-[0-9]+\.[0-9]+(\.[0-9]+)?$")
_GKE_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)(\.([0-9]+)(-gke\.([0-9]+))?)?$")
# What "unlimited" worker restarts means: pathwaysutils' GKE builder gives headless workers
# max_slice_restarts = 1_000_000 (experimental/gke/jobset.py); Job.backoffLimit is an int32.
UNLIMITED_RESTARTS_PER_HOST = 1_000_000
INT32_MAX = 2**31 - 1
DEFAULT_BATCH_RESTARTS_PER_HOST = 4  # the anchors' hosts x 4 (PLATFORM-FACTS §2)
MAX_RESTARTS_BOUND = 10_000
# Head pod containers besides the user's (PLATFORM-FACTS §1: the anchors' limits).
RESOURCE_MANAGER_RESOURCES = ("8", "32Gi")
PROXY_RESOURCES = ("16", "100Gi")
DEFAULT_USER_RESOURCES = ("24", "100Gi")

# Upper bounds. From GKE ("Quotas and limits", Standard clusters): 15,000 nodes per cluster and
# 1,000 nodes per node pool per zone. From this project: at most 1,000 TPU slice pools and 100
# workloads per stack, which `make bench` plans in seconds (see README, Performance).
MAX_NODES_PER_CLUSTER = 15_000
MAX_NODES_PER_POOL_ZONE = 1_000
MAX_TPU_POOLS = 1_000
MAX_WORKLOADS = 100



_NETWORK_REF = re.compile(
    r"(?:(?:https://www\.googleapis\.com/compute/v1/)?projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/"
    r"(?:global|regions/[a-z]+-[a-z]+[0-9]+)/(?:networks|subnetworks)/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
)


def _network(v: str) -> "ipaddress.IPv4Network | ipaddress.IPv6Network":
    try:
        return ipaddress.ip_network(str(v), strict=True)
    except ValueError as e:
        raise ValueError(f"{str(v)[:60]!r} is not a CIDR range ({e}); use e.g. 10.0.0.0/20") from None


_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


def _matching(pattern: str, what: str):
    """An AfterValidator: the value must match `pattern`, else '<value> is not <what>'."""
    regex = re.compile(pattern)

    def check(value: str) -> str:
        if not regex.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value

    return AfterValidator(check)


ProjectId = Annotated[str, _matching(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", "a GCP project ID (6-30 lowercase letters, digits, '-')")]
Region = Annotated[str, _matching(r"^[a-z]+-[a-z]+[0-9]+$", "a GCP region (e.g. us-east5)")]
Zone = Annotated[str, _matching(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$", "a GCP zone (e.g. us-east5-b)")]
PathwaysVersion = Annotated[str, _matching(
    _PATHWAYS_VERSION.pattern, "a Pathways release tag; use jax-<version> matching your program's JAX, e.g. jax-0.7.2"
)]


def _dns_label(value: str, max_len: int) -> str:
    if len(value) > max_len or not _DNS_LABEL.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid name; use lowercase letters, digits and '-', start with a "
            f"letter, end with a letter or digit, at most {max_len} characters"
        )
    return value


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        alias_generator=to_camel,
        validate_default=True,
    )


# --- cluster and network ---------------------------------------------------------------------


class ReleaseChannel(str, Enum):
    RAPID = "RAPID"
    REGULAR = "REGULAR"
    STABLE = "STABLE"
    EXTENDED = "EXTENDED"


class AuthorizedNetwork(_Model):
    cidr_block: str = Field(description="CIDR allowed to reach the control plane, e.g. 203.0.113.0/24.")
    display_name: str = Field(default="", max_length=100, pattern=r"^[ -~]*$", description="Label shown in the console (printable ASCII).")

    @field_validator("cidr_block")
    @classmethod
    def _cidr(cls, v: str) -> str:
        net = _network(v)
        if net.prefixlen == 0:
            # "All of the internet": the control plane would be open to anyone with credentials to try.
            raise ValueError(f"{v} is the whole internet; list the ranges that need the control plane (a VPN, a bastion, CI runners)")
        return v


class SystemPool(_Model):
    machine_type: str = Field(default="e2-standard-4", description="Machine type of the system pool (kube-system, JobSet controller).")
    min_nodes: int = Field(default=1, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Autoscaler minimum.")
    max_nodes: int = Field(default=3, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Autoscaler maximum.")

    @field_validator("machine_type")
    @classmethod
    def _machine(cls, v: str) -> str:
        machines.shape(v)  # MachineError (a ValueError) names what exists
        return v

    @model_validator(mode="after")
    def _range(self) -> "SystemPool":
        if self.max_nodes < self.min_nodes:
            raise ValueError(f"maxNodes {self.max_nodes} is below minNodes {self.min_nodes}; set maxNodes >= minNodes")
        return self


class ClusterConfig(_Model):
    name: Optional[str] = Field(default=None, description="GKE cluster name; default pathways-<stack>.")
    regional: bool = Field(default=False, description="Regional control plane (nodes stay in the stack's zone).")
    release_channel: ReleaseChannel = Field(default=ReleaseChannel.REGULAR, description="GKE release channel.")
    min_master_version: Optional[str] = Field(default=None, description=(
        "Lowest control-plane version: a minor (1.35) or a full version (1.35.1-gke.1234000). Default: none, "
        "the release channel picks a version GKE offers."
    ))
    private_nodes: bool = Field(default=True, description="Nodes without public IPs (they reach the internet through Cloud NAT).")
    public_endpoint: bool = Field(default=False, description=(
        "Let the internet reach the control plane's IP endpoint (limited by masterAuthorizedNetworks). "
        "Off: only the VPC reaches it; people and CI use the IAM-authorized DNS endpoint."
    ))
    master_authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list, max_length=50)
    deletion_protection: Optional[bool] = Field(default=None, description="GKE deletion protection; default on.")
    system_pool: SystemPool = Field(default_factory=SystemPool)

    @field_validator("name")
    @classmethod
    def _name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 40)

    @field_validator("min_master_version")
    @classmethod
    def _version(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not _GKE_VERSION.fullmatch(v):
            raise ValueError(f"{v!r} is not a GKE version; use e.g. 1.32 or 1.32.2-gke.1182000")
        return v


class NetworkConfig(_Model):
    existing_network: Optional[str] = Field(default=None, description="Use this VPC instead of creating one.")
    existing_subnetwork: Optional[str] = Field(default=None, description="Subnet of existingNetwork (with secondary ranges pods and services).")
    nodes_cidr: str = Field(default="10.0.0.0/20", description="Primary range of the created subnet.")
    pods_cidr: str = Field(default="10.4.0.0/14", description="Secondary range for pods.")
    services_cidr: str = Field(default="10.8.0.0/20", description="Secondary range for services.")
    # 8896 is the largest GCP MTU; multislice DCN traffic benefits from jumbo frames.
    mtu: int = Field(default=8896, ge=1300, le=8896, description="MTU of the created VPC.")
    cloud_nat: Optional[bool] = Field(default=None, description=(
        "Cloud Router + Cloud NAT for the nodes' egress; default on with private nodes in a created VPC "
        "(images outside Google's registries, e.g. registry.k8s.io for JobSet, need it)."
    ))
    pathways_client_ranges: list[str] = Field(default_factory=list, max_length=20, description=(
        "CIDRs besides the Pathways nodes allowed to reach the IFRT proxy port 29000 (opt-in; the proxy runs "
        "any program it is sent)."
    ))

    @field_validator("pathways_client_ranges")
    @classmethod
    def _client_ranges(cls, v: list[str]) -> list[str]:
        for cidr in v:
            if _network(cidr).prefixlen == 0:
                raise ValueError(f"{cidr} is the whole internet; list the ranges of the clients that need the proxy")
        return v

    @field_validator("nodes_cidr", "pods_cidr", "services_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        net = _network(v)
        if net.version != 4:
            raise ValueError(f"{v} is not an IPv4 range; the subnet and its secondary ranges are IPv4")
        return v

    @field_validator("existing_network", "existing_subnetwork")
    @classmethod
    def _resource_name(cls, v: Optional[str]) -> Optional[str]:
        # A name, or a projects/.../networks|subnetworks/<name> path or URL, as the Compute API takes them.
        if v is not None and not _NETWORK_REF.fullmatch(v):
            raise ValueError(f"{v[:80]!r} is not a network or subnetwork name or projects/... path")
        return v

    @model_validator(mode="after")
    def _existing(self) -> "NetworkConfig":
        if (self.existing_network is None) != (self.existing_subnetwork is None):
            raise ValueError("set both existingNetwork and existingSubnetwork, or neither (a VPC is then created)")
        # The VPC API refuses a subnet whose primary and secondary ranges overlap.
        named = (("nodesCidr", self.nodes_cidr), ("podsCidr", self.pods_cidr), ("servicesCidr", self.services_cidr))
        for i, (a, ra) in enumerate(named):
            for b, rb in named[i + 1:]:
                if _network(ra).overlaps(_network(rb)):
                    raise ValueError(f"{a} {ra} and {b} {rb} overlap; the three ranges must be disjoint")
        return self

    @property
    def create(self) -> bool:
        return self.existing_network is None


# --- pools ---------------------------------------------------------------------------------


class HeadPoolConfig(_Model):
    machine_type: str = Field(default="n2-standard-64", description="Machine type for Pathways head pods (RM + proxy + user program).")
    node_count: Optional[int] = Field(default=None, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Nodes; default one per workload (one head pod per node).")


class Capacity(str, Enum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVATION = "reservation"
    FLEX_START = "flex-start"


def _parse_tpu(v: Any) -> tpu_catalog.TpuSlice:
    if isinstance(v, tpu_catalog.TpuSlice):
        return v
    try:
        if isinstance(v, str):
            return tpu_catalog.from_name(v)
        if isinstance(v, dict):
            extra = set(v) - {"family", "topology", "machineType"}
            if extra or "family" not in v or "topology" not in v:
                raise ValueError(
                    "give a TPU name (e.g. v6e-16) or {family, topology[, machineType]}"
                    + (f"; unknown keys: {', '.join(sorted(extra))}" if extra else "")
                )
            return tpu_catalog.resolve(str(v["family"]), str(v["topology"]), v.get("machineType"))
    except tpu_catalog.TpuError as e:
        raise ValueError(str(e)) from None
    raise ValueError(f"{v!r} is not a TPU; give a name like v6e-16 or {{family: v6e, topology: 4x4}}")


class SliceGroup(_Model):
    """Identical TPU slices, one GKE node pool each."""

    name: str = Field(description="Group name: node label, pool name part, and what workloads reference.")
    tpu: tpu_catalog.TpuSlice = Field(description="TPU name (v6e-16) or {family, topology, machineType}.")
    count: int = Field(default=1, ge=1, le=MAX_TPU_POOLS, description="Number of slices (node pools) in the group.")
    spot: bool = Field(default=False, description="Spot capacity.")
    flex_start: bool = Field(default=False, description="Flex-start (DWS) capacity: pools start at 0 nodes.")
    reservation: Optional[str] = Field(default=None, description="Name of a specific reservation to consume.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 20)

    @field_validator("tpu", mode="before")
    @classmethod
    def _tpu(cls, v: Any) -> tpu_catalog.TpuSlice:
        return _parse_tpu(v)

    @field_validator("reservation")
    @classmethod
    def _reservation(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not re.fullmatch(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", v):
            raise ValueError(f"{v!r} is not a reservation name (lowercase letters, digits, '-')")
        return v

    @model_validator(mode="after")
    def _one_capacity(self) -> "SliceGroup":
        chosen = [k for k, on in (("spot", self.spot), ("flexStart", self.flex_start), ("reservation", self.reservation)) if on]
        if len(chosen) > 1:
            raise ValueError(
                f"conflicting capacity options {' and '.join(chosen)}; set at most one of spot, flexStart, "
                "reservation (none means on-demand)"
            )
        return self

    @property
    def capacity(self) -> Capacity:
        if self.spot:
            return Capacity.SPOT
        if self.flex_start:
            return Capacity.FLEX_START
        if self.reservation:
            return Capacity.RESERVATION
        return Capacity.ON_DEMAND


# --- bucket --------------------------------------------------------------------------------


class BucketConfig(_Model):
    name: Optional[str] = Field(default=None, description="Scratch bucket name; default <project>-<stack>-pathways.")
    artifacts_name: Optional[str] = Field(default=None, description="Artifacts bucket (profiles, HLO dumps); default <name>-artifacts.")
    cache_prefix: str = Field(default="pathways-cache", description="The one --gcs_scratch_location prefix all workloads share.")
    artifacts_prefix: str = Field(default="artifacts", description="Prefix for profiles and HLO dumps (own TTL).")
    artifacts_ttl_days: int = Field(default=30, ge=1, le=36500, description="Days before objects under artifactsPrefix are deleted.")
    soft_delete_days: int = Field(default=7, ge=7, le=90, description="Soft-delete retention (GCS allows 7-90 days).")

    @field_validator("name", "artifacts_name")
    @classmethod
    def _name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else check_bucket_name(v)

    @field_validator("cache_prefix", "artifacts_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not re.fullmatch(r"^[a-z0-9][-a-z0-9_]*(/[a-z0-9][-a-z0-9_]*)*$", v):
            raise ValueError(f"{v!r} is not a prefix; use path segments of lowercase letters, digits, '-', '_' without leading or trailing '/'")
        return v

    @model_validator(mode="after")
    def _apart(self) -> "BucketConfig":
        a, c = self.artifacts_prefix + "/", self.cache_prefix + "/"
        if a.startswith(c) or c.startswith(a):
            raise ValueError(
                f"artifactsPrefix {self.artifacts_prefix!r} and cachePrefix {self.cache_prefix!r} overlap; "
                "the artifacts TTL would delete the compilation cache: use separate prefixes"
            )
        return self


def check_bucket_name(v: str) -> str:
    """GCS bucket naming rules (names with dots need domain verification, so refuse them)."""
    if not _BUCKET_NAME.fullmatch(v) or "." in v or v.startswith("goog") or "google" in v or "g00gle" in v:
        raise ValueError(
            f"{v!r} is not a valid bucket name; use 3-63 lowercase letters, digits, '-' or '_', "
            "starting and ending with a letter or digit, no dots, not starting with 'goog' nor containing 'google'"
        )
    return v


# --- workloads -----------------------------------------------------------------------------

# What Pathways needs on its scratch bucket (PLATFORM-FACTS §1); buckets.update: it attaches lifecycle rules.
SCRATCH_PERMISSIONS = (
    "storage.buckets.get",
    "storage.buckets.update",
    "storage.objects.create",
    "storage.objects.get",
    "storage.objects.list",
)
PATHWAYS_REGISTRY = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways"
# Env the user container gets from the stack; a user value would duplicate or contradict it.
RESERVED_ENV = frozenset({
    "PATHWAYS_HEAD", "JAX_PLATFORMS", "JAX_BACKEND_TARGET", "DATA_LOADER_WORKERS", "ENABLE_PATHWAYS_PERSISTENCE",
    "PATHWAYS_PROFILING_AUTH_TOKEN", "PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS", "PROFILER_PORT", "PROFILE_TRACE_DIR",
})
_SIDECAR_TAG = re.compile(r":[0-9]{8}-python_([0-9.]+)-jax_([0-9.]+)(@sha256:[0-9a-f]{64})?\Z")
# An image reference as the registry API writes it (distribution/reference grammar, simplified):
# [host[:port]/]path[:tag][@sha256:<64 hex>], path components lowercase.
_IMAGE_REF = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


def is_pinned(image: str) -> bool:
    """A well-formed reference with a full @sha256 digest, or an explicit tag that is not `latest`."""
    if not _IMAGE_REF.fullmatch(image):
        return False
    if "@" in image:
        return True  # the grammar admits only @sha256:<64 hex>
    tag = image_tag(image)
    return tag is not None and tag != "latest"


def check_pinned_image(image: str) -> str:
    if len(image) > 512 or not _IMAGE_REF.fullmatch(image):
        raise ValueError(f"{image[:80]!r} is not an image reference; use [registry/]path:tag or path@sha256:<64 hex digits>")
    if not is_pinned(image):
        raise ValueError(f"{image!r} is not pinned; give an explicit tag (not latest) or a @sha256 digest")
    return image


class Profiling(_Model):
    port: int = Field(default=9999, ge=1024, le=65535, description="jax.profiler.start_server port on the user container.")

    @field_validator("port")
    @classmethod
    def _free(cls, v: int) -> int:
        # The head pod is hostNetwork: the port is the node's, beside the RM, the proxy and the kubelet.
        if v in HEAD_NODE_PORTS:
            raise ValueError(f"{v} is taken on the head node by {HEAD_NODE_PORTS[v]}; use another port, e.g. 9999")
        return v


class ColocatedPython(_Model):
    image: str = Field(description="Sidecar image built from pathways-colocated-python/sidecar:<date>-python_<X>-jax_<Y>.")
    cpu: str = Field(default="4", description="Sidecar CPU request (taken from the worker's share of the TPU VM).")
    memory: str = Field(default="16Gi", description="Sidecar memory (request = limit; taken from the worker's share).")
    shm_size: str = Field(default="8Gi", description=(
        "Size of the memory-backed directory the worker and sidecar share for large transfers; "
        "it counts against the pod's memory."
    ))

    @field_validator("cpu", "memory", "shm_size", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        quantity.parse(v)
        return str(v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        check_pinned_image(v)
        if not _SIDECAR_TAG.search(v):
            raise ValueError(f"{v!r} has no <date>-python_<X>-jax_<Y> tag; the sidecar's JAX must be known to match the client's")
        return v

    @property
    def jax_version(self) -> str:
        m = _SIDECAR_TAG.search(self.image)
        assert m is not None  # the validator refused any image without the tag
        return m.group(2)


class Elastic(_Model):
    # --num_elastic_slices is how many slices the job may lose, not the total (xpk help, PathwaysJob
    # docs; Google's elastic MaxText example runs 1 of 3).
    max_missing_slices: int = Field(default=1, ge=1, le=MAX_TPU_POOLS, description="Slices the job may lose and keep running (--num_elastic_slices); below the workload's slices.")



class Workload(_Model):
    """One Pathways JobSet: batch (runs the user's program to completion) or interactive (headless)."""

    name: str = Field(description="JobSet name (DNS-1123 label).")
    mode: Literal["batch", "interactive"] = Field(default="batch", description="batch: user container on the head; interactive: RM + proxy only.")
    state: Literal["running", "suspended", "finished"] = Field(default="running", description=(
        "running; suspended (JobSet spec.suspend: pods stop, the JobSet stays; resuming restarts from the last "
        "checkpoint); finished (batch only: the stack stops managing the run, so nothing re-runs it)."
    ))
    slice_group: Optional[str] = Field(default=None, description="Slice group it runs on; default: the only group.")
    slices: Optional[int] = Field(default=None, ge=1, le=MAX_TPU_POOLS, description="Slices used; default: all slices of the group.")
    image: Optional[str] = Field(default=None, description="User program image (batch only).")
    command: list[str] = Field(default_factory=list, description="User program command (batch only).")
    args: list[str] = Field(default_factory=list, description="User program args (batch only).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra env for the user container.")
    cpu: str = Field(default=DEFAULT_USER_RESOURCES[0], description="User container CPU (request = limit).")
    memory: str = Field(default=DEFAULT_USER_RESOURCES[1], description="User container memory (request = limit).")
    data_loader_workers: int = Field(default=4, ge=0, le=1024, description="Data-loader worker count, passed as DATA_LOADER_WORKERS (never os.cpu_count()).")
    shm_size: str = Field(default="16Gi", description="Size of the memory-backed /dev/shm.")
    persistence: bool = Field(default=False, description="ENABLE_PATHWAYS_PERSISTENCE=1 (Orbax through pathwaysutils).")
    profiling: Optional["Profiling"] = Field(default=None, description="Profiler server and trace upload.")
    xla_flags: list[str] = Field(default_factory=list, description="XLA flags for the IFRT proxy (each --xla_*).")
    hlo_dump: bool = Field(default=False, description="Dump HLO to gs://<artifacts>/<prefix>/<workload>/hlo/ through the proxy.")
    colocated_python: Optional["ColocatedPython"] = Field(default=None, description="Colocated-Python sidecar on the workers.")
    elastic: Optional["Elastic"] = Field(default=None, description="Elastic slices: the job survives losing slices.")
    priority: Optional[Literal["training", "interactive", "experiment"]] = Field(default=None, description=(
        "PriorityClass pathways-<priority> of its pods; default training for batch, interactive for interactive."
    ))
    max_restarts: int = Field(default=0, ge=0, le=MAX_RESTARTS_BOUND, description="JobSet failurePolicy.maxRestarts.")
    worker_restarts_per_host: Optional[int] = Field(default=None, ge=1, le=UNLIMITED_RESTARTS_PER_HOST, description=(
        "Worker restarts allowed per TPU host (worker Job backoffLimit = hosts x this). Default: 4 for batch "
        "(a crash loop ends the run), unlimited for interactive (the endpoint keeps serving)."
    ))
    termination_grace_period_seconds: int = Field(default=30, ge=0, le=86400, description="Pod termination grace period (at most a day).")
    # Off by default: a JobSet deleted by its TTL is gone from the cluster but not from the stack, so
    # the next `pulumi up --refresh` would create it again and re-run the job.
    ttl_seconds_after_finished: Optional[int] = Field(default=None, ge=0, le=INT32_MAX, description="Delete a finished batch JobSet after this long.")
    server_image: Optional[str] = Field(default=None, description="Override of the RM/worker image (default pathways/server:<pathwaysVersion>).")
    proxy_image: Optional[str] = Field(default=None, description="Override of the IFRT proxy image (default pathways/proxy_server:<pathwaysVersion>).")
    subdomain: Optional[str] = Field(default=None, description="JobSet network.subdomain (default: the name), to keep the coordinator label <= 63.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("cpu", "memory", "shm_size", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        quantity.parse(v)
        return str(v)

    @field_validator("env", mode="before")
    @classmethod
    def _env_text(cls, v: Any) -> Any:
        # YAML reads `STEPS: 100` or `DEBUG: true` as numbers and booleans; Kubernetes wants text.
        if isinstance(v, dict):
            return {k: (str(x).lower() if isinstance(x, bool) else str(x) if isinstance(x, (int, float)) else x) for k, x in v.items()}
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not re.fullmatch(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$", name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if name in RESERVED_ENV:
                raise ValueError(f"{name} is set by the stack (reserved: {', '.join(sorted(RESERVED_ENV))}); use the workload's own keys instead")
        return v

    @field_validator("xla_flags")
    @classmethod
    def _xla_flags(cls, v: list[str]) -> list[str]:
        for flag in v:
            if not re.fullmatch(r"^--xla_[a-z0-9_]+(=.*)?$", flag):
                raise ValueError(f"{flag!r} is not an XLA flag; each entry must look like --xla_<name>=<value>")
        return v

    @field_validator("subdomain")
    @classmethod
    def _subdomain(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 63)

    @field_validator("server_image", "proxy_image")
    @classmethod
    def _pinned(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            check_pinned_image(v)
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            check_pinned_image(v)
        return v

    @property
    def effective_priority(self) -> str:
        return self.priority or ("training" if self.mode == "batch" else "interactive")

    @property
    def shm_bytes(self) -> Decimal:
        return quantity.parse(self.shm_size)

    def head_containers(self) -> list[tuple[str, str, str]]:
        """(container, cpu, memory) of the head pod."""
        out = [("resource manager", *RESOURCE_MANAGER_RESOURCES), ("IFRT proxy", *PROXY_RESOURCES)]
        if self.mode == "batch":
            out.append(("user container", self.cpu, self.memory))
        return out


# --- the stack -----------------------------------------------------------------------------


class KubernetesConfig(_Model):
    namespace: str = Field(default="pathways", description="Namespace of the Pathways JobSets.")
    jobset_version: str = Field(default="0.12.0", description="JobSet Helm chart version (controller and CRD).")

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("jobset_version")
    @classmethod
    def _version(cls, v: str) -> str:
        if not re.fullmatch(r"^[0-9]+\.[0-9]+\.[0-9]+$", v):
            raise ValueError(f"{v!r} is not a chart version (e.g. 0.12.0)")
        return v



class StackConfig(_Model):
    stack: str = Field(description="Stack name (set by the loader, not a config key).")
    secret_keys: frozenset[str] = Field(default=frozenset(), description="Config keys given as secrets (set by the loader, not a config key).")
    project: ProjectId = Field(description="gcp:project")
    region: Region = Field(description="gcp:region")
    zone: Zone = Field(description="gcp:zone; every node of the stack lives here.")
    protected: bool = Field(default=False, description="protect + deletion protection on cluster and bucket.")
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    head_pool: HeadPoolConfig = Field(default_factory=HeadPoolConfig)
    slices: list[SliceGroup] = Field(min_length=1, max_length=100, description="Slice groups.")
    bucket: BucketConfig = Field(default_factory=BucketConfig)
    pathways_version: Optional[PathwaysVersion] = Field(default=None, description="Pathways image tag jax-<version>, equal to the program's JAX.")
    kubernetes: "KubernetesConfig" = Field(default_factory=lambda: KubernetesConfig())
    workloads: list[Workload] = Field(default_factory=list, max_length=MAX_WORKLOADS)
    allow_disruption: list[str] = Field(default_factory=list, max_length=200, description=(
        "Resources (names as `diff` prints them; `*` matches any run of characters) this change may replace, "
        "delete or recreate in a protected stack. Review it in the PR; empty it after the change lands."
    ))

    @field_validator("allow_disruption")
    @classmethod
    def _allowances(cls, v: list[str]) -> list[str]:
        for entry in v:
            if not re.fullmatch(r"[a-z0-9*][-a-z0-9*]{0,100}", entry):
                raise ValueError(f"{entry[:60]!r} is not a resource name as `diff` prints it (e.g. slices-train-0, workload-pretrain)")
        return v

    @property
    def active_workloads(self) -> list[Workload]:
        """The workloads the stack runs a JobSet for (finished ones are left alone)."""
        return [w for w in self.workloads if w.state != "finished"]

    # Derived names: deterministic, so a re-run never shows a diff.
    @property
    def stack_slug(self) -> str:
        """The stack name as GCP names accept it (Pulumi stack names may hold capitals, '_' and '.')."""
        return re.sub(r"[^a-z0-9-]+", "-", self.stack.lower()).strip("-") or "stack"

    @property
    def cluster_name(self) -> str:
        return self.cluster.name or f"pathways-{self.stack_slug}"

    @property
    def bucket_name(self) -> str:
        return self.bucket.name or f"{self.project}-{self.stack_slug}-pathways"[:63].rstrip("-_")

    @property
    def artifacts_bucket_name(self) -> str:
        return self.bucket.artifacts_name or f"{self.bucket_name[:53].rstrip('-_')}-artifacts"

    @property
    def artifacts_location(self) -> str:
        return f"gs://{self.artifacts_bucket_name}/{self.bucket.artifacts_prefix}"

    @property
    def required_gke_version(self) -> str:
        """The highest minimum GKE version among the stack's TPU families: a floor to check
        cluster.minMasterVersion against, never a version to request (GKE stops offering old ones)."""
        return max((g.tpu.min_gke_version for g in self.slices), key=gke_version_key)

    @property
    def cache_location(self) -> str:
        return f"gs://{self.bucket_name}/{self.bucket.cache_prefix}"

    def service_account_id(self, purpose: str) -> str:
        """6-30 character SA ID, unique per stack: <cluster name>-<purpose>."""
        return f"{self.cluster_name[: 29 - len(purpose)].rstrip('-')}-{purpose}"

    @property
    def scratch_role_id(self) -> str:
        return "pathwaysScratch_" + re.sub(r"[^a-zA-Z0-9_]", "_", self.stack)[:48]

    @property
    def deletion_protection(self) -> bool:
        return True if self.cluster.deletion_protection is None else self.cluster.deletion_protection

    @property
    def head_nodes(self) -> int:
        return self.head_pool.node_count or max(1, len(self.active_workloads))

    def server_image(self, w: Workload) -> str:
        return w.server_image or f"{PATHWAYS_REGISTRY}/server:{self.pathways_version}"

    def proxy_image(self, w: Workload) -> str:
        """The IFRT proxy from the same release as the server: given, derived from a tagged server
        override (.../server:T -> .../proxy_server:T, as pathwaysutils and xpk derive it), or the default."""
        if w.proxy_image:
            return w.proxy_image
        if w.server_image:
            derived = derived_proxy_image(w.server_image)
            if derived:
                return derived
        return f"{PATHWAYS_REGISTRY}/proxy_server:{self.pathways_version}"

    @property
    def cloud_nat(self) -> bool:
        if self.network.cloud_nat is not None:
            return self.network.cloud_nat
        return self.cluster.private_nodes and self.network.create

    @property
    def profiling_ports(self) -> tuple[int, ...]:
        return tuple(sorted({w.profiling.port for w in self.workloads if w.profiling}))

    @property
    def secret_env(self) -> bool:
        """Workload env values came from secret config: they go to a Kubernetes Secret, never the JobSet."""
        return f"{PROJECT_NAMESPACE}:workloads" in self.secret_keys

    def worker_backoff_limit(self, w: Workload) -> int:
        per_host = w.worker_restarts_per_host or (
            DEFAULT_BATCH_RESTARTS_PER_HOST if w.mode == "batch" else UNLIMITED_RESTARTS_PER_HOST
        )
        return min(self.workload_group(w).tpu.hosts * per_host, INT32_MAX)

    def worker_resources(self, w: Workload) -> "WorkerResources":
        return worker_resources(self.workload_group(w).tpu.machine_type, w.colocated_python)

    @property
    def jax_version(self) -> Optional[str]:
        return self.pathways_version[len("jax-"):] if self.pathways_version else None

    def slice_group(self, name: str) -> SliceGroup:
        return next(g for g in self.slices if g.name == name)

    def workload_group(self, w: Workload) -> SliceGroup:
        return self.slice_group(w.slice_group or self.slices[0].name)

    def workload_slices(self, w: Workload) -> int:
        return w.slices or self.workload_group(w).count


def gke_version_key(version: str) -> tuple[int, ...]:
    """'1.35' -> (1, 35); '1.35.1' -> (1, 35, 1); '1.35.1-gke.1234000' -> (1, 35, 1, 1234000)."""
    m = _GKE_VERSION.fullmatch(version)
    if not m:
        raise ValueError(f"{version!r} is not a GKE version")
    return tuple(int(g) for g in (m.group(1), m.group(2), m.group(4), m.group(6)) if g is not None)


def image_tag(image: str) -> Optional[str]:
    """The tag of an image reference (also in name:tag@sha256:...), or None (digest only / no tag)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def derived_proxy_image(server_image: str) -> Optional[str]:
    """.../server:T -> .../proxy_server:T; None where no same-release proxy can be named (a digest
    names one image, and a path not ending in /server has no known proxy beside it)."""
    if "@" in server_image:
        return None
    name, _, tag = server_image.rpartition(":")
    if not tag or "/" in tag or not name.endswith("/server"):
        return None
    return f"{name[: -len('server')]}proxy_server:{tag}"


@dataclass(frozen=True)
class WorkerResources:
    """Requests of a worker pod's containers on one TPU VM (Burstable QoS; the TPU chips are limits)."""

    vm_cpu: Decimal  # allocatable
    vm_memory_gib: Decimal
    worker_cpu: int
    worker_memory_gib: int
    sidecar_cpu: Decimal = Decimal(0)
    sidecar_memory_gib: Decimal = Decimal(0)
    shm_gib: Decimal = Decimal(0)


def worker_resources(machine_type: str, sidecar: Optional["ColocatedPython"]) -> WorkerResources:
    """What the worker requests: the TPU VM's allocatable (GKE's reservations and DaemonSets taken
    off, machines.MachineShape), less the colocated sidecar's CPU and memory and the shared-memory
    directory, which is memory-backed and so counts against the pod's memory."""
    vm = machines.tpu_vm_shape(machine_type)
    cpu, mem = vm.allocatable_cpu, vm.allocatable_memory_gib
    if sidecar is None:
        return WorkerResources(cpu, mem, int(cpu), int(mem))
    s_cpu = quantity.parse(sidecar.cpu)
    s_mem = quantity.parse(sidecar.memory) / quantity.GIB
    shm = quantity.parse(sidecar.shm_size) / quantity.GIB
    return WorkerResources(cpu, mem, int(cpu - s_cpu), int(mem - s_mem - shm), s_cpu, s_mem, shm)


def meets_gke_floor(version: str, floor: str) -> bool:
    """Whether GKE would run at least `floor` when asked for `version`.

    A minor (1.34) or patch (1.34.1) without a GKE build is fuzzy: GKE resolves it to a build it
    offers today, so only the components given are compared (1.34 meets 1.34.0-gke.2201000)."""
    v = gke_version_key(version)
    return v >= gke_version_key(floor)[: len(v)]


def head_pod_demand(w: Optional[Workload]) -> tuple[Decimal, Decimal, str]:
    """(vCPU, GiB, breakdown) of a workload's head pod; None means a default batch workload."""
    containers = (w or Workload(name="default", image="default:unused")).head_containers()
    cpu = sum((quantity.parse(c) for _, c, _ in containers), Decimal(0))
    mem = sum((quantity.parse(m) for _, _, m in containers), Decimal(0)) / quantity.GIB
    parts = " + ".join(f"{n} {c}/{m}" for n, c, m in containers)
    return cpu, mem, parts


MAX_LABEL_VALUE = 63


def coordinator_label(jobset: str, replicated_job: str, job_index: int, pod_index: int, subdomain: Optional[str]) -> str:
    """The label JobSet puts on every pod: <jobset>-<replicatedJob>-<job>-<pod>.<subdomain (default: jobset)>."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}.{subdomain or jobset}"


def coordinator_address(name: str, subdomain: Optional[str]) -> str:
    """The coordinator label of a Pathways JobSet (head job, first pod)."""
    return coordinator_label(name, "pathways-head", 0, 0, subdomain)


def _workload_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    problems = []
    coordinator = coordinator_address(w.name, w.subdomain)
    if len(coordinator) > MAX_LABEL_VALUE:
        room = MAX_LABEL_VALUE - len(f"{w.name}-pathways-head-0-0.")  # what a subdomain may take
        hint = (
            f"use a name of at most 22 characters, or set workloads[{i}].subdomain to at most {room} characters"
            if w.subdomain is None and room > 0
            else "use a shorter name or subdomain"
        )
        key = ("workloads", i, "subdomain" if w.subdomain else "name")
        problems.append(Problem(config_key(key), (
            f"the coordinator label {coordinator!r} would be {len(coordinator)} characters, over Kubernetes' "
            f"{MAX_LABEL_VALUE} for a label value (JobSet rejects it); {hint}"
        )))
    if w.mode == "batch":
        cpu_limit = quantity.parse(w.cpu)
        if w.data_loader_workers > cpu_limit:
            problems.append(Problem(config_key(("workloads", i, "dataLoaderWorkers")), (
                f"{w.data_loader_workers} exceeds the user container's CPU limit of {w.cpu}; use at most "
                f"{int(cpu_limit)} or raise workloads[{i}].cpu"
            )))
        if w.shm_bytes > quantity.parse(w.memory):
            problems.append(Problem(config_key(("workloads", i, "shmSize")), (
                f"{w.shm_size} exceeds the user container's memory limit {w.memory} (a memory-backed /dev/shm counts against it)"
            )))
    if w.elastic and w.elastic.max_missing_slices >= cfg.workload_slices(w):
        n = cfg.workload_slices(w)
        valid = f"use 1..{n - 1}" if n > 1 else "elastic needs at least 2 slices; raise workloads[{i}].slices or remove elastic"
        problems.append(Problem(config_key(("workloads", i, "elastic", "maxMissingSlices")), (
            f"{w.elastic.max_missing_slices} is not below the workload's {n} slice(s) "
            f"(it is how many slices the job may lose and keep running); {valid.format(i=i)}"
        )))
    if w.colocated_python:
        r = cfg.worker_resources(w)
        sc = w.colocated_python
        if r.sidecar_cpu * 2 > r.vm_cpu or (r.sidecar_memory_gib + r.shm_gib) * 2 > r.vm_memory_gib:
            machine = cfg.workload_group(w).tpu.machine_type
            problems.append(Problem(config_key(("workloads", i, "colocatedPython")), (
                f"cpu {sc.cpu}, memory {sc.memory} + shmSize {sc.shm_size} leave the Pathways worker less than half of a "
                f"{machine} ({r.vm_cpu:.0f} vCPU, {r.vm_memory_gib:.0f} GiB allocatable); use at most "
                f"{int(r.vm_cpu / 2)} CPU and {int(r.vm_memory_gib / 2)}Gi for memory + shmSize together"
            )))
    problems += _image_checks(cfg, i, w)
    if w.colocated_python and cfg.jax_version and w.colocated_python.jax_version != cfg.jax_version:
        problems.append(Problem(config_key(("workloads", i, "colocatedPython", "image")), (
            f"the sidecar is built for JAX {w.colocated_python.jax_version} but pathwaysVersion is {cfg.pathways_version}; "
            f"use a sidecar tag ending in -jax_{cfg.jax_version}"
        )))
    if w.mode == "interactive" and w.state == "finished":
        problems.append(Problem(config_key(("workloads", i, "state")), (
            "finished is for batch runs; an interactive workload is suspended (state: suspended) or removed"
        )))
    if w.mode == "interactive" and (w.profiling or w.persistence):
        problems.append(Problem(config_key(("workloads", i, "mode")), "profiling and persistence configure the user container, which interactive workloads do not have"))
    return problems


def _image_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    """The IFRT proxy must come from the same Pathways release as the server (RM and workers)."""
    key = config_key(("workloads", i, "proxyImage"))
    if w.server_image and not w.proxy_image and derived_proxy_image(w.server_image) is None:
        return [Problem(key, (
            f"required when serverImage is {w.server_image!r}: no same-release proxy_server image can be derived "
            "from a digest or a path not ending in /server; give the proxy_server image of the same release"
        ))]
    server, proxy = cfg.server_image(w), cfg.proxy_image(w)
    s_tag, p_tag = image_tag(server), image_tag(proxy)
    if s_tag != p_tag and (s_tag or p_tag) and (w.server_image or w.proxy_image):
        if s_tag and p_tag:
            why = f"its tag {p_tag} differs from the server's {s_tag}"
        else:
            why = "one of the two is given by digest only, so their release cannot be compared; give both by tag (name:tag or name:tag@sha256:...)"
        return [Problem(key, f"{proxy!r} is not from the server's release ({server}): {why}; the proxy and server must match")]
    return []


_SERVICE_ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")


def _derived_name_checks(cfg: "StackConfig") -> list[Problem]:
    """Names derived from the stack and project must still be names GCP accepts."""
    problems = []
    checks = [
        (("cluster", "name"), cfg.cluster_name, lambda v: _dns_label(v, 40)),
        (("bucket", "name"), cfg.bucket_name, check_bucket_name),
        (("bucket", "artifactsName"), cfg.artifacts_bucket_name, check_bucket_name),
    ]
    for key, value, check in checks:
        try:
            check(value)
        except ValueError as e:
            problems.append(Problem(config_key(key), f"derived {e}; set it explicitly"))
    for purpose in ("sys", "nodes"):
        sa = cfg.service_account_id(purpose)
        if not _SERVICE_ACCOUNT_ID.fullmatch(sa):
            problems.append(Problem(config_key(("cluster", "name")), (
                f"the node service account ID {sa!r} derived from it is not 6-30 lowercase letters, digits or '-'; "
                "use a cluster name of at least 3 characters"
            )))
    return problems


def _head_pool_checks(cfg: "StackConfig") -> list[Problem]:
    problems = []
    count = cfg.head_pool.node_count
    active = len(cfg.active_workloads)
    if count is not None and count < active:
        # One head pod per node (exclusive placement by hostname): the rest would stay Pending.
        problems.append(Problem(config_key(("headPool", "nodeCount")), (
            f"{count} node(s) cannot hold the head pods of {active} workloads (one head pod per node); "
            f"use at least {active}, or remove it (default: one node per workload)"
        )))
    key = config_key(("headPool", "machineType"))
    try:
        machine = machines.shape(cfg.head_pool.machine_type)
    except machines.MachineError as e:
        return [*problems, Problem(key, str(e))]
    for w in cfg.workloads or [None]:
        cpu, mem, parts = head_pod_demand(w)
        if not machines.fits(machine, cpu, mem):
            who = f"workload {w.name!r}" if w else "a default batch workload"
            problems.append(Problem(key, (
                f"{machine.name} ({machine.allocatable_cpu:.2f} vCPU, {machine.allocatable_memory_gib:.1f} GiB allocatable) "
                f"cannot hold the head pod of {who} ({cpu:g} vCPU, {mem:.1f} GiB: {parts}); "
                f"use {machines.smallest_fitting(cpu, mem)} or larger"
            )))
    return problems


# --- loading and the error contract ----------------------------------------------------------


def config_key(loc: tuple[Any, ...]) -> str:
    """('slices', 0, 'tpu') -> pathways:slices[0].tpu; ('zone',) -> gcp:zone."""
    if not loc:
        return f"{PROJECT_NAMESPACE}:"
    head, *rest = loc
    out = f"gcp:{head}" if head in GCP_KEYS else f"{PROJECT_NAMESPACE}:{head}"
    for part in rest:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _unwrap(annotation: Any) -> Any:
    """The model class inside Optional[...] / list[...] / dict[str, ...], if any."""
    origin = get_origin(annotation)
    if origin in (list, Union, dict) or str(origin) == "types.UnionType":
        for arg in get_args(annotation):
            found = _unwrap(arg)
            if isinstance(found, type) and issubclass(found, BaseModel):
                return found
    return annotation


def _model_at(loc: tuple[Any, ...]) -> Optional[type[BaseModel]]:
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def key_paths(model: Optional[type[BaseModel]] = None, prefix: str = "") -> list[str]:
    """Every config key the model accepts, e.g. pathways:slices[i].tpu (for the README reference)."""
    model = model or StackConfig
    out = []
    for name, f in model.model_fields.items():
        alias = f.alias or name
        if model is StackConfig:
            if alias in ("stack", "secretKeys"):
                continue
            key = f"gcp:{alias}" if alias in GCP_KEYS else f"{PROJECT_NAMESPACE}:{alias}"
        else:
            key = f"{prefix}.{alias}"
        inner = _unwrap(f.annotation)
        is_list = get_origin(f.annotation) is list
        if isinstance(inner, type) and issubclass(inner, BaseModel) and inner is not AuthorizedNetwork:
            out += key_paths(inner, key + ("[i]" if is_list else ""))
        else:
            out.append(key)
    return out


def valid_keys(model: type[BaseModel]) -> list[str]:
    keys = [f.alias or n for n, f in model.model_fields.items()]
    if model is StackConfig:  # gcp:* keys and the loader's stack name are not pathways:* keys
        keys = [k for k in keys if k not in (*GCP_KEYS, "stack", "secretKeys")]
    return keys


def _problem(err: Mapping[str, Any]) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        valid = f"; valid keys: {', '.join(valid_keys(parent))}" if parent else ""
        if len(loc) == 1 and any(c in str(loc[0]) for c in ".["):
            valid += f"; to set a nested key use `pulumi config set --path 'pathways:{loc[0]}' <value>`"
        return Problem(config_key(loc), f"unknown key{valid}")
    if kind == "missing":
        return Problem(config_key(loc), "required but not set")
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        return Problem(config_key(loc), msg[len("Value error, "):])
    return Problem(config_key(loc), f"{value!r} is not valid: {msg[0].lower()}{msg[1:]}")


def _size_checks(cfg: StackConfig) -> list[Problem]:
    """What GKE (and this project's planning time) can hold."""
    problems = []
    pools = sum(g.count for g in cfg.slices)
    if pools > MAX_TPU_POOLS:
        problems.append(Problem(config_key(("slices",)), (
            f"{pools} TPU slices in all, one node pool each; at most {MAX_TPU_POOLS} per stack: lower the counts or split the stack"
        )))
    nodes = cfg.cluster.system_pool.max_nodes + cfg.head_nodes + sum(g.count * g.tpu.hosts for g in cfg.slices)
    if nodes > MAX_NODES_PER_CLUSTER:
        problems.append(Problem(config_key(("slices",)), (
            f"{nodes} nodes in all (TPU hosts, head and system pools), over GKE's {MAX_NODES_PER_CLUSTER} per "
            "Standard cluster; lower the counts or split the stack"
        )))
    return problems


def _cross_checks(cfg: StackConfig) -> list[Problem]:
    """Rules that span keys: references, uniqueness, placement."""
    problems: list[Problem] = _size_checks(cfg)
    if not cfg.zone.startswith(cfg.region + "-"):
        problems.append(
            Problem("gcp:zone", f"{cfg.zone} is not in region {cfg.region}; use a zone {cfg.region}-<letter> or change gcp:region")
        )
    group_names: dict[str, int] = {}
    for i, g in enumerate(cfg.slices):
        if g.name in group_names:
            problems.append(Problem(config_key(("slices", i, "name")), f"{g.name!r} is already used by slices[{group_names[g.name]}]; slice group names must be unique"))
        group_names.setdefault(g.name, i)
    workload_names: dict[str, int] = {}
    for i, w in enumerate(cfg.workloads):
        if w.name in workload_names:
            problems.append(Problem(config_key(("workloads", i, "name")), f"{w.name!r} is already used by workloads[{workload_names[w.name]}]; workload names must be unique"))
        workload_names.setdefault(w.name, i)
        if w.slice_group is None and len(cfg.slices) > 1:
            problems.append(Problem(config_key(("workloads", i, "sliceGroup")), f"required when there are several slice groups; valid: {', '.join(group_names)}"))
            continue
        if w.slice_group is not None and w.slice_group not in group_names:
            problems.append(Problem(config_key(("workloads", i, "sliceGroup")), f"{w.slice_group!r} is not a slice group; valid: {', '.join(group_names)}"))
            continue
        group = cfg.workload_group(w)
        if w.slices is not None and w.slices > group.count:
            problems.append(Problem(config_key(("workloads", i, "slices")), f"{w.slices} exceeds the {group.count} slice(s) of group {group.name!r}; use 1..{group.count} or raise slices[{group_names[group.name]}].count"))
        problems += _workload_checks(cfg, i, w)
        if w.mode == "batch" and not w.image:
            problems.append(Problem(config_key(("workloads", i, "image")), "required for a batch workload (the user program's image)"))
        if w.mode == "interactive" and (w.image or w.command or w.args):
            problems.append(Problem(config_key(("workloads", i, "mode")), "interactive workloads run no user container; remove image, command and args or use mode: batch"))
    if cfg.workloads and cfg.pathways_version is None:
        problems.append(Problem(config_key(("pathwaysVersion",)), "required when workloads are set; use the jax-<version> tag matching your program's JAX, e.g. jax-0.7.2"))
    problems += _head_pool_checks(cfg)
    problems += _derived_name_checks(cfg)
    if cfg.cluster.min_master_version and not meets_gke_floor(cfg.cluster.min_master_version, cfg.required_gke_version):
        needs = [f"{g.tpu.family} needs {g.tpu.min_gke_version}" for g in cfg.slices]
        problems.append(Problem(config_key(("cluster", "minMasterVersion")), (
            f"{cfg.cluster.min_master_version} is below what the slice groups need ({', '.join(sorted(set(needs)))}); "
            f"use {cfg.required_gke_version} or later, or remove it"
        )))
    if cfg.artifacts_bucket_name == cfg.bucket_name:
        problems.append(Problem(config_key(("bucket", "artifactsName")), "must differ from bucket.name (its lifecycle rules would fight Pathways')"))
    if not cfg.cluster.private_nodes and not cfg.cluster.public_endpoint:
        problems.append(Problem(config_key(("cluster", "privateNodes")), (
            "false needs cluster.publicEndpoint: true too (GKE closes the public IP endpoint only for private "
            "nodes); keep privateNodes: true (the default), or open both explicitly"
        )))
    if cfg.protected and cfg.cluster.deletion_protection is False:
        problems.append(Problem(config_key(("cluster", "deletionProtection")), "false conflicts with protected: true; remove it or set protected: false"))
    return problems


# Secret config is supported where the stack can keep it secret end to end: workload env values
# (they become a Kubernetes Secret per workload). Pulumi marks a whole top-level key secret when any
# value under it is (`config set --secret --path`), so the key is what the program can see.
SECRET_CAPABLE_KEYS = frozenset({f"{PROJECT_NAMESPACE}:workloads"})


def _secret_key_problems(secret_keys: frozenset[str]) -> list[Problem]:
    return [
        Problem(key, (
            "is set as a secret, but only workload env values can be kept secret (they go to a Kubernetes Secret); "
            "this value would reach resources in plaintext: set it without --secret, or move the secret into "
            "`pulumi config set --secret --path 'pathways:workloads[i].env.NAME'`"
        ))
        for key in sorted(secret_keys - SECRET_CAPABLE_KEYS)
    ]


def load(raw: dict[str, Any], stack: str, secret_keys: frozenset[str] = frozenset()) -> StackConfig:
    """Validate raw config values (keys without namespace) into a StackConfig, or raise ConfigError."""
    secret_problems = _secret_key_problems(frozenset(secret_keys))
    if secret_problems:
        raise ConfigError(secret_problems)
    try:
        cfg = StackConfig.model_validate({**raw, "stack": stack, "secretKeys": frozenset(secret_keys)})
    except ValidationError as e:
        raise ConfigError([_problem(err) for err in e.errors()]) from None
    problems = _cross_checks(cfg)
    if problems:
        raise ConfigError(problems)
    return cfg


Workload.model_rebuild()
StackConfig.model_rebuild()
