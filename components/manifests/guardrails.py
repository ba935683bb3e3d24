"""Cluster-wide Kubernetes objects that keep the Pathways nodes and namespace safe (pure Python).

- Pod Security Admission labels: the workload namespace must allow hostNetwork (every Pathways pod
  uses it), which only the `privileged` level does (Kubernetes "Pod Security Standards": baseline
  forbids host namespaces); the controllers' namespaces enforce `restricted`.
- A ValidatingAdmissionPolicy that keeps every other namespace off the Pathways head and TPU nodes:
  a pod there acts as the Pathways node service account (hostNetwork pods use the node's identity,
  PLATFORM-FACTS §4), which can write the scratch bucket. Both node kinds are tainted, so a pod needs
  a toleration to land there: the policy refuses tolerations of those taints (or of every taint)
  outside the workload namespace and GKE's own system namespaces.
- PriorityClasses for the stack's workloads.
"""

from __future__ import annotations

from typing import Any

from ..labels import HEAD_TAINT, TPU_TAINT

PSA = "pod-security.kubernetes.io"


def psa_labels(level: str) -> dict[str, str]:
    """Pod Security Admission labels: enforce `level`, and warn and audit against `restricted`."""
    return {f"{PSA}/enforce": level, f"{PSA}/enforce-version": "latest", f"{PSA}/warn": "restricted", f"{PSA}/audit": "restricted"}


WORKLOAD_NAMESPACE_LEVEL = "privileged"  # hostNetwork; the node guard keeps the rest of the cluster out
CONTROLLER_NAMESPACE_LEVEL = "restricted"  # the JobSet chart's pods run non-root, no capabilities, RuntimeDefault

# GKE's system namespaces run DaemonSets on every node, tolerating every taint.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
SYSTEM_NAMESPACE_PREFIXES = ("gke-", "gmp-")

NODE_GUARD = "pathways-nodes-reserved"
GUARDED_TAINT_KEYS = (TPU_TAINT[0], HEAD_TAINT[0])


def node_guard_policy(workload_namespace: str, extra_namespaces: tuple[str, ...] = ()) -> dict[str, Any]:
    allowed = ", ".join(f"'{n}'" for n in dict.fromkeys((workload_namespace, *extra_namespaces, *SYSTEM_NAMESPACES)))
    prefixes = " || ".join(f"request.namespace.startsWith('{p}')" for p in SYSTEM_NAMESPACE_PREFIXES)
    keys = ", ".join(f"'{k}'" for k in GUARDED_TAINT_KEYS)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": NODE_GUARD},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"],
            }]},
            "matchConditions": [{
                "name": "outside-pathways-and-system-namespaces",
                "expression": f"!(request.namespace in [{allowed}] || {prefixes})",
            }],
            "validations": [{
                "expression": (
                    "!has(object.spec.tolerations) || !object.spec.tolerations.exists(t, "
                    f"(has(t.key) && t.key in [{keys}]) || (!has(t.key) && has(t.operator) && t.operator == 'Exists'))"
                ),
                "message": (
                    f"only namespace {workload_namespace} may run pods on the Pathways head and TPU nodes "
                    "(they act as the Pathways node service account); remove the toleration"
                ),
                "reason": "Forbidden",
            }],
        },
    }


def node_guard_binding() -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": NODE_GUARD},
        "spec": {"policyName": NODE_GUARD, "validationActions": ["Deny"]},
    }


# Below system-cluster-critical (2e9) and GKE's own; higher wins a node and may preempt lower.
PRIORITY_CLASSES = {
    "training": (1_000_000, "Pathways production training"),
    "interactive": (500_000, "Pathways interactive endpoints"),
    "experiment": (100_000, "Pathways experiments: the first to give way"),
}


def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": f"pathways-{key}"},
            "value": value, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority", "description": text,
        }
        for key, (value, text) in PRIORITY_CLASSES.items()
    ]
