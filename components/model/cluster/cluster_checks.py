"""Rules of the cluster and network keys that span keys (their schema: ``cluster``), each with its source.

Registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from components.model.cluster import address_space, cluster
from components.model.cluster.cluster import meets_gke_floor
from components.model.common import MAX_NODES_PER_CLUSTER, MAX_TPU_POOLS
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig

# What configures only Google Cloud resources the stack creates, so means nothing with cluster.existing (the
# stack creates none there) and is refused by name rather than silently ignored: whole sections (of cluster,
# everything but CLUSTER_KEYS_KEPT), and single keys below pathways:, "[]" standing for every item of a list.
# tools/cluster/deploy.py drops exactly these when it turns a committed stack into its Kubernetes layer.
GCP_ONLY_SECTIONS = ("protected", "network", "monitoring")
CLUSTER_KEYS_KEPT = ("existing", "name")
GCP_ONLY_KEYS = (
    "headPool.scaleToZero",  # the head pool's autoscaler (components/gcp/head_pool.py)
    "slices[].autoUpgrade", "slices[].reservation", "slices[].scaleToZero",  # node pool settings (tpu_slices.py)
    "slices[].reservationRecord", "slices[].neededUntil", "slices[].readReservation",  # what the pools' reservation can give (reservations.py)
    "bucket.softDeleteDays", "bucket.artifactsTtlDays",  # the buckets' policies (scratch_bucket.py): no bucket is made
    "workloads[].service.proxyMachineType",  # the client proxies' node pool (components/gcp/proxy_pool.py)
)


def _set_keys(model: Any, path: tuple[str, ...], where: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """The config-key paths of `path` (aliases; "[]" = each item) that the stack file sets explicitly."""
    if not path:
        return [where]
    head, rest = path[0], path[1:]
    if head == "[]":
        return [k for i, item in enumerate(model or []) for k in _set_keys(item, rest, (*where, i))]
    if model is None:
        return []
    fields = type(model).model_fields
    name = next((n for n, f in fields.items() if (f.alias or n) == head), None)
    if name is None or (not rest and name not in model.model_fields_set):
        return []
    return _set_keys(getattr(model, name), rest, (*where, head))


def existing_cluster(cfg: StackConfig) -> list[Problem]:
    """cluster.existing: the stack makes no GCP resource, so keys that configure them mean nothing."""
    if cfg.cluster.existing is None:
        return []
    problems = []
    why = "has no effect with cluster.existing (the stack creates no GCP resource there); remove it"
    for section, model, kept in (("cluster", cfg.cluster, set(CLUSTER_KEYS_KEPT)), ("network", cfg.network, set()),
                                 ("monitoring", cfg.monitoring, set())):
        for field in sorted(model.model_fields_set - kept):
            problems.append(Problem(config_key((section, type(model).model_fields[field].alias or field)), why))
    for key in GCP_ONLY_KEYS:
        for path in _set_keys(cfg, tuple(key.replace("[]", ".[]").split(".")), ()):
            problems.append(Problem(config_key(path), why))
    if cfg.protected:
        problems.append(Problem(config_key(("protected",)), why + " (it protects the cluster and buckets the stack creates)"))
    if cfg.bucket.name is None:
        problems.append(Problem(config_key(("bucket", "name")), (
            "required with cluster.existing: the stack creates no bucket there, so name the existing scratch bucket "
            "Pathways keeps its compilation cache in"
        )))
    return problems


def maintenance(cfg: StackConfig) -> list[Problem]:
    """Exclusions GKE would refuse at apply time: one already over, or a "no minor upgrades" one that
    outlasts the support of the minor the cluster runs (GKE "Maintenance windows and exclusions")."""
    if cfg.cluster.existing is not None:
        return []  # the stack sets no maintenance policy on a cluster it does not create
    problems = []
    c = cfg.cluster
    minor = ".".join(c.min_master_version.split(".")[:2]) if c.min_master_version else cluster.CHANNEL_DEFAULT_MINOR[c.release_channel.value]
    support_end = cluster.END_OF_STANDARD_SUPPORT.get(minor)
    current = cfg.planned_at
    for i, e in enumerate(c.maintenance.exclusions):
        key = config_key(("cluster", "maintenance", "exclusions", i, "endTime"))
        if e.end <= current:
            problems.append(Problem(key, (
                f"{e.end_time} has passed: exclusion {e.name!r} no longer holds anything and GKE refuses an exclusion "
                "that has ended; remove it or give a new period"
            )))
        elif support_end and e.scope != "NO_UPGRADES" and e.end > cluster._timestamp(support_end):
            source = (f"cluster.minMasterVersion {c.min_master_version}" if c.min_master_version
                      else f"the {c.release_channel.value} channel creates clusters at {minor} today")
            problems.append(Problem(key, (
                f"{e.end_time} is after the end of standard support of GKE {minor} ({support_end[:10]}; {source}): GKE refuses a "
                f"{e.scope} exclusion that outlasts its minor; end it by {support_end[:10]} and renew it after the upgrade"
            )))
    return problems


def zone_in_region(cfg: StackConfig) -> list[Problem]:
    """Every node lives in gcp:zone, the subnet and control plane in gcp:region (a zone is <region>-<letter>)."""
    if cfg.zone.startswith(cfg.region + "-"):
        return []
    return [Problem("gcp:zone", f"{cfg.zone} is not in region {cfg.region}; use a zone {cfg.region}-<letter> or change gcp:region")]


def gke_floor(cfg: StackConfig) -> list[Problem]:
    """cluster.minMasterVersion meets every slice group's TPU family minimum (tpu.py, each with its source)."""
    if not cfg.cluster.min_master_version or meets_gke_floor(cfg.cluster.min_master_version, cfg.required_gke_version):
        return []
    needs = [f"{what} needs {version}" for what, version in cfg.gke_version_needs.items()]
    return [Problem(config_key(("cluster", "minMasterVersion")), (
        f"{cfg.cluster.min_master_version} is below what the stack needs ({', '.join(sorted(set(needs)))}); "
        f"use {cfg.required_gke_version} or later, or remove it"
    ))]


