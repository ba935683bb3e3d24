"""What GKE does beside Kubernetes, for the tier. Its cloud controller, for Services: a Service of type LoadBalancer gets an address in
its status (status.loadBalancer.ingress), as GKE's load balancer controller writes one once the forwarding rule
exists, internal ones from the cluster's subnet. Pulumi's await on a LoadBalancer Service waits for that
address; without a controller to write it, `pulumi up` of a serving stack would wait until its timeout.

Nothing routes to the address here (no kube-proxy, no cloud): scenarios that need a Service's backends read its
EndpointSlices, which the real controller-manager keeps.

Its queued provisioning, for ProvisioningRequests: QueuedProvisioner."""

from __future__ import annotations

import ipaddress
import threading
import time
from typing import Any, Optional

from tools.cluster.api import Api, ApiError


def log(msg: str) -> None:
    print(f"[cloud {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# internal load balancers get addresses of the nodes' range (components/gcp/network.py's default 10.0.0.0/20 would
# collide with kwok's pod IPs: a range of its own instead), external ones of a documentation range (RFC 5737)
INTERNAL = ipaddress.ip_network("10.130.0.0/24")
EXTERNAL = ipaddress.ip_network("203.0.113.0/24")
INTERNAL_ANNOTATION = "networking.gke.io/load-balancer-type"


class _Controller:
    """A loop on its own thread, once a second until stopped, as GKE's controllers watch the cluster."""

    def __init__(self, api: Api):
        self.api = api
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        raise NotImplementedError


class LoadBalancerController(_Controller):
    def __init__(self, api: Api):
        super().__init__(api)
        self._given: dict[str, str] = {}

    def _next(self, internal: bool) -> str:
        pool = INTERNAL if internal else EXTERNAL
        used = set(self._given.values())
        return str(next(ip for ip in pool.hosts() if str(ip) not in used))

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                for svc in self.api.get("/api/v1/services")["items"]:
                    if svc["spec"].get("type") != "LoadBalancer" or (svc.get("status", {}).get("loadBalancer") or {}).get("ingress"):
                        continue
                    meta = svc["metadata"]
                    internal = (meta.get("annotations") or {}).get(INTERNAL_ANNOTATION) == "Internal"
                    key = f"{meta['namespace']}/{meta['name']}"
                    address = self._given.get(key) or self._next(internal)
                    self._given[key] = address
                    self.api.merge_patch(f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}/status",
                                         {"status": {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}})
                    log(f"service {key}: {'internal' if internal else 'external'} load balancer at {address}")
            except Exception as e:  # the next round tries again
                log(f"{type(e).__name__}: {e}")


PROVISIONING_REQUESTS = "/apis/autoscaling.x-k8s.io/v1/provisioningrequests"
QUEUED_CLASS = "queued-provisioning.gke.io"


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, "", taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _fits(template: dict[str, Any], node: dict[str, Any]) -> bool:
    """The pod template's nodeSelector matches the node and its tolerations cover the node's NoSchedule taints."""
    spec = template.get("template", {}).get("spec", {})
    labels = node["metadata"]["labels"]
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    return all(_tolerates(spec.get("tolerations") or [], t) for t in node["spec"].get("taints") or [] if t["effect"] == "NoSchedule")


