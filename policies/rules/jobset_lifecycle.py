"""Every JobSet depends on the JobSet controller (CRD + webhook), and every LeaderWorkerSet on the LWS
controller (CRD + webhooks, whose pod webhook injects the leader's address), when the stack installs it
(a stack on a cluster that runs them already installs nothing to wait for); a JobSet is deleted before it
is replaced (its spec is immutable). The analyzer API does not expose replaceOnChanges; the offline tests
assert that option on the recorded registrations."""

from dataclasses import dataclass

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from policies.rules.common import HELM_TYPES, JOBSET, LEADER_WORKER_SET, get

CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
NAMESPACE = "kubernetes:core/v1:Namespace"


@dataclass(frozen=True)
class Controller:
    kind: str
    chart: str
    """A word of the chart reference (oci://registry.k8s.io/<chart>/charts/<chart>, or a local directory)."""
    crd: str
    namespace: str


CONTROLLERS = {
    JOBSET: Controller("JobSet", "jobset", "jobsets.jobset.x-k8s.io", "jobset-system"),
    LEADER_WORKER_SET: Controller("LeaderWorkerSet", "lws", "leaderworkersets.leaderworkerset.x-k8s.io", "lws-system"),
}


def _installs(c: Controller, r) -> bool:
    if r.resource_type in HELM_TYPES:
        return c.chart in str(get(r.props, "chart", "")).rsplit("/", 1)[-1]
    return r.resource_type == CRD and get(r.props, "metadata.name") == c.crd


def _installs_controller(c: Controller, resources) -> bool:
    """The stack installs it: its namespace, chart or CRD is among the stack's resources (a Helm chart is
    a component, which the analyzer does not list, so its namespace tells)."""
    return any(_installs(c, r) or (r.resource_type == NAMESPACE and get(r.props, "metadata.name") == c.namespace)
               for r in resources)


def _validate(args: StackValidationArgs, report) -> None:
    for kind, c in CONTROLLERS.items():
        installs = _installs_controller(c, args.resources)
        for obj in (r for r in args.resources if r.resource_type == kind):
            name = get(obj.props, "metadata.name")
            if installs and not any(_installs(c, d) for d in obj.dependencies):
                report(f"{c.kind} {name} does not depend on the {c.kind} controller; add depends_on the {c.kind} chart", obj.urn)
            if kind == JOBSET and not obj.opts.delete_before_replace:
                report(f"JobSet {name}: set delete_before_replace (a JobSet's spec is immutable; replace it old-first)", obj.urn)


jobset_lifecycle = StackValidationPolicy(
    name="pathways-jobset-lifecycle",
    description="JobSets and LeaderWorkerSets depend on their controllers (CRD, webhooks); JobSets are deleted before replacement.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
