"""Clusters: Workload Identity on, shielded nodes; deletion protection and `protect` in protected stacks."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from .common import CLUSTER, PROTECTED_STACKS_SCHEMA, get, is_protected


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != CLUSTER:
        return
    name = get(args.props, "name")
    if not get(args.props, "workloadIdentityConfig.workloadPool"):
        report(f"cluster {name}: enable Workload Identity (workload_identity_config.workload_pool = <project>.svc.id.goog)")
    if get(args.props, "enableShieldedNodes") is False:
        report(f"cluster {name}: enable shielded nodes")
    if is_protected(args.get_config(), args.urn):
        if get(args.props, "deletionProtection") is not True:
            report(f"cluster {name} is in a protected stack without deletion_protection; set pathways:protected: true")
        if not args.opts.protect:
            report(f"cluster {name} is in a protected stack without `protect`; set pathways:protected: true")


cluster_hardening = ResourceValidationPolicy(
    name="pathways-cluster-hardening",
    description="Workload Identity and shielded nodes on; in protected stacks, deletion protection and protect on the cluster.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
    config_schema=PROTECTED_STACKS_SCHEMA,
)
