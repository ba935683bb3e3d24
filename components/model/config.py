"""The one typed model of a stack's configuration (Pulumi-free).

Stack config keys live in the project namespace (``pathways:<key>``) plus the provider's own
``gcp:project``, ``gcp:region`` and ``gcp:zone``. ``load()`` turns the raw key/value mapping into a
frozen ``StackConfig`` or raises ``ConfigError`` with one line per problem, each naming the key path,
the bad value and what would be valid. Nothing here knows about Pulumi: ``infra.config`` feeds it.

The parts live beside it, one concern a module: ``common`` (base model, name checks, platform
bounds), ``cluster`` (control plane, network), ``pools`` (head pool, slice groups), ``bucket``,
``workload``. This module holds the stack, the rules that span parts, and the error contract.
"""


from __future__ import annotations

import ipaddress
import math
import re
from typing import Any, Mapping, Optional, Union, get_args, get_origin

from pydantic import BaseModel, Field, ValidationError, field_validator

from . import cluster as cluster_rules
from . import machines, quantity, rollout
from .alerting import MonitoringConfig
from .bucket import BucketConfig, check_bucket_name
from .cluster import AuthorizedNetwork, ClusterConfig, NetworkConfig, gke_version_key, meets_gke_floor
from .common import GCP_KEYS as GCP_KEYS
from .common import (
    MAX_NODES_PER_CLUSTER,
    PathwaysVersion,
    ProjectId,
    Region,
    Zone,
    _dns_label,
    _Model,
)
from .common import MAX_TPU_POOLS as MAX_TPU_POOLS
from .common import MAX_WORKLOADS as MAX_WORKLOADS
from .common import PROJECT_NAMESPACE as PROJECT_NAMESPACE
from .common import PROXY_RESOURCES as PROXY_RESOURCES
from .common import RESOURCE_MANAGER_RESOURCES as RESOURCE_MANAGER_RESOURCES
from .errors import ConfigError, Problem
from .pools import Capacity as Capacity
from .pools import HeadPoolConfig, SliceGroup
from .pricing import PricesConfig
from .resolved import (
    SERVICE_WORKER_JOB,
    WORKER_JOB,
    ResolvedStack,
    ResolvedWorkload,
    cluster_queue_name,
    proxy_image,
    server_image,
    worker_backoff_limit,
)
from .workload import (
    CLIENT_CHIPS_PER_VM,
    CLIENT_INSTANCE_TYPE,
    CLIENT_NAMESPACE,
    CLIENT_PROXY_RESOURCES,
    MAX_LABEL_VALUE,
    WorkerResources,
    Workload,
    coordinator_address,
    derived_proxy_image,
    image_tag,
    serve_leader_address,
    serve_service_name,
    worker_resources,
)
from .workload import SCRATCH_PERMISSIONS as SCRATCH_PERMISSIONS
from .workload import coordinator_label as coordinator_label
from .workload import head_pod_demand as head_pod_demand
from .workload import is_pinned as is_pinned

# --- the stack -----------------------------------------------------------------------------


def _chart_version(v: str, minimum: str, why: str) -> str:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", v):
        raise ValueError(f"{v!r} is not a chart version (e.g. {minimum})")
    if tuple(map(int, v.split("."))) < tuple(map(int, minimum.split("."))):
        raise ValueError(f"{v} is older than {minimum}, the first release with {why}; use {minimum} or later")
    return v


# Labels: GCP allows 64 a resource; the stack sets two of its own (the stack name, protection).
MAX_STACK_LABELS = 60
RESERVED_LABEL_KEYS = frozenset({"pathways-stack", "pathways-protected", "goog-gke-node"})

# Namespaces Kubernetes, GKE and the controllers own.
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "jobset-system", "kueue-system", "lws-system"})
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")

# The oldest releases that serve what the stack writes: JobSet's spec.coordinator came in v0.6.0
# (kubernetes-sigs/jobset #618, release 0.6); Kueue's v1beta2 API (cohortName, flavorFungibility
# MayStopSearch) in v0.15.0 (apis/kueue/v1beta2 first appears at that tag).
MIN_JOBSET = "0.6.0"
MIN_KUEUE = "0.15.0"
# LeaderWorkerSet moved its subgroup annotation from leaderworkerset.gke.io/ to leaderworkerset.sigs.k8s.io/
# in v0.6.0 (PLATFORM-FACTS §7); the stack writes the new keys.
MIN_LWS = "0.6.0"


