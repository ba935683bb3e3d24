"""ScratchBucket: Pathways' compilation cache and scratch, plus an artifacts bucket for profiles and
HLO dumps, with least-privilege access for the node service account.

Lifecycle design. Pathways attaches its own lifecycle rule (a TTL) to every --gcs_scratch_location
it uses, at most 50 per bucket. If Pulumi managed the scratch bucket's lifecycle rules, the next
`pulumi up` (with or without --refresh) would diff Pathways' rules away. So Pulumi sets no rules on
the scratch bucket and ignores `lifecycleRules` there: Pathways owns them. Our own TTLs live on a
second bucket (artifacts), scoped by prefix, never age 0, fully managed by Pulumi.

Access. Pathways pods use hostNetwork, so they call Google as the node service account: the grants
go to that account, on the buckets, never project-wide. The scratch grant is a custom role with
exactly the five permissions Pathways needs, which the bootstrap makes (bootstrap/program.py): a custom role is a
project-level object, and making it here would need role administration over every custom role of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

ARTIFACT_ROLES = ("roles/storage.objectCreator", "roles/storage.objectViewer")


@dataclass(frozen=True)
class ScratchBucketArgs:
    project: str
    """Project of the buckets and the custom role."""
    region: str
    """Bucket location: the stack's region, next to the TPUs."""
    name: str
    """Scratch bucket name."""
    artifacts_name: str
    """Artifacts bucket name."""
    cache_prefix: str
    """Prefix of the one cache location every workload shares."""
    artifacts_prefix: str
    """Prefix under which profiles and HLO dumps go."""
    artifacts_ttl_days: int
    """Days before artifacts are deleted (at least 1)."""
    soft_delete_days: int
    """Soft-delete retention, 7-90 days."""
    scratch_role: str
    """The scratch custom role's full name (projects/<project>/roles/<id>): the bootstrap makes it, so the deploy
    identity needs no role administration (security #58.14)."""
    members: tuple[pulumi.Input[str], ...]
    """IAM members granted access: the node service accounts of head and TPU pools."""
    protect: bool
    """Pulumi `protect` on both buckets."""
    labels: dict[str, str]
    """Labels on both buckets."""


class ScratchBucket(pulumi.ComponentResource):
    url: pulumi.Output[str]
    """gs://<scratch bucket>."""
    cache_location: pulumi.Output[str]
    """gs://<bucket>/<cachePrefix>: the one --gcs_scratch_location for all workloads."""
    artifacts_url: pulumi.Output[str]
    """gs://<artifacts bucket>."""
    artifacts_location: pulumi.Output[str]
    """gs://<artifacts bucket>/<artifactsPrefix>."""

    def __init__(self, name: str, args: ScratchBucketArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:ScratchBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        scratch = self._bucket(name, args, args.name, lifecycle_rules=None)
        artifacts = self._bucket(
            f"{name}-artifacts",
            args,
            args.artifacts_name,
            lifecycle_rules=[
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(
                        age=args.artifacts_ttl_days, matches_prefixes=[f"{args.artifacts_prefix}/"]
                    ),
                ),
                gcp.storage.BucketLifecycleRuleArgs(
                    action=gcp.storage.BucketLifecycleRuleActionArgs(type="AbortIncompleteMultipartUpload"),
                    condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=1, matches_prefixes=[f"{args.artifacts_prefix}/"]),
                ),
            ],
        )
        for i, member in enumerate(args.members):
            gcp.storage.BucketIAMMember(f"{name}-scratch-{i}", bucket=scratch.name, role=args.scratch_role, member=member, opts=child)
            for r in ARTIFACT_ROLES:
                gcp.storage.BucketIAMMember(
                    f"{name}-artifacts-{i}-{r.split('.')[-1].lower()}", bucket=artifacts.name, role=r, member=member, opts=child
                )
        self.url = scratch.url
        self.cache_location = scratch.name.apply(lambda b: f"gs://{b}/{args.cache_prefix}")
        self.artifacts_url = artifacts.url
        self.artifacts_location = artifacts.name.apply(lambda b: f"gs://{b}/{args.artifacts_prefix}")
        self.register_outputs({
            "url": self.url, "cacheLocation": self.cache_location,
            "artifactsUrl": self.artifacts_url, "artifactsLocation": self.artifacts_location,
        })

    def _bucket(self, resource_name: str, args: ScratchBucketArgs, bucket_name: str, lifecycle_rules) -> gcp.storage.Bucket:
        # Scratch: Pathways owns the lifecycle rules (see module doc). Artifacts: we do.
        return stack_bucket(resource_name, project=args.project, region=args.region, name=bucket_name,
                            soft_delete_days=args.soft_delete_days, labels=args.labels, protect=args.protect, parent=self,
                            lifecycle_rules=lifecycle_rules, ignore_lifecycle_rules=lifecycle_rules is None)


def stack_bucket(resource_name: str, *, project: str, region: str, name: str, soft_delete_days: int, labels: dict[str, str],
                 protect: bool, parent: pulumi.Resource, lifecycle_rules=None, ignore_lifecycle_rules: bool = False,
                 hierarchical_namespace: bool = False) -> gcp.storage.Bucket:
    """A bucket of the stack: in its region, uniform access, public access prevented, soft-deleted objects kept
    soft_delete_days, never force-destroyed (the buckets hold data `pulumi destroy` must not take)."""
    return gcp.storage.Bucket(
        resource_name,
        project=project,
        name=name,
        location=region,
        storage_class="STANDARD",
        uniform_bucket_level_access=True,  # a hierarchical namespace requires it too
        hierarchical_namespace=gcp.storage.BucketHierarchicalNamespaceArgs(enabled=True) if hierarchical_namespace else None,
        public_access_prevention="enforced",
        soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=soft_delete_days * 86400),
        force_destroy=False,
        labels=labels,
        lifecycle_rules=lifecycle_rules,
        opts=pulumi.ResourceOptions(parent=parent, protect=protect, ignore_changes=["lifecycleRules"] if ignore_lifecycle_rules else []),
    )
