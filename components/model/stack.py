"""The stack's schema: every top-level key, and the values derived from them (Pulumi-free).

Stack config keys live in the project namespace (``pathways:<key>``) plus the provider's own
``gcp:project``, ``gcp:region``, ``gcp:zone`` and ``gcp:defaultLabels``. Each section's keys live in their
own module (``cluster``, ``pools``, ``bucket``, ``kubernetes``, ``workload``, ``alerting``, ``pricing``); the
rules that span keys live beside them in ``*_checks`` modules, listed in order in ``checks``; ``config``
loads and resolves.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable, Optional

from pydantic import Field, field_validator, model_validator

from components.model.capacity import dynamic_slicing
from components.model.capacity.pools import HeadPoolConfig, SliceGroup
from components.model.cluster.alerting import MonitoringConfig
from components.model.cluster.bucket import BucketConfig
from components.model.cluster.cluster import ClusterConfig, NetworkConfig, gke_version_key
from components.model.cluster.fleet import FleetConfig
from components.model.cluster.kubernetes import KubernetesConfig
from components.model.common import MAX_WORKLOADS, PROJECT_NAMESPACE, PathwaysVersion, ProjectId, Region, Zone, _Model
from components.model.cost.pricing import PricesConfig
from components.model.errors import Problem
from components.model.workloads import inference_gateway
from components.model.workloads.resilience import MTC_MIN_GKE_VERSION, ResilienceConfig
from components.model.workloads.runs import Runs
from components.model.workloads.storage import GCSFUSE_HOST_NETWORK_MIN_GKE, StorageConfig
from components.model.workloads.teams import MAX_TEAMS, Team
from components.model.workloads.workload import WorkerResources, Workload, worker_resources

# Labels: GCP allows 64 a resource; the stack sets two of its own (the stack name, protection).
MAX_STACK_LABELS = 60
RESERVED_LABEL_KEYS = frozenset({"pathways-stack", "pathways-protected", "pathways-internet-tokens", "goog-gke-node"})



# IAM: a service account ID is 6-30 characters, lowercase letters, digits and '-', starting with a letter
SERVICE_ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")


def service_account_id(cluster_name: str, purpose: str) -> str:
    """A stack's Google service account ID: <cluster name>-<purpose>, 6-30 characters."""
    return f"{cluster_name[: 29 - len(purpose)].rstrip('-')}-{purpose}"

def _true(value: Any) -> bool:
    """The value as the model reads a bool (a stack file's scalars arrive as text: "true"), or False if it is none."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        return False  # the field's own validation says so, in its words


def _reads_reservation(group: Any, project: Any) -> Any:
    """A protected stack's slice group with readReservation: true by default where a live read applies."""
    from components.model.capacity.pools import RESERVATION_PATH

    if not isinstance(group, dict) or "readReservation" in group or "read_reservation" in group:
        return group

    def given(camel: str, snake: str) -> Any:  # the model takes either spelling (populate_by_name)
        return group.get(camel) or group.get(snake)

    path = RESERVATION_PATH.fullmatch(group["reservation"]) if isinstance(group.get("reservation"), str) else None
    if (path is None or path["owner"] not in (None, project) or given("subBlocks", "sub_blocks")
            or given("futureReservation", "future_reservation") or given("nodePools", "node_pools")):
        return group  # another project's reservation: the bootstrap cannot grant its read
    return {**group, "readReservation": True}


