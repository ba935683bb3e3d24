"""A run's logs in Cloud Logging, which keeps them after `delete` (#74.5; pure): the query and the console link.

GKE sends container stdout and stderr to Cloud Logging as resource type `k8s_container`, with the pod's labels as
entry labels `k8s-pod/<key>`, dots in the key as underscores (Google's own TPU JobSet sample queries
`labels['k8s-pod/jobset_sigs_k8s_io/jobset-name']`: GoogleCloudPlatform/observability-analytics-samples
samples/logging/kubernetes/k8s_tpu_jobset_stdout.sql)."""

from __future__ import annotations

from typing import Optional
from urllib.parse import quote


def _pod_label(key: str) -> str:
    return f'labels."k8s-pod/{key.replace(".", "_")}"'


def query(cluster: str, namespace: str, run: str, worker: Optional[int] = None) -> str:
    """The Logging query language filter of a run's containers (the head's, or worker job `worker`'s)."""
    parts = ['resource.type="k8s_container"', f'resource.labels.cluster_name="{cluster}"',
             f'resource.labels.namespace_name="{namespace}"', f'{_pod_label("jobset.sigs.k8s.io/jobset-name")}="{run}"']
    if worker is None:
        parts.append(f'{_pod_label("jobset.sigs.k8s.io/replicatedjob-name")}="pathways-head"')
    else:
        parts.append(f'{_pod_label("jobset.sigs.k8s.io/replicatedjob-name")}!="pathways-head"')
        parts.append(f'{_pod_label("jobset.sigs.k8s.io/job-index")}="{worker}"')
    return " ".join(parts)


def link(q: str, project: str) -> str:
    """The Logs Explorer URL with the query (its `;query=` path parameter, URL-encoded) in the project."""
    return f"https://console.cloud.google.com/logs/query;query={quote(q, safe='')}?project={project}"