class QueuedProvisioner(_Controller):
    """What GKE's queued provisioning does with a ProvisioningRequest of class queued-provisioning.gke.io (the ones
    Kueue's ProvisioningRequest admission check makes): it finds whole queued-provisioning pools whose nodes the
    request's pod templates fit (nodeSelector, tolerations), makes their nodes, and reports the request
    Provisioned; a request it cannot serve yet stays Accepted and waits. When the request goes (Kueue deletes it
    with its workload), the nodes go too. `fail(n)` makes the next n requests fail (condition Failed), as a
    stock-out does, so that Kueue's retry can be seen. The pools and their nodes come from the stack's plan
    (gke_nodes.queued_pools): this stands in for GKE's capacity, never for Kueue."""

    def __init__(self, api: Api):
        super().__init__(api)
        self._pools: dict[str, list[dict[str, Any]]] = {}
        self._held: dict[str, list[str]] = {}  # request (namespace/name) -> pools given to it
        self._failures = 0
        self.log: list[str] = []
        self._lock = threading.Lock()

    def offer(self, pools: dict[str, list[dict[str, Any]]]) -> None:
        """The queued-provisioning pools of the stack now deployed, with the nodes each would get; the log starts
        again with it."""
        with self._lock:
            self._pools = dict(pools)
            self.log = []

    def fail(self, count: int = 1) -> None:
        with self._lock:
            self._failures += count

    def holding(self) -> dict[str, list[str]]:
        with self._lock:
            return {k: list(v) for k, v in self._held.items()}

    def _note(self, msg: str) -> None:
        self.log.append(msg)
        log(msg)

    def _set_conditions(self, pr: dict[str, Any], *conditions: tuple[str, str, str]) -> None:
        meta = pr["metadata"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.api.merge_patch(f"/apis/autoscaling.x-k8s.io/v1/namespaces/{meta['namespace']}/provisioningrequests/{meta['name']}/status", {
            "status": {"conditions": [{"type": t, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now,
                                       "observedGeneration": meta.get("generation", 1)} for t, reason, message in conditions]}})

    def _pick(self, pr: dict[str, Any]) -> Optional[list[str]]:
        """Whole free pools covering every pod set of the request, or None while capacity is short."""
        ns = pr["metadata"]["namespace"]
        taken = {p for pools in self._held.values() for p in pools}
        chosen: list[str] = []
        for pod_set in pr["spec"]["podSets"]:
            template = self.api.get(f"/api/v1/namespaces/{ns}/podtemplates/{pod_set['podTemplateRef']['name']}")
            need = int(pod_set["count"])  # one TPU worker a VM
            for pool, nodes in sorted(self._pools.items()):
                if need <= 0:
                    break
                if pool in taken or pool in chosen or not all(_fits(template, n) for n in nodes):
                    continue
                chosen.append(pool)
                need -= len(nodes)
            if need > 0:
                return None
        return chosen

    def _serve(self, pr: dict[str, Any]) -> None:
        key = f"{pr['metadata']['namespace']}/{pr['metadata']['name']}"
        with self._lock:
            if self._failures > 0:
                self._set_conditions(pr, ("Accepted", "Accepted", "accepted by the tier's stand-in for GKE"),
                                     ("Failed", "ResourcePoolExhausted", "no capacity: the tier's stand-in for GKE fails this request (QueuedProvisioner.fail)"))
                self._failures -= 1  # once the request says so
                self._note(f"provisioning request {key}: Failed (as asked)")
                return
            pools = self._pick(pr)
            if pools is None:
                if not any(c["type"] == "Accepted" for c in pr.get("status", {}).get("conditions") or []):
                    self._set_conditions(pr, ("Accepted", "Accepted", "waiting for capacity"))
                return
            self._held[key] = pools
            nodes = [n for p in pools for n in self._pools[p]]
        for node in nodes:
            self.api.create("/api/v1/nodes", node)
        self._set_conditions(pr, ("Accepted", "Accepted", "accepted by the tier's stand-in for GKE"),
                             ("Provisioned", "Provisioned", f"pools {', '.join(pools)} provisioned"))
        self._note(f"provisioning request {key}: Provisioned with pools {', '.join(pools)} ({len(nodes)} nodes)")

    def _release(self, key: str) -> None:
        with self._lock:
            pools = self._held.pop(key, [])
            names = [n["metadata"]["name"] for p in pools for n in self._pools.get(p, [])]
        for name in names:
            try:
                self.api.delete(f"/api/v1/nodes/{name}")
            except ApiError as e:
                if e.status != 404:
                    raise
        if pools:
            self._note(f"provisioning request {key} gone: pools {', '.join(pools)} scaled to 0")

    def release_all(self) -> None:
        for key in list(self.holding()):
            self._release(key)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                try:
                    requests = self.api.get(PROVISIONING_REQUESTS)["items"]
                except ApiError as e:
                    if e.status == 404:  # no CRD (yet)
                        continue
                    raise
                present = set()
                for pr in requests:
                    key = f"{pr['metadata']['namespace']}/{pr['metadata']['name']}"
                    present.add(key)
                    done = {c["type"] for c in pr.get("status", {}).get("conditions") or [] if c["status"] == "True"} & {"Provisioned", "Failed"}
                    if pr["spec"].get("provisioningClassName") == QUEUED_CLASS and not done and not pr["metadata"].get("deletionTimestamp"):
                        self._serve(pr)
                for key in set(self.holding()) - present:
                    self._release(key)
            except Exception as e:  # the next round tries again
                self._note(f"{type(e).__name__}: {e}")
