"""What the CI identities may do, derived from the resource types the stack creates (Pulumi-free).

Two service accounts run each stack in CI (docs/ci.md): *preview* (`pulumi preview` in the
`<stack>-preview` environment) and *deploy* (`pulumi up` in the `<stack>` environment). ``TABLE`` maps
every Pulumi type token the main program can register to the predefined roles that create, update and
delete it (deploy), the roles that read it back as a refresh does (preview), and the APIs it needs.
``deploy_roles(types)`` / ``preview_roles(types)`` give the least set for one stack's types, and an
unknown type is an error: a new resource type must come with its roles, or the first `pulumi up` 403s.

Roles are Google's predefined roles, the narrowest that hold the permissions named in each entry's
source (Google Cloud's IAM roles and permissions reference, cloud.google.com/iam/docs/roles-permissions/
<service>). Both identities also use the Pulumi state bucket (deploy writes, preview reads), each only its own
stack's objects there, and, where the stack file encrypts secrets with Cloud KMS (`secretsprovider:
gcpkms://...`), its key (both only decrypt: Pulumi calls KMS Encrypt only to make a stack's data key, once,
pulumi/pulumi pkg/secrets/cloud/manager.go); those grants are bound on the bucket and on the key, never
project-wide. The bootstrap project (bootstrap/) applies all this, and owns what would otherwise make the deploy
identity as strong as any account of the project: the node service accounts and their project roles. The deploy
identity may act as those two accounts only (`iam.serviceAccountUser` on each, not on the project), grants no
project role, and reaches only the stack's own buckets.

What IAM Conditions can and cannot narrow (Google, "Attribute reference for IAM Conditions" and "Resource attributes
for IAM Conditions"): resource names are recognised for Cloud Storage (`projects/_/buckets/<bucket>` and
`.../objects/<object>`) but not for IAM's own resources, so `iam.serviceAccountUser`/`serviceAccountAdmin` cannot be
limited to named accounts by a project-level condition (hence the grants on the accounts themselves); and the only
API attribute of a setIamPolicy call is `iam.googleapis.com/modifiedGrantsByRole`, which limits the *roles* granted,
never the member (hence the node roles granted by the bootstrap, not by the deploy identity).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Optional

Identity = Literal["deploy", "preview"]
REFERENCE = "https://cloud.google.com/iam/docs/roles-permissions/"


@dataclass(frozen=True)
class Access:
    """What one resource type needs."""

    deploy: tuple[str, ...]
    """Predefined roles that create, update and delete it (and read it back after a change)."""
    preview: tuple[str, ...]
    """Predefined roles that read it (what `pulumi preview --refresh` reads)."""
    apis: tuple[str, ...]
    """Services the project must have enabled."""
    source: str
    """The permissions that decide the roles, and Google's reference page that lists them."""


@dataclass(frozen=True)
class Condition:
    title: str
    expression: str


Scope = Literal["project", "state bucket", "secrets key", "node service accounts"]


@dataclass(frozen=True)
class Grant:
    role: str
    scope: Scope
    condition: Optional[Condition] = None


def _src(service: str, *permissions: str) -> str:
    return f"{', '.join(permissions)} ({REFERENCE}{service})"


COMPUTE, CONTAINER, IAM, STORAGE, MONITORING = (f"{s}.googleapis.com" for s in ("compute", "container", "iam", "storage", "monitoring"))
RESOURCE_MANAGER, LOGGING, DNS = "cloudresourcemanager.googleapis.com", "logging.googleapis.com", "dns.googleapis.com"
NETWORK_SERVICES = "networkservices.googleapis.com"

