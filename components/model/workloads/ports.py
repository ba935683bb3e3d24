"""The ports Pathways serves, once: manifests expose them, the config model keeps them free, and the
VPC firewall closes them to everything but the Pathways nodes.

Facts: PLATFORM-FACTS §1 (RM 29001 (+29002), proxy 29000, worker 29005 (+29006, 8471, 8080),
colocated-Python sidecar 50051); pathwaysutils 0.1.13 experimental/gke/jobset.py uses the same.
"""

from __future__ import annotations

PROXY_PORT = 29000
RM_PORT = 29001
RM_EXTRA_PORT = 29002
WORKER_PORT = 29005
WORKER_EXTRA_PORTS = (29006, 8471, 8080)
SIDECAR_PORT = 50051

# Everything a Pathways pod listens on (all hostNetwork, so these are the nodes' own ports).
PATHWAYS_PORTS = (PROXY_PORT, RM_PORT, RM_EXTRA_PORT, WORKER_PORT, *WORKER_EXTRA_PORTS, SIDECAR_PORT)

# Ports the head node already serves: Pathways' and the kubelet / kube-proxy ones (Kubernetes
# "Ports and Protocols"), so a profiler must not take them.
HEAD_NODE_PORTS = {
    PROXY_PORT: "the IFRT proxy", RM_PORT: "the resource manager", RM_EXTRA_PORT: "the resource manager",
    10248: "the kubelet", 10250: "the kubelet", 10255: "the kubelet", 10249: "kube-proxy", 10256: "kube-proxy",
}

# Real-time serving (PLATFORM-FACTS §7, Google's multihost inference shape): on the pod network, not the
# host's, and on other ports than the JobSet path. The ClusterIP Service exposes only the HTTP front end.
SERVE_PROXY_PORT = 38681
SERVE_RM_PORT = 38677
SERVE_WORKER_PORT = 38679
SERVE_GRPC_PORT = 9000
SERVE_HTTP_PORT = 8000

# A notebook run's JupyterLab (python -m infra.run submit --notebook): on the head's loopback only (the head pod is
# hostNetwork: any other address would be the node's), reached through `kubectl port-forward`. JupyterLab's default.
NOTEBOOK_PORT = 8888
