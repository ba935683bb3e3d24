"""Cluster-wide Kubernetes objects that keep the Pathways nodes and namespaces safe (pure Python).

Every Pathways pod uses hostNetwork, and a hostNetwork pod calls Google as its node's service account
(Workload Identity does not apply, PLATFORM-FACTS §4): on a head, TPU or proxy node that is the Pathways
node service account, which can write the scratch bucket. So:

- Pod Security Admission labels: the workload namespaces must allow hostNetwork, which only the
  `privileged` level does (Kubernetes "Pod Security Standards": baseline forbids host namespaces); the
  controllers' namespaces enforce `restricted`. A Shared Pathways Service lives in `default` (where
  pathwaysutils' client looks for it), which gets the same labels.
- ValidatingAdmissionPolicy `pathways-nodes-reserved`, on pods:
  * outside the workload namespaces and GKE's system namespaces, no pod may tolerate the head or TPU
    taints (or every taint), nor use hostNetwork;
  * outside the system namespaces, no pod may be created with spec.nodeName: such a pod skips the
    scheduler and the kubelet checks only NoExecute taints, so a NoSchedule taint does not keep it off a
    TPU node (PLATFORM-FACTS §6); only a kubelet creates pods bound to a node (mirror pods);
  * in the workload namespaces, a pod that tolerates those taints or uses hostNetwork must be created by
    the Job controller (from a Job) or the StatefulSet controller (from a LeaderWorkerSet's StatefulSet):
    people and service accounts that may create pods there cannot place one on a Pathways node themselves.
- ValidatingAdmissionPolicy `pathways-workload-templates`, on Jobs and StatefulSets in the workload
  namespaces: only the JobSet controller may create a Job, and only the LeaderWorkerSet controller a
  StatefulSet, whose pods tolerate the head or TPU taints, and none of them may run a privileged
  container, add capabilities, or use hostPath, hostPID or hostIPC. A Shared Pathways
  Service's clients create their proxy Jobs there (pathwaysutils' pw-proxy.yaml: hostNetwork, rootless,
  every capability dropped), which pass; nothing more powerful does.
- PriorityClasses for the stack's workloads.
"""

from __future__ import annotations

from typing import Any

from ..labels import HEAD_TAINT, TPU_TAINT
from ..model.common import PRIORITY_CLASSES

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
TEMPLATE_GUARD = "pathways-workload-templates"
GUARDED_TAINT_KEYS = (TPU_TAINT[0], HEAD_TAINT[0])
# Who creates Pathways pods and Jobs. The Job controller acts as its own service account when
# kube-controller-manager runs with --use-service-account-credentials (GKE, kubeadm), else as
# system:kube-controller-manager. The JobSet chart's controller runs as <release>-controller in
# jobset-system (charts/jobset/templates/controller/_helpers.tpl; the release is named jobset).
# A serve workload's pods come from StatefulSets (LeaderWorkerSet makes one for its leaders and one per
# group for the workers): the StatefulSet controller creates them, as its own service account. The LWS
# chart's controller runs as <release>-controller-manager in lws-system (charts/lws/templates/rbac/
# serviceaccount.yaml; the release is named lws, so its full name is lws).
POD_CREATORS = ("system:serviceaccount:kube-system:job-controller", "system:serviceaccount:kube-system:statefulset-controller",
                "system:kube-controller-manager")
JOB_CREATORS = ("system:serviceaccount:jobset-system:jobset-controller",)
STATEFULSET_CREATORS = ("system:serviceaccount:lws-system:lws-controller-manager",)


def _quoted(values: Any) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _namespace_is(names: tuple[str, ...]) -> str:
    return f"(request.namespace in [{_quoted(names)}])"


def _system_namespace() -> str:
    prefixes = " || ".join(f"request.namespace.startsWith('{p}')" for p in SYSTEM_NAMESPACE_PREFIXES)
    return f"({_namespace_is(SYSTEM_NAMESPACES)} || {prefixes})"


def _tolerates_pathways(spec: str) -> str:
    """The pod spec at `spec` tolerates the head or TPU taint, or every taint."""
    # An empty key with operator Exists tolerates every taint (the API server keeps key: "" as given).
    return (f"(has({spec}.tolerations) && {spec}.tolerations.exists(t, "
            f"(has(t.key) && t.key in [{_quoted(GUARDED_TAINT_KEYS)}]) || "
            f"((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')))")


