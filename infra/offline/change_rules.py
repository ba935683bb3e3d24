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
    # + the three the pinned SDK's own docs say "forces a new resource" of (tests/test_change_safety.py)
    "gcp:compute/subnetwork:Subnetwork": ("project", "name", "network", "region", "description", "ipv6AccessType",
                                          "externalIpv6Prefix", "ipCollection"),
    # A resource policy has no update at all: every field is ForceNew.
    "gcp:compute/resourcePolicy:ResourcePolicy": ("project", "name", "region", "workloadPolicy"),
    "gcp:serviceaccount/account:Account": ("project", "accountId"),
    "gcp:projects/iAMCustomRole:IAMCustomRole": ("project", "roleId"),
    "gcp:projects/iAMMember:IAMMember": ("project", "role", "member", "condition"),
    "gcp:storage/bucketIAMMember:BucketIAMMember": ("bucket", "role", "member", "condition"),
    # storage/resource_storage_bucket_object.go (read at 0540ffed): everything but the holds
    "gcp:storage/bucketObject:BucketObject": (
        "bucket", "name", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage", "contentType",
        "content", "source", "detectMd5hash", "storageClass", "kmsKeyName", "customerEncryption", "metadata"),
    # kms/resource_kms_crypto_key.go: the key's identity and what Cloud KMS fixes at creation
    "gcp:kms/cryptoKey:CryptoKey": ("name", "keyRing", "purpose", "importOnly", "skipInitialVersionCreation"),
    # monitoring/resource_monitoring_alert_policy.go and resource_monitoring_dashboard.go: `project` is ForceNew (an
    # alert policy or a dashboard lives in one project's Cloud Monitoring; everything else is updated in place)
    "gcp:monitoring/alertPolicy:AlertPolicy": ("project",),
    "gcp:monitoring/dashboard:Dashboard": ("project",),
    # pulumi-random: every input of RandomPassword forces a new value.
    "random:index/randomPassword:RandomPassword": ("",),
    # pulumi-kubernetes v4.25.0 (provider/pkg/provider/diff.go, forceNewProperties): every object is replaced
    # when its metadata.name or metadata.namespace changes (KUBERNETES_IDENTITY below); a Secret also on its
    # type and data (unless the provider's enableSecretMutable, which the stack leaves off); a RoleBinding on
    # its roleRef; a ConfigMap on its data (unless enableConfigMapMutable, left off: the usage recorder's program
    # ConfigMap is replaced, delete first as the provider does for a named object, whenever the program or the
    # teams change); and the kinds' own below. A PriorityClass's value is immutable in the API but not in that
    # table: the program asks for its replacement (replaceOnChanges), which the rule below mirrors.
    "kubernetes:core/v1:Secret": ("type", "stringData", "data"),
    "kubernetes:core/v1:ConfigMap": ("data", "binaryData"),
    "kubernetes:core/v1:PersistentVolume": ("spec.csi", "spec.nfs", "spec.hostPath", "spec.local", "spec.gcePersistentDisk"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    "kubernetes:core/v1:ResourceQuota": ("spec.scopes",),
    "kubernetes:core/v1:Service": ("spec.clusterIP",),
    "kubernetes:apps/v1:Deployment": ("spec.selector",),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": ("roleRef",),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": ("roleRef",),
    # The Kubernetes provider's cluster identity: a new one replaces every object it manages.
    "pulumi:providers:kubernetes": ("clusterIdentifier",),
}

