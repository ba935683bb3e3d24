"""MultiKueue objects of a fleet (pure Python): a worker's identity for its manager, a manager's clusters, config,
admission check and queues. Facts and sources: components/model/cluster/fleet.py."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from components.manifests.kueue_api import API_VERSION, RESOURCES
from components.model import quantity
from components.model.cluster.fleet import (
    MULTIKUEUE_CHECK,
    MULTIKUEUE_CONTROLLER,
    MULTIKUEUE_NAMESPACE,
    MULTIKUEUE_SERVICE_ACCOUNT,
    ResolvedFleet,
    WorkerFacts,
)
from components.model.workloads.teams import TEAM_LABEL

RBAC = "rbac.authorization.k8s.io"
MULTIKUEUE_CONFIG = "pathways-fleet"


def worker_read_rules() -> list[dict[str, Any]]:
    """What the manager's Kueue reads on a worker, cluster-wide (pkg/controller/admissionchecks/multikueue at Kueue
    v0.19.2 lists and watches with no namespace: multikueuecluster.go establishes a watch on Workloads and on every
    enabled integration's kind, and keeps the worker inactive until each is up; clusterqueue.go lists the queues).
    A fleet's Kueue enables the JobSet integration alone (controller_charts.FLEET_FRAMEWORKS), so no LWS rule."""
    read = ["get", "list", "watch"]
    return [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": read},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["get"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": read},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": read},
    ]


def worker_write_rules() -> list[dict[str, Any]]:
    """What it writes, in the fleet's namespaces only (a RoleBinding per namespace): the dispatched JobSet (created,
    deleted: jobset_multikueue_adapter.go) and its Workload (created, updated, deleted, its status patched:
    multikueue/workload.go). A token that can write JobSets anywhere could run a privileged pod in kube-system."""
    return [
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["create", "delete", "patch", "update"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch", "update"]},
    ]


def token_secret_name(fleet: ResolvedFleet) -> str:
    # the generation in the name: raising it replaces the Secret, and the token controller signs a new token
    return f"{MULTIKUEUE_SERVICE_ACCOUNT}-token-{fleet.token_generation}"


def worker_objects(fleet: ResolvedFleet) -> list[dict[str, Any]]:
    """The manager's identity on a worker: its ServiceAccount, a ClusterRole to read and a Role to write in each
    fleet namespace (the run queues' namespaces, where a dispatched run lands) with their bindings, and a long-lived
    token Secret (kubernetes.io/service-account-token, filled by the token controller), in Kueue's namespace."""
    meta = {"namespace": MULTIKUEUE_NAMESPACE}
    subject = [{"kind": "ServiceAccount", "name": MULTIKUEUE_SERVICE_ACCOUNT, "namespace": MULTIKUEUE_NAMESPACE}]
    writes = []
    for ns in fleet.dispatch_namespaces:
        writes += [
            {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": MULTIKUEUE_SERVICE_ACCOUNT, "namespace": ns},
             "rules": worker_write_rules()},
            {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": MULTIKUEUE_SERVICE_ACCOUNT, "namespace": ns},
             "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": MULTIKUEUE_SERVICE_ACCOUNT}, "subjects": subject},
        ]
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": MULTIKUEUE_SERVICE_ACCOUNT, **meta}},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": MULTIKUEUE_SERVICE_ACCOUNT}, "rules": worker_read_rules()},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": MULTIKUEUE_SERVICE_ACCOUNT},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": MULTIKUEUE_SERVICE_ACCOUNT}, "subjects": subject},
        *writes,
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": token_secret_name(fleet), "annotations": {"kubernetes.io/service-account.name": MULTIKUEUE_SERVICE_ACCOUNT}, **meta}},
    ]


def kubeconfig_secret_name(worker: str) -> str:
    return f"pathways-fleet-{worker}"


