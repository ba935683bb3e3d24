"""What GKE's cloud controller does for the tier's Services: a Service of type LoadBalancer gets an address in
its status (status.loadBalancer.ingress), as GKE's load balancer controller writes one once the forwarding rule
exists, internal ones from the cluster's subnet. Pulumi's await on a LoadBalancer Service waits for that
address; without a controller to write it, `pulumi up` of a serving stack would wait until its timeout.

Nothing routes to the address here (no kube-proxy, no cloud): scenarios that need a Service's backends read its
EndpointSlices, which the real controller-manager keeps."""

from __future__ import annotations

import ipaddress
import threading
import time

from .api import Api


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
