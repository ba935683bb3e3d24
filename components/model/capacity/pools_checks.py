"""Rules of the node pools (their schema: ``pools``): sizes and capacity, slice groups shared by workloads,
the head pool. Each with its source; registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

import math

from components.model.capacity import machines, rollout, tpu_zones
from components.model.common import MAX_NODES_PER_CLUSTER, MAX_TPU_POOLS
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig
from components.model.workloads.workload import Workload, head_pod_demand


def capacity(cfg: StackConfig) -> list[Problem]:
    """What GKE (and this project's planning time) can hold: common.py's bounds, rollout.py's lanes."""
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


def _first_group_index(cfg: StackConfig, name: str) -> int:
    """The index of the first slice group of that name (the one a workload's sliceGroup names)."""
    return next(j for j, g in enumerate(cfg.slices) if g.name == name)


def unique_group_names(cfg: StackConfig) -> list[Problem]:
    """A slice group's name names its node pools and queues: one group a name."""
    problems = []
    for i, g in enumerate(cfg.slices):
        first = _first_group_index(cfg, g.name)
        if first < i:
            problems.append(Problem(config_key(("slices", i, "name")), f"{g.name!r} is already used by slices[{first}]; slice group names must be unique"))
    return problems


def workload_slices(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """A workload takes at most its group's slices (or, on a ladder, its largest rung's: all its slices run on one
    rung); the group's spares stand by for restarts."""
    if cfg.fleet is not None and cfg.fleet.role == "manager":
        return []  # a fleet manager's groups are its workers': its Kueue admits a run on their summed quota, or never
    group = cfg.workload_group(w)
    if group.dynamic:
        return []  # slices formed on a pool set: dynamic_slicing_checks.topology judges their fit
    rungs = [group, *(g for g in cfg.slices if g.name in group.ladder)]
    most = max(g.count for g in rungs)
    if w.slices is None or w.slices <= most:
        return []
    where = f"group {group.name!r}" if len(rungs) == 1 else f"the largest rung of group {group.name!r}'s ladder"
    return [Problem(config_key(("workloads", i, "slices")), (
        f"{w.slices} exceeds the {most} slice(s) of {where} (spares are not for workloads); use "
        f"1..{most} or raise slices[{_first_group_index(cfg, group.name)}].count"
    ))]


def sharing(cfg: StackConfig) -> list[Problem]:
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


def head_pool(cfg: StackConfig) -> list[Problem]:
    """One head pod per node (exclusive placement by hostname), and each head pod fits its node (machines.py)."""
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


def queued_provisioning(cfg: StackConfig) -> list[Problem]:
    """A queued-provisioning group gets nodes only through the ProvisioningRequests Kueue makes for the workloads it
    admits (Kueue's ProvisioningRequest admission check; GKE "flex-start with queued provisioning"): so Kueue must
    run, no pool holds a standing spare, and only runs that end (batch, interactive) use it: GKE gives the nodes back
    when the request's run ends (at most 7 days on flex-start), which an endpoint or a shared service never does."""
    problems = []
    for i, g in enumerate(cfg.slices):
        if not g.queued_provisioning:
            continue
        problems += _needs_kueue(cfg, ("slices", i, "queuedProvisioning"), "true needs Kueue, which makes each workload's "
                                 "ProvisioningRequest", "queuedProvisioning")
        if g.spares:
            problems.append(Problem(config_key(("slices", i, "spares")), (
                f"{g.spares} with queuedProvisioning: its pools hold no node outside a workload's request, so no spare "
                "slice can stand by; use 0, or plain flex-start")))
    return problems + _runs_that_end_only(cfg, {g.name for g in cfg.slices if g.queued_provisioning}, (
        "has queuedProvisioning, whose slices GKE takes back when a run ends (at most 7 days): a {mode} workload runs "
        "until removed; put it on a group without queuedProvisioning"))


def _needs_kueue(cfg: StackConfig, key: tuple, what: str, remove: str) -> list[Problem]:
    """A setting only Kueue carries out: refused, naming it, while kubernetes.kueue.enabled is false."""
    if cfg.kubernetes.kueue.enabled:
        return []
    return [Problem(config_key(key), f"{what}; set kubernetes.kueue.enabled: true, or remove {remove}")]


def _runs_that_end_only(cfg: StackConfig, groups: set[str], why: str) -> list[Problem]:
    """Batch and interactive workloads only on these groups: each other workload there, refused with `why`."""
    problems = []
    for i, w in enumerate(cfg.workloads):
        group = w.slice_group or (cfg.slices[0].name if cfg.slices else None)
        if group in groups and w.mode not in ("batch", "interactive"):
            problems.append(Problem(config_key(("workloads", i, "sliceGroup")), f"{group!r} " + why.format(mode=w.mode)))
    return problems


def ladders(cfg: StackConfig) -> list[Problem]:
    """A capacity ladder (slices[].ladder): rungs are other groups of the same slices, each on one ladder's lower
    rungs only (a rung has no ladder of its own), in one order Kueue can try them, in the top group's ClusterQueue;
    Kueue admits the workloads (it alone picks the rung), and only runs that end climb it (an endpoint's replicas
    and a shared service stay where they started)."""
    from components.model.resolved import ladder_order, queue_shards

    problems = []
    by_name = {g.name: g for g in cfg.slices}
    for i, g in enumerate(cfg.slices):
        if not g.ladder:
            continue
        key = ("slices", i, "ladder")
        problems += _needs_kueue(cfg, key, "needs Kueue, which picks each workload's rung", "the ladder")
        seen: set[str] = set()
        for j, name in enumerate(g.ladder):
            rung = by_name.get(name)
            if rung is None:
                problems.append(Problem(config_key((*key, j)), f"{name!r} is not a slice group; use one of {', '.join(sorted(by_name))}"))
            elif name == g.name or name in seen:
                problems.append(Problem(config_key((*key, j)), f"{name!r} is already on this ladder; list each rung once, after the group itself"))
            elif rung.tpu != g.tpu:
                problems.append(Problem(config_key((*key, j)), (
                    f"{name!r} has {rung.tpu.name} slices ({rung.tpu.machine_type}); a rung holds the same slices as the group "
                    f"({g.tpu.name}, {g.tpu.machine_type}): a workload's pods fit any rung")))
            elif rung.ladder:
                problems.append(Problem(config_key((*key, j)), (
                    f"{name!r} has a ladder of its own; a ladder has one top: list all its rungs here, and remove "
                    f"slices[{_first_group_index(cfg, name)}].ladder")))
            seen.add(name)
    if problems:
        return problems
    if ladder_order(tuple(cfg.slices)) is None:
        return [Problem(config_key(("slices",)), "two ladders put the same slice groups in opposite orders; Kueue tries a "
                                                 "ClusterQueue's flavors in one order: make the ladders agree")]
    shard = {g.name: name for name, groups in queue_shards(tuple(cfg.slices)) for g in groups}
    for i, g in enumerate(cfg.slices):
        apart = [n for n in g.ladder if shard[n] != shard[g.name]]
        if apart:
            problems.append(Problem(config_key(("slices", i, "ladder")), (
                f"rungs {', '.join(apart)} fall in another ClusterQueue than {g.name!r} (a queue holds 63 slice groups); "
                "list the ladder's groups next to each other")))
    return problems + _runs_that_end_only(cfg, {g.name for g in cfg.slices if g.ladder}, (
        "has a capacity ladder, whose rung Kueue picks for each run; a {mode} workload stays where it started: put it on "
        "a group without a ladder"))


def tpu_zones_offered(cfg: StackConfig) -> list[Problem]:
    """Each group's TPU family is offered in gcp:zone, as Google's zone table lists it (tpu_zones); a zone outside the
    table's regions is not judged, and unlistedZone lets a group through (a notice in the plan says so). A calendar
    request has its own, narrower zone list (future_reservations)."""
    problems = []
    if not tpu_zones.covered(cfg.zone):
        return problems
    for i, g in enumerate(cfg.slices):
        family = g.tpu.family
        if g.unlisted_zone or g.future_reservation or tpu_zones.offered(family, cfg.zone):
            continue
        problems.append(Problem(config_key(("slices", i, "tpu")), (
            f"TPU {family} is not offered in gcp:zone {cfg.zone}: {tpu_zones.SOURCE} lists it in "
            f"{tpu_zones.zones_text(family)}, so GKE would refuse the node pool; choose one of those zones, or set "
            f"slices[{i}].unlistedZone: true if Google offers it to your project there")))
    return problems


# Compute Engine, "Create a future reservation request in calendar mode", limitations for TPUs (read 2026-12):
# family -> (chips a request may reserve, zones by workload type). The vm families and accelerator type names are
# the Compute API's (terraform-provider-google website/docs/r/compute_future_reservation: aggregate_reservation).
# Zones: the union of that page and Cloud TPU's "Request a short-term reservation using calendar mode" (copy of
# 2025-12-18: v6e also europe-west4-a; v5e BATCH also europe-west4-b, SERVING us-south1-a; TPU7x in preview,
# us-central1-c, without published chip counts, so not offered here); Cloud TPU's consumption-options table agrees
# with the first. A zone either lists is let through: Compute Engine refuses the rest at `pulumi up`.
_V6E_CALENDAR_ZONES = ("asia-northeast1-b", "europe-west4-a", "us-east5-a", "us-east5-b")
CALENDAR_TPUS: dict[str, tuple[tuple[int, ...], dict[str, tuple[str, ...]]]] = {
    "v6e": ((1, 4, 8, 16, 32, 64, 128, 256), {"BATCH": _V6E_CALENDAR_ZONES, "SERVING": _V6E_CALENDAR_ZONES}),
    "v5p": ((4, 8, 16, 32, 64, 128, 256, 512, 1024), {"BATCH": ("us-east5-a",), "SERVING": ("us-east5-a",)}),
    "v5e": ((1, 4, 8, 16, 32, 64, 128, 256), {"BATCH": ("europe-west4-b", "us-west4-b"), "SERVING": ("us-central1-a", "us-south1-a")}),
}
CALENDAR_V5E_SERVING_CHIPS = (1, 4, 8)
CALENDAR_MAX_DAYS = 90


def future_reservations(cfg: StackConfig) -> list[Problem]:
    """A calendar-mode future reservation request Compute Engine accepts (CALENDAR_TPUS): a TPU family and zone it
    offers, a chip count it takes (the group's slices and spares), 1 to 90 days, in this project, lasting as long as
    the group is needed."""
    problems = []
    for i, g in enumerate(cfg.slices):
        fr = g.future_reservation
        if fr is None:
            continue
        key = ("slices", i, "futureReservation")
        offer = CALENDAR_TPUS.get(g.tpu.family)
        if offer is None:
            problems.append(Problem(config_key(key), (
                f"calendar-mode requests reserve TPU {', '.join(CALENDAR_TPUS)} only, not {g.tpu.family}; use another capacity for "
                "this group")))
            continue
        counts, zones = offer
        if g.tpu.family == "v5e" and fr.workload_type == "SERVING":
            counts = CALENDAR_V5E_SERVING_CHIPS
        if cfg.zone not in zones[fr.workload_type]:
            problems.append(Problem(config_key((*key, "workloadType")), (
                f"{fr.workload_type}: calendar mode offers TPU {g.tpu.family} for it in {', '.join(zones[fr.workload_type])} only, "
                f"not gcp:zone {cfg.zone}")))
        chips = g.pools * g.tpu.chips
        if chips not in counts:
            problems.append(Problem(config_key(key), (
                f"{chips} chips ({g.pools} slice(s) and spares of {g.tpu.chips}); a calendar-mode request reserves "
                f"{', '.join(map(str, counts))} TPU {g.tpu.family} chips: change slices[{i}].count or spares")))
        days = (fr.end_time - fr.start_time).total_seconds() / 86400
        if not 1 <= days <= CALENDAR_MAX_DAYS:
            problems.append(Problem(config_key((*key, "endTime")), (
                f"{fr.end_time:%Y-%m-%dT%H:%MZ} is {days:g} days after startTime; a calendar-mode request lasts 1 to "
                f"{CALENDAR_MAX_DAYS} days")))
        if g.reservation and g.reservation.startswith("projects/"):
            problems.append(Problem(config_key(("slices", i, "reservation")), (
                f"{g.reservation} is another project's path; the stack requests its future reservation in this project: "
                "give the reservation's name alone")))
        if g.needed_until is not None and g.needed_until > fr.end_time.date():
            problems.append(Problem(config_key(("slices", i, "neededUntil")), (
                f"{g.needed_until} is after the future reservation's endTime {fr.end_time:%Y-%m-%d}, when its VMs go; "
                "end the need sooner or request a later end")))
    return problems
