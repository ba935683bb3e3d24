"""Cluster-wide Kubernetes objects that keep the Pathways nodes and namespaces safe (pure Python).

Every Pathways pod uses hostNetwork, and a hostNetwork pod calls Google as its node's service account
(Workload Identity does not apply, PLATFORM-FACTS §4): on a head, TPU or proxy node that is the Pathways
node service account, which can write the scratch bucket. So:

- Pod Security Admission labels: the workload namespaces must allow hostNetwork, which only the
  `privileged` level does (Kubernetes "Pod Security Standards": baseline forbids host namespaces); the
  controllers' namespaces enforce `restricted`. A Shared Pathways Service lives in `default` (where
  pathwaysutils' client looks for it), which gets the same labels.
- ValidatingAdmissionPolicy `pathways-nodes-reserved`, on pods:
  * outside the workload namespaces and GKE's system namespaces, no pod may be created tolerating the head
    or TPU taints (or every taint), nor using hostNetwork (created: one made while its namespace was a
    workload namespace must stay updatable after a stack change drops it, or its Job cannot remove its
    finalizer and it never goes);
  * outside the system namespaces, no pod may be created with spec.nodeName: such a pod skips the
    scheduler and the kubelet checks only NoExecute taints, so a NoSchedule taint does not keep it off a
    TPU node (PLATFORM-FACTS §6); only a kubelet creates pods bound to a node (mirror pods);
  * in the workload namespaces, a pod that tolerates those taints or uses hostNetwork must be created by
    the Job controller (from a Job) or the StatefulSet controller (from a LeaderWorkerSet's StatefulSet):
    people and service accounts that may create pods there cannot place one on a Pathways node themselves.
  * no update may make a pod tolerate the head or TPU taints (Kubernetes lets anyone who may update a pod
    add tolerations, and Kueue's pod integration adds its flavor's on admission): a pod that tolerates
    them was created tolerating them, by a controller above.
- ValidatingAdmissionPolicy `pathways-workload-templates`, on Jobs and StatefulSets in the workload
  namespaces, on CREATE and UPDATE: only the JobSet controller may create or change a Job, and only the
  LeaderWorkerSet controller a StatefulSet, whose pod template reaches the Pathways nodes or their identity:
  it tolerates the head or TPU taints, selects those nodes, requests TPUs, or uses hostNetwork. An update
  that leaves the template as it was passes (the garbage collector's and controllers' metadata updates);
  one that changes it is judged like a create, so an ordinary StatefulSet or a suspended Job cannot be
  edited onto the TPU nodes afterwards. None of them may run a privileged container, add capabilities, or
  use hostPath, hostPID or hostIPC. A Shared Pathways Service's clients create their proxy Jobs in its
  namespace (pathwaysutils' pw-proxy.yaml: hostNetwork, no tolerations, rootless, every capability
  dropped): the service's listed clients may, with nothing more than hostNetwork; nobody else may.
- PriorityClasses for the stack's workloads.
"""

from __future__ import annotations

from typing import Any, Optional

from components.constants import (
    HEAD_ROLE,
    HEAD_TAINT,
    LWS_NAME_LABEL,
    NODE_POOL_LABEL,
    ROLE_LABEL,
    SLICE_GROUP_LABEL,
    SLICE_LABEL,
    TPU_ACCELERATOR_LABEL,
    TPU_TAINT,
    TPU_TOPOLOGY_LABEL,
)
from components.manifests.kueue_api import MANAGED_NAMESPACE_LABEL
from components.model.cluster.kubernetes import PLATFORM_NAMESPACES
from components.model.common import PRIORITY_CLASSES

PSA = "pod-security.kubernetes.io"


def psa_labels(level: str) -> dict[str, str]:
    """Pod Security Admission labels: enforce `level`, and warn and audit against `restricted`."""
    return {f"{PSA}/enforce": level, f"{PSA}/enforce-version": "latest", f"{PSA}/warn": "restricted", f"{PSA}/audit": "restricted"}


WORKLOAD_NAMESPACE_LEVEL = "privileged"  # hostNetwork; the node guard keeps the rest of the cluster out


def workload_namespace_labels() -> dict[str, str]:
    """A namespace the stack's workloads, runs or a team's run in: Pod Security at WORKLOAD_NAMESPACE_LEVEL, and
    Kueue manages its jobs (kueue_api.MANAGED_NAMESPACES)."""
    return {**psa_labels(WORKLOAD_NAMESPACE_LEVEL), MANAGED_NAMESPACE_LABEL: "true"}
