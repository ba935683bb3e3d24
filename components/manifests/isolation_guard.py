"""The admission guard that keeps each isolation domain's nodes to its teams (security #73.2; pure Python).

A domain's pools carry the NoSchedule taint pathways/isolation=<domain> (components/model/workloads/isolation.py),
and Kueue adds the matching toleration to the pods it admits on the domain's flavors. A taint keeps off only the pods
that do not tolerate it, and anyone who may write a pod template may write a toleration, so the
ValidatingAdmissionPolicy `pathways-isolation` judges every pod outside the system namespaces (the exempt namespaces
of kubernetes.guards too: the node guard lets them onto the Pathways nodes, never onto a domain's):

- a pod may tolerate pathways/isolation only with operator Equal and the value of its own namespace's domain;
- in a domain's namespaces, a pod that reaches the Pathways nodes or their identity (it tolerates the head or TPU
  taint or every taint, or uses the host network) must select its domain's nodes (nodeSelector pathways/isolation=
  <domain>, which Kueue merges in from the domain's flavors): a pod set that requests none of the queues' resources
  gets no flavor, and could otherwise select the shared head pool and act as the shared node account;
- no pod may tolerate every taint (an empty key with operator Exists): that tolerates each domain's;
- no pod may be created bound to a node (spec.nodeName skips the scheduler, and the kubelet admits a pod whatever
  NoSchedule taints its node has, PLATFORM-FACTS §6); only kubelets make such pods (mirror pods);
- an update may not add a toleration of pathways/isolation or of every taint (Kubernetes lets whoever updates a pod
  add tolerations): one created with it was judged when created.
"""

from __future__ import annotations

from typing import Any

from components.manifests.guardrails import _host_network, _policy, _system_namespace, _tolerates_pathways
from components.model.workloads.isolation import ISOLATION_LABEL, IsolationDomain

ISOLATION_GUARD = "pathways-isolation"


def _wildcard(t: str) -> str:
    return f"((!has({t}.key) || {t}.key == '') && has({t}.operator) && {t}.operator == 'Exists')"


def _isolation(t: str) -> str:
    return f"(has({t}.key) && {t}.key == '{ISOLATION_LABEL}')"


def isolation_guard_policy(domains: tuple[IsolationDomain, ...]) -> dict[str, Any]:
    owner = ", ".join(f"'{ns}': '{d.name}'" for d in domains for ns in d.namespaces)
    spec, old = "object.spec", "oldObject.spec"
    own_domain = (f"((!has(t.operator) || t.operator == 'Equal') && has(t.value) && request.namespace in {{{owner}}} && "
                  f"{{{owner}}}[request.namespace] == t.value)")
    listing = "; ".join(f"{d.name}: {', '.join(d.namespaces)}" for d in domains)
    return _policy(
        ISOLATION_GUARD,
        [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}],
        [{"name": "outside-system-namespaces", "expression": f"!{_system_namespace()}"}],
        [
            {"expression": (f"request.operation != 'CREATE' || !has({spec}.tolerations) || "
                            f"{spec}.tolerations.all(t, !{_isolation('t')} || {own_domain})"),
             "message": (f"a pod may tolerate {ISOLATION_LABEL} only in its isolation domain's namespaces, with "
                         f"operator Equal and the domain's name ({listing}); remove the toleration")},
            {"expression": (f"request.operation != 'CREATE' || !(request.namespace in {{{owner}}}) || "
                            f"!({_tolerates_pathways(spec)} || {_host_network(spec)}) || "
                            f"(has({spec}.nodeSelector) && '{ISOLATION_LABEL}' in {spec}.nodeSelector && "
                            f"{spec}.nodeSelector['{ISOLATION_LABEL}'] == {{{owner}}}[request.namespace])"),
             "message": (f"in an isolation domain's namespaces, a pod on the Pathways nodes or the host network selects its "
                         f"domain's nodes (nodeSelector {ISOLATION_LABEL}=<domain>; Kueue adds it to what it admits on the "
                         "domain's flavors): request the queue's resources, or select the domain's nodes")},
            {"expression": f"request.operation != 'CREATE' || !has({spec}.tolerations) || !{spec}.tolerations.exists(t, {_wildcard('t')})",
             "message": ("a pod may not tolerate every taint (an empty key with operator Exists) where isolation domains "
                         "hold nodes; tolerate the taints it needs by key")},
            {"expression": f"request.operation != 'CREATE' || !has({spec}.nodeName) || request.userInfo.username.startsWith('system:node:')",
             "message": ("a pod may not be created bound to a node (spec.nodeName skips the scheduler, and NoSchedule "
                         "taints do not stop it); let the scheduler place it")},
            {"expression": (f"request.operation != 'UPDATE' || !has({spec}.tolerations) || {spec}.tolerations.all(t, "
                            f"!({_isolation('t')} || {_wildcard('t')}) || (has({old}.tolerations) && {old}.tolerations.exists(o, o == t)))"),
             "message": (f"a pod may not be changed to tolerate {ISOLATION_LABEL} or every taint; only a pod created "
                         "tolerating its own domain's runs there")},
        ],
    )