# The roles the node service accounts hold on the project (the bootstrap grants them, bootstrap/program.py): to log,
# report metrics and pull images, nothing more.
NODE_ROLES = (
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/monitoring.viewer",
    "roles/stackdriver.resourceMetadata.writer",
    "roles/autoscaling.metricsWriter",
    "roles/artifactregistry.reader",
)
# What the people and groups a stack names in RBAC (runs.submitters, service clients) hold on the project: fetching a
# cluster's credentials (container.clusters.get) and reaching its control plane through the DNS-based endpoint
# (container.clusters.connect), both in GKE's Kubernetes Engine Cluster Viewer role; it reads no object in the
# cluster, which the stack's RBAC decides (GKE, "Access control" and "About network isolation: DNS-based endpoint").
CONNECT_ROLE = "roles/container.clusterViewer"
# Creating a cluster or node pool that runs as a service account needs iam.serviceAccounts.actAs on that account
# (GKE "Use least privilege IAM service accounts"): granted on the two node accounts themselves.
NODE_ACCOUNT_ROLE = "roles/iam.serviceAccountUser"
NODE_ACCOUNT_TYPES = frozenset({"gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool"})
def pull_request_preview_refusal(protected: bool, fleet_manager: bool) -> str | None:
    """Why a stack's pull requests get no real `pulumi preview` (None: they do). Its preview identity decrypts the
    stack's secrets, and a fleet manager's also reads and decrypts its workers' state (their tokens): such an
    identity serves main's previews alone, and a pull request sees the offline plan and diff instead."""
    if protected:
        return "protected: its preview identity decrypts its secrets, so it previews on main only"
    if fleet_manager:
        return "a fleet manager: its preview identity reads its workers' state and tokens, so it previews on main only"
    return None


def ci_account_id(stack: str, identity: Identity) -> str:
    """The service account ID the bootstrap gives a stack's CI identity (bootstrap/program.py)."""
    return f"pulumi-{stack}-{identity}"


def ci_account_email(stack: str, identity: Identity, project: str) -> str:
    """Its email: GKE authenticates a Google service account to the cluster as a user of this name, which
    Kubernetes RBAC subjects name (GKE "Role-based access control")."""
    return f"{ci_account_id(stack, identity)}@{project}.iam.gserviceaccount.com"


# Storage roles held project-wide but, by this condition, only on the stack's own buckets and their objects. The
# resource name of a bucket is projects/_/buckets/<name>, of an object .../objects/<name> (Google, "Resource
# attributes for IAM Conditions", resource name format); "startsWith the bucket" alone would also match
# <name>-other, a bucket of someone else: hence the name itself, or the name and a slash.
BUCKET_CONDITIONED_ROLES = frozenset({"roles/storage.admin", "roles/storage.bucketViewer"})


def stack_buckets_condition(buckets: Iterable[str]) -> Condition:
    names = sorted(set(buckets))
    return Condition(
        title="stack-buckets-only",
        expression=" || ".join(f"resource.name == 'projects/_/buckets/{b}' || resource.name.startsWith('projects/_/buckets/{b}/')"
                               for b in names),
    )


# The Pulumi state of one stack in a DIY backend (pulumi/pulumi pkg/backend/diy, project-scoped layout, meta.yaml
# version 1): .pulumi/meta.yaml, the checkpoint .pulumi/stacks/<project>/<stack>.json (.bak, .gz), its history and
# backups under .pulumi/{history,backups}/<project>/<stack>/, its locks under .pulumi/locks/organization/<project>/
# <stack>/ (store.go StackBasePath/HistoryDir/BackupDir, lock.go stackLockDir). Listing is checked on the bucket.
def stack_state_condition(bucket: str, project: str, stack: str) -> Condition:
    objects = f"projects/_/buckets/{bucket}/objects/.pulumi"
    prefixes = (f"{objects}/stacks/{project}/{stack}.json", f"{objects}/history/{project}/{stack}/", f"{objects}/backups/{project}/{stack}/",
                f"{objects}/locks/organization/{project}/{stack}/")
    return Condition(
        title=f"state-of-{stack}"[:100],
        expression=" || ".join([f"resource.name == 'projects/_/buckets/{bucket}'", f"resource.name == '{objects}/meta.yaml'",
                                *(f"resource.name.startsWith('{p}')" for p in prefixes)]),
    )


