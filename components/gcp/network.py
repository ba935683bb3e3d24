"""PathwaysNetwork: a dedicated VPC and subnet for the cluster (or an existing pair by name), and the
Cloud Router + Cloud NAT private nodes need for egress.

Private nodes reach Google APIs and Artifact Registry through Private Google Access, but not
registry.k8s.io, where the JobSet (and Kueue) images live: without NAT their pods never pull and the
chart's await times out (GKE docs, "Private clusters": "nodes have no outbound internet access";
"Cloud NAT" for GKE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.model.workloads.inference_gateway import PROXY_ONLY_PURPOSE

PODS_RANGE = "pods"
SERVICES_RANGE = "services"


@dataclass(frozen=True)
class PathwaysNetworkArgs:
    project: str
    """Project that owns the network."""
    region: str
    """Region of the subnet (the cluster's region)."""
    name: str
    """Name of the VPC and subnet to create."""
    nodes_cidr: str
    """Primary range of the subnet (node IPs)."""
    pods_cidr: str
    """Secondary range named `pods`."""
    services_cidr: str
    """Secondary range named `services`."""
    mtu: int
    """VPC MTU; 8896 (jumbo frames) helps multislice DCN traffic."""
    existing_network: Optional[str] = None
    """Use this VPC instead of creating one (must carry secondary ranges `pods` and `services`)."""
    existing_subnetwork: Optional[str] = None
    """Subnet of existing_network."""
    cloud_nat: bool = False
    """Create a Cloud Router and Cloud NAT in the region for the nodes' egress."""
    proxy_only_cidr: Optional[str] = None
    """Create the region's proxy-only subnet in the created VPC with this range (an inference gateway's
    regional Application Load Balancer runs its proxies there)."""


class PathwaysNetwork(pulumi.ComponentResource):
    network: pulumi.Output[str]
    """Network self link or name, as the cluster takes it."""
    subnetwork: pulumi.Output[str]
    """Subnetwork self link or name."""

    def __init__(self, name: str, args: PathwaysNetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if args.existing_network:
            assert args.existing_subnetwork is not None  # the config model asks for both
            self.network = pulumi.Output.from_input(args.existing_network)
            self.subnetwork = pulumi.Output.from_input(args.existing_subnetwork)
        else:
            vpc = gcp.compute.Network(
                f"{name}-vpc",
                project=args.project,
                name=args.name,
                auto_create_subnetworks=False,
                mtu=args.mtu,
                routing_mode="REGIONAL",
                opts=child,
            )
            subnet = gcp.compute.Subnetwork(
                f"{name}-subnet",
                project=args.project,
                name=args.name,
                region=args.region,
                network=vpc.id,
                ip_cidr_range=args.nodes_cidr,
                private_ip_google_access=True,  # nodes reach GCS and Artifact Registry without public IPs
                secondary_ip_ranges=[
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=PODS_RANGE, ip_cidr_range=args.pods_cidr),
                    gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICES_RANGE, ip_cidr_range=args.services_cidr),
                ],
                opts=child,
            )
            self.network = vpc.self_link
            self.subnetwork = subnet.self_link
            if args.proxy_only_cidr:
                # GKE's regional gateway classes need one ACTIVE proxy-only subnet in the region (GKE docs, "Gateway
                # controller requirements"; VPC docs, "Proxy-only subnets for Envoy-based load balancers").
                gcp.compute.Subnetwork(
                    f"{name}-proxy-only", project=args.project, name=f"{args.name}-proxy-only", region=args.region,
                    network=vpc.id, ip_cidr_range=args.proxy_only_cidr, purpose=PROXY_ONLY_PURPOSE, role="ACTIVE",
                    opts=child,
                )
        self.nat: Optional[gcp.compute.RouterNat] = None
        # fixed names: a replacement (a new network) created first would collide (change_rules.NAME_SCOPE); the nodes'
        # egress pauses between the delete and the create
        replaced_first = pulumi.ResourceOptions(parent=self, delete_before_replace=True)
        if args.cloud_nat:
            router = gcp.compute.Router(
                f"{name}-router", project=args.project, name=f"{args.name}-router", region=args.region,
                network=self.network, opts=replaced_first,
            )
            self.nat = gcp.compute.RouterNat(
                f"{name}-nat",
                project=args.project,
                name=f"{args.name}-nat",
                region=args.region,
                router=router.name,
                nat_ip_allocate_option="AUTO_ONLY",
                # Only the cluster's subnet (all its ranges: nodes and pods), never the rest of a shared VPC.
                source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
                subnetworks=[gcp.compute.RouterNatSubnetworkArgs(
                    name=self.subnetwork, source_ip_ranges_to_nats=["ALL_IP_RANGES"],
                )],
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                opts=replaced_first,
            )
        self.register_outputs({"network": self.network, "subnetwork": self.subnetwork})
