"""Put a stack onto the local control plane the way its users do: GKE's nodes for the stack's pools, then the
real `pulumi up` of the stack's program with the real CLI and Kubernetes provider, in existing-cluster mode
(the GCP half's provider is not served here) with `installControllers: true`: the JobSet, Kueue and
LeaderWorkerSet charts come from the pinned Go modules (the local-chart options a user with an air-gapped
cluster sets), Pulumi applies every object they render, the API server admits their pods under Pod Security,
and Pulumi's await on each chart's Deployment completes only when the real controller runs and is ready
(tools/cluster/kubelet.py). `take_down` is `pulumi destroy`, then the nodes go.

    deployed = deploy_stack(cluster, "dev", config, workdir)
    ...
    take_down(cluster, deployed)
"""

from __future__ import annotations

import copy
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from components.constants import NODE_POOL
from components.constants import NODE_POOL_LABEL as POOL_LABEL
from components.model.cluster.cluster import NetworkConfig
from components.model.cluster.cluster_checks import GCP_ONLY_KEYS, GCP_ONLY_SECTIONS
from infra.offline.engine import Plan
from infra.offline.engine import run as offline_plan
from infra.offline.stackfile import flatten
from tools.cluster.gke_nodes import plan_nodes, queued_pools
from tools.cluster.local import GKE_CRDS, INFERENCE_POOL_CHART, ClusterError, LocalCluster, chart_dir, log
from tools.cluster.slices import SLICE_CRD
from tools.pulumi_real.run import POLICIES, PulumiRun, Result

# The controllers' namespaces (the charts' own): a deploy leaves nothing else behind after take_down.
CONTROLLER_NAMESPACES = ("jobset-system", "kueue-system", "lws-system")
KEPT_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}


def _drop(config: dict[str, Any], top: str, path: Sequence[str]) -> None:
    """Remove config[top].<path> ("x[]" walks every item of list x)."""
    nodes: list[Any] = [config.get(top[: -2] if top.endswith("[]") else top)]
    if top.endswith("[]"):
        nodes = list(nodes[0] or [])
    for i, part in enumerate(path):
        name = part[:-2] if part.endswith("[]") else part
        if i == len(path) - 1:
            for n in nodes:
                if isinstance(n, dict):
                    n.pop(name, None)
            return
        nxt: list[Any] = []
        for n in nodes:
            child = n.get(name) if isinstance(n, dict) else None
            nxt += list(child or []) if part.endswith("[]") else ([child] if child is not None else [])
        nodes = nxt


def existing_mode(config: dict[str, Any], cluster: LocalCluster) -> dict[str, Any]:
    """A stack's config as its Kubernetes layer on `cluster`: cluster.existing (this control plane, by its name),
    a named bucket, the GCP-only keys dropped, and the three controllers (and any inference gateway's chart) installed
    from the pinned charts."""
    # the keys of the GCP half, which a cluster made elsewhere refuses (components/model/cluster/cluster_checks.py)
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in {f"pathways:{x}" for x in GCP_ONLY_SECTIONS}}
    # an internal load balancer admits the client ranges its stack gives it, by default the stack's own subnet's node
    # and pod ranges; on a cluster made elsewhere the stack must name them: those of the network the stack had
    network = config.get("pathways:network") or {}
    own = [network.get("nodesCidr", NetworkConfig().nodes_cidr), network.get("podsCidr", NetworkConfig().pods_cidr)]
    for w in out.get("pathways:workloads") or []:
        serve = w.get("serve") or {}
        if serve.get("internalLoadBalancer") and not serve.get("loadBalancerSourceRanges"):
            serve["loadBalancerSourceRanges"] = own
    for key in GCP_ONLY_KEYS:
        _drop(out, f"pathways:{key.split('.', 1)[0]}", key.split(".")[1:])
    # the cluster made elsewhere is this control plane, under its one name whatever the stack: the Kubernetes
    # provider's identity (existing/<cluster name>) stays, so one stack can become another without re-creating
    # every object (tools/cluster/deploy.py transition)
    out["pathways:cluster"] = {"existing": {"kubeconfig": str(cluster.kubeconfig)}, "name": cluster.name}
    project = config.get("gcp:project", "e2e-project")
    out["pathways:bucket"] = {**(out.get("pathways:bucket") or {}), "name": f"{project}-e2e-pathways"}
    mtc = (out.get("pathways:resilience") or {}).get("mtc")
    if mtc is not None:  # as the scratch bucket: a cluster made elsewhere has its backups' bucket named
        mtc.setdefault("bucket", f"{project}-e2e-checkpoints")
    kube = dict(out.get("pathways:kubernetes") or {})
    kueue = dict(kube.get("kueue") or {})
    if kueue.get("enabled", True):
        kueue["chart"] = str(chart_dir("kueue"))
    kube.update(installControllers=True, jobsetChart=str(chart_dir("jobset")), lwsChart=str(chart_dir("lws")), kueue=kueue,
                inferencePoolChart=str(INFERENCE_POOL_CHART))
    out["pathways:kubernetes"] = kube
    return out