def stack_state_read_condition(bucket: str, project: str, stack: str) -> Condition:
    """Another stack's checkpoint alone, as a stack reference reads it from a DIY backend (its stacks/<project>/<stack>.json,
    found through the bucket and its meta.yaml): a fleet manager reading its workers' outputs."""
    objects = f"projects/_/buckets/{bucket}/objects/.pulumi"
    return Condition(
        title=f"reads-state-of-{stack}"[:100],
        expression=" || ".join([f"resource.name == 'projects/_/buckets/{bucket}'", f"resource.name == '{objects}/meta.yaml'",
                                f"resource.name == '{objects}/stacks/{project}/{stack}.json'"]),
    )


def fleet_reader_grants(workers: Iterable[tuple[str, bool]], bucket: str, project: str) -> list[tuple[str, Grant]]:
    """What a fleet manager's deploy and preview identities need of each worker stack (stack name, whether it encrypts
    its secrets with Cloud KMS): read its checkpoint, and decrypt with its key the `fleet` output (a secret: Pulumi
    decrypts a referenced stack's secrets with that stack's secrets provider)."""
    out: list[tuple[str, Grant]] = []
    for stack, kms in workers:
        out.append((stack, Grant(STATE_ROLES["preview"], "state bucket", stack_state_read_condition(bucket, project, stack))))
        if kms:
            out.append((stack, Grant(KMS_ROLES["preview"], "secrets key")))
    return out


_NETWORK = (("roles/compute.networkAdmin",), ("roles/compute.networkViewer",), (COMPUTE,))
# Cluster and node pools: the cluster API only (clusterAdmin); creating nodes that run as the stack's node
# service accounts needs iam.serviceAccounts.actAs on them: NODE_ACCOUNT_ROLE, on those two accounts only.
_GKE = (("roles/container.clusterAdmin",), ("roles/container.clusterViewer",))
# Kubernetes objects go through the cluster's API, authorized by IAM (container.* permissions). Namespaced
# objects, priority classes and custom resources (container.thirdPartyObjects.*) need container.developer;
# RBAC objects (roles.escalate/bind), admission policies and the Helm charts (ClusterRoles, CRDs, webhooks)
# container.admin. Reading them: container.viewer (which cannot read Secrets' data).


def _k8s(deploy: str, *permissions: str) -> Access:
    return Access((deploy,), ("roles/container.viewer",), (CONTAINER,), _src("container", *permissions))


def _k8s_object(permission: str) -> Access:
    return _k8s("roles/container.developer", permission)


# Admission objects have no container.* permission of their own; container.admin is the role for cluster-wide
# admission configuration (it alone holds container.validatingWebhookConfigurations.create).
_ADMISSION = ("roles/container.admin", "container.validatingWebhookConfigurations.create")
_NOTHING = ((), (), (), "no cloud API: the engine's providers, or computed locally")