# What GKE takes as authorized networks when the control plane's IP endpoint is private ("Invalid master
# authorized networks: network ... is not a reserved network, which is required for private endpoints"):
# internal addresses, i.e. RFC 1918 ranges and RFC 6598 shared address space.
INTERNAL_RANGES = tuple(ipaddress.IPv4Network(r) for r in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"))


def control_plane_endpoint(cfg: StackConfig) -> list[Problem]:
    """A public IP endpoint only for listed ranges; a private one only for internal ranges (GKE, above)."""
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


def subnetwork_region(cfg: StackConfig) -> list[Problem]:
    """A GKE cluster's subnetwork is in the cluster's region (a subnetwork path names its region)."""
    if not cfg.network.existing_subnetwork:
        return []
    m = re.search(r"/regions/([a-z]+-[a-z]+[0-9]+)/", cfg.network.existing_subnetwork)
    if not m or m.group(1) == cfg.region:
        return []
    return [Problem(config_key(("network", "existingSubnetwork")), (
        f"is in region {m.group(1)}, but the stack's nodes live in gcp:region {cfg.region}; a GKE cluster's "
        f"subnetwork must be in its region: use a subnetwork of {cfg.region} or change gcp:region"
    ))]


def private_nodes(cfg: StackConfig) -> list[Problem]:
    """GKE closes the public IP endpoint only for private nodes."""
    if cfg.cluster.private_nodes or cfg.cluster.public_endpoint:
        return []
    return [Problem(config_key(("cluster", "privateNodes")), (
        "false needs cluster.publicEndpoint: true too (GKE closes the public IP endpoint only for private "
        "nodes); keep privateNodes: true (the default), or open both explicitly"
    ))]


def deletion_protection(cfg: StackConfig) -> list[Problem]:
    """protected: true forces GKE deletion protection on; an explicit false contradicts it."""
    if cfg.protected and cfg.cluster.deletion_protection is False:
        return [Problem(config_key(("cluster", "deletionProtection")), "false conflicts with protected: true; remove it or set protected: false")]
    return []


def google_groups(cfg: StackConfig) -> list[Problem]:
    """A Google group named in RBAC needs Google Groups for RBAC on the cluster: without it GKE passes no group
    membership to the API server, so the group's members match no binding (GKE, "Configure Google Groups for RBAC").
    A cluster made elsewhere is its owner's to configure: the plan says so instead (summary.notices)."""
    if cfg.cluster.existing is not None or cfg.cluster.security_group is not None:
        return []
    return [Problem(config_key(path), (
        f"{name!r} is a Google group, and GKE tells RBAC about group membership only with Google Groups for RBAC on: "
        "set pathways:cluster.securityGroup: gke-security-groups@<your domain> (the group this one is a member of), "
        "or list the researchers with kind: User")) for path, name in cfg.group_subjects]


def auto_upgrade_in_channel(cfg: StackConfig) -> list[Problem]:
    """Every cluster the stack makes is in a release channel, where node auto-upgrade cannot be turned off: "When a
    cluster is subscribed to a release channel ... Node auto-upgrade defaults to true and cannot be disabled"
    (container-api.json v1, revision 20261027, ReleaseChannel); GKE answers 400 "Auto_upgrade cannot be false when
    release_channel REGULAR is set". A maintenance exclusion holds node upgrades instead, as Cluster Toolkit's TPU
    blueprints do (examples/gke-tpu-7x: auto_upgrade true, exclusion NO_MINOR_OR_NODE_UPGRADES)."""
    if cfg.cluster.existing is not None:
        return []  # cluster_checks.existing_cluster refuses the key there
    channel = cfg.cluster.release_channel.value
    return [Problem(config_key(("slices", i, "autoUpgrade")), (
        f"false cannot be: the cluster is in the {channel} release channel (cluster.releaseChannel), where GKE keeps node "
        "auto-upgrade on (\"cannot be disabled\", GKE API ReleaseChannel); remove it, and hold node upgrades with a "
        "maintenance exclusion: cluster.maintenance.exclusions: [{name, startTime, endTime, scope: NO_MINOR_OR_NODE_UPGRADES}]"
    )) for i, g in enumerate(cfg.slices) if not g.auto_upgrade]


def address_space_fits(cfg: StackConfig) -> list[Problem]:
    """The subnet the stack creates holds every node and its pod block at the stack's largest (address_space.py). An
    existing subnet's ranges are not known offline: the live preflight reads them."""
    if cfg.cluster.existing is not None or not cfg.network.create:
        return []
    need = address_space.need(address_space.stack_pools(cfg))
    if need.nodes > MAX_NODES_PER_CLUSTER + address_space.surge_nodes(need) or sum(g.pools for g in cfg.slices) > MAX_TPU_POOLS:
        return []  # over GKE's own limits: pools_checks.capacity says so, in one line
    problems = []
    nodes_room = address_space.primary_capacity(cfg.network.nodes_cidr)
    if need.nodes > nodes_room:
        prefix = address_space.smallest_prefix(need.nodes + address_space.RESERVED_PRIMARY_ADDRESSES)
        problems.append(Problem(config_key(("network", "nodesCidr")), (
            f"{cfg.network.nodes_cidr} holds {nodes_room} nodes, and the stack's pools reach {need.nodes} (upgrade surges "
            f"included); use a /{prefix} or larger"
        )))
    pods_room = address_space.range_capacity(cfg.network.pods_cidr)
    if need.pod_addresses > pods_room:
        prefix = address_space.smallest_prefix(need.pod_addresses)
        biggest = max(need.pools, key=lambda p: p.pod_addresses)
        problems.append(Problem(config_key(("network", "podsCidr")), (
            f"{cfg.network.pods_cidr} holds {pods_room:,} pod addresses, and the stack's {need.nodes} nodes take "
            f"{need.pod_addresses:,} (a /{32 - address_space.pod_block(biggest.max_pods).bit_length() + 1} per node of "
            f"{biggest.name}, {biggest.max_pods} pods each); use a /{prefix} or larger"
        )))
    return problems
