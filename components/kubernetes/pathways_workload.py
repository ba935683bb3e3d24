"""PathwaysWorkload: one Pathways JobSet (and, with profiling, its auth-token Secret)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.dependencies import Dependency, all_of
from components.manifests.jobset import API_VERSION, IMMUTABLE_SPEC_FIELDS, KIND, PROFILING_TOKEN_KEY


@dataclass(frozen=True)
class PathwaysWorkloadArgs:
    manifest: dict[str, Any]
    """The JobSet, built by components.manifests.jobset (pure) from the config model."""
    profiling_secret: Optional[str]
    """Name of the Secret to create for the profiler auth token, or None."""
    env_secret: Optional[str]
    """Name of the Secret to create for the workload's env values (they came from secret config), or None."""
    env: dict[str, str]
    """The workload's env values (only used with env_secret: the JobSet then holds references only)."""
    depends_on: tuple[Dependency, ...]
    """What must exist first: the JobSet controller's objects (CRD, webhook, Deployment) and the workload's node pools."""


class PathwaysWorkload(pulumi.ComponentResource):
    name: pulumi.Output[str]
    """JobSet name."""

    def __init__(self, name: str, args: PathwaysWorkloadArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:PathwaysWorkload", name, None, opts)
        meta = args.manifest["metadata"]
        deps: list[Dependency] = list(args.depends_on)
        if args.profiling_secret:
            token = random.RandomPassword(f"{name}-profiling-token", length=40, special=False, opts=pulumi.ResourceOptions(parent=self))
            secret = k8s.core.v1.Secret(
                f"{name}-profiling-token",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=args.profiling_secret, namespace=meta["namespace"]),
                string_data={PROFILING_TOKEN_KEY: token.result},
                type="Opaque",
                opts=pulumi.ResourceOptions(parent=self),
            )
            deps.append(secret)
        if args.env_secret:
            env_secret = k8s.core.v1.Secret(
                f"{name}-env",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=args.env_secret, namespace=meta["namespace"]),
                # Secret in state and previews too: the values came from `pulumi config set --secret`.
                string_data=pulumi.Output.secret(dict(args.env)),
                type="Opaque",
                opts=pulumi.ResourceOptions(parent=self),
            )
            deps.append(env_secret)
        jobset = k8s.apiextensions.CustomResource(
            name,
            api_version=API_VERSION,
            kind=KIND,
            metadata=meta,
            spec=args.manifest["spec"],
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=all_of(deps),
                # A JobSet's spec is immutable once created (suspend aside): a change replaces it, old one first.
                replace_on_changes=[f"spec.{f}" for f in IMMUTABLE_SPEC_FIELDS],
                delete_before_replace=True,
            ),
        )
        self.jobset = jobset
        self.name = pulumi.Output.from_input(meta["name"])
        self.register_outputs({"name": self.name})
