"""Every pod the stack's Kubernetes objects make passes the Pod Security level its namespace enforces: the
workloads' JobSets and LeaderWorkerSets, and the controllers' Deployments, which `pulumi preview` hands the pack
as children of their Helm charts. A pod the namespace refuses never starts (the LWS chart's pod without a seccomp
profile in `restricted` lws-system, issue #34); the checks are the API server's (components.manifests.pod_security).
"""

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.manifests import pod_security
from policies.rules.common import get


def _validate(args: StackValidationArgs, report) -> None:
    kubernetes = [r for r in args.resources if r.resource_type.startswith("kubernetes:")]
    policies = pod_security.namespace_policies([r.props for r in kubernetes])
    for r in kubernetes:
        namespace = get(r.props, "metadata.namespace") or "default"
        policy = policies.get(namespace, pod_security.NamespacePolicy(pod_security.DEFAULT_LEVEL, pod_security.VERSION))
        for path, metadata, spec in pod_security.pod_templates(r.props):
            found = pod_security.check_pod(policy.level, metadata, spec)
            if found:
                where = f"{r.resource_type.rsplit(':', 1)[-1]} {namespace}/{get(r.props, 'metadata.name')}" + (f" {path}" if path else "")
                report(f"{where}: its pods would be refused, {pod_security.forbidden_message(policy.level, found)}; set the pod's "
                       "securityContext (a chart's through its values) so that the namespace's level admits it", r.urn)


pod_security_levels = StackValidationPolicy(
    name="pathways-pod-security",
    description="Every pod template, the charts' included, passes the Pod Security level its namespace enforces.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