class StackConfig(_Model):
    """The whole stack: what `pulumi config` holds, typed; every key's own bounds, then values derived from them."""

    stack: str = Field(description="Stack name (set by the loader, not a config key).")
    secret_keys: frozenset[str] = Field(default=frozenset(), description="Config keys given as secrets (set by the loader, not a config key).")
    planned_at: datetime = Field(description=(
        "When the plan is made (set by the loader, not a config key): the one clock the rules about the present read (an "
        "exclusion that has ended, a calendar reservation not yet delivered), so that a plan is a function of its inputs."))
    project: ProjectId = Field(description="Google Cloud project ID the stack's resources are created in.")
    region: Region = Field(description="Region of the subnet, the control plane (when cluster.regional) and the buckets.")
    zone: Zone = Field(description="The one zone every node of the stack lives in; must be in gcp:region.")
    default_labels: dict[str, str] = Field(default_factory=dict, max_length=MAX_STACK_LABELS, description=(
        "gcp:defaultLabels: the GCP provider puts them on every GCP resource that takes labels; the stack puts the same "
        "labels on every Kubernetes object it creates (cost attribution, ownership)."
    ))
    protected: bool = Field(default=False, description=(
        "Pulumi protect on the cluster and both buckets, GKE deletion protection forced on, and the pathways-protected "
        "label the policy pack reads; offline diff then refuses disruptive changes not listed in allowDisruption."))
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    head_pool: HeadPoolConfig = Field(default_factory=HeadPoolConfig)
    slices: list[SliceGroup] = Field(min_length=1, max_length=100, description="Slice groups.")
    read_quota: bool = Field(default=False, description=(
        "Read the project's regional TPU quota limits under `pulumi preview` and `up` (Cloud Quotas, pulumi-gcp's "
        "cloudquota.get_s_quota_info) and refuse a stack whose slice groups need more chips than a limit allows, "
        "before anything is created. The bootstrap grants the CI identities roles/cloudquotas.viewer for it. "
        "The plan prints the chips needed either way. Default: true in a protected stack (false opts out), false "
        "otherwise. docs/capacity.md."))
    bucket: BucketConfig = Field(default_factory=BucketConfig)
    pathways_version: Optional[PathwaysVersion] = Field(default=None, description="Pathways image tag jax-<version>, equal to the program's JAX; required when workloads are set.")
    kubernetes: KubernetesConfig = Field(default_factory=KubernetesConfig)
    workloads: list[Workload] = Field(default_factory=list, max_length=MAX_WORKLOADS)
    monitoring: MonitoringConfig = Field(default_factory=MonitoringConfig)
    resilience: ResilienceConfig = Field(default_factory=ResilienceConfig)
    runs: Optional[Runs] = Field(default=None, description=(
        "Ad-hoc runs (python -m infra.run, docs/runs.md): `runs: {}` makes their Kueue queue, head-pool room and "
        "submitters' Role; absent, the stack takes no ad-hoc runs."))
    teams: list[Team] = Field(default_factory=list, max_length=MAX_TEAMS, description=(
        "Teams sharing the stack's slices (docs/teams.md): each a Kueue ClusterQueue in the stack's cohort with its "
        "share, weight and limits, a namespace with a run queue, and its submitters' access there only. Needs "
        "pathways:runs; workloads and runs name a team, or use the stack's own queue."))
    storage: StorageConfig = Field(default_factory=StorageConfig, description=(
        "Existing file systems workloads mount (docs/storage.md); buckets are mounted by name from workloads[].mounts."))
    prices: PricesConfig = Field(default_factory=PricesConfig)
    fleet: Optional[FleetConfig] = Field(default=None, description=(
        "This stack's part in a MultiKueue fleet (docs/fleet.md): a worker publishes what a manager needs, a manager "
        "queues ad-hoc runs and dispatches each to a worker with room; absent, the stack is a cluster on its own."))
    allow_disruption: list[str] = Field(default_factory=list, max_length=200, description=(
        "Resources (names as `diff` prints them; `*` matches any run of characters) this change may replace, "
        "delete or recreate in a protected stack. Review it in the PR; empty it after the change lands."
    ))

    @model_validator(mode="before")
    @classmethod
    def _protected_reads_live(cls, data: Any) -> Any:
        """A protected stack reads its quota and its own project's reservations live under `pulumi preview` and `up`
        unless it says otherwise (#75.3): in CI, where the previews run, a short reservation or quota is then refused
        before the deploy, not found after it as pools that never get nodes. The offline tools read nothing either
        way. A key given (false included) is kept; a group the live read does not apply to (a pool set, a future
        reservation, existing pools, another project's reservation, whose read the bootstrap cannot grant) is left
        alone."""
        if not isinstance(data, dict) or not _true(data.get("protected")):
            return data
        existing = isinstance(data.get("cluster"), dict) and data["cluster"].get("existing") is not None
        out = dict(data)
        if "readQuota" not in out and "read_quota" not in out and not existing:
            out["readQuota"] = True
        slices = out.get("slices")
        if isinstance(slices, list) and not existing:
            out["slices"] = [_reads_reservation(g, data.get("project")) for g in slices]
        return out

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

    @field_validator("allow_disruption")
    @classmethod
    def _allowances(cls, v: list[str]) -> list[str]:
        for entry in v:
            if not re.fullmatch(r"[a-z0-9*][-a-z0-9*]{0,100}", entry):
                raise ValueError(f"{entry[:60]!r} is not a resource name as `diff` prints it (e.g. slices-train-0, workload-pretrain)")
        return v

    @property
    def rbac_subjects(self) -> list[tuple[tuple[Any, ...], str, str]]:
        """(config-key path, kind, email) of each person or Google group the stack names in RBAC: runs.submitters and
        each shared service's clients. They fetch the cluster's credentials (the bootstrap grants them that)."""
        found: list[tuple[tuple[Any, ...], str, str]] = []
        if self.runs is not None:
            found += [(("runs", "submitters", i, "name"), s.kind, s.name) for i, s in enumerate(self.runs.submitters)]
        for i, t in enumerate(self.teams):
            found += [(("teams", i, "submitters", j, "name"), s.kind, s.name) for j, s in enumerate(t.submitters)]
        for i, w in enumerate(self.workloads):
            if w.service is not None:
                found += [(("workloads", i, "service", "clients", j, "name"), c.kind, c.name) for j, c in enumerate(w.service.clients)]
        return found

    @property
    def group_subjects(self) -> list[tuple[tuple[Any, ...], str]]:
        """(config-key path, email) of each Google group among rbac_subjects."""
        return [(path, name) for path, kind, name in self.rbac_subjects if kind == "Group"]

    @property
    def service_workload(self) -> Optional[Workload]:
        return next((w for w in self.active_workloads if w.mode == "service"), None)

    def workload_namespace(self, w: Workload) -> str:
        if w.mode == "service":
            return w.service_settings.namespace
        team = self.team(w.team)
        return team.team_namespace if team is not None else self.kubernetes.namespace

    def team(self, name: Optional[str]) -> Optional[Team]:
        """The declared team of that name (None for none, or a name no team has: teams_checks refuses it)."""
        return next((t for t in self.teams if t.name == name), None) if name else None

    @property
    def workload_namespaces(self) -> list[str]:
        """Namespaces the stack's JobSets live in, the workload namespace first, then the teams'."""
        return list(dict.fromkeys([self.kubernetes.namespace, *(self.workload_namespace(w) for w in self.active_workloads),
                                   *(t.team_namespace for t in self.teams)]))

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
        return max(self.gke_version_needs.values(), key=gke_version_key)

    @property
    def gke_version_needs(self) -> dict[str, str]:
        """What needs which minimum GKE version: each TPU family, and multi-tier checkpointing when on."""
        needs = {g.tpu.family: g.tpu.min_gke_version for g in self.slices}
        if any(g.dynamic for g in self.slices):
            needs["dynamic slicing"] = dynamic_slicing.SUPER_SLICING_MIN_GKE
        if any(g.forms_sub_slices for g in self.slices):
            needs["dynamic sub-slices"] = dynamic_slicing.SUB_SLICING_MIN_GKE
        if self.resilience.mtc is not None:
            needs["multi-tier checkpointing"] = MTC_MIN_GKE_VERSION
        if self.mounts_buckets:
            needs["GCS FUSE mounts in host-network pods"] = GCSFUSE_HOST_NETWORK_MIN_GKE
        if self.gateway_workloads:
            needs["the inference gateway (GKE's InferencePool CRD)"] = inference_gateway.MIN_GKE_VERSION
        return needs

    @property
    def mounts_buckets(self) -> bool:
        """A workload, or the ad-hoc runs, mount a bucket through Cloud Storage FUSE."""
        return bool(self.runs and self.runs.buckets) or any(m.bucket for w in self.workloads for m in w.mounts)

    @property
    def csi_drivers(self) -> tuple[str, ...]:
        """The GKE CSI driver add-ons the stack's mounts need: gcsfuse, filestore, lustre."""
        kinds = {f.kind for f in self.storage.file_systems}
        return tuple(k for k in ("gcsfuse", "filestore", "lustre")
                     if (k == "gcsfuse" and (self.mounts_buckets or self.resilience.mtc is not None)) or k in kinds)

    @property
    def mtc_bucket_name(self) -> Optional[str]:
        """The multi-tier checkpointing backup bucket: resilience.mtc.bucket, else <bucket>-checkpoints."""
        mtc = self.resilience.mtc
        if mtc is None:
            return None
        return mtc.bucket or f"{self.bucket_name[:51].rstrip('-_')}-checkpoints"

    def uses_mtc(self, w: Workload) -> bool:
        """Whether the workload's workers mount the multi-tier checkpointing RAM disk: batch workloads, when on."""
        return self.resilience.mtc is not None and w.mode == "batch"

    @property
    def cache_location(self) -> str:
        return f"gs://{self.bucket_name}/{self.bucket.cache_prefix}"

    def service_account_id(self, purpose: str) -> str:
        """6-30 character SA ID, unique per stack: <cluster name>-<purpose>."""
        return service_account_id(self.cluster_name, purpose)

    def custom_role_id(self, prefix: str) -> str:
        """A custom role the bootstrap makes for this stack: <prefix>_<stack> within IAM's 64 characters of
        [a-zA-Z0-9_.]."""
        return f"{prefix}_" + re.sub(r"[^a-zA-Z0-9_]", "_", self.stack)[:63 - len(prefix)]

    def custom_role_name(self, role_id: str) -> str:
        """That role as IAM names it in a grant."""
        return f"projects/{self.project}/roles/{role_id}"

    @property
    def scratch_role_id(self) -> str:
        return self.custom_role_id("pathwaysScratch")

    @property
    def scratch_role_name(self) -> str:
        """The scratch custom role the bootstrap makes for this stack, as IAM names it in a grant."""
        return self.custom_role_name(self.scratch_role_id)

    @property
    def reservation_read_role_id(self) -> str:
        """The custom role the bootstrap makes for a stack that reads reservations live (slices[].readReservation)."""
        return self.custom_role_id("pathwaysReservationRead")

    @property
    def reservation_read_role_name(self) -> str:
        return self.custom_role_name(self.reservation_read_role_id)

    @property
    def bucket_create_role_id(self) -> str:
        """The custom role of storage.buckets.create alone (identities.BUCKET_CREATE_PERMISSIONS), the deploy identity's."""
        return self.custom_role_id("pathwaysBucketCreate")

    @property
    def bucket_create_role_name(self) -> str:
        return self.custom_role_name(self.bucket_create_role_id)

    @property
    def preflight_role_id(self) -> str:
        """The custom role of the live preflight's reads (identities.PREFLIGHT_PERMISSIONS), the preview identity's."""
        return self.custom_role_id("pathwaysPreflight")

    @property
    def preflight_role_name(self) -> str:
        return self.custom_role_name(self.preflight_role_id)

    @property
    def deletion_protection(self) -> bool:
        return True if self.cluster.deletion_protection is None else self.cluster.deletion_protection

    @property
    def head_nodes(self) -> int:
        if self.fleet is not None and self.fleet.role == "manager":
            return 0  # a manager runs no Pathways pod: its runs are dispatched to the workers
        if self.head_pool.node_count is not None:
            return self.head_pool.node_count
        for_runs = self.runs.head_nodes if self.runs else 0
        if self.active_workloads and not self.head_workloads:
            # only serve workloads: their leaders run on their slices, an empty pool costs nothing
            return for_runs
        return max(1, len(self.head_workloads)) + for_runs

    @property
    def head_workloads(self) -> list[Workload]:
        """The active workloads with a head pod on the head pool (every mode but serve); an isolation domain's team's
        run theirs on the domain's own head pool (teams[].isolationDomain)."""
        isolated = {t.name for t in self.teams if t.isolation_domain}
        return [w for w in self.active_workloads if w.on_head_pool and w.team not in isolated]

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

    def load_balancer_source_ranges(self, w: Workload) -> tuple[str, ...]:
        """The client ranges a serve workload's internal load balancer admits: its own, else the created subnet's
        node and pod ranges (the cluster's own clients); none without a load balancer, or where neither is known."""
        if w.serve is None or not w.serve.internal_load_balancer:
            return ()
        if w.serve.load_balancer_source_ranges:
            return tuple(w.serve.load_balancer_source_ranges)
        if self.network.create and self.cluster.existing is None:
            return (self.network.nodes_cidr, self.network.pods_cidr)
        return ()

    @property
    def gateway_workloads(self) -> tuple[Workload, ...]:
        """Serve workloads fronted by an inference gateway (serve.gateway.enabled)."""
        return tuple(w for w in self.workloads if w.mode == "serve" and w.serve is not None and w.serve.gateway.enabled)

    @property
    def creates_proxy_only_subnet(self) -> bool:
        """The stack makes the region's proxy-only subnet: a gateway needs one, and the stack makes the VPC."""
        return bool(self.gateway_workloads) and self.network.create and self.cluster.existing is None

    def workload_slices(self, w: Workload) -> int:
        """Slices the workload runs on: a serve workload's replicas (two slices each when disaggregated), a
        JobSet's `slices`, or its whole group (one slice on a pool set)."""
        if w.mode == "serve" and w.serve is not None:
            return w.serve.max_replicas * w.serve.slices_per_replica
        group = self.workload_group(w)
        return w.slices or (1 if group.dynamic else group.count)  # a pool set forms one slice unless asked for more


Workload.model_rebuild()
StackConfig.model_rebuild()

# A rule that spans keys: the problems it finds in a stack that passed the schema, [] when it holds.
StackRule = Callable[[StackConfig], list[Problem]]
# The same for one workload: (stack, index in workloads, workload).
WorkloadRule = Callable[[StackConfig, int, Workload], list[Problem]]
