"""The stack resolved once: every derived fact a builder needs, as plain values (Pulumi-free).

The config model (`config.StackConfig`) holds what the user wrote and the rules that judge it;
`config.resolve()` turns it, once, into a `ResolvedStack` whose workloads and queues carry every value the
builders render (JobSet, Kueue, monitoring, the plan summary and the cost estimate): the slice group a
workload runs on, its slices and chips, its images, restart limits, priority, namespace, queue, and the
names its pods are found by. Builders take these values and never go back to the config.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Optional

from components.model.capacity import dynamic_slicing
from components.model.capacity import tpu as tpu_catalog
from components.model.capacity.pools import SliceGroup
from components.model.capacity.tpu import TpuSlice
from components.model.cluster.alerting import MonitoringConfig
from components.model.cluster.bucket import BucketConfig
from components.model.cluster.fleet import ResolvedFleet
from components.model.cluster.kubernetes import GuardsConfig
from components.model.common import DEFAULT_BATCH_RESTARTS_PER_HOST, INT32_MAX, UNLIMITED_RESTARTS_PER_HOST
from components.model.cost.pricing import PricesConfig
from components.model.workloads.images import PATHWAYS_REGISTRY, derived_proxy_image
from components.model.workloads.isolation import IsolationDomain, shared_groups
from components.model.workloads.runs import Runs, run_queue, run_service_account
from components.model.workloads.storage import WRITE_ROLE, FileSystem
from components.model.workloads.teams import Team
from components.model.workloads.workload import DEFAULT_FAIL_ON_EXIT_CODES, Workload

# The worker replicatedJob. pathwaysutils' Shared Pathways Service client counts only the pods of
# `pathways-worker` (0.1.13 gke_utils.verify_pathways_service_is_up, PATHWAYS_WORKER_JOB_NAME); the
# other modes keep `worker`, the name their JobSets were created with (renaming replaces a JobSet).
WORKER_JOB = "worker"
SERVICE_WORKER_JOB = "pathways-worker"
HEAD_JOB = "pathways-head"


@dataclass(frozen=True)
class ResolvedWorkload:
    spec: Workload
    """What the user wrote (image, command, env, options): rendered as given."""
    name: str
    mode: str
    state: str
    namespace: str
    group: SliceGroup
    slices: int
    """Slices the workload uses (its own setting, else the whole group)."""
    server_image: str
    proxy_image: str
    restarts: int
    """JobSet failurePolicy.maxRestarts."""
    fail_on_exit_codes: tuple[int, ...]
    """Exit codes of the batch program that fail the JobSet at once (none without failure rules or for the other modes)."""
    worker_backoff_limit: int
    """Worker Job backoffLimit: hosts x restarts per host, capped at int32."""
    priority: str
    """pathways-<priority>: the PriorityClass and WorkloadPriorityClass."""
    worker_job: str
    coordinator: str
    """The head pod's address (the coordinator label JobSet sets): <name>-pathways-head-0-0.<subdomain>."""
    local_queue: Optional[str]
    """Its Kueue LocalQueue (None without Kueue)."""
    cluster_queue: Optional[str]
    profiling_secret: Optional[str]
    env_secret: Optional[str]
    cache_location: str
    """Its --gcs_scratch_location: the stack's compilation cache, or its isolation domain's."""
    artifacts_location: str
    """Where its profiles and HLO dumps go: the stack's artifacts bucket, or its isolation domain's."""
    load_balancer_source_ranges: tuple[str, ...] = ()
    """A serve workload's internal load balancer: the client ranges it admits."""
    mtc_mount_path: Optional[str] = None
    """Where its workers and colocated-Python sidecar mount the multi-tier checkpointing RAM disk (resilience.mtc)."""
    service_account: Optional[str] = None
    """Its pods' Kubernetes service account when it mounts a bucket (the principal of its bucket grants), else the
    namespace's default."""
    rungs: tuple[SliceGroup, ...] = ()
    """The slice groups Kueue may run it on, in order: its group, then the group's ladder (slices[].ladder)."""
    formed: Optional[TpuSlice] = None
    """On a pool set: the slice GKE forms for it (its topology); None on a group of fixed slices."""

    @property
    def tpu(self) -> TpuSlice:
        """One of its slices: the one formed on a pool set, else its group's."""
        return self.formed or self.group.tpu

    @property
    def active(self) -> bool:
        """The stack runs a JobSet for it (a finished batch run is left alone)."""
        return self.state != "finished"

    @property
    def chips(self) -> int:
        return self.slices * self.tpu.chips

    @property
    def hosts(self) -> int:
        return self.tpu.hosts

    @property
    def idle_slices(self) -> int:
        """Slices the workload keeps up however idle: an autoscaled endpoint's minReplicas, else all of them."""
        sv = self.spec.serve
        return sv.min_replicas * sv.slices_per_replica if sv else self.slices

    @property
    def slices_per_replica(self) -> int:
        """Slices one serving replica (a LeaderWorkerSet group) spans: one, or prefill + decode."""
        return self.spec.serve.slices_per_replica if self.spec.serve else self.slices

    @property
    def lws_size(self) -> int:
        """leaderWorkerTemplate.size: one worker per TPU host of the replica's slices, plus the leader; on the direct
        runtime the replica is one pod (lws_direct.py)."""
        if self.spec.serve is not None and self.spec.serve.direct:
            return 1
        return self.hosts * self.slices_per_replica + 1


