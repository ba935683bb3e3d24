"""Shared Pathways Service access and ad-hoc runs' access stay what their users need.

The clients' Role grants only what pathwaysutils' client does (create/delete/get its proxy Jobs,
read pods and logs, port-forward, read the JobSet: components.manifests.service_access), and no
binding opens it to every authenticated or anonymous user. The Role rule reads the service's own Roles (those
under its SharedServiceAccess component): the controllers' charts create Roles of their own (leader election,
their Secrets), which `pulumi preview` hands the pack too and which are the controllers' business.
"""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from components.constants import RUN_ACCESS, SHARED_SERVICE_ACCESS
from components.manifests.runs import ROLE_RULES as RUN_ROLE_RULES
from components.manifests.service_access import ROLE_RULES
from policies.rules.common import get

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
BINDINGS = ("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
OPEN_SUBJECTS = ("system:authenticated", "system:unauthenticated", "system:anonymous", "allUsers", "allAuthenticatedUsers")


def _allowed(rules=ROLE_RULES) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def _is_under(urn: str, component: str) -> bool:
    """A resource under a component of this type (its URN's type chain: urn:pulumi:<stack>::<project>::<types>::<name>)."""
    parts = urn.split("::")
    return len(parts) > 2 and component in parts[2].split("$")


def _is_service_access(urn: str) -> bool:
    return _is_under(urn, SHARED_SERVICE_ACCESS)


def _validate(args: ResourceValidationArgs, report) -> None:
    name = get(args.props, "metadata.name")
    whose = ("Shared Pathways Service clients", ROLE_RULES) if _is_service_access(args.urn) else (
        ("ad-hoc runs' submitters (python -m infra.run)", RUN_ROLE_RULES) if _is_under(args.urn, RUN_ACCESS) else None)
    if args.resource_type == ROLE and whose is not None:
        granted = {(g, r, v) for rule in get(args.props, "rules") or []
                   for g in rule.get("apiGroups") or [""] for r in rule.get("resources") or [] for v in rule.get("verbs") or []}
        extra = sorted(granted - _allowed(whose[1]))
        if extra:
            report(f"Role {name} grants {', '.join(f'{v} {r}' + (f' ({g})' if g else '') for g, r, v in extra)}, beyond what "
                   f"{whose[0]} use; remove those rules")
    elif args.resource_type in BINDINGS:
        for s in get(args.props, "subjects") or []:
            if s.get("name") in OPEN_SUBJECTS:
                report(f"{args.resource_type.rsplit(':', 1)[-1]} {name} binds {s.get('name')}: everyone could run programs on the "
                       "stack's TPUs; bind named users or groups")


service_access = ResourceValidationPolicy(
    name="pathways-service-access",
    description=("Roles grant only what Shared Pathways Service clients and ad-hoc runs' submitters use, and no binding opens "
                 "them to every user."),
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
