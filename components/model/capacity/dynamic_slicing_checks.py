"""Rules of pool sets (slices[].subBlocks) and the topologies workloads ask of them (docs/dynamic-slicing.md).

Each with its source; registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

from components.model.capacity import dynamic_slicing as ds
from components.model.capacity.slice_placement import PoolSet
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig
from components.model.workloads.workload import Workload


def topology(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """A workload on a pool set names a topology the pool set can form and hold when empty; elsewhere none."""
    group = cfg.workload_group(w)
    key = config_key(("workloads", i, "topology"))
    if not group.dynamic:
        if w.topology is None:
            return []
        return [Problem(key, (f"{w.topology!r}: a topology is formed on a pool set only; group {group.name!r} has fixed "
                              f"{group.tpu.topology} slices (one node pool each). Remove it, or list the group's subBlocks"))]
    if w.mode == "serve":
        # The slice controller has a LeaderWorkerSet webhook, but the stack's serving replicas are placed one slice to
        # a node pool (exclusive topology); forming them on a pool set is not built.
        return [Problem(config_key(("workloads", i, "mode")), (
            f"serve on pool set {group.name!r} is not supported: serving replicas run on groups of fixed slices; "
            "give the workload such a group"))]
    if w.topology is None:
        return [Problem(key, (f"required on pool set {group.name!r}: the topology of the slice GKE forms for it; "
                              f"legal: {ds.legal_text(group.forms_sub_slices)}"))]
    try:
        shape = ds.parse(w.topology, sub_slicing=group.forms_sub_slices, cubes=group.count)
    except ds.TopologyError as e:
        return [Problem(key, str(e))]
    slices = w.slices or 1
    alone = PoolSet(group.count, group.forms_sub_slices).place(w.name, shape.topology, slices)
    if alone.waits is None:
        return []
    if shape.sub_slice:
        held = group.count * (ds.CUBE_HOSTS // shape.hosts)
        return [Problem(config_key(("workloads", i, "slices")), (
            f"{slices} slices of {shape.topology} never fit pool set {group.name!r}: its {group.count} sub-blocks hold "
            f"{held}; ask for at most {held}, or add sub-blocks"))]
    return [Problem(key, (
        f"{shape.topology} x {slices} needs {shape.cubes * slices} cubes and pool set {group.name!r} has "
        f"{group.count} sub-blocks, so it would never be admitted; nearest legal that fits: "
        f"{ds.nearest(shape.chips, group.forms_sub_slices, group.count // slices or 1)}, or add sub-blocks"))]


def pool_sets(cfg: StackConfig) -> list[Problem]:
    """What dynamic slicing needs of the cluster and the features around it (GKE "Use dynamic slicing")."""
    problems = []
    dynamic = [(i, g) for i, g in enumerate(cfg.slices) if g.dynamic]
    if dynamic and cfg.cluster.existing is None and cfg.cluster.release_channel.value != ds.RELEASE_CHANNEL:
        problems.append(Problem(config_key(("cluster", "releaseChannel")), (
            f"{cfg.cluster.release_channel.value}: dynamic slicing (slices[{dynamic[0][0]}].subBlocks) needs a cluster on "
            f"the {ds.RELEASE_CHANNEL} channel (GKE \"Use dynamic slicing\"); set releaseChannel: {ds.RELEASE_CHANNEL}")))
    if dynamic and not cfg.kubernetes.kueue.enabled:
        problems.append(Problem(config_key(("kubernetes", "kueue", "enabled")), (
            "false: a pool set's slices are placed by Kueue's topology-aware scheduling and formed by its slice admission "
            "check; turn Kueue on")))
    for i, g in dynamic:
        if g.reservation is None and cfg.cluster.existing is None:
            # the pools take their sub-blocks of the block the reservation path names (a cluster made elsewhere has its
            # pools: there the sub-blocks name its cubes, and the reservation is its maker's)
            problems.append(Problem(config_key(("slices", i, "reservation")), (
                "required with subBlocks: the reservation block (<reservation>/reservationBlocks/<block>, All Capacity "
                "mode) whose sub-blocks the pools take")))
        for t, team in enumerate(cfg.teams):
            if g.name in team.slices:
                problems.append(Problem(config_key(("teams", t, "slices", g.name)), (
                    f"team shares of pool set {g.name!r} are not supported: a share is whole slices of a fixed shape; "
                    "give the team a group of fixed slices")))
        for j, other in enumerate(cfg.slices):
            if g.name in other.ladder:
                problems.append(Problem(config_key(("slices", j, "ladder")), (
                    f"{g.name!r} is a pool set; a capacity ladder's rungs are groups of the same fixed slices")))
    return problems


def shared_sub_blocks(cfg: StackConfig) -> list[Problem]:
    """A sub-block is one 16-VM cube: one pool set's pool. Two groups naming the same sub-block of the same reservation
    block would make two 16-node pools on 16 VMs, and the second never comes up (#76)."""
    problems = []
    first: dict[tuple[str, str], str] = {}
    for i, g in enumerate(cfg.slices):
        if not g.dynamic:
            continue
        for j, sub in enumerate(g.sub_blocks):
            key = (g.reservation or "", sub)
            if key in first and first[key] != g.name:
                problems.append(Problem(config_key(("slices", i, "subBlocks", j)), (
                    f"{sub!r} of {g.reservation or 'the cluster'} is pool set {first[key]}'s too: a sub-block is one 16-VM "
                    "cube, which holds one pool; give each pool set sub-blocks of its own")))
            first.setdefault(key, g.name)
    return problems


RULES = (pool_sets, shared_sub_blocks)
