"""Which input changes replace a resource, and which in-place updates still disrupt what runs on it.

Written once, as data, with its sources; `diff` reads it, the tests pin it.

Replacement ("force new") fields, as camelCased Pulumi input paths (a prefix covers everything below
it). Source: hashicorp/terraform-provider-google at e03b7622 (2026-08-21), the schemas' `ForceNew: true`:
google/services/container/resource_container_node_pool.go (schemaNodePool) and node_config.go
(schemaNodeConfig), resource_container_cluster.go, storage/resource_storage_bucket.go,
compute/resource_compute_{firewall,router,router_nat,network,subnetwork,resource_policy}.go. Pulumi's
GCP provider is that provider, bridged. For Kubernetes objects, the API's immutable fields (a name or
namespace change is a new object; PriorityClass `value`, Secret `type` are immutable) plus the options
the program sets (`replaceOnChanges` on JobSets and LeaderWorkerSets).
"""

from __future__ import annotations

from collections.abc import Sequence

FORCE_NEW: dict[str, tuple[str, ...]] = {
    "gcp:container/nodePool:NodePool": (
        "project", "cluster", "location", "name", "namePrefix", "initialNodeCount", "maxPodsPerNode",
        "placementPolicy", "queuedProvisioning", "networkConfig",
        "nodeConfig.metadata", "nodeConfig.oauthScopes", "nodeConfig.reservationAffinity", "nodeConfig.spot",
        "nodeConfig.serviceAccount", "nodeConfig.shieldedInstanceConfig", "nodeConfig.flexStart",
        "nodeConfig.preemptible", "nodeConfig.minCpuPlatform", "nodeConfig.maxRunDuration",
    ),
    "gcp:container/cluster:Cluster": (
        "project", "name", "location", "network", "subnetwork", "networkingMode", "datapathProvider",
        "initialNodeCount", "ipAllocationPolicy", "privateClusterConfig.masterIpv4CidrBlock",
        "privateClusterConfig.privateEndpointSubnetwork", "defaultMaxPodsPerNode", "enableTpu", "enableAutopilot",
    ),
    "gcp:storage/bucket:Bucket": ("project", "name", "location"),
    "gcp:compute/firewall:Firewall": ("project", "name", "direction"),
    "gcp:compute/router:Router": ("project", "name", "network", "region"),
    "gcp:compute/routerNat:RouterNat": ("project", "name", "router", "region", "type", "endpointTypes"),
    "gcp:compute/network:Network": ("project", "name", "autoCreateSubnetworks", "description"),
    "gcp:compute/subnetwork:Subnetwork": ("project", "name", "network", "region", "description"),
    # A resource policy has no update at all: every field is ForceNew.
    "gcp:compute/resourcePolicy:ResourcePolicy": ("project", "name", "region", "workloadPolicy"),
    "gcp:serviceaccount/account:Account": ("project", "accountId"),
    "gcp:projects/iAMCustomRole:IAMCustomRole": ("project", "roleId"),
    "gcp:projects/iAMMember:IAMMember": ("project", "role", "member", "condition"),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("bucket", "role", "member", "condition"),
    # pulumi-random: every input of RandomPassword forces a new value.
    "random:index/randomPassword:RandomPassword": ("",),
    # pulumi-kubernetes v4.25.0 (provider/pkg/provider/diff.go, forceNewProperties): every object is replaced
    # when its metadata.name or metadata.namespace changes (KUBERNETES_IDENTITY below); a Secret also on its
    # type and data (unless the provider's enableSecretMutable, which the stack leaves off); a RoleBinding on
    # its roleRef. A PriorityClass's value is immutable in the API but not in that table: the program asks
    # for its replacement (replaceOnChanges), which the rule below mirrors.
    "kubernetes:core/v1:Secret": ("type", "stringData", "data"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    # The Kubernetes provider's cluster identity: a new one replaces every object it manages.
    "pulumi:providers:kubernetes": ("clusterIdentifier",),
}

# In-place updates that GKE carries out by recreating the pool's nodes, which ends whatever runs on
# them (a TPU slice restarts as a whole): GKE docs, "Modify node pools" / node pool upgrade behaviour
# (machine type, disk, image changes recreate nodes; node locations add and remove nodes).
DISRUPTIVE_UPDATES: dict[str, tuple[str, ...]] = {
    "gcp:container/nodePool:NodePool": (
        "nodeLocations", "nodeConfig.machineType", "nodeConfig.diskSizeGb", "nodeConfig.diskType",
        "nodeConfig.imageType", "nodeConfig.gvnic", "nodeConfig.workloadMetadataConfig", "version",
    ),
    "gcp:container/cluster:Cluster": ("nodeLocations",),
    # A LeaderWorkerSet rolls a template change through its replicas, recreating each group in turn
    # (rollingUpdate maxUnavailable 1, the LWS webhook's default): the replica being replaced drops its requests.
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": ("spec.leaderWorkerTemplate", "spec.startupPolicy"),
}

# What a replacement or deletion destroys beyond the resource itself: the types whose loss a
# protected stack must state (pathways:allowDisruption).
STATEFUL_TYPES = (
    "gcp:container/cluster:Cluster",
    "gcp:container/nodePool:NodePool",
    "gcp:storage/bucket:Bucket",
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
    "kubernetes:core/v1:Namespace",
    "pulumi:providers:kubernetes",
)


def _covers(rule: str, path: str) -> bool:
    return rule == "" or path == rule or path.startswith(rule + ".")


KUBERNETES_IDENTITY = ("metadata.name", "metadata.namespace")


def forcing_paths(type_: str, changed: list[str], replace_on_changes: Sequence[str] = ()) -> list[str]:
    """The changed input paths that force a replacement of a resource of this type (with the program's
    replaceOnChanges, which the engine applies to any provider)."""
    identity = KUBERNETES_IDENTITY if type_.startswith("kubernetes:") and not type_.startswith("kubernetes:helm.sh/") else ()
    rules = (*FORCE_NEW.get(type_, ()), *identity, *replace_on_changes)
    return [p for p in changed if any(_covers(r, p) for r in rules)]


def disruptive_paths(type_: str, changed: list[str]) -> list[str]:
    return [p for p in changed if any(_covers(r, p) for r in DISRUPTIVE_UPDATES.get(type_, ()))]
