"""TPU pools are deleted before they are replaced: quota and reservations never fit two copies of a slice."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules.common import NODE_POOL, get, is_tpu_pool


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type == NODE_POOL and is_tpu_pool(args.props) and not args.opts.delete_before_replace:
        report(f"TPU pool {get(args.props, 'name')}: set delete_before_replace (a replacement would need twice the TPU quota)")


tpu_pool_replacement = ResourceValidationPolicy(
    name="pathways-tpu-pool-delete-before-replace",
    description="TPU node pools use delete_before_replace.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
