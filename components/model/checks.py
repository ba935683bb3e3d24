"""Every rule that spans keys, in the order load() reports its problems (Pulumi-free).

A rule is a function of a stack that passed the schema (``stack.StackConfig``) returning its problems, [] when it
holds (``stack.StackRule``); a workload rule also takes the workload and its index (``stack.WorkloadRule``). Each
feature keeps its rules beside its model, in its own ``<feature>_checks`` module, each rule with a comment naming
the document or code it comes from:

    cluster_checks    location, existing cluster, maintenance, GKE version, control-plane endpoint, network
    pools_checks      sizes and capacity, slice groups and their sharing, the head pool
    dynamic_slicing_checks  pool sets (subBlocks) and the topologies workloads ask of them
    admission_checks  every workload within what its Kueue ClusterQueue can ever hold (queue_shares)
    workload_checks   names and Services, slice-group references, the JobSet head, sidecar, images, modes
    serving_checks    mode: serve (LeaderWorkerSet)
    service_checks    mode: service (Shared Pathways Service)
    names_checks      names derived from the stack and project

A new feature (a fleet, a capacity ladder, failure rules, a serving engine) writes ``<feature>_checks.py`` with its
rules and a tuple of them, ``RULES`` (or ``WORKLOAD_RULES``), and registers it here with one line at the end of
STACK_RULES (or PLACED_WORKLOAD_RULES): ``*fleet_checks.RULES,``. The order below is the order users see
problems in (tests/test_config_rules.py pins it, and that every rule is listed once); a rule never depends on
another having run.
"""

from __future__ import annotations

from components.model import names_checks
from components.model.capacity import admission_checks, dynamic_slicing_checks, pools_checks
from components.model.cluster import cluster_checks, existing_checks, fleet_checks
from components.model.errors import Problem
from components.model.stack import StackConfig, StackRule, WorkloadRule
from components.model.workloads import (
    isolation_checks,
    resilience_checks,
    runs_checks,
    secrets_checks,
    service_checks,
    serving_checks,
    storage_checks,
    teams_checks,
    workload_checks,
)
from components.model.workloads.workload import Workload

# Rules of each workload, whatever its slice group; slice_group, the last, reports a sliceGroup that names none.
EVERY_WORKLOAD_RULES: tuple[WorkloadRule, ...] = (
    workload_checks.unique_services,        # one headless or HTTP Service a name in a namespace
    workload_checks.unique_names,
    workload_checks.slice_group,            # sliceGroup names a group (required when there are several)
)

# Rules of each workload whose sliceGroup names a group: they read the group.
PLACED_WORKLOAD_RULES: tuple[WorkloadRule, ...] = (
    pools_checks.workload_slices,           # within the group's count (spares are not for workloads)
    dynamic_slicing_checks.topology,        # on a pool set, a legal topology that fits it
    serving_checks.serve,                   # mode: serve and its serve: settings
    workload_checks.coordinator_label,      # the JobSet coordinator label within 63 characters
    workload_checks.user_container,         # data loaders and /dev/shm within the user container's limits
    workload_checks.elastic,                # maxMissingSlices within the workload's slices
    workload_checks.sidecar_room,           # the colocated-Python sidecar leaves the worker half its VM
    workload_checks.same_release_images,    # proxy and server of one Pathways release
    workload_checks.sidecar_jax,            # the sidecar built for pathwaysVersion's JAX
    service_checks.service,                 # mode: service and its service: settings
    workload_checks.finished_state,         # finished is for batch runs
    workload_checks.xla_flags,              # each XLA flag once, none a typed key sets
    workload_checks.interactive_keys,       # no profiling or persistence without a user container
    workload_checks.batch_image,            # a batch workload's image is required
    workload_checks.user_container_keys,    # no env, image, command or args without a user container
    workload_checks.on_failure_keys,        # exit-code rules for batch only, no failure rules on serve
)


def _placed(cfg: StackConfig, w: Workload) -> bool:
    """Whether the workload's sliceGroup names a group (workload_checks.slice_group reports it when not)."""
    if w.slice_group is None:
        return len(cfg.slices) == 1
    return any(g.name == w.slice_group for g in cfg.slices)