# The JobSet, Kueue and LWS charts' pods run non-root, without capabilities, with the RuntimeDefault seccomp profile
# (LWS's by the stack's value: controller_charts.py); tests/test_pod_security.py checks each against this level.
CONTROLLER_NAMESPACE_LEVEL = "restricted"

# GKE's system namespaces run DaemonSets on every node, tolerating every taint: exempt by exact name
# (components/model/cluster/kubernetes.py PLATFORM_NAMESPACES).
NODE_GUARD = "pathways-nodes-reserved"
TEMPLATE_GUARD = "pathways-workload-templates"
GUARDED_TAINT_KEYS = (TPU_TAINT[0], HEAD_TAINT[0])
# Node labels that select the Pathways head and TPU nodes (GKE's TPU labels, PLATFORM-FACTS §2; ours,
# components/constants.py). Selecting them alone does not get past the taints, but a template that does is
# placing work on those nodes and is judged as such.
GUARDED_NODE_LABELS = (TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL, SLICE_GROUP_LABEL, SLICE_LABEL)
# A template that requests TPUs: with Kubernetes' ExtendedResourceToleration admission plugin
# (plugin/pkg/admission/extendedresourcetoleration) the API server itself adds the `google.com/tpu`
# toleration to its pods, after the template was judged.
TPU_RESOURCE = TPU_TAINT[0]
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
# A pod labelled as a LeaderWorkerSet's member comes from a StatefulSet: the serve Service selects the leaders by
# that label (lws.py), so no other creator may make one.
LWS_POD_CREATORS = ("system:serviceaccount:kube-system:statefulset-controller", "system:kube-controller-manager")
JOB_CREATORS = ("system:serviceaccount:jobset-system:jobset-controller",)
STATEFULSET_CREATORS = ("system:serviceaccount:lws-system:lws-controller-manager",)

TEMPLATE_MESSAGE = ("only the JobSet controller (Jobs) and the LeaderWorkerSet controller (StatefulSets) create workloads "
                    "for the Pathways head and TPU nodes or the host network, or change their pod templates; submit a JobSet "
                    "or a LeaderWorkerSet")


def _quoted(values: Any) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _namespace_is(names: tuple[str, ...]) -> str:
    return f"(request.namespace in [{_quoted(names)}])"


def _system_namespace() -> str:
    return _namespace_is(PLATFORM_NAMESPACES)


def _tolerates_pathways(spec: str) -> str:
    """The pod spec at `spec` tolerates the head or TPU taint, or every taint."""
    # An empty key with operator Exists tolerates every taint (the API server keeps key: "" as given).
    return (f"(has({spec}.tolerations) && {spec}.tolerations.exists(t, "
            f"(has(t.key) && t.key in [{_quoted(GUARDED_TAINT_KEYS)}]) || "
            f"((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')))")


def _host_network(spec: str) -> str:
    return f"(has({spec}.hostNetwork) && {spec}.hostNetwork)"


def _selects_pathways_nodes(spec: str, node_pools: tuple[str, ...] = ()) -> str:
    """The pod spec at `spec` selects the head or TPU nodes by a node selector (on a cluster made elsewhere, the pools
    the stack names by GKE's node-pool label too)."""
    pools = (f" || ('{NODE_POOL_LABEL}' in {spec}.nodeSelector && {spec}.nodeSelector['{NODE_POOL_LABEL}'] in "
             f"[{_quoted(node_pools)}])" if node_pools else "")
    return (f"(has({spec}.nodeSelector) && ({spec}.nodeSelector.exists(k, k in [{_quoted(GUARDED_NODE_LABELS)}]) || "
            f"('{ROLE_LABEL}' in {spec}.nodeSelector && {spec}.nodeSelector['{ROLE_LABEL}'] == '{HEAD_ROLE}'){pools}))")


def _requests_tpus(spec: str) -> str:
    """A container or init container of the pod spec at `spec` requests or limits TPUs (each list on its own:
    the API server's type check refuses joining them with +)."""
    asks = (f"c, has(c.resources) && ((has(c.resources.requests) && '{TPU_RESOURCE}' in c.resources.requests) || "
            f"(has(c.resources.limits) && '{TPU_RESOURCE}' in c.resources.limits))")
    return f"({spec}.containers.exists({asks}) || (has({spec}.initContainers) && {spec}.initContainers.exists({asks})))"


