"""The JobSet coordinator label <jobset>-pathways-head-0-0.<subdomain> fits a label value (63)."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from components.manifests.jobset import coordinator_label_value
from policies.rules.common import JOBSET, get


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != JOBSET:
        return
    name = get(args.props, "metadata.name", "")
    value = coordinator_label_value(dict(args.props))
    if value is not None and len(value) > 63:
        report(f"JobSet {name}: coordinator label {value!r} is {len(value)} characters (> 63); shorten the name or set network.subdomain")


coordinator_label = ResourceValidationPolicy(
    name="pathways-coordinator-label-length",
    description="The JobSet coordinator label value stays within 63 characters.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