def _chart_source(v: str) -> str:
    """An OCI chart reference, or a local chart directory (air-gapped clusters: a copy of the chart)."""
    if v.startswith("oci://"):
        if not re.fullmatch(r"oci://[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+", v):
            raise ValueError(f"{v[:80]!r} is not an OCI chart reference (oci://<registry>/<path>)")
        return v
    if len(v) > 1024 or not v.isprintable() or "://" in v:
        raise ValueError(f"{v[:80]!r} is neither an oci:// chart reference nor a local chart directory")
    return v


class KueueConfig(_Model):
    enabled: bool = Field(default=True, description=(
        "Kueue queues the JobSets: admitted all-or-nothing when their slices are free, by priority."
    ))
    version: str = Field(default="0.19.2", description="Kueue Helm chart version.")
    chart: str = Field(default="oci://registry.k8s.io/kueue/charts/kueue", description=(
        "Where the Kueue chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))

    @field_validator("chart")
    @classmethod
    def _chart(cls, v: str) -> str:
        return _chart_source(v)

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _chart_version(v, MIN_KUEUE, "the kueue.x-k8s.io/v1beta2 API the stack writes")


class KubernetesConfig(_Model):
    namespace: str = Field(default="pathways", description="Namespace of the Pathways JobSets.")
    jobset_version: str = Field(default="0.12.0", description="JobSet Helm chart version (controller and CRD).")
    jobset_chart: str = Field(default="oci://registry.k8s.io/jobset/charts/jobset", description=(
        "Where the JobSet chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))
    install_controllers: bool = Field(default=True, description=(
        "Install the JobSet (and Kueue) controllers. Off: the cluster runs them already (an existing cluster's own "
        "installs); the stack then only checks nothing of its own would clash."
    ))
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    # LWS v0.9.0: the release Kueue v0.19.2 builds against (its go.mod), newer than Google's pins (v0.4.0 in the
    # Pathways inference guide, v0.6.1 in the GKE tutorial), which the stack does not need: the leaderworkerset.
    # sigs.k8s.io annotations came in v0.6.0, and v0.9.0's webhook checks what the offline tools check.
    lws_version: str = Field(default="0.9.0", description=(
        "LeaderWorkerSet Helm chart version (controller and CRD), installed when a workload has mode: serve."
    ))
    lws_chart: str = Field(default="oci://registry.k8s.io/lws/charts/lws", description=(
        "Where the LeaderWorkerSet chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))

    @field_validator("jobset_chart", "lws_chart")
    @classmethod
    def _chart(cls, v: str) -> str:
        return _chart_source(v)

    @field_validator("lws_version")
    @classmethod
    def _lws_version(cls, v: str) -> str:
        return _chart_version(v, MIN_LWS, "the leaderworkerset.sigs.k8s.io annotations the stack writes")

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        _dns_label(v, 63)
        # The workload namespace is made privileged (hostNetwork): never one that holds other things.
        if v in RESERVED_NAMESPACES or v.startswith(RESERVED_NAMESPACE_PREFIXES):
            raise ValueError(f"{v!r} is a system or controller namespace; the workload namespace is made privileged "
                             "for hostNetwork pods, so give the stack its own (e.g. pathways)")
        return v

    @field_validator("jobset_version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _chart_version(v, MIN_JOBSET, "the spec.coordinator field the stack writes")



class StackConfig(_Model):
    stack: str = Field(description="Stack name (set by the loader, not a config key).")
    secret_keys: frozenset[str] = Field(default=frozenset(), description="Config keys given as secrets (set by the loader, not a config key).")
    project: ProjectId = Field(description="Google Cloud project ID the stack's resources are created in.")
    region: Region = Field(description="Region of the subnet, the control plane (when cluster.regional) and the buckets.")
    zone: Zone = Field(description="The one zone every node of the stack lives in; must be in gcp:region.")
    default_labels: dict[str, str] = Field(default_factory=dict, max_length=MAX_STACK_LABELS, description=(
        "gcp:defaultLabels: the GCP provider puts them on every GCP resource that takes labels; the stack puts the same "
        "labels on every Kubernetes object it creates (cost attribution, ownership)."
    ))

    @field_validator("default_labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            # GCP: keys start with a lowercase letter, keys and values up to 63 of [a-z0-9_-] ("Labels overview");
            # Kubernetes (where the same labels go): a value also starts and ends with a letter or digit.
            if not isinstance(key, str) or not re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", key):
                raise ValueError(f"{str(key)[:70]!r} is not a label key (a lowercase letter, then up to 62 of a-z, 0-9, _ and -)")
            if not isinstance(value, str) or not re.fullmatch(r"([a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?)?", value):
                raise ValueError(f"{key}: {str(value)[:70]!r} is not a label value valid on GCP and Kubernetes alike (up to 63 of "
                                 "a-z, 0-9, _ and -, starting and ending with a letter or digit)")
            if key in RESERVED_LABEL_KEYS:
                raise ValueError(f"{key} is the stack's own label; choose another key")
        return v
    protected: bool = Field(default=False, description=(
        "Pulumi protect on the cluster and both buckets, GKE deletion protection forced on, and the pathways-protected "
        "label the policy pack reads; offline diff then refuses disruptive changes not listed in allowDisruption."))
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    head_pool: HeadPoolConfig = Field(default_factory=HeadPoolConfig)
    slices: list[SliceGroup] = Field(min_length=1, max_length=100, description="Slice groups.")
    bucket: BucketConfig = Field(default_factory=BucketConfig)
    pathways_version: Optional[PathwaysVersion] = Field(default=None, description="Pathways image tag jax-<version>, equal to the program's JAX; required when workloads are set.")
    kubernetes: "KubernetesConfig" = Field(default_factory=lambda: KubernetesConfig())
    workloads: list[Workload] = Field(default_factory=list, max_length=MAX_WORKLOADS)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    prices: PricesConfig = Field(default_factory=PricesConfig)
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
    def service_workload(self) -> Optional[Workload]:
        return next((w for w in self.active_workloads if w.mode == "service"), None)

    def workload_namespace(self, w: Workload) -> str:
        return w.service_settings.namespace if w.mode == "service" else self.kubernetes.namespace

    @property
    def workload_namespaces(self) -> list[str]:
        """Namespaces the stack's JobSets live in, the workload namespace first."""
        return list(dict.fromkeys([self.kubernetes.namespace, *(self.workload_namespace(w) for w in self.active_workloads)]))

    @property
    def node_pools(self) -> int:
        """Every node pool the stack creates: system, head, proxy (service mode), one per TPU slice and spare."""
        return 2 + (1 if self.service_workload else 0) + sum(g.pools for g in self.slices)

    @property
    def proxy_nodes(self) -> int:
        s = self.service_workload
        return s.service_settings.max_clients if s else 0

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
        if self.head_pool.node_count is not None:
            return self.head_pool.node_count
        if self.active_workloads and not self.head_workloads:
            return 0  # only serve workloads: their leaders run on their slices, an empty pool costs nothing
        return max(1, len(self.head_workloads))

    @property
    def head_workloads(self) -> list[Workload]:
        """The active workloads with a head pod on the head pool (every mode but serve)."""
        return [w for w in self.active_workloads if w.on_head_pool]

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


def _workload_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    problems = []
    coordinator = coordinator_address(w.name, w.subdomain)
    if w.mode == "serve":
        problems += _serve_checks(cfg, i, w)
    elif w.serve is not None:
        problems.append(Problem(config_key(("workloads", i, "serve")), "only for mode: serve; remove it or set mode: serve"))
    if w.mode != "serve" and len(coordinator) > MAX_LABEL_VALUE:
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
    if w.elastic and w.elastic.max_missing_slices > cfg.workload_slices(w):
        # pathwaysutils 0.1.13 experimental/gke/jobset.py refuses elastic_slices > num_slices (0 < N <= slices); N = slices is its
        # own fixture (model_lite_tpuv5e_4x8.yaml): the job waits for any slice to come back.
        n = cfg.workload_slices(w)
        problems.append(Problem(config_key(("workloads", i, "elastic", "maxMissingSlices")), (
            f"{w.elastic.max_missing_slices} is more than the workload's {n} slice(s) (it is how many slices the job may "
            f"lose and keep running); use 1..{n}"
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
    if w.mode == "service":
        problems += _service_checks(cfg, i, w)
    elif w.service is not None:
        problems.append(Problem(config_key(("workloads", i, "service")), "only for mode: service; remove it or set mode: service"))
    if w.mode != "batch" and w.state == "finished":
        problems.append(Problem(config_key(("workloads", i, "state")), (
            f"finished is for batch runs; an {w.mode} workload is suspended (state: suspended) or removed"
        )))
    if w.mode == "interactive" and (w.profiling or w.persistence):
        problems.append(Problem(config_key(("workloads", i, "mode")), "profiling and persistence configure the user container, which interactive workloads do not have"))
    return problems


# Keys a LeaderWorkerSet has no use for: they configure the JobSet path (its restart budget, elastic slices,
# the colocated sidecar, the head's proxy and user container).
JOBSET_ONLY_KEYS = ("slices", "max_restarts", "worker_restarts_per_host", "elastic", "colocated_python", "subdomain",
                    "xla_flags", "hlo_dump", "profiling", "persistence", "ttl_seconds_after_finished",
                    "data_loader_workers", "shm_size", "cpu", "memory")
# LWS names its leader StatefulSet <name> and each group's workers <name>-<group>; a StatefulSet's pods carry
# controller-revision-hash=<statefulset>-<10-character hash>, a label value of at most 63 characters.
MAX_LWS_STATEFULSET_NAME = MAX_LABEL_VALUE - 11


def _serve_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    if w.serve is None:
        return [Problem(config_key(("workloads", i, "serve")), (
            "required for mode: serve (at least serve.model and serve.weights, the gs:// checkpoint)"
        ))]
    problems = []
    fields = type(w).model_fields
    for name in JOBSET_ONLY_KEYS:
        if name in w.model_fields_set:
            hint = ("a serve workload takes serve.replicas slices (two each when serve.disaggregated)"
                    if name == "slices" else "it configures the JobSet path, which a serve workload does not use")
            problems.append(Problem(config_key(("workloads", i, fields[name].alias or name)), f"not for mode: serve; {hint}: remove it"))
    sv = w.serve
    group = cfg.workload_group(w)
    wanted = sv.replicas * sv.slices_per_replica
    if wanted > group.count:
        each = "two slices (prefill and decode)" if sv.disaggregated else "one slice"
        problems.append(Problem(config_key(("workloads", i, "serve", "replicas")), (
            f"{sv.replicas} replica(s) of {each} need {wanted} slices, but group {group.name!r} has {group.count}; "
            f"use at most {group.count // sv.slices_per_replica} replica(s) or raise that group's count"
        )))
    longest = f"{w.name}-{max(sv.replicas - 1, 0)}"
    if len(longest) > MAX_LWS_STATEFULSET_NAME:
        problems.append(Problem(config_key(("workloads", i, "name")), (
            f"the LeaderWorkerSet's worker StatefulSet {longest!r} would be {len(longest)} characters, over the "
            f"{MAX_LWS_STATEFULSET_NAME} a StatefulSet name may have (its pods' controller-revision-hash label adds 11); "
            "use a shorter name"
        )))
    vm = machines.tpu_vm_shape(group.tpu.machine_type)
    cpu, mem, parts = head_pod_demand(w)
    if not machines.fits(vm, cpu, mem):
        problems.append(Problem(config_key(("workloads", i, "sliceGroup")), (
            f"the serving leader ({cpu:g} vCPU, {mem:.1f} GiB: {parts}) does not fit beside a worker on a "
            f"{group.tpu.machine_type} ({vm.allocatable_cpu:.0f} vCPU, {vm.allocatable_memory_gib:.0f} GiB allocatable); "
            "serve from a slice group with larger TPU VMs"
        )))
    if w.priority is not None and w.priority != "serving":
        problems.append(Problem(config_key(("workloads", i, "priority")), (
            f"{w.priority} would let training preempt a serving endpoint; a serve workload runs at serving (remove it)"
        )))
    return problems


def _service_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    """A Shared Pathways Service: what the pathwaysutils client expects, and room for its proxies."""
    problems = []
    sv = w.service_settings
    if sv.namespace != CLIENT_NAMESPACE:
        # run_workload and isc_pathways.connect pass no namespace: verify_pathways_service_is_up and
        # get_pathways_service_images read the service from their default, "default" (pathwaysutils 0.1.13).
        problems.append(Problem(config_key(("workloads", i, "service", "namespace")), (
            f"{sv.namespace!r}: pathwaysutils' client looks for the service JobSet in {CLIENT_NAMESPACE!r} only "
            f"(run_workload and isc_pathways.connect pass no namespace); use {CLIENT_NAMESPACE!r} or remove the key"
        )))
    group = cfg.workload_group(w).tpu
    if not CLIENT_INSTANCE_TYPE.fullmatch(group.instance_type) or group.chips_per_vm != CLIENT_CHIPS_PER_VM:
        problems.append(Problem(config_key(("workloads", i, "sliceGroup")), (
            f"{cfg.workload_group(w).name!r} is {group.name} ({group.machine_type}, --instance_type={group.instance_type}), "
            "which pathwaysutils' client cannot use: it accepts only tpuv5e, tpuv5, tpuv6e and tpu7x instance types "
            "(validators._validate_tpu_supported) and counts 4 chips per VM (tpu_specs.get_tpu_config); give the service "
            "a v5e, v5p, v6e or tpu7x group of 4-chip VMs"
        )))
    for key, on in (("profiling", w.profiling), ("persistence", w.persistence), ("xlaFlags", w.xla_flags),
                    ("hloDump", w.hlo_dump), ("elastic", w.elastic)):
        if on:
            problems.append(Problem(config_key(("workloads", i, key)), (
                "configures the IFRT proxy or the program, which a service's clients bring themselves; remove it"
            )))
    try:
        machine = machines.shape(sv.proxy_machine_type)
    except machines.MachineError as e:
        return [*problems, Problem(config_key(("workloads", i, "service", "proxyMachineType")), str(e))]
    cpu, mem = quantity.parse(CLIENT_PROXY_RESOURCES[0]), quantity.parse(CLIENT_PROXY_RESOURCES[1]) / quantity.GIB
    if not machines.fits(machine, cpu, mem):
        problems.append(Problem(config_key(("workloads", i, "service", "proxyMachineType")), (
            f"{machine.name} ({machine.allocatable_cpu:.2f} vCPU, {machine.allocatable_memory_gib:.1f} GiB allocatable) cannot "
            f"hold a client proxy ({CLIENT_PROXY_RESOURCES[0]} CPU, {CLIENT_PROXY_RESOURCES[1]}: pathwaysutils' pw-proxy.yaml); "
            "use n2-standard-32 or larger"
        )))
    if sum(1 for x in cfg.workloads if x.mode == "service") > 1 and w is next(x for x in cfg.workloads if x.mode == "service"):
        problems.append(Problem(config_key(("workloads", i, "mode")), "one service workload per stack (its clients share one proxy pool)"))
    return problems


def _image_checks(cfg: "StackConfig", i: int, w: Workload) -> list[Problem]:
    """The IFRT proxy must come from the same Pathways release as the server (RM and workers)."""
    key = config_key(("workloads", i, "proxyImage"))
    if w.server_image and not w.proxy_image and derived_proxy_image(w.server_image) is None:
        return [Problem(key, (
            f"required when serverImage is {w.server_image!r}: no same-release proxy_server image can be derived "
            "from a digest or a path not ending in /server; give the proxy_server image of the same release"
        ))]
    server, proxy = server_image(cfg.pathways_version, w), proxy_image(cfg.pathways_version, w)
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
    active = len(cfg.head_workloads)
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
    for w in [w for w in cfg.workloads if w.on_head_pool] or [None]:
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


def _problem(err: Mapping[str, Any], secret: bool = False) -> Problem:
    """One line for a pydantic error; a value under a secret key is never shown."""
    loc = tuple(err["loc"])
    kind = err["type"]
    value = "[secret]" if secret else repr(err.get("input"))
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
    return Problem(config_key(loc), f"{value} is not valid: {msg[0].lower()}{msg[1:]}")


def _sharing_checks(cfg: StackConfig) -> list[Problem]:
    """Workloads sharing a slice group; spares only help a workload that may restart."""
    problems = []
    names = {g.name for g in cfg.slices}
    for i, w in enumerate(cfg.workloads):
        if w.state != "running" or (w.slice_group or cfg.slices[0].name) not in names:
            continue
        group = cfg.workload_group(w)
        if group.spares and w.restarts == 0:
            problems.append(Problem(config_key(("workloads", i, "maxRestarts")), (
                f"0 with slice group {group.name!r} keeping {group.spares} spare slice(s): a failure ends the run instead "
                "of restarting it onto a spare; set maxRestarts to 1 or more"
            )))
    if cfg.kubernetes.kueue.enabled:
        return problems  # Kueue admits each JobSet all-or-nothing when its slices are free
    for g in cfg.slices:
        users = [w for w in cfg.workloads if w.state == "running" and (w.slice_group or cfg.slices[0].name) == g.name]
        wanted = sum(cfg.workload_slices(w) for w in users)
        if len(users) > 1 and wanted > g.count:
            problems.append(Problem(config_key(("kubernetes", "kueue", "enabled")), (
                f"false, but workloads {', '.join(w.name for w in users)} want {wanted} slices of group {g.name!r}, which "
                f"has {g.count}: without Kueue each could take part of the slices and both wait forever; enable Kueue "
                "or lower their slices"
            )))
    return problems


def _size_checks(cfg: StackConfig) -> list[Problem]:
    """What GKE (and this project's planning time) can hold."""
    problems = []
    pools = sum(g.pools for g in cfg.slices)
    if pools > MAX_TPU_POOLS:
        problems.append(Problem(config_key(("slices",)), (
            f"{pools} TPU slices in all, one node pool each; at most {MAX_TPU_POOLS} per stack: lower the counts or split the stack"
        )))
    nodes = cfg.cluster.system_pool.max_nodes + cfg.head_nodes + cfg.proxy_nodes + sum(g.pools * g.tpu.hosts for g in cfg.slices)
    if nodes > MAX_NODES_PER_CLUSTER:
        problems.append(Problem(config_key(("slices",)), (
            f"{nodes} nodes in all (TPU hosts, head and system pools), over GKE's {MAX_NODES_PER_CLUSTER} per "
            "Standard cluster; lower the counts or split the stack"
        )))
    all_pools = cfg.node_pools
    lane = rollout.waves(all_pools, cfg.cluster.node_pool_concurrency)
    if lane > rollout.MAX_LANE_LENGTH:
        problems.append(Problem(config_key(("cluster", "nodePoolConcurrency")), (
            f"{cfg.cluster.node_pool_concurrency} puts {lane} of the stack's {all_pools} node pools in one lane; at most "
            f"{rollout.MAX_LANE_LENGTH} (Pulumi checks depends_on chains recursively): set it to at least "
            f"{math.ceil(all_pools / rollout.MAX_LANE_LENGTH)}"
        )))
    return problems


# What GKE takes as authorized networks when the control plane's IP endpoint is private ("Invalid master
# authorized networks: network ... is not a reserved network, which is required for private endpoints"):
# internal addresses, i.e. RFC 1918 ranges and RFC 6598 shared address space.
INTERNAL_RANGES = tuple(ipaddress.IPv4Network(r) for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))


def _endpoint_checks(cfg: StackConfig) -> list[Problem]:
    c = cfg.cluster
    key = config_key(("cluster", "masterAuthorizedNetworks"))
    if c.public_endpoint and not c.master_authorized_networks:
        return [Problem(config_key(("cluster", "publicEndpoint")), (
            "true with no masterAuthorizedNetworks opens the control plane's IP endpoint to the whole internet (as "
            "0.0.0.0/0 would); list the ranges that need it (a VPN, a bastion, CI runners), or keep publicEndpoint false "
            "and use the IAM-authorized DNS endpoint"
        ))]
    if c.public_endpoint:
        return []
    def internal(cidr: str) -> bool:
        net = ipaddress.ip_network(cidr)
        return isinstance(net, ipaddress.IPv4Network) and any(net.subnet_of(r) for r in INTERNAL_RANGES)

    outside = [n.cidr_block for n in c.master_authorized_networks if not internal(n.cidr_block)]
    if outside:
        return [Problem(key, (
            f"{', '.join(outside)} is not an internal range, and with publicEndpoint false the control plane has only its "
            "private endpoint, where GKE accepts only internal addresses (RFC 1918, RFC 6598: \"is not a reserved network, "
            "which is required for private endpoints\"); give the internal range the clients come from (e.g. the VPN's), "
            "or use the DNS endpoint, which needs no authorized network"
        ))]
    return []


def _maintenance_checks(cfg: StackConfig) -> list[Problem]:
    """Exclusions GKE would refuse at apply time: one already over, or a "no minor upgrades" one that
    outlasts the support of the minor the cluster runs (GKE "Maintenance windows and exclusions")."""
    problems = []
    c = cfg.cluster
    minor = ".".join(c.min_master_version.split(".")[:2]) if c.min_master_version else cluster_rules.CHANNEL_DEFAULT_MINOR[c.release_channel.value]
    support_end = cluster_rules.END_OF_STANDARD_SUPPORT.get(minor)
    current = cluster_rules.now()
    for i, e in enumerate(c.maintenance.exclusions):
        key = config_key(("cluster", "maintenance", "exclusions", i, "endTime"))
        if e.end <= current:
            problems.append(Problem(key, (
                f"{e.end_time} has passed: exclusion {e.name!r} no longer holds anything and GKE refuses an exclusion "
                "that has ended; remove it or give a new period"
            )))
        elif support_end and e.scope != "NO_UPGRADES" and e.end > cluster_rules._timestamp(support_end):
            source = (f"cluster.minMasterVersion {c.min_master_version}" if c.min_master_version
                      else f"the {c.release_channel.value} channel creates clusters at {minor} today")
            problems.append(Problem(key, (
                f"{e.end_time} is after the end of standard support of GKE {minor} ({support_end[:10]}; {source}): GKE refuses a "
                f"{e.scope} exclusion that outlasts its minor; end it by {support_end[:10]} and renew it after the upgrade"
            )))
    return problems


def _existing_cluster_checks(cfg: StackConfig) -> list[Problem]:
    """cluster.existing: the stack makes no GCP resource, so keys that configure them mean nothing."""
    problems = []
    why = "has no effect with cluster.existing (the stack creates no GCP resource there); remove it"
    for section, model, kept in (("cluster", cfg.cluster, {"existing", "name"}), ("network", cfg.network, set()),
                                 ("monitoring", cfg.monitoring, set())):
        for field in sorted(model.model_fields_set - kept):
            problems.append(Problem(config_key((section, type(model).model_fields[field].alias or field)), why))
    if cfg.protected:
        problems.append(Problem(config_key(("protected",)), why + " (it protects the cluster and buckets the stack creates)"))
    if cfg.bucket.name is None:
        problems.append(Problem(config_key(("bucket", "name")), (
            "required with cluster.existing: the stack creates no bucket there, so name the existing scratch bucket "
            "Pathways keeps its compilation cache in"
        )))
    return problems


def _cross_checks(cfg: StackConfig) -> list[Problem]:
    """Rules that span keys: references, uniqueness, placement."""
    problems: list[Problem] = _size_checks(cfg)
    if cfg.cluster.existing is not None:
        problems += _existing_cluster_checks(cfg)
    else:
        problems += _maintenance_checks(cfg)
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
    subdomains: dict[tuple[str, str], int] = {}
    for i, w in enumerate(cfg.workloads):
        # JobSet makes a headless Service named after the subdomain: two JobSets sharing one in a namespace
        # fight over it, and one of them loses its pods' DNS names.
        sub = (cfg.workload_namespace(w), w.subdomain or w.name)
        if sub in subdomains and w.state != "finished" and w.name not in workload_names:
            problems.append(Problem(config_key(("workloads", i, "subdomain")), (
                f"{sub[1]!r} is workloads[{subdomains[sub]}]'s subdomain too; each JobSet's headless Service is named after its "
                "subdomain, so give each workload its own"
            )))
        if w.state != "finished":
            subdomains.setdefault(sub, i)
        if w.mode == "serve" and w.state != "finished":
            # A serve workload's HTTP Service, beside the headless one LWS names after it.
            http = (cfg.workload_namespace(w), serve_service_name(w.name))
            if http in subdomains:
                problems.append(Problem(config_key(("workloads", i, "name")), (
                    f"its HTTP Service {http[1]!r} is workloads[{subdomains[http]}]'s headless Service too; rename one"
                )))
            subdomains.setdefault(http, i)
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
            problems.append(Problem(config_key(("workloads", i, "slices")), f"{w.slices} exceeds the {group.count} slice(s) of group {group.name!r} (spares are not for workloads); use 1..{group.count} or raise slices[{group_names[group.name]}].count"))
        problems += _workload_checks(cfg, i, w)
        if w.mode == "batch" and not w.image:
            problems.append(Problem(config_key(("workloads", i, "image")), "required for a batch workload (the user program's image)"))
        if w.mode != "batch" and w.env:
            problems.append(Problem(config_key(("workloads", i, "env")), (
                f"{w.mode} workloads run no user container, so env would reach nothing; remove it or use mode: batch"
            )))
        if w.mode != "batch" and (w.image or w.command or w.args):
            problems.append(Problem(config_key(("workloads", i, "mode")), f"{w.mode} workloads run no user container; remove image, command and args or use mode: batch"))
    problems += _sharing_checks(cfg)
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
    problems += _endpoint_checks(cfg)
    if cfg.network.existing_subnetwork:
        m = re.search(r"/regions/([a-z]+-[a-z]+[0-9]+)/", cfg.network.existing_subnetwork)
        if m and m.group(1) != cfg.region:
            problems.append(Problem(config_key(("network", "existingSubnetwork")), (
                f"is in region {m.group(1)}, but the stack's nodes live in gcp:region {cfg.region}; a GKE cluster's "
                f"subnetwork must be in its region: use a subnetwork of {cfg.region} or change gcp:region"
            )))
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


def _secret_strings(value: Any, under_env: bool = False) -> set[str]:
    """The env values under a secret key (the only values that may be secret, SECRET_CAPABLE_KEYS), found
    wherever an `env` mapping sits, however malformed the rest is; texts of 4+ characters."""
    if isinstance(value, Mapping):
        return {x for k, v in value.items() for x in _secret_strings(v, under_env or k == "env")}
    if isinstance(value, (list, tuple)):
        return {x for v in value for x in _secret_strings(v, under_env)}
    if not under_env or isinstance(value, bool) or value is None:
        return set()
    text = str(value)
    return {text} if len(text) >= 4 else set()


def _redacted(problems: list[Problem], secrets: set[str]) -> list[Problem]:
    """Problems with every secret text replaced: under `pulumi preview` the program sees decrypted values,
    and a message quoting one would put it in CI logs. Longest first, so a secret that contains another
    is replaced whole."""
    out = []
    for p in problems:
        message = p.message
        for text in sorted(secrets, key=len, reverse=True):
            message = message.replace(text, "[secret]").replace(repr(text)[1:-1], "[secret]")
        out.append(Problem(p.key, message))
    return out


def load(raw: dict[str, Any], stack: str, secret_keys: frozenset[str] = frozenset()) -> StackConfig:
    """Validate raw config values (keys without namespace) into a StackConfig, or raise ConfigError."""
    secret_problems = _secret_key_problems(frozenset(secret_keys))
    if secret_problems:
        raise ConfigError(secret_problems)
    secret_roots = {k.partition(":")[2] for k in secret_keys}
    secrets = {x for name in secret_roots if name in raw for x in _secret_strings(raw[name])}
    try:
        cfg = StackConfig.model_validate({**raw, "stack": stack, "secretKeys": frozenset(secret_keys)})
    except ValidationError as e:
        problems = [_problem(err, secret=bool(err["loc"]) and err["loc"][0] in secret_roots and "env" in err["loc"]) for err in e.errors()]
        raise ConfigError(_redacted(problems, secrets)) from None
    problems = _cross_checks(cfg)
    if problems:
        raise ConfigError(_redacted(problems, secrets))
    return cfg


Workload.model_rebuild()
StackConfig.model_rebuild()


def resolve(cfg: StackConfig) -> ResolvedStack:
    """Every derived value, once. The config is valid (config.load checked it)."""
    groups = {g.name: g for g in cfg.slices}
    workloads = []
    for w in cfg.workloads:
        group = groups[w.slice_group or cfg.slices[0].name]
        workloads.append(ResolvedWorkload(
            spec=w, name=w.name, mode=w.mode, state=w.state,
            namespace=cfg.workload_namespace(w),
            group=group,
            slices=w.serve.replicas * w.serve.slices_per_replica if w.serve else w.slices or group.count,
            server_image=server_image(cfg.pathways_version, w),
            proxy_image=proxy_image(cfg.pathways_version, w),
            restarts=w.restarts,
            worker_backoff_limit=worker_backoff_limit(group, w),
            priority=w.effective_priority,
            worker_job=SERVICE_WORKER_JOB if w.mode == "service" else WORKER_JOB,
            coordinator=serve_leader_address(w.name, cfg.workload_namespace(w)) if w.mode == "serve" else coordinator_address(w.name, w.subdomain),
            local_queue=w.name if cfg.kubernetes.kueue.enabled else None,
            cluster_queue=cluster_queue_name(tuple(cfg.slices), group) if cfg.kubernetes.kueue.enabled else None,
            profiling_secret=f"{w.name}-profiling-token" if w.profiling else None,
            env_secret=f"{w.name}-env" if cfg.secret_env and w.env else None,
        ))
    service = cfg.service_workload
    return ResolvedStack(
        stack=cfg.stack, project=cfg.project, region=cfg.region, zone=cfg.zone,
        location=cfg.region if cfg.cluster.regional else cfg.zone,
        cluster_name=cfg.cluster_name, namespace=cfg.kubernetes.namespace,
        cache_location=cfg.cache_location, artifacts_location=cfg.artifacts_location,
        artifacts_bucket=cfg.artifacts_bucket_name, artifacts_prefix=cfg.bucket.artifacts_prefix,
        bucket_name=cfg.bucket_name, bucket=cfg.bucket,
        kueue=cfg.kubernetes.kueue.enabled,
        head_machine_type=cfg.head_pool.machine_type, head_nodes=cfg.head_nodes, head_scale_to_zero=cfg.head_pool.scale_to_zero,
        system_machine_type=cfg.cluster.system_pool.machine_type,
        system_min_nodes=cfg.cluster.system_pool.min_nodes, system_max_nodes=cfg.cluster.system_pool.max_nodes,
        proxy_machine_type=service.service_settings.proxy_machine_type if service else None,
        proxy_nodes=cfg.proxy_nodes,
        node_pools=cfg.node_pools, node_pool_concurrency=cfg.cluster.node_pool_concurrency,
        slices=tuple(cfg.slices), workloads=tuple(workloads),
        monitoring=cfg.monitoring, prices=cfg.prices, labels=dict(cfg.default_labels),
        existing_cluster=cfg.cluster.existing is not None,
    )