@dataclass(frozen=True)
class ResolvedMtc:
    """Multi-tier checkpointing, resolved (resilience.py has the sources)."""

    bucket: str
    in_memory_volume_size: str
    mount_path: str
    gcs_fuse_mount_options: tuple[str, ...]
    slice_groups: tuple[str, ...]
    """The slice groups (a ladder's rungs included) whose workloads mount it: one CheckpointConfiguration each."""


@dataclass(frozen=True)
class ResolvedStack:
    stack: str
    project: str
    region: str
    zone: str
    location: str
    """The control plane's location: the region when regional, else the zone."""
    cluster_name: str
    namespace: str
    """The workload namespace."""
    cache_location: str
    artifacts_location: str
    artifacts_bucket: str
    artifacts_prefix: str
    bucket_name: str
    bucket: BucketConfig
    kueue: bool
    head_machine_type: str
    head_nodes: int
    head_scale_to_zero: bool
    """The head pool autoscales from 0: head VMs run only while head pods do."""
    system_machine_type: str
    system_min_nodes: int
    system_max_nodes: int
    proxy_machine_type: Optional[str]
    proxy_nodes: int
    node_pools: int
    node_pool_concurrency: int
    slices: tuple[SliceGroup, ...]
    workloads: tuple[ResolvedWorkload, ...]
    monitoring: MonitoringConfig
    prices: PricesConfig
    labels: dict[str, str]
    """gcp:defaultLabels: on every GCP resource (the provider) and Kubernetes object (the program)."""
    existing_cluster: bool = False
    owned_buckets: frozenset[str] = frozenset()
    """The buckets the stack makes (cluster/bucket_grants.owned_buckets): grants on any other need the bootstrap's word."""
    """cluster.existing: the stack makes only the Kubernetes layer; nodes, buckets and alerts are someone else's."""
    install_controllers: bool = True
    """The stack installs the JobSet, Kueue and LWS controllers (kubernetes.installControllers)."""
    install_metrics_adapter: bool = True
    """kubernetes.installMetricsAdapter: the Custom Metrics Stackdriver Adapter, when a serve workload autoscales."""
    metrics_adapter_certificate_generation: int = 1
    """kubernetes.metricsAdapterCertificateGeneration: names the adapter's seed and serving Secrets (a raise rotates)."""
    head_node_pool: Optional[str] = None
    """headPool.nodePool: the head pods select this existing pool by GKE's own label, not pathways/role=head."""
    shared_cluster_queue: Optional[str] = None
    """kubernetes.kueue.clusterQueue: a ClusterQueue made elsewhere, which the stack's LocalQueues point at; the stack
    makes no ResourceFlavor or ClusterQueue."""
    guards: GuardsConfig = GuardsConfig()
    """kubernetes.guards: the admission guards on, and the namespaces they let onto the Pathways nodes besides the stack's."""
    mtc: Optional[ResolvedMtc] = None
    """resilience.mtc: multi-tier checkpointing on the cluster (add-ons, bucket, CheckpointConfigurations)."""
    runs: Optional[Runs] = None
    """pathways:runs: the stack takes ad-hoc runs (their queues and submitters' Role)."""
    file_systems: tuple[FileSystem, ...] = ()
    """pathways:storage.fileSystems: one PersistentVolume and claim each in the workload namespace."""
    csi_drivers: tuple[str, ...] = ()
    """The GKE CSI driver add-ons the mounts need (gcsfuse, filestore, lustre)."""
    fleet: Optional[ResolvedFleet] = None
    """pathways:fleet, resolved: a manager holds no slices (its groups are its workers'), a worker publishes its queues."""
    group_subjects: tuple[str, ...] = ()
    """The Google groups the stack names in RBAC (runs.submitters, service clients)."""
    teams: tuple[Team, ...] = ()
    """pathways:teams: a ClusterQueue, namespace and run queue each, in the stack's cohort."""
    security_group: Optional[str] = None
    """cluster.securityGroup: Google Groups for RBAC on the cluster the stack makes."""
    undelivered: frozenset[str] = frozenset()
    """Slice groups whose future reservation is not delivered yet (startTime ahead): no pools, no queue quota; they
    come with the first `pulumi up` after startTime."""
    domains: tuple[IsolationDomain, ...] = ()
    """teams[].isolationDomain: each domain's groups, node account, buckets and queue (isolation.py)."""

    @property
    def shared_slices(self) -> tuple[SliceGroup, ...]:
        """The slice groups of no isolation domain: the stack's own queues and the teams without a domain use these."""
        return shared_groups(self.slices, self.teams)

    def group_domain(self, group: str) -> Optional[IsolationDomain]:
        """The isolation domain a slice group (by name) belongs to, None for a shared group."""
        return next((d for d in self.domains if group in d.groups), None)

    def isolation_taint(self, group: str) -> Optional[tuple[str, str, str]]:
        """The taint (and key=value label) of a group's nodes when it is an isolation domain's."""
        d = self.group_domain(group)
        return d.taint if d else None

    def team_domain(self, team: Team) -> Optional[IsolationDomain]:
        return next((d for d in self.domains if team.name in d.teams), None)

    @property
    def fleet_manager(self) -> bool:
        return self.fleet is not None and self.fleet.manager

    @property
    def local_queue_names(self) -> tuple[str, ...]:
        """<namespace>/<name> of every LocalQueue the stack makes: its workloads', then its runs' (one per queue)."""
        if not self.kueue:
            return ()
        return tuple(dict.fromkeys([*(f"{w.namespace}/{w.local_queue}" for w in self.active_workloads),
                                    *(f"{self.namespace}/{q}" for q in self.run_queues.values()),
                                    *(f"{t.team_namespace}/{run_queue(t.cluster_queue)}" for t in self.teams)]))

    def group_pools(self, group: SliceGroup) -> int:
        """Node pools the group has now: its slices and spares, or none before its future reservation is delivered."""
        return 0 if group.name in self.undelivered else group.pools

    def group_slices(self, group: SliceGroup) -> int:
        """Slices the group gives Kueue now (its quota): none before its future reservation is delivered."""
        return 0 if group.name in self.undelivered else group.count

    @property
    def active_workloads(self) -> tuple[ResolvedWorkload, ...]:
        return tuple(w for w in self.workloads if w.active)

    @property
    def external_bucket_grants(self) -> list[tuple[str, str, str, str]]:
        """bucket_grants on buckets the stack does not make (owned_buckets)."""
        return [g for g in self.bucket_grants if g[0] not in self.owned_buckets]

    @property
    def run_service_account(self) -> str:
        """The runs' Kubernetes service account: its name carries the stack's (runs.run_service_account)."""
        return run_service_account(self.stack)

    @property
    def bucket_grants(self) -> list[tuple[str, str, str, str]]:
        """(bucket, role, namespace, Kubernetes service account) of every bucket mount, workloads' and runs': the
        grants the bootstrap makes. A bucket one account mounts both ways gets the write role only (it holds the read)."""
        grants = [(m.bucket, m.role, w.namespace, w.service_account)
                  for w in self.active_workloads if w.service_account for m in w.spec.mounts if m.bucket]
        if self.runs is not None:
            grants += [(b.name, b.role, self.namespace, self.run_service_account) for b in self.runs.buckets]
            # a team's buckets: its runs' account in its own namespace (another principal than the stack's, #74.1)
            grants += [(b.name, b.role, t.team_namespace, self.run_service_account) for t in self.teams for b in t.buckets]
        best: dict[tuple[str, str, str], str] = {}
        for bucket, role, ns, sa in grants:
            if best.get((bucket, ns, sa)) != WRITE_ROLE:
                best[(bucket, ns, sa)] = role
        return [(bucket, role, ns, sa) for (bucket, ns, sa), role in best.items()]

    @property
    def run_queues(self) -> dict[str, str]:
        """Slice group -> the LocalQueue (in the stack's namespace) its ad-hoc runs use; empty without runs or Kueue."""
        if self.runs is None or not self.kueue:
            return {}
        return {g.name: run_queue(name) for name, groups in self.queue_shards for g in groups}

    @property
    def workload_namespaces(self) -> list[str]:
        """Namespaces the stack's JobSets live in, the workload namespace first, then the teams'."""
        return list(dict.fromkeys([self.namespace, *(w.namespace for w in self.active_workloads),
                                   *(t.team_namespace for t in self.teams)]))

    def team(self, name: Optional[str]) -> Optional[Team]:
        return next((t for t in self.teams if t.name == name), None) if name else None

    def team_owned(self, group: SliceGroup) -> int:
        """Slices of the group the teams own (pathways:teams): the stack's own ClusterQueue holds the rest."""
        return sum(t.slices[group.name].slices for t in self.teams if group.name in t.slices)

    def owned_chips(self, team: Team) -> int:
        """TPU chips a team owns across the groups."""
        return sum(team.slices[g.name].slices * g.tpu.chips for g in self.slices if g.name in team.slices)

    def team_run_queue(self, team: Team) -> str:
        """The LocalQueue in the team's namespace its runs use: one for every group (the team's ClusterQueue lists all)."""
        return run_queue(team.cluster_queue)

    @property
    def serve_workloads(self) -> tuple[ResolvedWorkload, ...]:
        return tuple(w for w in self.active_workloads if w.mode == "serve")

    @property
    def autoscaled_workloads(self) -> tuple[ResolvedWorkload, ...]:
        """Serve workloads with serve.autoscale (their HorizontalPodAutoscalers read the custom metrics API)."""
        return tuple(w for w in self.serve_workloads if w.spec.serve is not None and w.spec.serve.autoscale is not None)

    @property
    def jobset_workloads(self) -> tuple[ResolvedWorkload, ...]:
        return tuple(w for w in self.active_workloads if w.mode != "serve")

    @property
    def service_workload(self) -> Optional[ResolvedWorkload]:
        return next((w for w in self.active_workloads if w.mode == "service"), None)

    @property
    def queue_shards(self) -> list[tuple[str, tuple[SliceGroup, ...]]]:
        """(ClusterQueue, its slice groups): the stack's own queues, or the one it shares (kubernetes.kueue.clusterQueue)."""
        if self.shared_cluster_queue is not None:
            return [(self.shared_cluster_queue, self.slices)]
        return queue_shards(self.shared_slices)


