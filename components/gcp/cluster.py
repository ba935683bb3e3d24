"""GkeCluster: the control plane and a small autoscaled system pool for kube-system and controllers.

The default node pool is removed at creation; every other pool is its own resource so that TPU
pools never wait on each other. Cloud DNS and Dataplane V2 are set at creation: switching DNS later
takes tens of minutes, and kube-dns does not keep up at Pathways scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.constants import ROLE_LABEL, SYSTEM_ROLE
from components.gcp.node_defaults import CLOUD_PLATFORM_SCOPE, node_config, pool_locations
from components.model.cluster.cluster import DEFAULT_WINDOW

SYSTEM_POOL_LABELS = {ROLE_LABEL: SYSTEM_ROLE}


@dataclass(frozen=True)
class GkeClusterArgs:
    project: str
    """Project of the cluster."""
    name: str
    """Cluster name."""
    region: str
    """Region: the control plane's location when regional."""
    zone: str
    """The one zone every node lives in (and the control plane's location when zonal)."""
    regional: bool
    """Regional (replicated) control plane; nodes still only in `zone`."""
    network: pulumi.Input[str]
    """VPC self link or name."""
    subnetwork: pulumi.Input[str]
    """Subnet self link or name, with secondary ranges `pods` and `services`."""
    pods_range: str
    """Secondary range name for pods."""
    services_range: str
    """Secondary range name for services."""
    release_channel: str
    """RAPID, REGULAR, STABLE or EXTENDED."""
    min_master_version: Optional[str]
    """Lowest control-plane version, or None to let the release channel choose (the default: the
    provider creates the cluster *at* this version, and GKE refuses versions it no longer offers)."""
    deletion_protection: bool
    """GKE-side deletion protection."""
    protect: bool
    """Pulumi `protect` on the cluster (protected stacks)."""
    node_service_account: pulumi.Input[str]
    """Email of the system pool's service account."""
    system_machine_type: str
    """System pool machine type."""
    system_min_nodes: int
    """System pool autoscaler minimum."""
    system_max_nodes: int
    """System pool autoscaler maximum."""
    private_nodes: bool = True
    """Nodes get no public IPs."""
    public_endpoint: bool = False
    """The IP endpoint is reachable from the internet (else from the VPC only)."""
    maintenance_window: tuple[str, str, str] = DEFAULT_WINDOW
    """(start, end, RRULE) of the recurring maintenance window: always one (the provider requires exactly
    one window in a maintenance policy, and without one GKE may upgrade a TPU pool at any hour)."""
    maintenance_exclusions: tuple[tuple[str, str, str, str], ...] = field(default_factory=tuple)
    """(name, start, end, scope) periods when GKE may not upgrade."""
    monitoring_components: tuple[str, ...] = ("SYSTEM_COMPONENTS",)
    """GKE monitoring components (POD and JOBSET add the kube-state-metrics the alerts use)."""
    master_authorized_networks: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    """(CIDR, display name) pairs allowed to reach the control plane; empty means unrestricted."""
    resource_labels: dict[str, str] = field(default_factory=dict)
    """GCP labels of the cluster (the protected marker the policy pack reads, PROTECTED_LABEL)."""
    security_group: Optional[str] = None
    """Google Groups for RBAC: gke-security-groups@<domain>, whose member groups RBAC subjects may name."""
    gateway_api: bool = False
    """Enable GKE's Gateway API (standard channel: the GatewayClasses and the Gateway controller), which an
    inference gateway needs (GKE docs, "Deploy GKE Inference Gateway")."""
    multi_tier_checkpointing: bool = False
    slice_controller: bool = False
    """GKE's slice controller (dynamic slicing: it forms the Slices of a pool set; GKE "Use dynamic slicing",
    --enable-slice-controller; the API's addonsConfig.sliceControllerConfig)."""
    """Enable the HighScaleCheckpointing add-on and the Cloud Storage FUSE CSI driver it requires (GKE's
    multi-tier checkpointing how-to; the API refuses the first without the second)."""
    csi_drivers: tuple[str, ...] = ()
    """CSI driver add-ons the workloads' mounts need: gcsfuse (Cloud Storage FUSE, also for multi-tier
    checkpointing), filestore, lustre (GKE docs of each: GcsFuseCsiDriver, GcpFilestoreCsiDriver, LustreCsiDriver)."""
    k8s_tokens_via_dns: bool = False
    """A fleet worker: Kubernetes tokens accepted on the DNS endpoint (its manager's Kueue uses one)."""