TABLE: dict[str, Access] = {
    # --- Google Cloud -----------------------------------------------------------------------------
    "gcp:compute/network:Network": Access(*_NETWORK, _src("compute", "compute.networks.create", "compute.networks.get")),
    "gcp:compute/subnetwork:Subnetwork": Access(*_NETWORK, _src("compute", "compute.subnetworks.create", "compute.subnetworks.get")),
    "gcp:compute/router:Router": Access(*_NETWORK, _src("compute", "compute.routers.create", "compute.routers.get")),
    "gcp:compute/routerNat:RouterNat": Access(*_NETWORK, _src("compute", "compute.routers.update", "compute.routers.get")),
    "gcp:compute/firewall:Firewall": Access(
        ("roles/compute.securityAdmin",), ("roles/compute.networkViewer",), (COMPUTE,),
        _src("compute", "compute.firewalls.create", "compute.networks.updatePolicy", "compute.firewalls.get")),
    # an external inference gateway's Cloud Armor policy (serve.gateway.clientRanges): components/gcp/gateway_armor.py
    "gcp:compute/regionSecurityPolicy:RegionSecurityPolicy": Access(
        ("roles/compute.securityAdmin",), ("roles/compute.networkViewer",), (COMPUTE,),
        _src("compute", "compute.regionSecurityPolicies.create", "compute.regionSecurityPolicies.get")),
    # tpu7x multi-host slices: a workload policy. compute.storageAdmin is the narrowest predefined role with
    # compute.resourcePolicies.create (160 permissions; compute.instanceAdmin.v1 has 531); compute.viewer reads it.
    "gcp:compute/resourcePolicy:ResourcePolicy": Access(
        ("roles/compute.storageAdmin",), ("roles/compute.viewer",), (COMPUTE,),
        _src("compute", "compute.resourcePolicies.create", "compute.resourcePolicies.get")),
    # a calendar-mode future reservation request (components/gcp/future_reservations.py): Compute Engine's "Create a
    # future reservation request in calendar mode" names roles/compute.futureReservationUser to create one
    "gcp:compute/futureReservation:FutureReservation": Access(
        ("roles/compute.futureReservationUser",), ("roles/compute.viewer",), (COMPUTE,),
        _src("compute", "compute.futureReservations.create", "compute.futureReservations.get")),
    "gcp:container/cluster:Cluster": Access(
        *_GKE, (CONTAINER, COMPUTE, LOGGING, MONITORING, DNS),  # GKE logging, managed Prometheus, Cloud DNS
        _src("container", "container.clusters.create", "iam.serviceAccounts.actAs", "container.clusters.get")),
    "gcp:container/nodePool:NodePool": Access(
        *_GKE, (CONTAINER,), _src("container", "container.clusters.update", "iam.serviceAccounts.actAs", "container.clusters.get")),
    "gcp:monitoring/alertPolicy:AlertPolicy": Access(
        ("roles/monitoring.alertPolicyEditor",), ("roles/monitoring.alertPolicyViewer",), (MONITORING,),
        _src("monitoring", "monitoring.alertPolicies.create", "monitoring.alertPolicies.get")),
    "gcp:monitoring/dashboard:Dashboard": Access(
        ("roles/monitoring.dashboardEditor",), ("roles/monitoring.dashboardViewer",), (MONITORING,),
        _src("monitoring", "monitoring.dashboards.create", "monitoring.dashboards.get")),
    # No IAMCustomRole: the bootstrap makes the scratch role (security #58.14), so no deploy identity holds
    # iam.roleAdmin over the project's custom roles.
    # storage.admin holds storage.buckets.update and setIamPolicy, which the buckets need (no narrower predefined
    # role has both), but only on the stack's buckets (BUCKET_CONDITIONED_ROLES: an HMAC key or a folder is no bucket
    # the condition names, so none of storage.admin's storage.hmacKeys.* reaches them). Creating a bucket is checked
    # against the project ("does not have storage.buckets.create access to the Google Cloud project"), which no
    # bucket-name condition matches: the bootstrap's custom role of that one permission (BUCKET_CREATE_PERMISSIONS),
    # not storage.editor, which holds storage.hmacKeys.* (a key for any service account of the project), the
    # deletion of any empty bucket and storage.folders.* (security #73.1).
    "gcp:storage/bucket:Bucket": Access(
        ("roles/storage.admin",), ("roles/storage.bucketViewer",), (STORAGE,),
        _src("storage", "storage.buckets.create", "storage.buckets.update", "storage.buckets.get")),
    # Reading a bucket's IAM policy: no storage viewer role has storage.buckets.getIamPolicy; securityReviewer
    # (read-only, every getIamPolicy) does.
    "gcp:storage/bucketIAMMember:BucketIAMMember": Access(
        ("roles/storage.admin",), ("roles/iam.securityReviewer",), (STORAGE,),
        _src("storage", "storage.buckets.setIamPolicy", "storage.buckets.getIamPolicy")),
    # --- Kubernetes, through the cluster ---------------------------------------------------------
    "kubernetes:core/v1:Namespace": _k8s_object("container.namespaces.create"),
    "kubernetes:core/v1:NamespacePatch": _k8s_object("container.namespaces.update"),
    "kubernetes:core/v1:Secret": _k8s_object("container.secrets.create"),
    # Kubernetes' own edit role may not write quotas (only admin may); container.admin holds container.* and is the
    # deploy identity's already, for the admission objects
    "kubernetes:core/v1:ResourceQuota": _k8s("roles/container.admin", "container.resourceQuotas.create"),
    "kubernetes:core/v1:Service": _k8s_object("container.services.create"),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": _k8s_object("container.networkPolicies.create"),
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler": _k8s_object("container.horizontalPodAutoscalers.create"),
    "kubernetes:monitoring.googleapis.com/v1:PodMonitoring": _k8s_object("container.thirdPartyObjects.create"),
    # GKE's Gateway controller makes the load balancer and, for an InferencePool backend, the Service Extension
    # callout to the endpoint picker: the project needs the Compute Engine and Network Services APIs (GKE docs,
    # "Deploy GKE Inference Gateway": before you begin)
    "kubernetes:gateway.networking.k8s.io/v1:Gateway": Access(
        ("roles/container.developer",), ("roles/container.viewer",), (CONTAINER, COMPUTE, NETWORK_SERVICES),
        _src("container", "container.thirdPartyObjects.create")),
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute": _k8s_object("container.thirdPartyObjects.create"),
    # the Custom Metrics Stackdriver Adapter (components/manifests/metrics_adapter.py): an aggregated API is
    # cluster-wide API configuration, container.admin's as admission configuration is
    "kubernetes:core/v1:ServiceAccount": _k8s_object("container.serviceAccounts.create"),
    # storage mounts (components/manifests/storage.py): a file system's volume and claim
    "kubernetes:core/v1:PersistentVolume": _k8s_object("container.persistentVolumes.create"),
    "kubernetes:core/v1:PersistentVolumeClaim": _k8s_object("container.persistentVolumeClaims.create"),
    "kubernetes:apps/v1:Deployment": _k8s_object("container.deployments.create"),
    # the teams' usage recorder (components/manifests/usage.py): its program and schedule
    "kubernetes:core/v1:ConfigMap": _k8s_object("container.configMaps.create"),
    "kubernetes:batch/v1:CronJob": _k8s_object("container.cronJobs.create"),
    "kubernetes:apiregistration.k8s.io/v1:APIService": _k8s("roles/container.admin", "container.apiServices.create"),
    "kubernetes:scheduling.k8s.io/v1:PriorityClass": _k8s_object("container.priorityClasses.create"),
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet": _k8s_object("container.thirdPartyObjects.create"),
    # multi-tier checkpointing's configuration (a custom resource of GKE's HighScaleCheckpointing add-on)
    "kubernetes:checkpointing.gke.io/v1:CheckpointConfiguration": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:Topology": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:Cohort": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass": _k8s_object("container.thirdPartyObjects.create"),
    # queued provisioning (components/manifests/kueue.py): Kueue's ProvisioningRequest admission check
    "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig": _k8s_object("container.thirdPartyObjects.create"),
    "kubernetes:rbac.authorization.k8s.io/v1:Role": _k8s("roles/container.admin", "container.roles.create", "container.roles.escalate"),
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": _k8s("roles/container.admin", "container.roleBindings.create", "container.roles.bind"),
    # The CI preview identity's dry-run access (components/manifests/ci_preview.py)
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": _k8s("roles/container.admin", "container.clusterRoles.create", "container.clusterRoles.escalate"),
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": _k8s("roles/container.admin", "container.clusterRoleBindings.create",
                                                                       "container.clusterRoles.bind"),
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy": _k8s(*_ADMISSION),
    "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding": _k8s(*_ADMISSION),
    # A remote component: the provider registers the chart's objects (CRDs, ClusterRoles, webhooks, Deployments).
    "kubernetes:helm.sh/v4:Chart": _k8s("roles/container.admin", "container.customResourceDefinitions.create", "container.clusterRoles.create",
                                          "container.clusterRoleBindings.create", "container.validatingWebhookConfigurations.create"),
    # --- no cloud permissions --------------------------------------------------------------------
    "pulumi:providers:kubernetes": Access(*_NOTHING),
    "pulumi:providers:gcp": Access(*_NOTHING),
    "pulumi:providers:random": Access(*_NOTHING),
    "random:index/randomPassword:RandomPassword": Access(*_NOTHING),
}