# Kueue: a ClusterQueue resource group holds at most 64 flavors (v1beta2 CRD, resourceGroups[].flavors
# maxItems 64), one of them the head pool's; more slice groups need more ClusterQueues (in one cohort).
QUEUE = "pathways"
MAX_FLAVORS_PER_RESOURCE_GROUP = 64
GROUPS_PER_QUEUE = MAX_FLAVORS_PER_RESOURCE_GROUP - 1


def ladder_order(groups: tuple[SliceGroup, ...]) -> Optional[tuple[SliceGroup, ...]]:
    """The groups in the order Kueue must try their flavors: each ladder's rungs after its group and in its order,
    otherwise as listed. None when two ladders order the same groups both ways (no order serves both)."""
    if not any(g.ladder for g in groups):
        return groups  # the common case, on every ClusterQueue lookup: nothing to order
    first: dict[str, int] = {}
    for i, g in enumerate(groups):
        first.setdefault(g.name, i)  # (a repeated name is another rule's to refuse)
    before: list[set[int]] = [set() for _ in groups]  # group -> groups that must come first
    for i, g in enumerate(groups):
        chain = [i, *(first[n] for n in g.ladder if n in first)]
        for a, b in itertools.pairwise(chain):
            if a != b:
                before[b].add(a)
    out: list[int] = []
    placed: set[int] = set()
    while len(out) < len(groups):
        ready = next((i for i in range(len(groups)) if i not in placed and before[i] <= placed), None)
        if ready is None:
            return None
        out.append(ready)
        placed.add(ready)
    return tuple(groups[i] for i in out)


