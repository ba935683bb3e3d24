"""One common --gcs_scratch_location for every workload, and fewer than 50 cache locations per bucket
(Pathways attaches one lifecycle policy per location, at most 50 per bucket)."""

from collections import defaultdict

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs, StackValidationPolicy

from policies.rules.common import WORKLOAD_TYPES, containers, pod_specs

FLAG = "--gcs_scratch_location="
# Pathways attaches one lifecycle policy per cache location, at most 50 a bucket (PLATFORM-FACTS §1).
# Written once: Pulumi's engine fills schema defaults in before a policy runs
# (pkg/resource/analyzer/config.go, ReconcilePolicyPackConfig), and so does the offline runner.
MAX_LOCATIONS_PER_BUCKET = 50


def _validate(args: StackValidationArgs, report) -> None:
    limit = args.get_config().get("maxLocationsPerBucket", MAX_LOCATIONS_PER_BUCKET)
    locations: dict[str, set[str]] = defaultdict(set)
    for js in (r for r in args.resources if r.resource_type in WORKLOAD_TYPES):
        for _, pod in pod_specs(js.props):
            for c in containers(pod):
                for arg in c.get("args") or []:
                    if arg.startswith(FLAG):
                        locations[arg[len(FLAG):].rstrip("/")].add(js.urn)
    if len(locations) > 1:
        for urns in locations.values():
            for urn in sorted(urns):
                report(f"workloads use {len(locations)} cache locations ({', '.join(sorted(locations))}); use the stack's one cacheLocation", urn)
    per_bucket: dict[str, set[str]] = defaultdict(set)
    for loc in locations:
        per_bucket[loc.split("/")[2] if loc.startswith("gs://") else loc].add(loc)
    for bucket, locs in per_bucket.items():
        if len(locs) >= limit:
            report(f"bucket {bucket} has {len(locs)} cache locations; Pathways allows fewer than {limit}")


cache_location = StackValidationPolicy(
    name="pathways-one-cache-location",
    description="Every workload shares one --gcs_scratch_location, and a bucket holds fewer than 50 of them. Use the stack's cacheLocation output.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
    config_schema=PolicyConfigSchema(properties={"maxLocationsPerBucket": {"type": "integer", "default": MAX_LOCATIONS_PER_BUCKET}}),
)