# The project's own component resources (pathways:gcp:*, pathways:k8s:*) register nothing in the cloud.
COMPONENT_PREFIX = "pathways:"

# The Pulumi state (a DIY backend in a bucket): deploy writes checkpoints, history and locks; preview only
# reads (pulumi/pulumi pkg/backend/diy: a preview takes no lock and persists no snapshot). Each its own stack's
# objects only (stack_state_condition).
STATE_ROLES: dict[Identity, str] = {"deploy": "roles/storage.objectUser", "preview": "roles/storage.objectViewer"}
# The stack's Cloud KMS key (staging, prod): both only decrypt. Pulumi's cloud secrets manager encrypts with the
# key once, to make the stack's data key (`pulumi stack change-secrets-provider`, run by whoever bootstraps), and
# from then on decrypts that data key and encrypts secrets with it locally (pkg/secrets/cloud/manager.go).
KMS_ROLES: dict[Identity, str] = {"deploy": "roles/cloudkms.cryptoKeyDecrypter", "preview": "roles/cloudkms.cryptoKeyDecrypter"}

# Predefined roles that hold every permission of others (compared permission by permission in Google's
# role reference): a project grant of the first makes a grant of the second redundant.
IMPLIES: dict[str, frozenset[str]] = {
    "roles/container.admin": frozenset({"roles/container.developer", "roles/container.clusterAdmin", "roles/container.viewer",
                                        "roles/container.clusterViewer"}),
    "roles/container.developer": frozenset({"roles/container.clusterViewer"}),
    "roles/container.clusterAdmin": frozenset({"roles/container.clusterViewer"}),
    "roles/container.viewer": frozenset({"roles/container.clusterViewer"}),
    "roles/iam.roleAdmin": frozenset({"roles/iam.roleViewer"}),
    "roles/compute.networkAdmin": frozenset({"roles/compute.networkViewer"}),
    "roles/monitoring.alertPolicyEditor": frozenset({"roles/monitoring.alertPolicyViewer"}),
    "roles/monitoring.dashboardEditor": frozenset({"roles/monitoring.dashboardViewer"}),
}