def queue_shards(groups: tuple[SliceGroup, ...]) -> list[tuple[str, tuple[SliceGroup, ...]]]:
    """(ClusterQueue name, its slice groups): one queue named `pathways` while the fixed groups fit one resource
    group, else pathways-0, pathways-1, ... of at most 63 groups each; and each pool set (slices[].subBlocks) in a
    queue of its own, slices-<group>, after them. A pool set's flavor requires the slice controller's admission check,
    and Kueue makes a ClusterQueue whose check is not Active inactive as a whole (Kueue v0.19.2
    pkg/cache/scheduler/clusterqueue.go updateQueueStatus, reason AdmissionCheckInactive): alone in its queue, a pool set whose controller is missing or down holds its own
    workloads only, never the fixed slices'."""
    groups = ladder_order(groups) or groups  # (config checks refuse ladders with no order)
    fixed = tuple(g for g in groups if not g.dynamic)
    chunks = [fixed[i:i + GROUPS_PER_QUEUE] for i in range(0, len(fixed), GROUPS_PER_QUEUE)] or [()]
    shards = [(QUEUE, chunks[0])] if len(chunks) == 1 else [(f"{QUEUE}-{i}", chunk) for i, chunk in enumerate(chunks)]
    return shards + [(pool_set_queue(g), (g,)) for g in groups if g.dynamic]


