"""Names that must agree across the stack, in one place: the node labels and taints the pools carry and the
workloads select on, and the Pulumi type tokens the offline tools and the policy pack look for (pure constants)."""

ROLE_LABEL = "pathways/role"
HEAD_ROLE = "head"
SYSTEM_ROLE = "system"
PROXY_ROLE = "proxy"  # nodes for a Shared Pathways Service's client proxies
SLICE_GROUP_LABEL = "pathways/slice-group"
SLICE_LABEL = "pathways/slice"
TPU_TAINT = ("google.com/tpu", "present", "NO_SCHEDULE")
HEAD_TAINT = (ROLE_LABEL, HEAD_ROLE, "NO_SCHEDULE")
SPOT_LABEL = "cloud.google.com/gke-spot"
# GKE taints the nodes of a queued-provisioning pool (Cluster Toolkit modules/compute/gke-node-pool: "adds the
# cloud.google.com/gke-queued taint"; its TPU examples' pods tolerate it, "Mandatory for Queued Provisioning").
QUEUED_TAINT = ("cloud.google.com/gke-queued", "true", "NO_SCHEDULE")
# GKE labels every TPU node with its accelerator and topology (PLATFORM-FACTS §2); other nodes have neither.
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE labels every node with its pool
# GCP label on the cluster and buckets of a stack with pathways:protected: true. The policy pack reads
# it: the stack's own flag is the one source of truth for "protected" (not the stack's name).
PROTECTED_LABEL: tuple[str, str] = ("pathways-protected", "true")
# On a fleet worker's cluster whose stack accepted Kubernetes tokens on the internet-facing DNS endpoint
# (fleet.acknowledgeInternetTokens): the policy pack reads it (pathways-network-exposure).
INTERNET_TOKENS_LABEL: tuple[str, str] = ("pathways-internet-tokens", "acknowledged")
# LeaderWorkerSet's own pod labels (sigs.k8s.io/lws v0.9.0 api/leaderworkerset/v1/leaderworkerset_types.go): its
# controller puts the set's name on every pod template of the set and its pod webhook the worker index, "0" on a
# leader. The controller selects a set's leaders by both (pkg/controllers/leaderworkerset_controller.go,
# updateConditions and the HPA pod selector); the serve Service does the same.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"

# --- Pulumi type tokens the offline tools and the policy pack look for ---
CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_IAM_TYPES = ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding")
PROJECT_IAM_TYPES = ("gcp:projects/iAMMember:IAMMember", "gcp:projects/iAMBinding:IAMBinding", "gcp:projects/iAMPolicy:IAMPolicy")
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HELM_CHART = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES = (HELM_RELEASE, HELM_CHART)
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
# The component that holds a Shared Pathways Service's client Role and RoleBinding (components/gcp/proxy_pool.py).
SHARED_SERVICE_ACCESS = "pathways:k8s:SharedServiceAccess"
RUN_ACCESS = "pathways:k8s:RunAccess"
# Teams' namespaces, submitters' access and runs policies (components/kubernetes/teams.py).
TEAMS = "pathways:k8s:Teams"
# Service accounts, PersistentVolumes and claims of workloads' mounts (components/kubernetes/workload_storage.py).
WORKLOAD_STORAGE = "pathways:k8s:WorkloadStorage"