def _reaches_pathways(spec: str, node_pools: tuple[str, ...] = ()) -> str:
    """The pod template at `spec` would run on the Pathways nodes or act as their service account. Not its TPU
    requests: the real API server's type check of this policy finds no `requests` field in a StatefulSet's
    container resources (Kubernetes 1.36: "apps/v1, Kind=StatefulSet: undefined field 'requests'", found by the
    real-engine tier), and a pod that asks for TPUs without tolerating their taint never lands on a TPU node;
    the node guard checks the pods' requests themselves."""
    return f"({_tolerates_pathways(spec)} || {_selects_pathways_nodes(spec, node_pools)} || {_host_network(spec)})"


def _has_lws_label(metadata: str) -> str:
    """The object whose metadata is at `metadata` carries the LeaderWorkerSet name label."""
    return f"(has({metadata}) && has({metadata}.labels) && '{LWS_NAME_LABEL}' in {metadata}.labels)"


def _lws_label_kept() -> str:
    """An update leaves the pod's LeaderWorkerSet label as it was (absent, or the same value)."""
    old, new = "oldObject.metadata", "object.metadata"
    return (f"({_has_lws_label(old)} && {_has_lws_label(new)} && {old}.labels['{LWS_NAME_LABEL}'] == {new}.labels['{LWS_NAME_LABEL}'])"
            f" || (!{_has_lws_label(old)} && !{_has_lws_label(new)})")


def _created_by(users: tuple[str, ...]) -> str:
    """A pod's creator (pods: who may change what reaches the Pathways nodes is the next rule's)."""
    return f"(request.operation != 'CREATE' || request.userInfo.username in [{_quoted(users)}])"


def _acted_by(users: tuple[str, ...]) -> str:
    """The request comes from one of `users`, or it is an update that leaves the pod template as it was
    (oldObject is the object before the update; null on CREATE)."""
    return (f"(request.userInfo.username in [{_quoted(users)}] || "
            f"(request.operation == 'UPDATE' && object.spec.template == oldObject.spec.template))")


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


def node_guard_policy(workload_namespace: str, extra_namespaces: tuple[str, ...] = (), exempt_namespaces: tuple[str, ...] = ()) -> dict[str, Any]:
    """`exempt_namespaces` (kubernetes.guards.exemptNamespaces): namespaces the stack does not own whose pods may use
    the host network and the Pathways nodes (an xpk cluster's workloads in default): the guard does not judge them,
    as it does not judge the system namespaces."""
    workload = tuple(dict.fromkeys((workload_namespace, *extra_namespaces)))
    names = ", ".join(workload)
    pod = "object.spec"
    outside = f"!{_system_namespace()}" + (f" && !{_namespace_is(exempt_namespaces)}" if exempt_namespaces else "")
    return _policy(
        NODE_GUARD,
        [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}],
        [{"name": "outside-system-namespaces", "expression": outside}],
        [
            # CREATE only: a pod made while its namespace was a workload namespace stays updatable after a stack
            # change drops it (the Job controller removes its job-tracking finalizer by update; refused, the pod
            # stays Terminating and its Job, JobSet and the `pulumi up` deleting them wait forever). No update can
            # add these tolerations (the last rule) and hostNetwork is immutable.
            {"expression": f"request.operation != 'CREATE' || {_namespace_is(workload)} || !({_tolerates_pathways(pod)} || {_host_network(pod)})",
             "message": (f"only namespace(s) {names} may run pods on the Pathways head and TPU nodes or on the host "
                         "network (they act as the Pathways node service account); remove the toleration or hostNetwork")},
            {"expression": f"request.operation != 'CREATE' || !has({pod}.nodeName) || request.userInfo.username.startsWith('system:node:')",
             "message": ("a pod may not be created bound to a node (spec.nodeName skips the scheduler, and NoSchedule "
                         "taints do not stop it); let the scheduler place it")},
            {"expression": f"!{_namespace_is(workload)} || !({_tolerates_pathways(pod)} || {_host_network(pod)}) || {_created_by(POD_CREATORS)}",
             "message": (f"in {names}, pods on the Pathways nodes or the host network come from Pathways Jobs only; "
                         "create a JobSet (or a serve workload's LeaderWorkerSet) instead of a bare pod")},
            {"expression": (f"!{_namespace_is(workload)} || (request.operation == 'CREATE' ? (!{_has_lws_label('object.metadata')} || "
                            f"request.userInfo.username in [{_quoted(LWS_POD_CREATORS)}]) : ({_lws_label_kept()}))"),
             "message": (f"in {names}, only a LeaderWorkerSet's StatefulSets make pods labelled {LWS_NAME_LABEL} (a serve "
                         "endpoint sends its prompts to them), and no update adds, changes or removes it; remove the label")},
            {"expression": f"request.operation != 'UPDATE' || !{_tolerates_pathways(pod)} || {_tolerates_pathways('oldObject.spec')}",
             "message": ("a pod may not be changed to tolerate the Pathways head or TPU taints; only a pod created "
                         "tolerating them (from a JobSet or a LeaderWorkerSet) runs there")},
        ],
    )


