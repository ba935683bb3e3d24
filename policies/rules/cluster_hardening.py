"""Clusters: Workload Identity on, shielded nodes; deletion protection and `protect` in protected stacks
(those whose pathways:protected flag is set, stamped as a label); stacks the pack config lists as
protected must set that flag."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules.common import CLUSTER, PROTECTED_STACKS_SCHEMA, get, has_protected_label, must_be_protected, stack_of


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != CLUSTER:
        return
    name = get(args.props, "name")
    if not get(args.props, "workloadIdentityConfig.workloadPool"):
        report(f"cluster {name}: enable Workload Identity (workload_identity_config.workload_pool = <project>.svc.id.goog)")
    if get(args.props, "enableShieldedNodes") is False:
        report(f"cluster {name}: enable shielded nodes")
    if not has_protected_label(args.props) and must_be_protected(args.get_config(), args.urn):
        report(f"stack {stack_of(args.urn)} must be protected (policy config protectedStacks) but pathways:protected is not true; "
               "set pathways:protected: true in its stack file")
    if has_protected_label(args.props):
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
