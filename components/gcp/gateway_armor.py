"""GatewayArmor: the Cloud Armor regional security policy in front of an external inference gateway with
serve.gateway.clientRanges (security #58.6): the listed client ranges are allowed, everything else is refused with 403.
The pool's GCPBackendPolicy names it (components/manifests/inference_gateway.py backend_policies).

A regional external Application Load Balancer takes a regional security policy of type CLOUD_ARMOR (Cloud Armor,
"Security policy overview": regional external Application Load Balancers); a rule's SRC_IPS_V1 match holds at most
10 ranges (pulumi-gcp RegionSecurityPolicyRuleMatchConfig), so the ranges are split over rules; the default rule
(priority 2147483647, match "*") is the deny."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.model.workloads.inference_gateway import ARMOR_DEFAULT_PRIORITY, ARMOR_RANGES_PER_RULE


@dataclass(frozen=True)
class GatewayArmorArgs:
    project: str
    region: str
    name: str
    client_ranges: tuple[str, ...]


class GatewayArmor(pulumi.ComponentResource):
    name: pulumi.Output[str]

    def __init__(self, name: str, args: GatewayArmorArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:GatewayArmor", name, None, opts)
        chunks = [args.client_ranges[i:i + ARMOR_RANGES_PER_RULE] for i in range(0, len(args.client_ranges), ARMOR_RANGES_PER_RULE)]
        rules = [gcp.compute.RegionSecurityPolicyRuleArgs(
            action="allow", priority=1000 + i, description="the gateway's clients (serve.gateway.clientRanges)",
            match=gcp.compute.RegionSecurityPolicyRuleMatchArgs(
                versioned_expr="SRC_IPS_V1", config=gcp.compute.RegionSecurityPolicyRuleMatchConfigArgs(src_ip_ranges=list(chunk))),
        ) for i, chunk in enumerate(chunks)]
        rules.append(gcp.compute.RegionSecurityPolicyRuleArgs(
            action="deny(403)", priority=ARMOR_DEFAULT_PRIORITY, description="everyone else",
            match=gcp.compute.RegionSecurityPolicyRuleMatchArgs(
                versioned_expr="SRC_IPS_V1", config=gcp.compute.RegionSecurityPolicyRuleMatchConfigArgs(src_ip_ranges=["*"])),
        ))
        policy = gcp.compute.RegionSecurityPolicy(
            name, project=args.project, region=args.region, name=args.name, type="CLOUD_ARMOR",
            description="Who may call the inference gateway (serve.gateway.clientRanges)", rules=rules,
            opts=pulumi.ResourceOptions(parent=self))
        self.name = policy.name
        self.register_outputs({"name": self.name})
