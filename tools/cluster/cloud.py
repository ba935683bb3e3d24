"""What GKE's cloud controller does for the tier's Services (and, below, the readiness the tier grants to the one
image it cannot run): a Service of type LoadBalancer gets an address in
its status (status.loadBalancer.ingress), as GKE's load balancer controller writes one once the forwarding rule
exists, internal ones from the cluster's subnet. Pulumi's await on a LoadBalancer Service waits for that
address; without a controller to write it, `pulumi up` of a serving stack would wait until its timeout.

Nothing routes to the address here (no kube-proxy, no cloud): scenarios that need a Service's backends read its
EndpointSlices, which the real controller-manager keeps."""

from __future__ import annotations

import ipaddress
import threading
import time

from components.model import inference_gateway as igw

from .api import Api
from .kubelet import PROBES_PASSED


def log(msg: str) -> None:
    print(f"[cloud {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# internal load balancers get addresses of the nodes' range (components/network.py's default 10.0.0.0/20 would
# collide with kwok's pod IPs: a range of its own instead), external ones of a documentation range (RFC 5737)
INTERNAL = ipaddress.ip_network("10.130.0.0/24")
EXTERNAL = ipaddress.ip_network("203.0.113.0/24")
INTERNAL_ANNOTATION = "networking.gke.io/load-balancer-type"


class LoadBalancerController:
    def __init__(self, api: Api):
        self.api = api
        self._given: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

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


# Images the tier cannot run whose readiness it grants, by the version the stack pins: the inference gateway's
# endpoint picker (GAIE's epp; its binary is not built here, so its gRPC health probe has nothing to answer).
# A picker pod the real scheduler has bound and kwok runs gets the annotation the kwok stage `pod-ready` reads,
# so that its Deployment becomes available as on GKE, where the picker is ready once it has synced its pool.
# Nothing about the picker's own behaviour is tested by this: only what the API server, RBAC, the scheduler and
# the stack's guards decide about its objects.
READY_STAND_INS = {
    f"{igw.EPP_IMAGE_REGISTRY}/{igw.EPP_IMAGE_REPOSITORY}": f"v{igw.CHART_VERSION}",
}


class ReadyStandIns:
    def __init__(self, api: Api):
        self.api = api
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @staticmethod
    def stand_in(pod: dict) -> bool:
        images = [str(c.get("image", "")) for c in pod["spec"].get("containers") or []]
        return bool(images) and all(image.rpartition(":")[0] in READY_STAND_INS and
                                    READY_STAND_INS[image.rpartition(":")[0]] == image.rpartition(":")[2] for image in images)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                for pod in self.api.get("/api/v1/pods")["items"]:
                    meta = pod["metadata"]
                    if (pod.get("status") or {}).get("phase") != "Running" or PROBES_PASSED in (meta.get("annotations") or {}) \
                            or not self.stand_in(pod):
                        continue
                    self.api.merge_patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                                         {"metadata": {"annotations": {PROBES_PASSED: "true"}}})
                    log(f"pod {meta['namespace']}/{meta['name']}: ready granted (stand-in for {pod['spec']['containers'][0]['image']})")
            except Exception as e:  # the next round tries again
                log(f"{type(e).__name__}: {e}")
