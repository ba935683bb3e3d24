"""Buckets: uniform access, public access prevention enforced, no Delete rule with age 0, no
force_destroy, and `protect` in protected stacks."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules.common import BUCKET, get, has_protected_label


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != BUCKET:
        return
    p, name = args.props, get(args.props, "name")
    if get(p, "uniformBucketLevelAccess") is not True:
        report(f"bucket {name}: set uniform_bucket_level_access = true")
    if get(p, "publicAccessPrevention") != "enforced":
        report(f"bucket {name}: set public_access_prevention = \"enforced\"")
    if get(p, "forceDestroy"):
        report(f"bucket {name}: force_destroy deletes every object with the bucket; set it false")
    for rule in get(p, "lifecycleRules") or []:
        if get(rule, "action.type") == "Delete" and get(rule, "condition.age") == 0:
            report(f"bucket {name}: a Delete rule with age 0 empties the bucket; use an age of at least 1 day")
    if has_protected_label(p) and not args.opts.protect:
        report(f"bucket {name} is in a protected stack without `protect`; set pathways:protected: true")


bucket_hardening = ResourceValidationPolicy(
    name="pathways-bucket-hardening",
    description="Buckets use uniform access, enforce public access prevention, have no age-0 Delete rule nor force_destroy, and are protected in protected stacks.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
