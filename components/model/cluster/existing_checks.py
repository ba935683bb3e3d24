"""Rules of a stack on a cluster made elsewhere (xpk, Cluster Toolkit) taken as it is: its pools named by GKE's own
node-pool label, its Kueue ClusterQueue shared, the admission guards scoped (docs/from-xpk.md).

Sources: GKE labels every node with its pool's name (cloud.google.com/gke-nodepool) and its TPU nodes with
cloud.google.com/gke-tpu-accelerator and -topology; xpk creates one node pool per slice, named <cluster>-np-<i>, and
its CPU pool cpu-np (xpk src/xpk/core/nodepool.py, src/xpk/core/pathways.py); Kueue's ResourceFlavor nodeLabels are
exact values (kueue.x-k8s.io/v1beta2 ResourceFlavorSpec.nodeLabels, a map), and Kueue matches a PodSet to a flavor on
the flavor's label keys only (pkg/scheduler/flavorassigner).
"""

from __future__ import annotations

from components.model.errors import Problem, config_key
from components.model.stack import StackConfig

ONLY_EXISTING = ("only with cluster.existing: a pool the stack creates carries this project's labels, which the "
                 "workloads select; remove it")


def named_pools(cfg: StackConfig) -> list[Problem]:
    """headPool.nodePool and slices[].nodePools: a cluster made elsewhere, one pool per slice, each pool named once."""
    problems: list[Problem] = []
    existing = cfg.cluster.existing is not None
    if cfg.head_pool.node_pool is not None and not existing:
        problems.append(Problem(config_key(("headPool", "nodePool")), ONLY_EXISTING))
    owner: dict[str, str] = {}
    if cfg.head_pool.node_pool is not None:
        owner[cfg.head_pool.node_pool] = "headPool.nodePool"
    for i, g in enumerate(cfg.slices):
        if not g.node_pools:
            continue
        key = config_key(("slices", i, "nodePools"))
        if not existing:
            problems.append(Problem(key, ONLY_EXISTING))
            continue
        if len(g.node_pools) != g.pools:
            problems.append(Problem(key, (
                f"names {len(g.node_pools)} pool(s), but slice group {g.name} has {g.pools} slice(s) (count"
                f"{' + spares' if g.spares else ''}): a TPU slice is one GKE node pool, so name one pool per slice")))
        for pool in g.node_pools:
            if pool in owner:
                problems.append(Problem(key, f"names pool {pool}, which {owner[pool]} names too; a pool is one slice of one group"))
            owner.setdefault(pool, f"slices[{i}].nodePools")
    return problems


def fleet_worker_pools(cfg: StackConfig) -> list[Problem]:
    """A fleet's runs are built on the manager, from its config: their pods select this project's labels
    (pathways/role=head, pathways/slice-group), which pools named by GKE's label alone do not carry."""
    if cfg.fleet is None or cfg.fleet.role != "worker":
        return []
    why = ("a fleet worker runs what its manager builds, whose pods select this project's labels (pathways/role=head, "
           "pathways/slice-group), not pool names; give the pools those labels (gcloud container node-pools update "
           "--node-labels) and remove this")
    problems = [Problem(config_key(("headPool", "nodePool")), why)] if cfg.head_pool.node_pool is not None else []
    problems += [Problem(config_key(("slices", i, "nodePools")), why) for i, g in enumerate(cfg.slices) if g.node_pools]
    return problems


def named_flavors(cfg: StackConfig) -> list[Problem]:
    """The stack's own Kueue flavors tell named groups apart by TPU accelerator and topology alone (a flavor's nodeLabels
    are exact values, so no flavor can say "one of these pools"): two named groups of one TPU shape would share
    quota across each other's pools. A ladder's rungs are one set of nodes, all named or none."""
    if cfg.cluster.existing is None:
        return []
    problems: list[Problem] = []
    own_queue = cfg.kubernetes.kueue.enabled and cfg.kubernetes.kueue.cluster_queue is None
    seen: dict[tuple[str, str], str] = {}
    for i, g in enumerate(cfg.slices):
        if not g.node_pools or not own_queue:
            continue
        shape = (g.tpu.accelerator, g.tpu.topology)
        if shape in seen:
            problems.append(Problem(config_key(("slices", i, "nodePools")), (
                f"slice group {g.name} and {seen[shape]} are both {g.tpu.name} on named pools: Kueue's flavors select "
                "named pools by TPU accelerator and topology only, so their quotas would admit work onto each other's "
                "pools; make them one group listing all their pools, or share the cluster's ClusterQueue "
                "(kubernetes.kueue.clusterQueue)")))
        seen.setdefault(shape, g.name)
    by_name = {g.name: g for g in cfg.slices}
    for i, g in enumerate(cfg.slices):
        rungs = [g, *(by_name[r] for r in g.ladder if r in by_name)]
        if g.ladder and len({bool(r.node_pools) for r in rungs}) > 1:
            problems.append(Problem(config_key(("slices", i, "ladder")), (
                f"mixes groups on named pools ({', '.join(r.name for r in rungs if r.node_pools)}) with groups on "
                f"this project's labels ({', '.join(r.name for r in rungs if not r.node_pools)}): a workload's workers "
                "select every rung at once; name the pools of every rung, or of none")))
    return problems