# The APIs CI itself needs besides what the resources need: Workload Identity Federation (iam, sts,
# iamcredentials), the state bucket (storage), project IAM (cloudresourcemanager). Cloud KMS where used.
CI_APIS = ("iam.googleapis.com", "iamcredentials.googleapis.com", "sts.googleapis.com", STORAGE, RESOURCE_MANAGER)
KMS_API = "cloudkms.googleapis.com"


class UnknownResourceType(ValueError):
    """A resource type with no entry in TABLE: its roles are unknown, so the identities cannot be derived."""

    def __init__(self, types: Iterable[str]):
        self.types = sorted(types)
        super().__init__(
            f"no IAM roles known for {', '.join(self.types)}: add each type to components/model/cluster/identities.py TABLE "
            "with the predefined roles that create and read it")


def _entries(types: Iterable[str]) -> list[Access]:
    types = set(types)
    unknown = {t for t in types if t not in TABLE and not t.startswith(COMPONENT_PREFIX)}
    if unknown:
        raise UnknownResourceType(unknown)
    return [TABLE[t] for t in sorted(types) if t in TABLE]


def project_roles(identity: Identity, types: Iterable[str]) -> list[str]:
    """The project-level roles one identity needs for these types, without those another of them implies."""
    roles = {r for a in _entries(types) for r in (a.deploy if identity == "deploy" else a.preview)}
    implied = {i for r in roles for i in IMPLIES.get(r, ())}
    return sorted(roles - implied)


