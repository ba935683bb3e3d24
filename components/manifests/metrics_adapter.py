"""The Custom Metrics Stackdriver Adapter's objects (pure Python), from its upstream manifest
(components/model/workloads/metrics_adapter.py gives the source), with the stack's changes: it runs on the system pool
(a nodeSelector, and none of upstream's GPU and TPU tolerations, which the node guard would refuse), pulls its pinned
image IfNotPresent (upstream: Always), drops every capability without privilege escalation under the
RuntimeDefault seccomp profile, and serves a certificate the stack gives it, which its APIServices verify (caBundle),
where upstream's serves one it makes at start and its APIServices skip verification (insecureSkipTLSVerify)."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from components.constants import ROLE_LABEL
from components.manifests import serving_tls
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


def deployment(system_role: str, generation: int = 1) -> dict[str, Any]:
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
                        "command": ["/adapter", *ma.FLAGS, *ma.TLS_FLAGS],
                        "volumeMounts": [{"name": "serving-cert", "mountPath": ma.TLS_DIR, "readOnly": True}],
                        "resources": {"requests": {"cpu": ma.CPU, "memory": ma.MEMORY},
                                      "limits": {"cpu": ma.CPU, "memory": ma.MEMORY}},
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                        "ports": [{"containerPort": ma.SERVING_PORT, "name": "https", "protocol": "TCP"}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": ma.SERVING_PORT, "scheme": "HTTPS"},
                                           "initialDelaySeconds": 40, "periodSeconds": 10, "timeoutSeconds": 5},
                    }],
                    "volumes": [{"name": "serving-cert", "secret": {
                        "secretName": ma.serving_secret_name(generation), "defaultMode": 0o400,
                        "items": [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]}}],
                },
            },
        },
    }


def seed_objects(generation: int) -> list[dict[str, Any]]:
    """The seed's ServiceAccount (bound to no role, its token never mounted) and its token Secret, which the token
    controller fills: the stack-held secret the serving CA is derived from (serving_tls)."""
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
         "metadata": {"name": ma.SEED_SERVICE_ACCOUNT, "namespace": ma.NAMESPACE, "labels": dict(_LABELS)}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": ma.seed_secret_name(generation), "namespace": ma.NAMESPACE, "labels": dict(_LABELS),
                      "annotations": {"kubernetes.io/service-account.name": ma.SEED_SERVICE_ACCOUNT}}},
    ]


def serving_tls_of(token: str, created: str) -> serving_tls.ServingTLS:
    """The adapter's CA and certificate from its seed Secret's data.token (base64, as the API returns it) and its
    metadata.creationTimestamp (RFC 3339), which the certificate's validity starts at."""
    return serving_tls.derive(base64.b64decode(token), dt.datetime.fromisoformat(created.replace("Z", "+00:00")),
                              ma.SERVING_DNS_NAMES, years=ma.CERTIFICATE_YEARS, ca_name=f"{ma.NAMESPACE}-serving-ca")


def serving_secret(generation: int, data: Any) -> dict[str, Any]:
    """The Secret the adapter serves from: `data` is ServingTLS.secret_data() (an Output in the program)."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "data": data,
            "metadata": {"name": ma.serving_secret_name(generation), "namespace": ma.NAMESPACE, "labels": dict(_LABELS)}}


def api_services(ca_bundle: Any) -> list[dict[str, Any]]:
    """The APIServices the adapter serves, verified against `ca_bundle` (base64 of the CA's PEM; an Output in the
    program): the aggregator checks the adapter's certificate for <service>.<namespace>.svc."""
    return [{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
             "metadata": {"name": f"{version}.{group}", "labels": dict(_LABELS)},
             "spec": {"group": group, "version": version, "caBundle": ca_bundle,
                      "groupPriorityMinimum": ma.GROUP_PRIORITY_MINIMUM, "versionPriority": priority,
                      "service": {"name": ma.NAME, "namespace": ma.NAMESPACE, "port": ma.PORT}}}
            for group, version, priority in ma.API_SERVICES]


def objects(system_role: str, generation: int = 1) -> list[dict[str, Any]]:
    """Every object of the adapter but its namespace, its seed and serving Secrets and its APIServices (whose data
    and caBundle come from the seed: components/kubernetes/metrics_adapter.py), in the order they are applied."""
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ma.SERVICE_ACCOUNT, "namespace": ma.NAMESPACE, "labels": dict(_LABELS)}},
        _binding("ClusterRoleBinding", f"{ma.NAMESPACE}-auth-delegator", "ClusterRole", "system:auth-delegator", _SUBJECT),
        _binding("RoleBinding", f"{ma.NAMESPACE}-auth-reader", "Role", "extension-apiserver-authentication-reader", _SUBJECT,
                 namespace="kube-system"),
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": f"{ma.NAMESPACE}-resource-reader", "labels": dict(_LABELS)},
         "rules": [{"apiGroups": [""], "resources": ["pods", "nodes", "nodes/stats"], "verbs": ["get", "list", "watch"]}]},
        _binding("ClusterRoleBinding", f"{ma.NAMESPACE}-resource-reader", "ClusterRole", f"{ma.NAMESPACE}-resource-reader", _SUBJECT),
        deployment(system_role, generation),
        # not awaited either: Pulumi's await on a Service with a selector waits for a ready endpoint, the adapter
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": ma.NAME, "namespace": ma.NAMESPACE, "labels": dict(_LABELS),
                                                             "annotations": {SKIP_AWAIT: "true"}},
         "spec": {"type": "ClusterIP", "selector": {"k8s-app": ma.NAME},
                  "ports": [{"port": ma.PORT, "protocol": "TCP", "targetPort": ma.SERVING_PORT}]}},
    ]
    out.append({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "external-metrics-reader", "labels": dict(_LABELS)},
                "rules": [{"apiGroups": ["external.metrics.k8s.io"], "resources": ["*"], "verbs": ["list", "get", "watch"]}]})
    out.append(_binding("ClusterRoleBinding", "external-metrics-reader", "ClusterRole", "external-metrics-reader",
                        [{"kind": "ServiceAccount", "name": "horizontal-pod-autoscaler", "namespace": "kube-system"}]))
    return out
