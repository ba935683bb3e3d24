"""WorkloadStorage: what workloads' mounts need in the cluster (components.manifests.storage, pure): the Kubernetes
service accounts of the pods that mount buckets (the principals the bootstrap grants the buckets to), and a
PersistentVolume and claim per pathways:storage file system."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.constants import WORKLOAD_STORAGE
from components.kubernetes.kubernetes_object import KubernetesObject


@dataclass(frozen=True)
class WorkloadStorageArgs:
    objects: tuple[dict[str, Any], ...]
    """ServiceAccounts, then each PersistentVolume before its claim."""


class WorkloadStorage(pulumi.ComponentResource):
    ready: list[pulumi.Resource]
    """What a workload that mounts storage waits for."""

    def __init__(self, name: str, args: WorkloadStorageArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(WORKLOAD_STORAGE, name, None, opts)
        self.ready = []
        for obj in args.objects:
            meta = obj["metadata"]
            where = f"{meta['namespace']}-" if "namespace" in meta else ""
            # a claim after its volume (the claim names it), so the claim binds at once
            after = self.ready[-1:] if obj["kind"] == "PersistentVolumeClaim" else []
            self.ready.append(KubernetesObject(f"{name}-{obj['kind'].lower()}-{where}{meta['name']}", obj,
                                               opts=pulumi.ResourceOptions(parent=self, depends_on=after)))
        self.register_outputs({})