# What makes a resource's name unique where it lives (Compute, GKE and Cloud Storage name resources per project
# and region or zone, or globally): a replacement whose new copy has the same values here collides with the
# old one, because Pulumi creates the replacement before deleting the original unless the resource is
# delete-before-replace (the Pulumi engine's default; pulumi-gcp sets deleteBeforeReplace on none of these types,
# provider/resources.go at ed6078aa). Sources: the APIs' resource paths (container-api.json
# projects.locations.clusters[.nodePools], compute-api.json regional and global collections, storage-api.json
# buckets: "Bucket names must be globally unique"). IAM members and service accounts are keyed by every input that
# replaces them, so their replacements never collide.
NAME_SCOPE: dict[str, tuple[str, ...]] = {
    "gcp:container/nodePool:NodePool": ("project", "location", "cluster", "name"),
    "gcp:container/cluster:Cluster": ("project", "location", "name"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("project", "region", "name"),
    "gcp:compute/firewall:Firewall": ("project", "name"),
    "gcp:compute/network:Network": ("project", "name"),
    "gcp:compute/subnetwork:Subnetwork": ("project", "region", "name"),
    "gcp:compute/router:Router": ("project", "region", "name"),
    "gcp:compute/routerNat:RouterNat": ("project", "region", "router", "name"),
    "gcp:storage/bucket:Bucket": ("name",),
    # an object replaced create-before-delete is worse than refused: the upload overwrites the object, then the
    # delete of "the old one" removes it
    "gcp:storage/bucketObject:BucketObject": ("bucket", "name"),
    "gcp:kms/cryptoKey:CryptoKey": ("keyRing", "name"),
}

# How each named type avoids that collision, when an input outside its name scope forces a replacement:
# - delete-before-replace (the resource option) on the registration;
# - NAMED_FROM_INPUTS: the name is derived from those inputs, so a new value is a new name;
# - REPLACE_REFUSED: neither is safe, so `diff` refuses the change before `pulumi up` tries it, with the way round.
NAMED_FROM_INPUTS: dict[str, tuple[str, ...]] = {
    # the tpu7x workload policy (components/gcp/tpu_slices.py workload_policy_name): topology and mode
    "gcp:compute/resourcePolicy:ResourcePolicy": ("workloadPolicy",),
}
REPLACE_REFUSED: dict[str, str] = {
    # GKE deletion protection (on by default) refuses the delete, and a delete-before-replace would delete the
    # node pools first; a replaced cluster ends every workload anyway
    "gcp:container/cluster:Cluster": (
        "GKE refuses a second cluster of the same name in the location; build the new cluster as a new stack, or "
        "give it another name (pathways:cluster.name) to replace it in one `pulumi up`"),
    # a bucket's objects do not move, and bucket names are global
    "gcp:storage/bucket:Bucket": (
        "bucket names are global and a bucket's objects do not move; name a new bucket (pathways:bucket.name) and "
        "copy what you keep"),
    # every subnet, router and cluster of the stack hangs off the network and its subnets
    "gcp:compute/network:Network": (
        "a VPC cannot be deleted while its subnets and the cluster use it; give the new network another name"),
    # a delete-before-replace would open the Pathways ports (the deny rule) between the delete and the create; only
    # a new direction replaces a rule, and the stack never changes one
    "gcp:compute/firewall:Firewall": (
        "a rule deleted before its replacement exists would leave the Pathways ports open meanwhile; give the rule "
        "another name"),
    "gcp:compute/subnetwork:Subnetwork": (
        "a subnet cannot be deleted while the cluster's nodes or a load balancer use it; change its ranges in place "
        "(only expansion is in place) or build a new stack"),
}


# The other GCP types the stacks and the bootstrap register, and why no replacement of theirs can collide:
# - keyed by every input that replaces them (an IAM member's resource, role, member and condition; a service
#   account's or custom role's project and ID; an API's project and service; a key ring's project, location and
#   name; a Workload Identity pool's and provider's IDs): a replacement is another resource;
# - named by the server (alert policies, dashboards: an ID Cloud Monitoring picks).
IDENTITY_KEYED = (
    "gcp:projects/iAMMember:IAMMember", "gcp:storage/bucketIAMMember:BucketIAMMember",
    "gcp:serviceaccount/iAMMember:IAMMember", "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember",
    "gcp:serviceaccount/account:Account", "gcp:projects/iAMCustomRole:IAMCustomRole", "gcp:projects/service:Service",
    "gcp:kms/keyRing:KeyRing", "gcp:iam/workloadIdentityPool:WorkloadIdentityPool",
    "gcp:iam/workloadIdentityPoolProvider:WorkloadIdentityPoolProvider",
)
SERVER_NAMED = ("gcp:monitoring/alertPolicy:AlertPolicy", "gcp:monitoring/dashboard:Dashboard")


def name_collision(type_: str, forced: Sequence[str], before: dict, after: dict, delete_before_replace: bool) -> bool:
    """Whether replacing this resource would create its new copy under the name the old one still holds."""
    scope = NAME_SCOPE.get(type_)
    if not forced or scope is None or delete_before_replace:
        return False
    return all(before.get(k) == after.get(k) for k in scope) and after.get("name") is not None


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