def pool_set_queue(group: SliceGroup) -> str:
    """A pool set's own ClusterQueue (beside its Topology and AdmissionCheck of the same name: other kinds)."""
    return f"slices-{group.name}"


def cluster_queue_name(groups: tuple[SliceGroup, ...], group: SliceGroup) -> str:
    return next(name for name, members in queue_shards(groups) if group in members)


def formed_slice(group: SliceGroup, w: Workload) -> Optional[TpuSlice]:
    """On a pool set, the slice GKE forms for the workload (its topology, on the cube's machine type)."""
    if not group.dynamic or w.topology is None:
        return None
    return tpu_catalog.resolve(dynamic_slicing.SUB_BLOCK_FAMILY, w.topology, dynamic_slicing.SUB_BLOCK_MACHINE_TYPE)


def worker_backoff_limit(tpu: TpuSlice, w: Workload) -> int:
    """Worker Job backoffLimit: hosts x restarts per host (4 for batch, unlimited otherwise), capped at int32."""
    per_host = w.worker_restarts_per_host or (DEFAULT_BATCH_RESTARTS_PER_HOST if w.mode == "batch" else UNLIMITED_RESTARTS_PER_HOST)
    return min(tpu.hosts * per_host, INT32_MAX)


def fail_on_exit_codes(w: Workload) -> tuple[int, ...]:
    """The batch program's exit codes that fail its JobSet at once: the workload's, or the defaults."""
    if w.mode != "batch" or w.on_failure is None:
        return ()
    codes = w.on_failure.fail_on_exit_codes
    return DEFAULT_FAIL_ON_EXIT_CODES if codes is None else tuple(codes)


def server_image(pathways_version: Optional[str], w: Workload) -> str:
    return w.server_image or f"{PATHWAYS_REGISTRY}/server:{pathways_version}"


def proxy_image(pathways_version: Optional[str], w: Workload) -> str:
    """The IFRT proxy from the same release as the server: given, derived from a tagged server
    override (.../server:T -> .../proxy_server:T, as pathwaysutils and xpk derive it), or the default."""
    if w.proxy_image:
        return w.proxy_image
    if w.server_image:
        derived = derived_proxy_image(w.server_image)
        if derived:
            return derived
    return f"{PATHWAYS_REGISTRY}/proxy_server:{pathways_version}"
