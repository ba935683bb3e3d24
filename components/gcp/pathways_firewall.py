"""PathwaysFirewall: the Pathways ports open between Pathways nodes only.

Every Pathways pod is hostNetwork, so its ports are the node's: NetworkPolicy does not apply to them
(Kubernetes docs, NetworkPolicy: "host network pods ... behavior is undefined"; GKE Dataplane V2
ignores them), and GKE's own firewall rules let every pod and node range of the VPC reach every
node port (GKE docs, "Automatically created firewall rules": `gke-<cluster>-<id>-all`, `-vms`, at
priority 1000). The IFRT proxy runs any program it is sent and the RM and workers accept work from
anyone who reaches them, so:

- allow (priority 900): the Pathways ports from VMs running as the Pathways node service account;
- allow (priority 900, opt-in): the proxy port from `network.pathwaysClientRanges`;
- deny (priority 910): the Pathways ports from everywhere else, above GKE's 1000.

Rules match the node VMs by service account (VPC docs, "Firewall rules: service accounts").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.model.workloads.ports import PROXY_PORT, SERVE_HTTP_PORT

ALLOW_PRIORITY = 900
DENY_PRIORITY = 910
GKE_RULE_PRIORITY = 1000  # GKE's automatically created rules


@dataclass(frozen=True)
class PathwaysFirewallArgs:
    project: str
    """Project of the VPC."""
    name: str
    """Name prefix (the cluster name): rules are <name>-<rules>-allow and -deny, <name>-pathways-clients."""
    network: pulumi.Input[str]
    """VPC self link or name."""
    node_service_account: pulumi.Input[str]
    """Email of the Pathways node SA: the head and TPU node VMs, sources and targets."""
    ports: tuple[int, ...]
    """Every port a Pathways pod listens on (Pathways' and the workloads' profilers)."""
    client_ranges: tuple[str, ...] = field(default_factory=tuple)
    """CIDRs that may also reach the proxy port (opt-in)."""
    nodes: str = "Pathways nodes"
    """Who they are, in the rules' descriptions."""
    rules: str = "pathways"
    """The allow and deny rules' middle name: an isolation domain's pair is iso-<domain> (within GCP's 63 characters)."""
    gateway_ranges: tuple[str, ...] = field(default_factory=tuple)
    """With an inference gateway: its load balancer's proxy-only subnet and Google's health-check ranges, which
    reach the serving leaders' HTTP port."""


class PathwaysFirewall(pulumi.ComponentResource):
    def __init__(self, name: str, args: PathwaysFirewallArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:PathwaysFirewall", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ports = [str(p) for p in sorted(set(args.ports))]
        targets = [args.node_service_account]
        self.allow = gcp.compute.Firewall(
            f"{name}-allow", name=f"{args.name}-{args.rules}-allow", priority=ALLOW_PRIORITY,
            project=args.project, network=args.network, direction="INGRESS", target_service_accounts=targets,
            description=f"Pathways ports: from the {args.nodes} only",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=ports)],
            source_service_accounts=[args.node_service_account], opts=child,
        )
        def allow_from_ranges(suffix: str, rule: str, description: str, port: int, ranges: tuple[str, ...]) -> None:
            gcp.compute.Firewall(
                f"{name}-{suffix}", name=f"{args.name}-{rule}", priority=ALLOW_PRIORITY,
                project=args.project, network=args.network, direction="INGRESS", target_service_accounts=targets,
                description=description, allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(port)])],
                source_ranges=list(ranges), opts=child,
            )

        if args.client_ranges:
            allow_from_ranges("clients", "pathways-clients", "IFRT proxy port: from the listed client ranges (network.pathwaysClientRanges)",
                              PROXY_PORT, args.client_ranges)
        if args.gateway_ranges:
            # An Envoy-based load balancer sends from its proxy-only subnet and probes from Google's health-check
            # ranges; neither is among the ranges GKE's own rules admit (Cloud Load Balancing docs, "Firewall rules").
            allow_from_ranges("gateway", "serving-gateway", "Serving HTTP port: from the inference gateway's proxies and health checks",
                              SERVE_HTTP_PORT, args.gateway_ranges)
        self.deny = gcp.compute.Firewall(
            f"{name}-deny", name=f"{args.name}-{args.rules}-deny", priority=DENY_PRIORITY,
            project=args.project, network=args.network, direction="INGRESS", target_service_accounts=targets,
            description="Pathways ports: closed to everything else (above GKE's own allow rules)",
            denies=[gcp.compute.FirewallDenyArgs(protocol="tcp", ports=ports)],
            source_ranges=["0.0.0.0/0"], opts=child,
        )
        self.register_outputs({})
