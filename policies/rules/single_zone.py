"""All Pathways nodes in one zone, and the buckets in that zone's region (the seed: place every
Pathways component and the user job in the same zone)."""

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from policies.rules.common import BUCKET, CLUSTER, NODE_POOL, get


def _validate(args: StackValidationArgs, report) -> None:
    clusters = [r for r in args.resources if r.resource_type == CLUSTER]
    for cluster in clusters:
        location = get(cluster.props, "location", "")
        regional = location.count("-") == 1
        zones = set(get(cluster.props, "nodeLocations") or ([] if regional else [location]))
        if len(zones) != 1:
            report(f"cluster {get(cluster.props, 'name')} spreads nodes over {sorted(zones) or 'every zone of ' + location}; "
                   "set node_locations to the stack's one zone", cluster.urn)
            continue
        (zone,) = zones
        region = zone.rsplit("-", 1)[0]
        for pool in (r for r in args.resources if r.resource_type == NODE_POOL):
            pool_zones = set(get(pool.props, "nodeLocations") or [get(pool.props, "location", "")])
            if pool_zones != {zone}:
                report(f"node pool {get(pool.props, 'name')} is in {sorted(pool_zones)}, not the cluster's zone {zone}; "
                       "put every pool in one zone", pool.urn)
        for bucket in (r for r in args.resources if r.resource_type == BUCKET):
            if str(get(bucket.props, "location", "")).lower() != region:
                report(f"bucket {get(bucket.props, 'name')} is in {get(bucket.props, 'location')}, not {region}; "
                       f"put it in the TPUs' region", bucket.urn)


single_zone = StackValidationPolicy(
    name="pathways-single-zone",
    description="Cluster nodes, head and TPU pools in one zone; buckets in that zone's region. Change node_locations / bucket location.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
