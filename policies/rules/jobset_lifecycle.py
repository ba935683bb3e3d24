"""Every JobSet depends on the JobSet controller (CRD + webhook) when the stack installs it (a stack on a
cluster that runs JobSet already installs nothing to wait for), and is deleted before it is replaced
(its spec is immutable). The analyzer API does not expose replaceOnChanges; the offline tests assert
that option on the recorded registrations."""

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from .common import HELM_TYPES, JOBSET, get

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _installs_jobset(r) -> bool:
    if r.resource_type in HELM_TYPES:
        return "jobset" in str(get(r.props, "chart", ""))
    return r.resource_type == CRD and get(r.props, "metadata.name") == "jobsets.jobset.x-k8s.io"


def _installs_controller(resources) -> bool:
    """The stack installs JobSet: its namespace, chart or CRD is among the stack's resources (a Helm chart is
    a component, which the analyzer does not list, so its namespace tells)."""
    return any(_installs_jobset(r) or (r.resource_type == NAMESPACE and get(r.props, "metadata.name") == "jobset-system")
               for r in resources)


def _validate(args: StackValidationArgs, report) -> None:
    installs = _installs_controller(args.resources)
    for js in (r for r in args.resources if r.resource_type == JOBSET):
        name = get(js.props, "metadata.name")
        if installs and not any(_installs_jobset(d) for d in js.dependencies):
            report(f"JobSet {name} does not depend on the JobSet controller; add depends_on the JobSet chart", js.urn)
        if not js.opts.delete_before_replace:
            report(f"JobSet {name}: set delete_before_replace (a JobSet's spec is immutable; replace it old-first)", js.urn)


jobset_lifecycle = StackValidationPolicy(
    name="pathways-jobset-lifecycle",
    description="JobSets depend on the JobSet controller/CRD and are deleted before replacement.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
