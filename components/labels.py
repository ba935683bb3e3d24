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
