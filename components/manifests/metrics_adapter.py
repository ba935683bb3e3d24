"""The Custom Metrics Stackdriver Adapter's objects (pure Python), from its upstream manifest
(components/model/workloads/metrics_adapter.py gives the source), with the stack's changes: it runs on the system pool
(a nodeSelector, and none of upstream's GPU and TPU tolerations, which the node guard would refuse), pulls its pinned
image IfNotPresent (upstream: Always), and drops every capability without privilege escalation under the
RuntimeDefault seccomp profile."""

from __future__ import annotations

from typing import Any

from components.constants import ROLE_LABEL
from components.manifests.lws import SKIP_AWAIT
from components.model.workloads import metrics_adapter as ma

RBAC = "rbac.authorization.k8s.io/v1"
_LABELS = {"k8s-app": ma.NAME, "app.kubernetes.io/managed-by": "pulumi"}
_SUBJECT = [{"kind": "ServiceAccount", "name": ma.SERVICE_ACCOUNT, "namespace": ma.NAMESPACE}]


def _binding(kind: str, name: str, role_kind: str, role: str, subjects: list[dict[str, str]], namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}, "subjects": subjects}


def deployment(system_role: str) -> dict[str, Any]:
    selector = {"k8s-app": ma.NAME}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        # Not awaited: nothing the stack makes needs the adapter ready (an autoscaler without its metric holds the
        # count and says so), and a `pulumi up` of an endpoint must not fail on a metrics server that is slow to start.
        "metadata": {"name": ma.NAME, "namespace": ma.NAMESPACE, "labels": dict(_LABELS), "annotations": {SKIP_AWAIT: "true"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "serviceAccountName": ma.SERVICE_ACCOUNT,
                    "nodeSelector": {ROLE_LABEL: system_role},
                    "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": "adapter",
                        "image": ma.IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/adapter", *ma.FLAGS],
                        "resources": {"requests": {"cpu": ma.CPU, "memory": ma.MEMORY},
                                      "limits": {"cpu": ma.CPU, "memory": ma.MEMORY}},
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": ma.PORT, "scheme": "HTTPS"},
                                           "initialDelaySeconds": 40, "periodSeconds": 10, "timeoutSeconds": 5},
                    }],
                },
            },
        },
    }


def objects(system_role: str) -> list[dict[str, Any]]:
    """Every object of the adapter but its namespace, in the order they are applied."""
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ma.SERVICE_ACCOUNT, "namespace": ma.NAMESPACE, "labels": dict(_LABELS)}},
        _binding("ClusterRoleBinding", f"{ma.NAMESPACE}-auth-delegator", "ClusterRole", "system:auth-delegator", _SUBJECT),
        _binding("RoleBinding", f"{ma.NAMESPACE}-auth-reader", "Role", "extension-apiserver-authentication-reader", _SUBJECT,
                 namespace="kube-system"),
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": f"{ma.NAMESPACE}-resource-reader", "labels": dict(_LABELS)},
         "rules": [{"apiGroups": [""], "resources": ["pods", "nodes", "nodes/stats"], "verbs": ["get", "list", "watch"]}]},
        _binding("ClusterRoleBinding", f"{ma.NAMESPACE}-resource-reader", "ClusterRole", f"{ma.NAMESPACE}-resource-reader", _SUBJECT),
        deployment(system_role),
        # not awaited either: Pulumi's await on a Service with a selector waits for a ready endpoint, the adapter
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": ma.NAME, "namespace": ma.NAMESPACE, "labels": dict(_LABELS),
                                                             "annotations": {SKIP_AWAIT: "true"}},
         "spec": {"type": "ClusterIP", "selector": {"k8s-app": ma.NAME},
                  "ports": [{"port": ma.PORT, "protocol": "TCP", "targetPort": ma.PORT}]}},
    ]
    for group, version, priority in ma.API_SERVICES:
        # insecureSkipTLSVerify as upstream: the adapter serves a certificate it makes itself at start, which no
        # caBundle could name in advance; the API server reaches it inside the cluster
        out.append({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                    "metadata": {"name": f"{version}.{group}", "labels": dict(_LABELS)},
                    "spec": {"group": group, "version": version, "insecureSkipTLSVerify": True,
                             "groupPriorityMinimum": ma.GROUP_PRIORITY_MINIMUM, "versionPriority": priority,
                             "service": {"name": ma.NAME, "namespace": ma.NAMESPACE}}})
    out.append({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "external-metrics-reader", "labels": dict(_LABELS)},
                "rules": [{"apiGroups": ["external.metrics.k8s.io"], "resources": ["*"], "verbs": ["list", "get", "watch"]}]})
    out.append(_binding("ClusterRoleBinding", "external-metrics-reader", "ClusterRole", "external-metrics-reader",
                        [{"kind": "ServiceAccount", "name": "horizontal-pod-autoscaler", "namespace": "kube-system"}]))
    return out