def each_workload(cfg: StackConfig) -> list[Problem]:
    """The workload rules above, workload by workload (a workload's problems together, in list order)."""
    problems: list[Problem] = []
    for i, w in enumerate(cfg.workloads):
        for rule in EVERY_WORKLOAD_RULES:
            problems += rule(cfg, i, w)
        if _placed(cfg, w):
            for rule in PLACED_WORKLOAD_RULES:
                problems += rule(cfg, i, w)
    return problems


STACK_RULES: tuple[StackRule, ...] = (
    pools_checks.capacity,                  # TPU pools, nodes per cluster, node-pool lanes
    cluster_checks.existing_cluster,        # keys that mean nothing on a cluster the stack does not create
    cluster_checks.maintenance,             # exclusions GKE refuses (ended, or outlasting the minor's support)
    cluster_checks.zone_in_region,
    cluster_checks.auto_upgrade_in_channel,  # node auto-upgrade stays on in a release channel
    cluster_checks.address_space_fits,      # the subnet's ranges hold every node and its pod block
    pools_checks.unique_group_names,
    each_workload,                          # EVERY_WORKLOAD_RULES, then PLACED_WORKLOAD_RULES, per workload
    pools_checks.sharing,                   # spares need restarts; without Kueue, shared groups must fit
    pools_checks.queued_provisioning,       # Kueue makes the requests; no spares; runs that end
    pools_checks.ladders,                   # rungs: same slices, one order, one queue; runs that end
    pools_checks.future_reservations,       # what a calendar-mode request may reserve, where and how long
    pools_checks.tpu_zones_offered,         # the family is offered in gcp:zone (Google's zone table)
    workload_checks.pathways_version,       # required when workloads are set
    pools_checks.head_pool,                 # one head pod per node, each fits its machine type
    names_checks.derived_names,             # derived cluster, bucket and service account names GCP accepts
    cluster_checks.gke_floor,               # minMasterVersion meets the TPU families' minimum
    names_checks.distinct_buckets,          # the artifacts bucket is not the scratch bucket
    cluster_checks.control_plane_endpoint,  # authorized networks GKE accepts for the endpoint
    cluster_checks.subnetwork_region,       # an existing subnetwork in gcp:region
    cluster_checks.private_nodes,           # a public node needs a public endpoint
    cluster_checks.deletion_protection,     # protected: true keeps deletion protection on
    cluster_checks.google_groups,           # a Google group in RBAC needs Google Groups for RBAC on the cluster
    *resilience_checks.RULES,               # multi-tier checkpointing: sidecar, RAM disk room, its bucket
    *runs_checks.RULES,                     # ad-hoc runs: their queue's name is no workload's
    *teams_checks.RULES,                    # teams: Kueue and runs, own namespaces, shares the pools hold
    *isolation_checks.RULES,                # isolation domains: own groups, workloads and ladders, what holds them
    *fleet_checks.RULES,                    # a manager: Kueue, runs, no pools; a worker: runs, its endpoint
    *storage_checks.RULES,                  # mounts: batch only, declared file systems, clear of the MTC mount
    *existing_checks.RULES,                 # a cluster made elsewhere as it is: named pools, shared queue, scoped guards
    *secrets_checks.RULES,                  # no secret-looking plain value in a protected stack
    *dynamic_slicing_checks.RULES,          # pool sets: the Rapid channel, Kueue, no team shares or ladders
    *admission_checks.RULES,                # every workload within what its ClusterQueue can ever hold
)


# Rules a run (infra.run, config.load_run) is not judged by: a fleet manager takes runs, not declared workloads.
NOT_FOR_RUNS: tuple[StackRule, ...] = (fleet_checks.manager_workloads,)


def cross_checks(cfg: StackConfig) -> list[Problem]:
    """Every rule's problems, in STACK_RULES order."""
    problems: list[Problem] = []
    for rule in STACK_RULES:
        problems += rule(cfg)
    return problems
