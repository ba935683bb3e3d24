"""A serve workload's GKE Inference Gateway (serve.gateway), pure Python: the values the inferencepool chart is
installed with (its InferencePool over the replicas' leaders and its endpoint picker), and the Gateway and
HTTPRoute that send clients to the pool. Sources: components/model/workloads/inference_gateway.py."""

from __future__ import annotations

from typing import Any

from components.constants import ROLE_LABEL
from components.manifests.lws import leader_selector, owned_metadata
from components.model.resolved import ResolvedWorkload
from components.model.workloads import inference_gateway as igw
from components.model.workloads import vllm
from components.model.workloads.serving import ServeGateway


def _gateway(w: ResolvedWorkload) -> ServeGateway:
    assert w.spec.serve is not None
    return w.spec.serve.gateway


def chart_values(w: ResolvedWorkload, version: str, system_role: str) -> dict[str, Any]:
    """The inferencepool chart's values (its values.yaml at v1.5.0): the pool selects the leaders by LWS's own
    labels, on vLLM's port; the picker runs on the system pool at the pinned image."""
    cpu, memory, memory_limit = _gateway(w).picker_requests
    return {
        "inferenceExtension": {
            # the chart's default pulls Always; the tag follows the chart version it is installed at
            "image": {"registry": igw.EPP_IMAGE_REGISTRY, "repository": igw.EPP_IMAGE_REPOSITORY, "tag": f"v{version}",
                      "pullPolicy": "IfNotPresent"},
            "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory_limit}},
            # The chart has no nodeSelector value: its affinity keeps the picker on the system pool, off the
            # Pathways head and TPU nodes (which the node guard keeps for Pathways pods anyway).
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": [system_role]}]}]}}},
        },
        "inferencePool": {
            # only the leaders serve HTTP (the workers are Pathways workers): the same selector as the -http Service,
            # labels only the LWS controller's StatefulSets can give (components/manifests/guardrails.py)
            "modelServers": {"matchLabels": leader_selector(w)},
            "targetPorts": [{"number": vllm.PORT}],
            "modelServerType": igw.MODEL_SERVER_TYPE,
        },
        # gke: the chart adds the HealthCheckPolicy (vLLM's /health on the pool's port) and GCPBackendPolicy GKE's
        # load balancer reads (templates/gke.yaml). With clientRanges the stack makes both itself (backend_policies),
        # its GCPBackendPolicy naming the Cloud Armor policy: two GCPBackendPolicies on one pool would conflict. The
        # chart's other gke objects are its picker's Prometheus reader, off with monitoring.prometheus.enabled false.
        "provider": {"name": "none" if _gateway(w).client_ranges else "gke"},
    }


def backend_policies(w: ResolvedWorkload, armor_policy: str) -> list[dict[str, Any]]:
    """With clientRanges: the chart's HealthCheckPolicy and GCPBackendPolicy (templates/gke.yaml at v1.5.0, the same
    fields), the latter with the Cloud Armor policy (GKE "Configure Gateway resources using Policies", securityPolicy)."""
    target = {"group": igw.INFERENCE_GROUP, "kind": igw.INFERENCE_POOL_KIND, "name": w.name}
    return [
        {"apiVersion": "networking.gke.io/v1", "kind": "HealthCheckPolicy", "metadata": owned_metadata(w, w.name),
         "spec": {"targetRef": target, "default": {"timeoutSec": 2, "checkIntervalSec": 2, "config": {
             "type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": vllm.PORT}}}}},
        {"apiVersion": "networking.gke.io/v1", "kind": "GCPBackendPolicy", "metadata": owned_metadata(w, w.name),
         "spec": {"targetRef": target, "default": {"timeoutSec": 300, "logging": {"enabled": True}, "securityPolicy": armor_policy}}},
    ]


def gateway(w: ResolvedWorkload) -> dict[str, Any]:
    """The GKE Gateway: a regional Application Load Balancer, internal unless serve.gateway.external."""
    return {
        "apiVersion": igw.GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": owned_metadata(w, igw.gateway_name(w.name)),
        "spec": {
            "gatewayClassName": igw.GATEWAY_CLASSES[_gateway(w).access],
            "listeners": [{"name": "http", "port": igw.LISTENER_PORT, "protocol": "HTTP"}],
        },
    }


def http_route(w: ResolvedWorkload) -> dict[str, Any]:
    """Every request on the Gateway to the workload's InferencePool (named after the chart's release, the workload)."""
    return {
        "apiVersion": igw.GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": owned_metadata(w, w.name),
        "spec": {
            "parentRefs": [{"name": igw.gateway_name(w.name)}],
            "rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [{"group": igw.INFERENCE_GROUP, "kind": igw.INFERENCE_POOL_KIND, "name": w.name}],
            }],
        },
    }


def gateway_access(w: ResolvedWorkload) -> dict[str, str]:
    """The outputs' lines for the gateway: where its address appears and what to call."""
    ns, name = w.namespace, igw.gateway_name(w.name)
    where = "from the internet" if _gateway(w).external else "from the VPC"
    return {
        "gateway": f"{ns}/{name} ({igw.GATEWAY_CLASSES[_gateway(w).access]})",
        "gatewayAddress": (f"kubectl -n {ns} get gateway {name} -o jsonpath='{{.status.addresses[0].value}}' "
                           f"(then http://<address>{vllm.COMPLETIONS_PATH} {where})"),
    }