def shared_cluster_queue(cfg: StackConfig) -> list[Problem]:
    """kubernetes.kueue.clusterQueue: Kueue runs on the cluster already, and the stack adds nothing to its queue."""
    kueue = cfg.kubernetes.kueue
    if kueue.cluster_queue is None:
        return []
    key = config_key(("kubernetes", "kueue", "clusterQueue"))
    problems: list[Problem] = []
    if cfg.cluster.existing is None:
        problems.append(Problem(key, "only with cluster.existing: on a cluster the stack makes, its own ClusterQueue is the only one"))
    if cfg.kubernetes.install_controllers:
        problems.append(Problem(key, (
            "shares a ClusterQueue made elsewhere, so Kueue runs on the cluster already; set kubernetes.installControllers: "
            "false (a second Kueue install would take over its CRDs and webhooks)")))
    if not kueue.enabled:
        problems.append(Problem(key, "has no effect with kubernetes.kueue.enabled: false (no LocalQueue points at it); remove it"))
    if cfg.fleet is not None:
        problems.append(Problem(key, (
            "not in a fleet: a fleet's clusters publish and sum their own queues' quotas, which a ClusterQueue made "
            "elsewhere does not have; remove it, or the stack's fleet role")))
    for i, g in enumerate(cfg.slices):
        if g.queued_provisioning:
            problems.append(Problem(config_key(("slices", i, "queuedProvisioning")), (
                "needs the stack's own ClusterQueue (its ProvisioningRequest admission check is on this group's flavor "
                "there), not the shared kubernetes.kueue.clusterQueue")))
        if g.ladder:
            problems.append(Problem(config_key(("slices", i, "ladder")), (
                "is an order of the stack's own flavors in its own ClusterQueue; with the shared "
                "kubernetes.kueue.clusterQueue the order is that queue's; remove the ladder")))
    return problems


def guards(cfg: StackConfig) -> list[Problem]:
    """kubernetes.guards: off only on a cluster made elsewhere and never in a protected stack; exempt namespaces
    are others' (the stack's own run under the guards' own rules), each exemption acknowledged."""
    g = cfg.kubernetes.guards
    problems: list[Problem] = []
    key = config_key(("kubernetes", "guards", "exemptNamespaces"))
    acknowledged = config_key(("kubernetes", "guards", "acknowledgeExemptions"))
    if not g.enabled:
        off = config_key(("kubernetes", "guards", "enabled"))
        if cfg.protected:
            problems.append(Problem(off, (
                "false in a protected stack: nothing would keep other pods off the Pathways nodes and out of their service "
                "account, which writes the stack's buckets; keep the guards on (exempt another tool's namespace with "
                "exemptNamespaces and acknowledgeExemptions: true)")))
        elif cfg.cluster.existing is None:
            problems.append(Problem(off, (
                "false on a cluster the stack makes: nothing would keep other pods off the Pathways nodes and out of their "
                "service account; the guards may be off only on a cluster made elsewhere (cluster.existing), whose owner "
                "answers for its admission control")))
    if g.exempt_namespaces and not g.enabled:
        problems.append(Problem(key, "has no effect with kubernetes.guards.enabled: false; remove it"))
    elif g.exempt_namespaces and not g.acknowledge_exemptions:
        problems.append(Problem(acknowledged, (
            f"required with exemptNamespaces ({', '.join(g.exempt_namespaces)}): pods there may run on the Pathways nodes "
            "and the host network, as the Pathways node service account (which writes the stack's buckets); set "
            "kubernetes.guards.acknowledgeExemptions: true to accept that")))
    if g.acknowledge_exemptions and not g.exempt_namespaces:
        problems.append(Problem(acknowledged, "true, but no namespace is exempt (kubernetes.guards.exemptNamespaces); remove it"))
    own = {cfg.kubernetes.namespace, *(cfg.workload_namespace(w) for w in cfg.workloads)}
    for ns in g.exempt_namespaces:
        if ns in own:
            problems.append(Problem(key, (
                f"{ns} is a namespace of the stack's own workloads, which the guards allow onto the Pathways nodes "
                "already (from their JobSets and LeaderWorkerSets only); remove it")))
    return problems


RULES = (named_pools, fleet_worker_pools, named_flavors, shared_cluster_queue, guards)
