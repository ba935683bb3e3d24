"""Node settings every pool of the stack shares: identity, scopes, shielded boot, metadata server."""

from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# A pool's maximum pods per node is fixed at its creation (the input forces a new pool): a pool an earlier version of
# the stack made without it keeps GKE's default of 110 (a /24 a node, which it had room for) rather than be
# replaced, and every pool made from now on takes the stack's value (components/model/cluster/address_space.py).
KEEP_MAX_PODS = ["maxPodsPerNode"]


def node_config(
    machine_type: str,
    service_account: pulumi.Input[str],
    labels: dict[str, str],
    taints: tuple[tuple[str, str, str], ...] = (),
    workload_metadata: str = "GKE_METADATA",
    **extra: Any,
) -> gcp.container.NodePoolNodeConfigArgs:
    """A node config with the stack's non-negotiables: dedicated SA, cloud-platform scope (access is
    governed by IAM), shielded VM with secure boot, GKE metadata server, gVNIC. `workload_metadata`
    GCE_METADATA only where Google's serving shape needs it (TPU pools that run serve workloads)."""
    return gcp.container.NodePoolNodeConfigArgs(
        machine_type=machine_type,
        service_account=service_account,
        oauth_scopes=[CLOUD_PLATFORM_SCOPE],
        labels=labels,
        taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=k, value=v, effect=e) for k, v, e in taints],
        shielded_instance_config=gcp.container.NodePoolNodeConfigShieldedInstanceConfigArgs(
            enable_secure_boot=True, enable_integrity_monitoring=True
        ),
        workload_metadata_config=gcp.container.NodePoolNodeConfigWorkloadMetadataConfigArgs(mode=workload_metadata),
        gvnic=gcp.container.NodePoolNodeConfigGvnicArgs(enabled=True),
        **extra,
    )


def pool_locations(regional: bool, zone: str) -> Optional[list[str]]:
    """Nodes stay in the stack's one zone. Zonal clusters take no node_locations (the zone is implied)."""
    return [zone] if regional else None
