"""Shared Pathways Service access stays what its clients need.

The clients' Role grants only what pathwaysutils' client does (create/delete/get its proxy Jobs,
read pods and logs, port-forward, read the JobSet: components.manifests.service_access), and no
binding opens it to every authenticated or anonymous user. The Role rule reads the service's own Roles (those
under its SharedServiceAccess component): the controllers' charts create Roles of their own (leader election,
their Secrets), which `pulumi preview` hands the pack too and which are the controllers' business.
"""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from components.manifests.service_access import ROLE_RULES
from components.resource_types import SHARED_SERVICE_ACCESS

from .common import get

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
BINDINGS = ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
OPEN_SUBJECTS = ("system:authenticated", "system:unauthenticated", "system:anonymous", "allUsers", "allAuthenticatedUsers")


def _allowed() -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in ROLE_RULES for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def _is_service_access(urn: str) -> bool:
    """A resource under a SharedServiceAccess component (its URN's type chain: urn:pulumi:<stack>::<project>::<types>::<name>)."""
    parts = urn.split("::")
    return len(parts) > 2 and SHARED_SERVICE_ACCESS in parts[2].split("$")


def _validate(args: ResourceValidationArgs, report) -> None:
    name = get(args.props, "metadata.name")
    if args.resource_type == ROLE and _is_service_access(args.urn):
        granted = {(g, r, v) for rule in get(args.props, "rules") or []
                   for g in rule.get("apiGroups") or [""] for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
        extra = sorted(granted - _allowed())
        if extra:
            report(f"Role {name} grants {', '.join(f'{v} {r}' + (f' ({g})' if g else '') for g, r, v in extra)}, beyond what "
                   "Shared Pathways Service clients use; remove those rules")
    elif args.resource_type in BINDINGS:
        for s in get(args.props, "subjects") or []:
            if s.get("name") in OPEN_SUBJECTS:
                report(f"{args.resource_type.rsplit(':', 1)[-1]} {name} binds {s.get('name')}: everyone could run programs on the "
                       "stack's TPUs; bind named users or groups")


service_access = ResourceValidationPolicy(
    name="pathways-service-access",
    description="Roles grant only what Shared Pathways Service clients use, and no binding opens them to every user.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
