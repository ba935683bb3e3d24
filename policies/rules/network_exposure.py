"""Network exposure: no control plane or Pathways port open to the internet, and in protected stacks
a private cluster whose Pathways ports are closed to everything but the Pathways nodes.

Why: the IFRT proxy runs any program it is sent and every Pathways pod is hostNetwork, so its ports
are the nodes' (GKE's own firewall rules open node ports to every pod and node range). Private
nodes need Cloud NAT, or registry.k8s.io images (the JobSet controller) never pull.
"""

import ipaddress

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.constants import INTERNET_TOKENS_LABEL
from components.model.workloads.inference_gateway import GATEWAY_CLASSES
from components.model.workloads.ports import PATHWAYS_PORTS
from policies.rules.common import CLUSTER, get, has_protected_label

FIREWALL = "gcp:compute/firewall:Firewall"
NETWORK = "gcp:compute/network:Network"
NAT = "gcp:compute/routerNat:RouterNat"


def _is_everywhere(cidr: str) -> bool:
    try:
        return ipaddress.ip_network(str(cidr), strict=False).prefixlen == 0
    except ValueError:
        return False


def _ports(blocks) -> set[int]:
    out: set[int] = set()
    for block in blocks or []:
        for p in block.get("ports") or []:
            lo, _, hi = str(p).partition("-")
            if lo.isdigit():
                out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _validate(args: StackValidationArgs, report) -> None:
    resources = list(args.resources)
    _validate_gateways(resources, report)
    firewalls = [r for r in resources if r.resource_type == FIREWALL]
    for fw in firewalls:
        opened = _ports(get(fw.props, "allows")) & set(PATHWAYS_PORTS)
        if opened and any(_is_everywhere(c) for c in get(fw.props, "sourceRanges") or []):
            report(f"firewall {get(fw.props, 'name')} opens Pathways ports {sorted(opened)} to the internet; "
                   "allow them from the Pathways node service account only", fw.urn)
    for c in (r for r in resources if r.resource_type == CLUSTER):
        name = get(c.props, "name")
        for block in get(c.props, "masterAuthorizedNetworksConfig.cidrBlocks") or []:
            if _is_everywhere(block.get("cidrBlock")):
                report(f"cluster {name}: master authorized network {block.get('cidrBlock')} is the whole internet", c.urn)
        private_nodes = get(c.props, "privateClusterConfig.enablePrivateNodes") is True
        if private_nodes and any(r.resource_type == NETWORK for r in resources) and not any(r.resource_type == NAT for r in resources):
            report(f"cluster {name} has private nodes in a VPC without Cloud NAT: registry.k8s.io images (the JobSet "
                   "controller) cannot be pulled; set pathways:network.cloudNat: true", c.urn)
        if not has_protected_label(c.props):
            continue
        if not private_nodes:
            report(f"cluster {name} is in a protected stack with public node IPs; set pathways:cluster.privateNodes: true", c.urn)
        dns = get(c.props, "controlPlaneEndpointsConfig.dnsEndpointConfig") or {}
        key, value = INTERNET_TOKENS_LABEL
        if dns.get("enableK8sTokensViaDns") and dns.get("allowExternalTraffic") and (get(c.props, "resourceLabels") or {}).get(key) != value:
            report(f"cluster {name} is in a protected stack and takes Kubernetes tokens on its internet-facing DNS endpoint, "
                   "which no authorized network covers; set pathways:fleet.privateEndpoint: true, or accept it with "
                   "pathways:fleet.acknowledgeInternetTokens: true", c.urn)
        if get(c.props, "privateClusterConfig.enablePrivateEndpoint") is not True and not get(c.props, "masterAuthorizedNetworksConfig.cidrBlocks"):
            report(f"cluster {name} is in a protected stack with a control plane open to the internet; keep "
                   "pathways:cluster.publicEndpoint false (use the DNS endpoint) or list masterAuthorizedNetworks", c.urn)
        closed = set()
        for fw in firewalls:
            if any(_is_everywhere(s) for s in get(fw.props, "sourceRanges") or []) and get(fw.props, "targetServiceAccounts"):
                closed |= _ports(get(fw.props, "denies"))
        if not set(PATHWAYS_PORTS) <= closed:
            report(f"protected stack: Pathways ports {sorted(set(PATHWAYS_PORTS) - closed)} are not closed to other sources; "
                   "add the stack's Pathways firewall (deny above GKE's rules, allow from the Pathways nodes)", c.urn)


GATEWAY = "kubernetes:gateway.networking.k8s.io/v1:Gateway"
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
BACKEND_POLICY = "kubernetes:networking.gke.io/v1:GCPBackendPolicy"


def _unguarded_external_gateways(resources) -> list[tuple[str, str]]:
    """(namespace/gateway, pool) of each internet-facing gateway route to an InferencePool whose GCPBackendPolicy
    names no Cloud Armor policy (security #58.6: vLLM's HTTP API has no authentication of its own)."""
    guarded = {(get(r.props, "metadata.namespace"), get(r.props, "spec.targetRef.name")) for r in resources
               if r.resource_type == BACKEND_POLICY and get(r.props, "spec.default.securityPolicy")}
    external = {(get(r.props, "metadata.namespace"), get(r.props, "metadata.name")) for r in resources
                if r.resource_type == GATEWAY and get(r.props, "spec.gatewayClassName") == GATEWAY_CLASSES["external"]}
    out = []
    for route in (r for r in resources if r.resource_type == HTTP_ROUTE):
        ns = get(route.props, "metadata.namespace")
        if not any((ns, p.get("name")) in external for p in get(route.props, "spec.parentRefs") or []):
            continue
        for rule in get(route.props, "spec.rules") or []:
            for b in rule.get("backendRefs") or []:
                if b.get("kind") == "InferencePool" and (ns, b.get("name")) not in guarded:
                    gateway = next(p.get("name") for p in get(route.props, "spec.parentRefs") if (ns, p.get("name")) in external)
                    out.append((f"{ns}/{gateway}", str(b.get("name"))))
    return out


def _validate_gateways(resources, report) -> None:
    protected = any(has_protected_label(r.props) for r in resources if r.resource_type == CLUSTER)
    if not protected:
        return
    for gateway, pool in _unguarded_external_gateways(resources):
        report(f"protected stack: the internet-facing gateway {gateway} sends to InferencePool {pool}, whose backend policy "
               "names no Cloud Armor policy: anyone could call the model; set serve.gateway.clientRanges, or use the "
               "internal gateway")


network_exposure = StackValidationPolicy(
    name="pathways-network-exposure",
    description="No internet-facing control plane or Pathways port; protected stacks are private with Pathways ports closed to all but Pathways nodes; private nodes get Cloud NAT.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