@dataclass
class Deployed:
    name: str
    config: dict[str, Any]
    """The stack's own config (GCP half included): what its nodes come from."""
    run: PulumiRun
    nodes: list[str]
    up: Result


def create_nodes(cluster: LocalCluster, nodes: list[dict[str, Any]]) -> None:
    """Nodes are created, not applied: like a kubelet's registration, the create carries the status
    (capacity, allocatable) the scheduler reads."""
    if cluster.pod_cidr:  # kwok gives the node's pods addresses from it (tools/cluster/local.py)
        nodes = [{**n, "spec": {**(n.get("spec") or {}), "podCIDR": cluster.pod_cidr, "podCIDRs": [cluster.pod_cidr]}} for n in nodes]
    for i in range(0, len(nodes), 200):
        cluster.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all(nodes[i:i + 200]), timeout=300)
    names = {n["metadata"]["name"] for n in nodes}

    def ready() -> bool:
        items = cluster.get("nodes")["items"]
        return names <= {n["metadata"]["name"] for n in items
                         if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))}
    cluster.wait_for(f"{len(names)} nodes Ready", ready, timeout=180)


def stack_nodes(config: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """GKE's nodes for the node pools the stack's GCP half creates (its offline plan's NodePool inputs), and its
    queued-provisioning pools, whose nodes GKE makes only for a ProvisioningRequest (cloud.QueuedProvisioner)."""
    flat, secrets = flatten(config)
    plan = offline_plan(flat, name, secrets)
    zone = config.get("gcp:zone", "us-east5-b")
    region = config.get("gcp:region", zone.rsplit("-", 1)[0])
    return plan_nodes(plan, region, zone), queued_pools(plan, region, zone)


class _ChartWatch:
    """While `pulumi up` runs: a controller Deployment whose ReplicaSet cannot create its pod (Pod Security
    refuses it, say), a controller the kubelet stand-in cannot run, or one in a crash loop ends the wait at
    once with the reason, instead of Pulumi's await timing out ten minutes later."""

    def __init__(self, cluster: LocalCluster):
        self.cluster = cluster
        self.problem: Optional[str] = None
        # only what goes wrong during this `pulumi up` counts
        self._errors_before = len(cluster.kubelet.errors) if cluster.kubelet is not None else 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> "_ChartWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        api = self.cluster.api
        assert api is not None
        while not self._stop.wait(1.0) and self.problem is None:
            for ns in CONTROLLER_NAMESPACES:
                try:
                    deployments = api.get(f"/apis/apps/v1/namespaces/{ns}/deployments")["items"]
                except Exception:
                    continue
                for d in deployments:
                    for c in d.get("status", {}).get("conditions", []):
                        # Pod Security refusing the pod does not heal; a missing ServiceAccount (applied in parallel)
                        # does, and the ReplicaSet tries again
                        if c["type"] == "ReplicaFailure" and c["status"] == "True" and "violates PodSecurity" in c.get("message", ""):
                            self.problem = f"Deployment {ns}/{d['metadata']['name']}: {c.get('reason')}: {c.get('message')}"
                # The Deployment's ReplicaFailure keeps the first failure's message: when a chart's pod webhook (LWS's
                # mpod.kb.io) is registered before its server runs, that is "failed calling webhook", and the Pod
                # Security refusal that follows shows only in the ReplicaSet's events.
                if self.problem is None:
                    try:
                        events = api.get(f"/api/v1/namespaces/{ns}/events")["items"]
                    except Exception:
                        continue
                    for e in events:
                        obj = e.get("involvedObject") or {}
                        if obj.get("kind") == "ReplicaSet" and e.get("reason") == "FailedCreate" and "violates PodSecurity" in e.get("message", ""):
                            deployment = obj.get("name", "").rsplit("-", 1)[0]
                            self.problem = f"Deployment {ns}/{deployment}: FailedCreate: {e.get('message')}"
                            break
            kubelet = self.cluster.kubelet
            if kubelet is not None and self.problem is None:
                if len(kubelet.errors) > self._errors_before:
                    self.problem = kubelet.errors[self._errors_before]
                elif kubelet.crash_loops():
                    self.problem = kubelet.crash_loops()[0]


def pulumi_up(cluster: LocalCluster, run: PulumiRun, *extra: str) -> Result:
    """`pulumi up --yes --skip-preview` with the policy pack (which judges every resource during the update as in
    a preview), watched: a chart whose controller cannot start fails it fast. The preview `up` would run first is
    left out: the program and the pack would run twice, and every deploy's second preview, which must propose
    nothing (tests_e2e/conftest.py), is a real preview of the same stack."""
    with _ChartWatch(cluster) as watch:
        result: list[Result] = []
        t = threading.Thread(target=lambda: result.append(run.cli("up", "--yes", "--skip-preview", "--policy-pack", str(POLICIES), *extra)), daemon=True)
        t.start()
        while t.is_alive():
            t.join(timeout=1.0)
            if watch.problem:
                run.interrupt()
                t.join(timeout=180)
                raise ClusterError(f"pulumi up of stack {run.stack}: {watch.problem}")
    return result[0]


def wait_guards_active(cluster: LocalCluster) -> None:
    """The API server loads new admission policies asynchronously: wait until each of the stack's guards denies
    what it must (a server-side dry run), so that no scenario runs in the gap."""
    policies = {o["metadata"]["name"] for o in cluster.get("validatingadmissionpolicies")["items"]}
    privileged = [n["metadata"]["name"] for n in cluster.get("namespaces")["items"]
                  if (n["metadata"].get("labels") or {}).get("pod-security.kubernetes.io/enforce") == "privileged"
                  and n["metadata"]["name"] not in KEPT_NAMESPACES]
    probes = []
    if "pathways-nodes-reserved" in policies:
        # a bare hostNetwork pod: in the stack's own namespace it is no Pathways Job's; elsewhere no namespace's but
        # the stack's (default may be exempt: kubernetes.guards.exemptNamespaces)
        where = privileged[0] if privileged else "default"
        probes.append(("pathways-nodes-reserved", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "guard-probe", "namespace": where},
                                                   "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "x:1"}]}}))
    if "pathways-workload-templates" in policies and privileged:
        probes.append(("pathways-workload-templates", {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "guard-probe", "namespace": privileged[0]},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x:1"}],
                                           "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}]}}}}))
    for policy, obj in probes:
        def denied(obj=obj, policy=policy) -> bool:
            proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
            return proc.returncode != 0 and policy in proc.stderr
        cluster.wait_for(f"admission policy {policy} active", denied, timeout=60)


def deploy_stack(cluster: LocalCluster, name: str, config: dict[str, Any], workdir: Path,
                 secrets: Optional[dict[str, str]] = None, program: Optional[str] = None,
                 on_this_cluster: Optional[dict[str, Any]] = None, state: Optional[Path] = None) -> Deployed:
    """GKE's nodes for the stack's pools, then the real `pulumi up` of its Kubernetes layer, charts included.
    `on_this_cluster`: keys set on the cluster-made-elsewhere config only (a fleet worker's endpoint here); `state`:
    a Pulumi backend directory shared with other stacks' runs (tools/pulumi_real/run.py).
    Fails with the output when `pulumi up` does, after taking down what it made (`pulumi destroy`)."""
    t0 = time.monotonic()
    nodes, queued = stack_nodes(config, name)
    create_nodes(cluster, nodes)
    cluster.offer_queued_pools(queued)
    run = PulumiRun(workdir, name, {**existing_mode(config, cluster), **(on_this_cluster or {})}, secrets=secrets, program=program,
                    state=state)
    try:
        up = pulumi_up(cluster, run)
        if up.returncode != 0:
            raise ClusterError(f"pulumi up of stack {name} failed ({up.returncode}):\n{up.output[-4000:]}")
    except ClusterError as failed:
        swept = take_down(cluster, Deployed(name, config, run, [n["metadata"]["name"] for n in nodes], Result(1, "", "", 0)), check=False)
        raise DeployFailed(str(failed), swept) from None
    wait_guards_active(cluster)
    log(f"stack {name}: pulumi up in {up.seconds:.0f} s ({time.monotonic() - t0:.0f} s with its nodes)")
    return Deployed(name, config, run, [n["metadata"]["name"] for n in nodes], up)


def controllers_available(cluster: LocalCluster) -> bool:
    """Every controller Deployment the charts made has its replicas available."""
    for ns in CONTROLLER_NAMESPACES:
        for d in cluster.get("deployments", "-n", ns)["items"]:
            if (d.get("status") or {}).get("availableReplicas", 0) < (d["spec"].get("replicas") or 1):
                return False
    return True


def drain(cluster: LocalCluster, nodes: list[str]) -> None:
    """What GKE does to a node pool's nodes before it removes them: cordon, evict the pods, then the nodes go.
    The controllers' pods come back on the nodes that stay (their ReplicaSets), and are ready again before this
    returns, so that their webhooks answer the next `pulumi up`."""
    if not nodes:
        return
    for i in range(0, len(nodes), 100):  # kubectl cordons one node at a time: 1,024 scale nodes outlast one call's timeout
        cluster.kubectl("cordon", *nodes[i:i + 100], timeout=300)
    by_namespace: dict[str, list[str]] = {}
    going = set(nodes)
    for p in cluster.get("pods", "-A")["items"]:
        if p["spec"].get("nodeName") in going:
            by_namespace.setdefault(p["metadata"]["namespace"], []).append(p["metadata"]["name"])
    for namespace, names in by_namespace.items():  # one call a namespace: the scale stack drains 1,000 pods
        cluster.kubectl("delete", "pods", "-n", namespace, *names, "--wait=false", check=False, timeout=300)
    cluster.wait_for("the controllers available on the remaining nodes", lambda: controllers_available(cluster), timeout=180, interval=1)
    # kubectl deletes one node a request; the API server's delete-collection takes whole pools in one
    by_pool: dict[str, set[str]] = {}
    for n in cluster.get("nodes")["items"]:
        by_pool.setdefault(n["metadata"]["labels"].get(POOL_LABEL, ""), set()).add(n["metadata"]["name"])
    whole = sorted(pool for pool, names in by_pool.items() if pool and names <= going)
    for i in range(0, len(whole), 50):
        selector = urllib.parse.quote(f"{POOL_LABEL} in ({','.join(whole[i:i + 50])})")
        cluster.kubectl("delete", "--raw", f"/api/v1/nodes?labelSelector={selector}", timeout=300)
    some = sorted(going - {name for pool in whole for name in by_pool[pool]})
    if some:
        cluster.kubectl("delete", "nodes", *some, "--wait=false", "--ignore-not-found", timeout=300)
    cluster.wait_for(f"{len(nodes)} nodes gone", lambda: not going & {n["metadata"]["name"] for n in cluster.get("nodes")["items"]},
                     timeout=300, interval=1)


def transition(cluster: LocalCluster, deployed: Deployed, name: str, config: dict[str, Any],
               secrets: Optional[dict[str, str]] = None) -> Deployed:
    """The running stack becomes stack `name` with `config`, as a user's `pulumi up` changes a running stack: the
    charts that stay are left as they are (their second preview says so), what the new config drops is deleted,
    what it adds is created. GKE's nodes follow the pools: new ones first, the old ones drained after. Renamed
    with `pulumi stack rename` (the same resources, their URNs rewritten), so each committed stack runs under its
    own name. A JobSet workload both configs name but define differently is removed first (one `pulumi up`): a
    JobSet field the CRD makes immutable fails the real preview of an in-place replacement (docs/changing.md)."""
    t0 = time.monotonic()
    nodes, queued = stack_nodes(config, name)
    cluster.offer_queued_pools(queued)
    present = {n["metadata"]["name"] for n in cluster.get("nodes")["items"]}
    wanted = {n["metadata"]["name"] for n in nodes}
    create_nodes(cluster, [n for n in nodes if n["metadata"]["name"] not in present])
    drain(cluster, sorted(present - wanted))
    run = deployed.run
    run.rename(name)
    old = {w["name"]: w for w in deployed.config.get("pathways:workloads") or []}
    new = {w["name"]: w for w in config.get("pathways:workloads") or []}
    # JobSets only: a serve workload's LeaderWorkerSet and autoscaler change in place, and removing the stack's last one
    # would uninstall the LWS chart (its CRD and controller) between the two `pulumi up`s
    changed = {n for n in old.keys() & new.keys() if old[n] != new[n] and not (new[n].get("mode") == "serve" or "serve" in new[n])}
    if changed:
        interim = {**config, "pathways:workloads": [w for w in config.get("pathways:workloads") or [] if w["name"] not in changed]}
        run.set_config(existing_mode(interim, cluster), secrets={})
        first = pulumi_up(cluster, run)
        if first.returncode != 0:
            raise ClusterError(f"pulumi up of stack {name} without {', '.join(sorted(changed))} failed:\n{first.output[-4000:]}")
    run.set_config(existing_mode(config, cluster), secrets=secrets or {})
    up = pulumi_up(cluster, run)
    if up.returncode != 0:
        raise ClusterError(f"pulumi up of stack {name} (from {deployed.name}) failed ({up.returncode}):\n{up.output[-4000:]}")
    wait_guards_active(cluster)
    log(f"stack {deployed.name} -> {name}: pulumi up in {up.seconds:.0f} s ({time.monotonic() - t0:.0f} s with nodes)")
    return Deployed(name, config, run, sorted(wanted), up)


def take_down(cluster: LocalCluster, deployed: Deployed, check: bool = True) -> list[str]:
    """`pulumi destroy` (charts included), then the stack's nodes; fails when destroy does or leaves
    objects behind. With `check` off (the cleanup after a failed up), what destroy left is swept and named."""
    t0 = time.monotonic()
    result = deployed.run.cli("destroy", "--yes")
    if not check:
        if result.returncode != 0:
            log(f"stack {deployed.name}: pulumi destroy after the failed up failed ({result.returncode}): {result.output[-2000:]}")
        if cluster.provisioner is not None:
            cluster.provisioner.release_all()
        cluster.kubectl("delete", "--raw", "/api/v1/nodes", check=False, timeout=600)
        cluster.wait_for("nodes gone", lambda: not cluster.get("nodes")["items"], timeout=600, interval=2)
        return sweep(cluster)
    if cluster.provisioner is not None:
        cluster.provisioner.release_all()  # what queued provisioning gave the stack's workloads
    # the nodes go whatever destroy did: a failed scenario leaves the next stack an empty cluster, not 20 failures
    # of its nodes already existing
    cluster.kubectl("delete", "--raw", "/api/v1/nodes", timeout=600)  # one delete-collection, not a request a node
    cluster.wait_for("nodes gone", lambda: not cluster.get("nodes")["items"], timeout=600, interval=2)
    if result.returncode != 0:
        swept = sweep(cluster)
        raise ClusterError(f"pulumi destroy of stack {deployed.name} failed ({result.returncode}), swept {swept}:\n{result.output[-4000:]}")
    left = leftovers(cluster)
    if left:
        sweep(cluster)
        raise ClusterError(f"pulumi destroy of stack {deployed.name} left {', '.join(left)}")
    log(f"stack {deployed.name}: destroyed in {time.monotonic() - t0:.0f} s")
    return []


class DeployFailed(ClusterError):
    """`pulumi up` failed and the stack was destroyed; `swept` names what the destroy did not know of."""

    def __init__(self, message: str, swept: list[str]):
        super().__init__(message)
        self.swept = swept


# leftovers' words -> kubectl's resource names
_SWEPT_KINDS = {"namespace": "namespace", "CRD": "crd"}


def sweep(cluster: LocalCluster) -> list[str]:
    """Delete what a destroy after an interrupted `pulumi up` left, and name it. Pulumi records a create only
    when the provider returns: one cancelled while its request was in flight (the harness interrupts an up whose
    chart cannot start, _ChartWatch) may exist on the server with no state entry, so no destroy removes it."""
    left = [item for item in leftovers(cluster) if not item.startswith("pod ")]  # pods go with their nodes
    for item in left:
        kind, name = item.split(" ", 1)
        cluster.kubectl("delete", _SWEPT_KINDS.get(kind, kind), name, "--ignore-not-found", "--wait=true", check=False, timeout=300)
    if left:
        log(f"swept after the failed up (objects its state never recorded): {', '.join(left)}")
    return left


def gke_crd_names() -> set[str]:
    """The CRDs the control plane starts with, as GKE's does (LocalCluster.install_gke_crds, and the Slice CRD of the
    stand-in for GKE's slice controller): not the stack's."""
    return {yaml.safe_load(p.read_text())["metadata"]["name"] for p in GKE_CRDS.glob("*.yaml")} | {SLICE_CRD["metadata"]["name"]}


def leftovers(cluster: LocalCluster) -> list[str]:
    """What a destroyed stack may not leave: namespaces, CRDs, webhooks, cluster roles of the charts, pods."""
    out = [f"namespace {n['metadata']['name']}" for n in cluster.get("namespaces")["items"] if n["metadata"]["name"] not in KEPT_NAMESPACES]
    # kwok's own (Logs: the stand-in kubelet's, enabled with the control plane) are the harness's, not a stack's
    out += [f"CRD {c['metadata']['name']}" for c in cluster.get("crds")["items"]
            if c["metadata"]["name"] not in gke_crd_names() and c["spec"]["group"] != "kwok.x-k8s.io"]
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations", "validatingadmissionpolicies",
                 "priorityclasses", "apiservices"):
        for o in cluster.get(kind)["items"]:
            n = o["metadata"]["name"]
            if kind == "priorityclasses" and n.startswith("system-"):
                continue
            if kind == "apiservices" and not o["spec"].get("service"):
                continue  # the API server's own groups
            out.append(f"{kind} {n}")
    out += [f"pod {p['metadata']['namespace']}/{p['metadata']['name']}" for p in cluster.get("pods", "-A")["items"]
            if p["metadata"]["namespace"] != "kube-system"]
    return out


def node_pools(plan: Plan) -> list[str]:
    return [r.inputs["name"] for r in plan.by_type(NODE_POOL)]
