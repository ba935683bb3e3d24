"""Storage IAM only at bucket level (on the bucket, or project-wide under a condition naming the buckets); the scratch custom role holds exactly the five seed permissions;
no primitive roles; no allUsers / allAuthenticatedUsers."""

import re
from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from components.model import config
from policies.rules.common import BUCKET_IAM_TYPES, CUSTOM_ROLE, PROJECT_IAM_TYPES, get

PRIMITIVE_ROLES = {"roles/owner", "roles/editor", "roles/viewer"}
PUBLIC_MEMBERS = {"allUsers", "allAuthenticatedUsers"}
SCRATCH_PERMISSIONS = frozenset(config.SCRATCH_PERMISSIONS)
# The bootstrap's bucket-create role (components/model/cluster/identities.py BUCKET_CREATE_PERMISSIONS).
BUCKET_CREATE_PERMISSIONS = frozenset({"storage.buckets.create"})
# Predefined roles holding storage.hmacKeys.* (Cloud Storage IAM roles reference): project-wide, a key for any
# service account of the project (projects.hmacKeys.create), which Cloud Storage accepts in place of the account.
HMAC_ROLES = {"roles/storage.admin", "roles/storage.editor", "roles/storage.hmacKeyAdmin"}


def _members(props) -> list[str]:
    return [m for m in [get(props, "member")] + list(get(props, "members") or []) if m]


# A bucket's IAM resource name, and its objects' (Google, "Resource attributes for IAM Conditions").
_BUCKET_TERM = re.compile(r"resource\.name == 'projects/_/buckets/([a-z0-9._-]+)'|resource\.name\.startsWith\('projects/_/buckets/([a-z0-9._-]+)/'\)")


def confined_to_buckets(condition) -> bool:
    """An IAM condition that grants only on named buckets and their objects: every `||` term names one bucket, or
    its objects (the name and a slash: a bare prefix would match <name>-other, someone else's bucket)."""
    expression = str(condition.get("expression") or "") if isinstance(condition, Mapping) else ""
    terms = [term.strip() for term in expression.split("||")]
    return bool(expression) and all(_BUCKET_TERM.fullmatch(term) for term in terms)


def _validate(args: ResourceValidationArgs, report) -> None:
    t, p = args.resource_type, args.props
    if t in PROJECT_IAM_TYPES + BUCKET_IAM_TYPES:
        role = str(get(p, "role", ""))
        if role in PRIMITIVE_ROLES:
            report(f"primitive role {role}; grant a predefined or custom role instead")
        storage = role.startswith("roles/storage.") or "/roles/pathwaysScratch" in role
        if t in PROJECT_IAM_TYPES and storage and not confined_to_buckets(get(p, "condition")):
            hmac = (" It holds storage.hmacKeys.*: a non-expiring HMAC key for any service account of the project"
                    if role in HMAC_ROLES else "")
            report(f"storage role {role} granted project-wide; grant it on the bucket (gcp.storage.BucketIAMMember).{hmac}")
        for m in _members(p):
            if m in PUBLIC_MEMBERS:
                report(f"{m} is granted {role}; never make Pathways data public")
    if t == CUSTOM_ROLE:
        perms = set(get(p, "permissions") or [])
        if any(x.startswith("storage.") for x in perms) and perms not in (SCRATCH_PERMISSIONS, BUCKET_CREATE_PERMISSIONS):
            extra, missing = sorted(perms - SCRATCH_PERMISSIONS), sorted(SCRATCH_PERMISSIONS - perms)
            report(f"custom storage role {get(p, 'roleId')} must hold exactly the five Pathways permissions (or storage.buckets.create alone); "
                   f"extra: {extra or 'none'}, missing: {missing or 'none'}")


storage_iam = ResourceValidationPolicy(
    name="pathways-storage-iam-least-privilege",
    description="Storage access is granted on buckets only, through the five-permission custom role; no primitive roles, no public members.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