def manager_objects(fleet: ResolvedFleet) -> list[dict[str, Any]]:
    """A MultiKueueCluster per worker (its kubeconfig in the Secret kubeconfig_secret_name, made apart: it holds the
    token), the MultiKueueConfig listing them in order, and the admission check naming it."""
    clusters = [{"apiVersion": API_VERSION, "kind": "MultiKueueCluster", "metadata": {"name": w.name}, "spec": {
        "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret_name(w.name)}}}}
        for w in fleet.workers]
    def check(name: str, config: str, workers: list[str]) -> list[dict[str, Any]]:
        return [
            {"apiVersion": API_VERSION, "kind": "MultiKueueConfig", "metadata": {"name": config}, "spec": {"clusters": workers}},
            {"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": name}, "spec": {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": API_VERSION.split("/")[0], "kind": "MultiKueueConfig", "name": config}}},
        ]
    # a team that names workers (teams[].workers): a config and check of its own, on its ClusterQueue alone
    teams = [o for name, workers in fleet.team_checks.items() for o in check(name, name, list(workers))]
    return [*clusters, *check(MULTIKUEUE_CHECK, MULTIKUEUE_CONFIG, [w.name for w in fleet.workers]), *teams]


def fleet_quotas(workers: Mapping[str, WorkerFacts], less: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, dict[str, str]]:
    """Per Kueue flavor and resource: the sum of the workers' quotas (what the manager may admit before dispatch),
    `less` what the teams' queues own (never below 0: infra/fleet.py refuses a fleet smaller than the teams' shares)."""
    total: dict[str, dict[str, Any]] = {}
    for facts in workers.values():
        for flavor, amounts in facts.quotas.items():
            for resource, amount in amounts.items():
                total.setdefault(flavor, {}).setdefault(resource, 0)
                total[flavor][resource] += quantity.parse(amount)
    for flavor, amounts in (less or {}).items():
        for resource, amount in amounts.items():
            left = total.setdefault(flavor, {}).get(resource, 0) - amount
            total[flavor][resource] = max(left, 0)

    def text(n: Any) -> str:
        # whole GiB as Gi, as the ClusterQueues write memory (components/manifests/kueue.py); else bytes
        return quantity.canonical(f"{int(n // quantity.GIB)}Gi" if n % quantity.GIB == 0 and n >= quantity.GIB else str(int(n)))
    return {f: {r: text(n) for r, n in amounts.items()} for f, amounts in total.items()}


def team_owned(queues: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per flavor and resource: the nominal quota the teams' ClusterQueues own (pathways:teams), summed."""
    owned: dict[str, dict[str, Any]] = {}
    for q in queues:
        if q.get("kind") != "ClusterQueue" or TEAM_LABEL not in ((q.get("metadata") or {}).get("labels") or {}):
            continue
        for rg in q["spec"]["resourceGroups"]:
            for f in rg["flavors"]:
                for r in f["resources"]:
                    owned.setdefault(f["name"], {}).setdefault(r["name"], 0)
                    owned[f["name"]][r["name"]] += quantity.parse(r["nominalQuota"])
    return owned


def manager_cluster_queues(queues: list[dict[str, Any]], quota: Callable[[str, str], Any]) -> list[dict[str, Any]]:
    """The stack's ClusterQueues as a manager's: every flavor's quota from `quota(flavor, resource)` (the workers'
    sum, less what the teams own), and the MultiKueue check on all flavors (Kueue makes a queue with a per-flavor
    MultiKueue check inactive). The teams' queues keep their owned quota and their own check (kueue.py)."""
    out = []
    for q in queues:
        spec = dict(q["spec"])
        spec["resourceGroups"] = [{**rg, "flavors": [
            {"name": f["name"], "resources": [{"name": r, "nominalQuota": quota(f["name"], r)} for r in RESOURCES]}
            for f in rg["flavors"]]} for rg in spec["resourceGroups"]]
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": MULTIKUEUE_CHECK}]}
        out.append({**q, "spec": spec})
    return out
