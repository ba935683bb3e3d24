"""A protected stack keeps its admission guards: both ValidatingAdmissionPolicies (pathways-nodes-reserved,
pathways-workload-templates) and their bindings, which deny. Without them any pod that may be created anywhere can
run on the Pathways nodes or the host network, as the Pathways node service account (which writes the buckets).
The stack is protected when its cluster or a bucket carries the pathways:protected label, or the pack's config lists
it (protectedStacks)."""

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.manifests.guardrails import NODE_GUARD, TEMPLATE_GUARD
from policies.rules.common import BUCKET, CLUSTER, PROTECTED_STACKS_SCHEMA, get, has_protected_label, must_be_protected, stack_of

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
GUARDS = (NODE_GUARD, TEMPLATE_GUARD)


def _validate(args: StackValidationArgs, report) -> None:
    resources = list(args.resources)
    marked = [r for r in resources if r.resource_type in (CLUSTER, BUCKET) and has_protected_label(r.props)]
    if not marked and not (resources and must_be_protected(args.get_config(), resources[0].urn)):
        return
    policies = {get(r.props, "metadata.name") for r in resources if r.resource_type == POLICY}
    bindings = {get(r.props, "spec.policyName"): r for r in resources if r.resource_type == BINDING}
    stack = stack_of(resources[0].urn)
    for guard in GUARDS:
        if guard not in policies:
            report(f"protected stack {stack} has no admission guard {guard}: any pod could run on the Pathways nodes as their "
                   "service account; keep pathways:kubernetes.guards.enabled true")
            continue
        binding = bindings.get(guard)
        if binding is None:
            report(f"protected stack {stack}: the admission guard {guard} has no binding, so it judges nothing; keep the "
                   "stack's ValidatingAdmissionPolicyBinding")
        elif "Deny" not in (get(binding.props, "spec.validationActions") or []):
            report(f"protected stack {stack}: the binding of {guard} does not deny (validationActions "
                   f"{get(binding.props, 'spec.validationActions')}); it must include Deny", binding.urn)


guards_in_force = StackValidationPolicy(
    name="pathways-guards-in-force",
    description="A protected stack has both admission guards (pathways-nodes-reserved, pathways-workload-templates) and bindings that deny.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
    config_schema=PROTECTED_STACKS_SCHEMA,
)
