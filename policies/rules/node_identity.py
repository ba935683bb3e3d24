"""Node pools run as a dedicated service account (never the Compute default SA) on shielded nodes
with secure boot."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules.common import CLUSTER, NODE_POOL, get


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type not in (NODE_POOL, CLUSTER):
        return
    what = f"node pool {get(args.props, 'name')}" if args.resource_type == NODE_POOL else f"cluster {get(args.props, 'name')} (default pool)"
    sa = get(args.props, "nodeConfig.serviceAccount")
    if args.resource_type == CLUSTER and get(args.props, "nodeConfig") is None:
        return  # an Autopilot-style or default-less cluster has no node config to check
    if not sa or sa == "default" or sa.endswith("-compute@developer.gserviceaccount.com"):
        report(f"{what} runs as the Compute default service account; set node_config.service_account to the stack's node SA")
    if get(args.props, "nodeConfig.shieldedInstanceConfig.enableSecureBoot") is not True:
        report(f"{what}: enable shielded nodes with secure boot (node_config.shielded_instance_config.enable_secure_boot)")


node_identity = ResourceValidationPolicy(
    name="pathways-node-identity",
    description="Node pools use the dedicated node service account, never the Compute default SA, and secure boot.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