class GkeCluster(pulumi.ComponentResource):
    name: pulumi.Output[str]
    """Cluster name."""
    location: pulumi.Output[str]
    """Region or zone of the control plane."""
    endpoint: pulumi.Output[str]
    """The control plane's DNS endpoint (IAM-authorized, reachable without opening IP ranges)."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig for the DNS endpoint, using gke-gcloud-auth-plugin (secret)."""
    private_endpoint: pulumi.Output[str]
    """The control plane's private IP endpoint (reachable from the cluster's VPC and networks routed to it)."""
    ca_certificate: pulumi.Output[str]
    """The cluster's CA (base64 PEM), which the IP endpoints' certificates chain to."""
    system_pool: gcp.container.NodePool
    """The system pool, for resources that must wait on schedulable nodes."""

    def __init__(self, name: str, args: GkeClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:GkeCluster", name, None, opts)
        location = args.region if args.regional else args.zone
        cluster = gcp.container.Cluster(
            name,
            project=args.project,
            name=args.name,
            location=location,
            node_locations=pool_locations(args.regional, args.zone),
            remove_default_node_pool=True,
            initial_node_count=1,
            # The throwaway default pool still must not run as the Compute default SA.
            node_config=gcp.container.ClusterNodeConfigArgs(
                service_account=args.node_service_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                shielded_instance_config=gcp.container.ClusterNodeConfigShieldedInstanceConfigArgs(enable_secure_boot=True),
            ),
            network=args.network,
            subnetwork=args.subnetwork,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_secondary_range_name=args.pods_range,
                services_secondary_range_name=args.services_range,
            ),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel),
            min_master_version=args.min_master_version,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            datapath_provider="ADVANCED_DATAPATH",
            dns_config=gcp.container.ClusterDnsConfigArgs(cluster_dns="CLOUD_DNS", cluster_dns_scope="CLUSTER_SCOPE"),
            enable_shielded_nodes=True,
            # Private nodes, and the IP endpoint closed to the internet unless asked for; people and CI
            # reach the control plane through the DNS-based endpoint, authorized by IAM (GKE docs,
            # "About network isolation": DNS-based endpoint, allow external traffic).
            private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
                enable_private_nodes=args.private_nodes, enable_private_endpoint=not args.public_endpoint
            ),
            control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
                dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                    allow_external_traffic=True,
                    # a fleet worker: its manager's Kueue authenticates with a Kubernetes token over this endpoint
                    # (DNSEndpointConfig.enable_k8s_tokens_via_dns; off, the endpoint takes Google credentials only)
                    enable_k8s_tokens_via_dns=True if args.k8s_tokens_via_dns else None,
                ),
            ),
            master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
                cidr_blocks=[
                    gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=c, display_name=d)
                    for c, d in args.master_authorized_networks
                ]
            ) if args.master_authorized_networks else None,
            deletion_protection=args.deletion_protection,
            resource_labels=dict(args.resource_labels) or None,
            # When GKE may upgrade and repair, and when not at all (GKE docs, "Maintenance windows and exclusions").
            maintenance_policy=gcp.container.ClusterMaintenancePolicyArgs(
                recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
                    start_time=args.maintenance_window[0], end_time=args.maintenance_window[1], recurrence=args.maintenance_window[2],
                ),
                maintenance_exclusions=[
                    gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                        exclusion_name=n, start_time=start, end_time=end,
                        exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(scope=scope),
                    ) for n, start, end, scope in args.maintenance_exclusions
                ] or None,
            ),
            # only when a serve workload has an inference gateway: off, GKE installs no Gateway API CRDs of its own
            gateway_api_config=gcp.container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD") if args.gateway_api else None,
            # Google Groups for RBAC: GKE passes a user's groups (members of this one) to RBAC; updatable in place
            # (googleapis ClusterUpdate.desired_authenticator_groups_config)
            authenticator_groups_config=gcp.container.ClusterAuthenticatorGroupsConfigArgs(
                security_group=args.security_group) if args.security_group else None,
            # only what is used: GKE's checkpointing driver (its CRD, controller and node DaemonSet) with
            # resilience.mtc, and the CSI drivers of the workloads' mounts
            addons_config=gcp.container.ClusterAddonsConfigArgs(
                high_scale_checkpointing_config=gcp.container.ClusterAddonsConfigHighScaleCheckpointingConfigArgs(
                    enabled=True) if args.multi_tier_checkpointing else None,
                gcs_fuse_csi_driver_config=gcp.container.ClusterAddonsConfigGcsFuseCsiDriverConfigArgs(
                    enabled=True) if "gcsfuse" in args.csi_drivers or args.multi_tier_checkpointing else None,
                gcp_filestore_csi_driver_config=gcp.container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(
                    enabled=True) if "filestore" in args.csi_drivers else None,
                lustre_csi_driver_config=gcp.container.ClusterAddonsConfigLustreCsiDriverConfigArgs(
                    enabled=True) if "lustre" in args.csi_drivers else None,
                slice_controller_config=gcp.container.ClusterAddonsConfigSliceControllerConfigArgs(
                    enabled=True) if args.slice_controller else None,
            ) if args.multi_tier_checkpointing or args.csi_drivers or args.slice_controller else None,
            monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
                enable_components=list(args.monitoring_components),
                managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
            ),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                # The default pool's node_config only matters at creation; GKE reports it back changed.
                ignore_changes=["nodeConfig", "initialNodeCount"],
                custom_timeouts=pulumi.CustomTimeouts(create="45m", update="60m", delete="45m"),
            ),
        )
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            project=args.project,
            cluster=cluster.name,
            location=location,
            name="system",
            node_locations=pool_locations(args.regional, args.zone),
            initial_node_count=args.system_min_nodes,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                min_node_count=args.system_min_nodes, max_node_count=args.system_max_nodes
            ),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=node_config(args.system_machine_type, args.node_service_account, SYSTEM_POOL_LABELS),
            # The autoscaler owns the node count; never diff it. A fixed name: a replacement created first would
            # collide with it (infra/offline/change_rules.py NAME_SCOPE), so the old pool goes first.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["nodeCount", "initialNodeCount"], delete_before_replace=True),
        )
        self.cluster = cluster
        self.name = cluster.name
        self.location = cluster.location
        self.endpoint = cluster.control_plane_endpoints_config.apply(_dns_endpoint)
        self.private_endpoint = cluster.private_cluster_config.apply(lambda p: (p.private_endpoint or "") if p else "")
        self.ca_certificate = cluster.master_auth.apply(lambda m: m.cluster_ca_certificate or "")
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(cluster.name, self.endpoint).apply(lambda a: kubeconfig(args.project, location, a[0], a[1]))
        )
        self.register_outputs({"name": self.name, "location": self.location, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig})


def _dns_endpoint(config: Optional[gcp.container.outputs.ClusterControlPlaneEndpointsConfig]) -> str:
    dns = config.dns_endpoint_config if config else None
    return (dns.endpoint or "") if dns else ""


def kubeconfig(project: str, location: str, name: str, dns_endpoint: str) -> str:
    """Kubeconfig for the DNS-based endpoint, authenticating through gke-gcloud-auth-plugin (no static
    credentials). The DNS endpoint serves a publicly trusted certificate, so no CA data is needed (as
    `gcloud container clusters get-credentials --dns-endpoint` writes it)."""
    context = f"gke_{project}_{location}_{name}"
    return f"""apiVersion: v1
kind: Config
clusters:
- name: {context}
  cluster:
    server: https://{dns_endpoint}
contexts:
- name: {context}
  context:
    cluster: {context}
    user: {context}
current-context: {context}
users:
- name: {context}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin (gcloud components install gke-gcloud-auth-plugin).
      provideClusterInfo: true
"""