def _host_network(spec: str) -> str:
    return f"(has({spec}.hostNetwork) && {spec}.hostNetwork)"


def _created_by(users: tuple[str, ...]) -> str:
    return f"(request.operation != 'CREATE' || request.userInfo.username in [{_quoted(users)}])"


def _policy(name: str, rules: list[dict[str, Any]], conditions: list[dict[str, str]], validations: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": conditions,
            "validations": [{**v, "reason": "Forbidden"} for v in validations],
        },
    }


def node_guard_policy(workload_namespace: str, extra_namespaces: tuple[str, ...] = ()) -> dict[str, Any]:
    workload = tuple(dict.fromkeys((workload_namespace, *extra_namespaces)))
    names = ", ".join(workload)
    pod = "object.spec"
    return _policy(
        NODE_GUARD,
        [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}],
        [{"name": "outside-system-namespaces", "expression": f"!{_system_namespace()}"}],
        [
            {"expression": f"{_namespace_is(workload)} || !({_tolerates_pathways(pod)} || {_host_network(pod)})",
             "message": (f"only namespace(s) {names} may run pods on the Pathways head and TPU nodes or on the host "
                         "network (they act as the Pathways node service account); remove the toleration or hostNetwork")},
            {"expression": f"request.operation != 'CREATE' || !has({pod}.nodeName) || request.userInfo.username.startsWith('system:node:')",
             "message": ("a pod may not be created bound to a node (spec.nodeName skips the scheduler, and NoSchedule "
                         "taints do not stop it); let the scheduler place it")},
            {"expression": f"!{_namespace_is(workload)} || !({_tolerates_pathways(pod)} || {_host_network(pod)}) || {_created_by(POD_CREATORS)}",
             "message": (f"in {names}, pods on the Pathways nodes or the host network come from Pathways Jobs only; "
                         "create a JobSet (or a serve workload's LeaderWorkerSet) instead of a bare pod")},
        ],
    )


def template_guard_policy(workload_namespace: str, extra_namespaces: tuple[str, ...] = ()) -> dict[str, Any]:
    workload = tuple(dict.fromkeys((workload_namespace, *extra_namespaces)))
    pod = "object.spec.template.spec"
    # containers and initContainers are different CEL types (the API server's type check refuses `+`):
    # each list is checked on its own
    powerful = ("c, has(c.securityContext) && ((has(c.securityContext.privileged) && c.securityContext.privileged) || "
                "(has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && "
                "size(c.securityContext.capabilities.add) > 0))")
    by_controller = (f"(request.resource.resource == 'jobs' && {_created_by(JOB_CREATORS)}) || "
                     f"(request.resource.resource == 'statefulsets' && {_created_by(STATEFULSET_CREATORS)})")
    return _policy(
        TEMPLATE_GUARD,
        [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["jobs"]},
         {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["statefulsets"]}],
        [{"name": "in-pathways-namespaces", "expression": _namespace_is(workload)}],
        [
            {"expression": f"!{_tolerates_pathways(pod)} || {by_controller}",
             "message": ("only the JobSet controller (Jobs) and the LeaderWorkerSet controller (StatefulSets) create "
                         "workloads for the Pathways head and TPU nodes; submit a JobSet or a LeaderWorkerSet")},
            {"expression": (f"!{pod}.containers.exists({powerful}) && "
                            f"!(has({pod}.initContainers) && {pod}.initContainers.exists({powerful}))"),
             "message": "no privileged container and no added capability in the Pathways namespaces"},
            {"expression": (f"!(has({pod}.hostPID) && {pod}.hostPID) && !(has({pod}.hostIPC) && {pod}.hostIPC) && "
                            f"!(has({pod}.volumes) && {pod}.volumes.exists(v, has(v.hostPath)))"),
             "message": "no hostPID, hostIPC or hostPath volume in the Pathways namespaces"},
        ],
    )


def guard_binding(policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": policy},
        "spec": {"policyName": policy, "validationActions": ["Deny"]},
    }


def node_guard_binding() -> dict[str, Any]:
    return guard_binding(NODE_GUARD)




def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": f"pathways-{key}"},
            "value": value, "globalDefault": False, "preemptionPolicy": "PreemptLowerPriority", "description": text,
        }
        for key, (value, text) in PRIORITY_CLASSES.items()
    ]