def template_guard_policy(workload_namespace: str, extra_namespaces: tuple[str, ...] = (), *,
                          proxy_namespace: Optional[str] = None, proxy_clients: tuple[tuple[str, str], ...] = (),
                          node_pools: tuple[str, ...] = ()) -> dict[str, Any]:
    """`proxy_namespace` and `proxy_clients` ((kind, name) of RBAC subjects, User or Group): a Shared Pathways
    Service's namespace and the clients whose proxy Jobs there may use hostNetwork (and nothing else of the
    Pathways nodes). `node_pools`: the pools made elsewhere that the stack selects by name (placement.named_pools)."""
    workload = tuple(dict.fromkeys((workload_namespace, *extra_namespaces)))
    pod = "object.spec.template.spec"
    # containers and initContainers are different CEL types (the API server's type check refuses `+`):
    # each list is checked on its own
    powerful = ("c, has(c.securityContext) && ((has(c.securityContext.privileged) && c.securityContext.privileged) || "
                "(has(c.securityContext.capabilities) && has(c.securityContext.capabilities.add) && "
                "size(c.securityContext.capabilities.add) > 0))")
    by_controller = (f"(request.resource.resource == 'jobs' && {_acted_by(JOB_CREATORS)}) || "
                     f"(request.resource.resource == 'statefulsets' && {_acted_by(STATEFULSET_CREATORS)})")
    allowed = [by_controller]
    if proxy_namespace and proxy_clients:
        users = [n for k, n in proxy_clients if k == "User"]
        groups = [n for k, n in proxy_clients if k == "Group"]
        client = " || ".join([*([f"request.userInfo.username in [{_quoted(users)}]"] if users else []),
                              *([f"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in [{_quoted(groups)}]))"]
                                if groups else [])])
        # hostNetwork, nothing else that reaches the Pathways nodes: pw-proxy.yaml's shape
        only_host_network = (f"!({_tolerates_pathways(pod)} || {_selects_pathways_nodes(pod, node_pools)} || {_requests_tpus(pod)})")
        allowed.append(f"(request.resource.resource == 'jobs' && request.namespace == '{proxy_namespace}' && "
                       f"{only_host_network} && ({client}))")
    return _policy(
        TEMPLATE_GUARD,
        [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["jobs"]},
         {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["statefulsets"]}],
        [{"name": "in-pathways-namespaces", "expression": _namespace_is(workload)}],
        [
            {"expression": f"!{_reaches_pathways(pod, node_pools)} || {' || '.join(allowed)}", "message": TEMPLATE_MESSAGE},
            {"expression": (f"!{_has_lws_label('object.spec.template.metadata')} || "
                            f"(request.resource.resource == 'statefulsets' && {_acted_by(STATEFULSET_CREATORS)})"),
             "message": (f"only the LeaderWorkerSet controller makes StatefulSets whose pods are labelled {LWS_NAME_LABEL} "
                         "(a serve endpoint sends its prompts to them), and no Job's pods carry it; remove the label")},
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
    """The pods' PriorityClasses never preempt (security #73.8): every pod of the stack is Kueue's, which preempts by
    WorkloadPriorityClass within its quotas; a pod allowed to preempt would let a Pending head evict another team's
    running one on the kube-scheduler's word, outside every quota. The value still orders the scheduling queue."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": f"pathways-{key}"},
            "value": value, "globalDefault": False, "preemptionPolicy": "Never", "description": text,
        }
        for key, (value, text) in PRIORITY_CLASSES.items()
    ]