# Creating the stack's buckets: the one storage permission checked against the project (above), in a custom role the
# bootstrap makes per stack that has buckets (pathwaysBucketCreate_<stack>), the deploy identity's.
BUCKET_CREATE_PERMISSIONS = ("storage.buckets.create",)
BUCKET_TYPE = "gcp:storage/bucket:Bucket"


# The live preflight (infra/offline/preflight.py), run by the preview identity before a stack's first `pulumi up`:
# exactly the reads it makes, as a custom role the bootstrap makes per stack. The permissions are the REST
# references' "IAM permissions" of each call: Service Usage services.list, Cloud Quotas quotaInfos.get, Compute
# machineTypes.list, reservations.get and subnetworks.get, GKE projects.locations.getServerConfig
# (container.clusters.list), Organization Policy v2 policies.getEffectivePolicy (orgpolicy.policy.get).
PREFLIGHT_PERMISSIONS = (
    "cloudquotas.quotas.get", "compute.machineTypes.list", "compute.reservationBlocks.get", "compute.reservationSubBlocks.get",
    "compute.reservations.get", "compute.subnetworks.get",
    "container.clusters.list", "orgpolicy.policy.get", "serviceusage.services.list",
)


# pathways:readQuota: both identities read the project's quota limits under preview and up. The Cloud Quotas API's
# quotaInfos.get needs cloudquotas.quotas.get (its REST reference, "IAM Permissions"); the role name holding it is
# not verified here (no cloud): docs/capacity.md says so (components/model/capacity/quota.py).
QUOTA_ROLE = "roles/cloudquotas.viewer"
QUOTA_API = "cloudquotas.googleapis.com"


def grants(identity: Identity, types: Iterable[str], *, kms_key: bool = False, buckets: Iterable[str] = (),
           state: Optional[tuple[str, str, str]] = None, read_quota: bool = False) -> list[Grant]:
    """Everything one identity is granted: project roles (the storage ones only on `buckets`, the stack's), the
    node service accounts (deploy: act as them), the state bucket (`state`: (bucket, Pulumi project, stack), its
    own stack's objects only) and, when the stack encrypts its secrets with Cloud KMS, its key."""
    types = set(types)
    buckets = tuple(buckets)
    out = [Grant(r, "project", stack_buckets_condition(buckets) if r in BUCKET_CONDITIONED_ROLES and buckets else None)
           for r in project_roles(identity, types)]
    if identity == "deploy" and types & NODE_ACCOUNT_TYPES:
        out.append(Grant(NODE_ACCOUNT_ROLE, "node service accounts"))
    out.append(Grant(STATE_ROLES[identity], "state bucket", stack_state_condition(*state) if state else None))
    if kms_key:
        out.append(Grant(KMS_ROLES[identity], "secrets key"))
    if read_quota:
        out.append(Grant(QUOTA_ROLE, "project"))
    return out


def deploy_roles(types: Iterable[str], *, kms_key: bool = False, read_quota: bool = False) -> list[str]:
    """Sorted roles of the deploy identity (project, state bucket and, with kms_key, the secrets key)."""
    return sorted({g.role for g in grants("deploy", types, kms_key=kms_key, read_quota=read_quota)})


def preview_roles(types: Iterable[str], *, kms_key: bool = False, read_quota: bool = False) -> list[str]:
    """Sorted roles of the preview identity (read-only everywhere)."""
    return sorted({g.role for g in grants("preview", types, kms_key=kms_key, read_quota=read_quota)})


def required_apis(types: Iterable[str], *, kms_key: bool = False, read_quota: bool = False) -> list[str]:
    """The services a project must have enabled for these types and for CI."""
    apis = ({api for a in _entries(types) for api in a.apis} | set(CI_APIS) | ({KMS_API} if kms_key else set())
            | ({QUOTA_API} if read_quota else set()))
    return sorted(apis)
