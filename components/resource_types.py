"""Pulumi type tokens the offline tools and the policy pack look for (one place, so they agree)."""

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
# The component that holds a Shared Pathways Service's client Role and RoleBinding (components/shared_service.py).
SHARED_SERVICE_ACCESS = "pathways:k8s:SharedServiceAccess"
RUN_ACCESS = "pathways:k8s:RunAccess"
# Service accounts, PersistentVolumes and claims of workloads' mounts (components/workload_storage.py).
WORKLOAD_STORAGE = "pathways:k8s:WorkloadStorage"
