"""Who may use a Shared Pathways Service: a namespace-scoped Role and RoleBinding (pure Python).

Exactly what pathwaysutils' client (0.1.13, shared_pathways_service/gke_utils.py and isc_pathways.py)
does with kubectl and the Kubernetes API: apply and delete its proxy Job, find and wait for the
proxy pod, follow its logs, port-forward to it, and read the service JobSet (to match the proxy
image to the server). Nothing more: no Secrets, no exec, nothing cluster-wide.
"""

from __future__ import annotations

from typing import Any

from components.model.workloads.workload import Workload

ROLE_RULES = (
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "delete", "get"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["create"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get"]},
)


def role_name(w: Workload) -> str:
    return f"{w.name}-client"


def role(w: Workload) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": role_name(w), "namespace": w.service_settings.namespace},
        "rules": [dict(r) for r in ROLE_RULES],
    }


def role_binding(w: Workload) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role_name(w), "namespace": w.service_settings.namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name(w)},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": c.kind, "name": c.name} for c in w.service_settings.clients],
    }
