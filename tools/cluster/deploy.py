"""Put a stack's Kubernetes layer onto the local control plane: GKE's nodes for its pools, then every
object the program creates, applied the way Pulumi's Kubernetes provider applies them (server-side,
strict field validation), and take it all away again."""

from __future__ import annotations

import time
from typing import Any

import yaml

from infra.offline.engine import Plan
from infra.offline.render import manifests

from .gke_nodes import plan_nodes
from .local import ClusterError, LocalCluster, log

# Dependencies first, as Pulumi orders them (namespaces, then what lives in them; queues before JobSets).
KIND_ORDER = ("Namespace", "PriorityClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ResourceFlavor",
              "WorkloadPriorityClass", "ClusterQueue", "LocalQueue", "Role", "RoleBinding", "Secret", "Service",
              "JobSet", "LeaderWorkerSet")
# Namespaces the controllers and Kubernetes own; everything else a deploy made is removed by reset().
KEPT_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease", "jobset-system", "kueue-system", "lws-system"}


def stack_objects(plan: Plan) -> list[dict[str, Any]]:
    objects = manifests(plan)
    unknown = {o["kind"] for o in objects} - set(KIND_ORDER)
    if unknown:
        raise ClusterError(f"no apply order for {', '.join(sorted(unknown))}; add it to KIND_ORDER")
    return sorted(objects, key=lambda o: KIND_ORDER.index(o["kind"]))


def create_nodes(cluster: LocalCluster, nodes: list[dict[str, Any]]) -> None:
    """Nodes are created, not applied: like a kubelet's registration, the create carries the status
    (capacity, allocatable) the scheduler reads."""
    for i in range(0, len(nodes), 200):
        cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all(nodes[i:i + 200]), timeout=300)
    names = {n["metadata"]["name"] for n in nodes}

    def ready() -> bool:
        items = cluster.get("nodes")["items"]
        return names <= {n["metadata"]["name"] for n in items
                         if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))}
    cluster.wait_for(f"{len(names)} nodes Ready", ready, timeout=120)


def wait_guards_active(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    """The API server loads new admission policies asynchronously: wait until each guard denies what it
    must (a server-side dry run), so that no test runs in the gap."""
    policies = {o["metadata"]["name"] for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    privileged = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"
                  and (o["metadata"].get("labels") or {}).get("pod-security.kubernetes.io/enforce") == "privileged"]
    probes = []
    if "pathways-nodes-reserved" in policies:
        probes.append(("pathways-nodes-reserved", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "guard-probe", "namespace": "default"},
                                                   "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "x:1"}]}}))
    if "pathways-workload-templates" in policies and privileged:
        probes.append(("pathways-workload-templates", {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "guard-probe", "namespace": privileged[0]},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}],
                                           "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}]}}}}))
    for name, obj in probes:
        def denied(obj=obj, name=name) -> bool:
            proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
            return proc.returncode != 0 and name in proc.stderr
        cluster.wait_for(f"admission policy {name} active", denied, timeout=60)


def deploy(cluster: LocalCluster, plan: Plan, region: str, zone: str) -> list[dict[str, Any]]:
    """GKE's nodes for the plan's pools, then the plan's objects; returns the objects applied."""
    t0 = time.monotonic()
    create_nodes(cluster, plan_nodes(plan, region, zone))
    objects = stack_objects(plan)
    cluster.apply(objects)
    wait_guards_active(cluster, objects)
    log(f"stack {plan.stack}: {len(objects)} objects applied in {time.monotonic() - t0:.1f} s")
    return objects


def reset(cluster: LocalCluster) -> None:
    """Remove what deploy() made, workloads first (their pods go with them), so the next stack starts clean."""
    t0 = time.monotonic()
    cluster.kubectl("delete", "jobsets.jobset.x-k8s.io,leaderworkersets.leaderworkerset.x-k8s.io", "--all", "-A",
                    "--wait=true", "--timeout=300s", check=False, timeout=330)
    cluster.kubectl("delete", "jobs.batch", "--all", "-A", "--wait=true", "--timeout=300s", check=False, timeout=330)
    for ns in cluster.get("namespaces")["items"]:
        name = ns["metadata"]["name"]
        if name not in KEPT_NAMESPACES:
            cluster.kubectl("delete", "namespace", name, "--wait=true", "--timeout=300s", check=False, timeout=330)
    cluster.kubectl("delete", "pods", "--all", "-n", "default", "--wait=true", check=False)
    cluster.wait_for("pods gone", lambda: not [p for p in cluster.get("pods", "-A")["items"]
                                               if p["metadata"]["namespace"] not in ("kube-system",)], timeout=600, interval=2)
    cluster.kubectl("delete", "localqueues.kueue.x-k8s.io,workloads.kueue.x-k8s.io", "--all", "-A", "--wait=true", check=False)
    cluster.kubectl("delete", "clusterqueues.kueue.x-k8s.io,resourceflavors.kueue.x-k8s.io,workloadpriorityclasses.kueue.x-k8s.io,"
                    "cohorts.kueue.x-k8s.io", "--all", "--wait=true", check=False)
    for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies", "priorityclasses"):
        ours = [o["metadata"]["name"] for o in cluster.get(kind)["items"] if o["metadata"]["name"].startswith("pathways-")]
        if ours:
            cluster.kubectl("delete", kind, *ours, "--wait=true", check=False)
    # Many nodes (the 256-slice scenario has 1,024): ask for all deletions at once, then wait for them to go.
    cluster.kubectl("delete", "nodes", "--all", "--wait=false", check=False, timeout=600)
    cluster.wait_for("nodes gone", lambda: not cluster.get("nodes")["items"], timeout=600, interval=2)
    log(f"reset in {time.monotonic() - t0:.0f} s")
