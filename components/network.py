"""PathwaysNetwork: a dedicated VPC and subnet for the cluster, or an existing pair by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

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


class PathwaysNetwork(pulumi.ComponentResource):
    network: pulumi.Output[str]
    """Network self link or name, as the cluster takes it."""
    subnetwork: pulumi.Output[str]
    """Subnetwork self link or name."""

    def __init__(self, name: str, args: PathwaysNetworkArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:Network", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        if args.existing_network:
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
        self.register_outputs({"network": self.network, "subnetwork": self.subnetwork})
