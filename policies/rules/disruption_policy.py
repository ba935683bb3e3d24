"""Protected stacks state when GKE may disrupt TPU slices.

GKE upgrades node pools with auto-upgrade on whenever the release channel moves, recreating a TPU
slice's nodes mid-run. A protected stack must hold node upgrades with a maintenance exclusion
(scope NO_MINOR_OR_NODE_UPGRADES or NO_UPGRADES; GKE docs, "Maintenance windows and exclusions"), or
turn auto-upgrade off on its TPU pools. Every Cluster Toolkit TPU blueprint sets such an exclusion.
"""

from datetime import datetime, timezone

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from policies.rules.common import CLUSTER, NODE_POOL, get, has_protected_label, is_tpu_pool

HOLDS_NODE_UPGRADES = ("NO_MINOR_OR_NODE_UPGRADES", "NO_UPGRADES")


def now() -> datetime:
    return datetime.now(timezone.utc)


def _holds_now(e: dict) -> bool:
    """An exclusion that holds node upgrades and has not ended (an ended one protects nothing)."""
    if (e.get("exclusionOptions") or {}).get("scope") not in HOLDS_NODE_UPGRADES:
        return False
    try:
        end = datetime.fromisoformat(str(e.get("endTime", "")).replace("Z", "+00:00"))
    except ValueError:
        return False
    return end.tzinfo is not None and end > now()


def _validate(args: StackValidationArgs, report) -> None:
    resources = list(args.resources)
    for c in (r for r in resources if r.resource_type == CLUSTER):
        if not has_protected_label(c.props):
            continue
        exclusions = get(c.props, "maintenancePolicy.maintenanceExclusions") or []
        held = any(_holds_now(e) for e in exclusions)
        if held:
            continue
        for pool in (r for r in resources if r.resource_type == NODE_POOL and is_tpu_pool(r.props)):
            if get(pool.props, "management.autoUpgrade") is not False:
                report(f"TPU pool {get(pool.props, 'name')} in a protected stack can be upgraded (its slice recreated) at any "
                       "time: add a maintenance exclusion with scope NO_MINOR_OR_NODE_UPGRADES "
                       "(pathways:cluster.maintenance.exclusions); in a release channel GKE keeps node auto-upgrade on", pool.urn)


disruption_policy = StackValidationPolicy(
    name="pathways-disruption-policy",
    description="Protected stacks hold GKE node upgrades on TPU pools with a maintenance exclusion (or pools with auto-upgrade off, on a cluster outside a release channel).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
