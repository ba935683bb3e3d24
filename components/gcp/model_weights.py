"""ModelWeightsReader: read access for the Pathways node service account to the buckets that hold the serve
workloads' checkpoints: roles/storage.objectViewer (get and list objects, nothing else) on each such bucket
only, never project-wide. The serving pods act as the node service account (PLATFORM-FACTS §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

READ_ROLE = "roles/storage.objectViewer"


@dataclass(frozen=True)
class ModelWeightsReaderArgs:
    buckets: tuple[str, ...]
    """The weights buckets (from serve.weights), each once."""
    member: pulumi.Input[str]
    """serviceAccount:<the Pathways node service account>."""


class ModelWeightsReader(pulumi.ComponentResource):
    grants: list[pulumi.Resource]

    def __init__(self, name: str, args: ModelWeightsReaderArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:ModelWeightsReader", name, None, opts)
        self.grants = [
            gcp.storage.BucketIAMMember(f"{name}-{bucket}", bucket=bucket, role=READ_ROLE, member=args.member,
                                        opts=pulumi.ResourceOptions(parent=self))
            for bucket in args.buckets
        ]
        self.register_outputs({})
