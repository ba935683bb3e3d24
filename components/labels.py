"""Node labels and taints the pools carry and the workloads select on (one place, so they agree)."""

ROLE_LABEL = "pathways/role"
HEAD_ROLE = "head"
SYSTEM_ROLE = "system"
PROXY_ROLE = "proxy"  # nodes for a Shared Pathways Service's client proxies
SLICE_GROUP_LABEL = "pathways/slice-group"
SLICE_LABEL = "pathways/slice"
TPU_TAINT = ("google.com/tpu", "present", "NO_SCHEDULE")
HEAD_TAINT = (ROLE_LABEL, HEAD_ROLE, "NO_SCHEDULE")
SPOT_LABEL = "cloud.google.com/gke-spot"
# GKE labels every TPU node with its accelerator and topology (PLATFORM-FACTS §2); other nodes have neither.
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
NODE_POOL_LABEL = "cloud.google.com/gke-nodepool"  # GKE labels every node with its pool
# GCP label on the cluster and buckets of a stack with pathways:protected: true. The policy pack reads
# it: the stack's own flag is the one source of truth for "protected" (not the stack's name).
PROTECTED_LABEL: tuple[str, str] = ("pathways-protected", "true")
