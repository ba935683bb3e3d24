"""The GKE Inference Gateway of a vLLM serve workload (serve.gateway), as the stack pins it (pure Python).

Sources, all of the Gateway API Inference Extension (GAIE) v1.5.0, the Go module tools/engines/gke-crds pins:
- the `inferencepool` chart (config/charts/inferencepool, with config/charts/epplib as its `inference-extension`
  dependency): one InferencePool named after the release, its endpoint picker (EPP) Deployment, Service,
  ServiceAccount and RBAC, and with `provider.name: gke` a HealthCheckPolicy and a GCPBackendPolicy
  (templates/gke.yaml). Published as oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool
  at the release's tag (hack/push-chart.sh: `helm package --version <tag>` after `helm dependency update`);
- its values.yaml: the EPP image registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0, ext-proc port 9002,
  requests 4 CPU / 8Gi and a 16Gi memory limit ("validated with scale testing at high QPS"), FailOpen;
  `inferencePool.modelServerType` one of vllm, sglang, triton-tensorrt-llm, trtllm-serve;
- config/manifests/gateway/gke/gateway.yaml: a Gateway with an HTTP listener on port 80 whose HTTPRoute sends
  to the InferencePool (backendRef group inference.networking.k8s.io, kind InferencePool).
GKE's side (docs "Deploy GKE Inference Gateway", "Gateway controller requirements"): the Gateway API enabled on
the cluster, the HttpLoadBalancing add-on, and a proxy-only subnet in the region for a regional gateway class;
Cloud Load Balancing docs, "Firewall rules": an Envoy-based (regional Application) load balancer needs ingress
from the health-check ranges and from the proxy-only subnet to its backends.
"""

from __future__ import annotations

from typing import Literal

# Pin and upgrade (#59, read 2026-12-06): v1.5.0 is GAIE's last release with an endpoint picker fit for production,
# its chart and its image. From v1.6.0 GAIE keeps only the InferencePool CRD, the conformance tests and a round-robin
# "lightweight EPP" (cmd/lwepp: no metrics, no model-server type; "not recommended for production",
# site-src/guides/implementers.md); the picker, InferenceObjective and InferenceModelRewrite moved to llm-d's router
# (README.md, issue #2430: module github.com/llm-d/llm-d-router, formerly llm-d-inference-scheduler; chart
# oci://ghcr.io/llm-d/charts/llm-d-router-gateway, image ghcr.io/llm-d/llm-d-router-endpoint-picker), which the Go
# module proxy here does not serve, and whose v0.10.0 itself builds on GAIE v1.5.0. Upgrading means that chart and
# image, with the tier's picker built from that module once it is obtainable; GAIE v1.6.2 (served here) brings no
# picker to move to.
LAST_PICKER_RELEASE = "1.5.0"
CHART_VERSION = LAST_PICKER_RELEASE
CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
# the chart directory name `make crds` copies to build/charts (the last element of CHART)
CHART_NAME = "inferencepool"
EPP_IMAGE_REGISTRY = "registry.k8s.io"
EPP_IMAGE_REPOSITORY = "gateway-api-inference-extension/epp"
EXT_PROC_PORT = 9002
# the chart's sizing of the EPP container (values.yaml inferenceExtension.resources)
PICKER_CPU = "4"
PICKER_MEMORY = "8Gi"
PICKER_MEMORY_LIMIT = "16Gi"
MODEL_SERVER_TYPE = "vllm"
# The EPP Deployment, ServiceAccount and Service the chart names <release>-epp (epplib _helpers.tpl
# gateway-api-inference-extension.name).
PICKER_SUFFIX = "-epp"

INFERENCE_GROUP = "inference.networking.k8s.io"
# The stack installs no InferencePool CRD: GKE installs and manages the GA Gateway API and Inference Extension CRDs
# (inference.networking.k8s.io/v1 InferencePool) from this version on (GKE docs, "Deploy GKE Inference Gateway",
# Install the CRDs: "For GKE versions 1.34.0-gke.1626000 or later, the InferencePool CRD is automatically
# installed"); below it, the chart's InferencePool has no kind to be made of. Installing the CRD ourselves on an
# older cluster would fight GKE's own once the cluster is upgraded past it.
MIN_GKE_VERSION = "1.34.0-gke.1626000"
INFERENCE_POOL_KIND = "InferencePool"
GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
LISTENER_PORT = 80

# GKE's regional gateway classes (GKE docs "GatewayClass capabilities"): the internal Application Load Balancer
# (reachable from the VPC only) by default; the regional external one only by serve.gateway.external.
GatewayAccess = Literal["internal", "external"]
GATEWAY_CLASSES: dict[str, str] = {
    "internal": "gke-l7-rilb",
    "external": "gke-l7-regional-external-managed",
}
# Google's health-check probers (Cloud Load Balancing docs, "Firewall rules": regional Application Load Balancers).
HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
# One proxy-only subnet per region and VPC serves every regional Envoy-based load balancer in it; Google
# recommends a /23 ("Proxy-only subnets for Envoy-based load balancers").
PROXY_ONLY_PURPOSE = "REGIONAL_MANAGED_PROXY"
DEFAULT_PROXY_ONLY_CIDR = "10.9.0.0/23"


def picker_name(release: str) -> str:
    return f"{release}{PICKER_SUFFIX}"


def gateway_name(workload: str) -> str:
    return f"{workload}-gateway"


def armor_policy_name(stack_slug: str, workload: str) -> str:
    """The Cloud Armor regional security policy of an external gateway with clientRanges (a GCE name: 63 characters,
    lowercase, starting with a letter): per stack and workload, so two stacks of one project differ."""
    name = f"pw-{stack_slug}-{workload}"[:58].rstrip("-")
    return f"{name}-armor"


# Cloud Armor: at most 10 source ranges in one rule's SRC_IPS_V1 match (pulumi-gcp RegionSecurityPolicyRuleMatchConfig
# src_ip_ranges, "Maximum number of srcIpRanges allowed is 10"), and the default rule's priority.
ARMOR_RANGES_PER_RULE = 10
ARMOR_DEFAULT_PRIORITY = 2147483647
