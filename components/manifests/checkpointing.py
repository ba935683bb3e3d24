"""Multi-tier checkpointing's CheckpointConfigurations (pure): one per slice group whose workers mount the RAM disk. GKE's HighScaleCheckpointing add-on installs the checkpointing.gke.io CRD and reads these to run its node
driver on the selected nodes with a RAM disk of the given size, backed up to the bucket.

Fields: GoogleCloudPlatform/high-scale-checkpointing-controller apis/checkpointing.gke.io/v1/types.go (the open
controller GKE's add-on is built from; GKE publishes its own CRD nowhere the project can pin: the tier's stand-in,
tools/engines/gke-crds/checkpointing.gke.io_checkpointconfigurations.yaml, says so). The node selector and the
toleration follow xpk's (src/xpk/core/mtc.py, templates/mtc-cpc.yaml: the TPU machine type, GKE's TPU taint), with the
slice group's label in place of the machine type. The
open CRD is cluster-scoped; Cluster Toolkit's template sets a namespace anyway, which a cluster-scoped kind ignores.
"""

from __future__ import annotations

from typing import Any

from components.constants import NODE_POOL_LABEL, SLICE_GROUP_LABEL, SPOT_LABEL
from components.manifests.jobset import TPU_RESOURCE
from components.model.resolved import ResolvedStack
from components.model.workloads.resilience import checkpoint_configuration_name

API_VERSION = "checkpointing.gke.io/v1"
KIND = "CheckpointConfiguration"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def checkpoint_configurations(stack: ResolvedStack) -> list[dict[str, Any]]:
    mtc = stack.mtc
    if mtc is None:
        return []
    return [{
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": checkpoint_configuration_name(name)},
        "spec": {
            "cloudStorageBucketName": mtc.bucket,
            "nodeSelector": selector,
            # the workers' own: GKE's TPU taint, and the spot taint a spot group's workers tolerate (the driver must
            # run wherever a worker mounts the RAM disk; tolerating a taint a node lacks changes nothing)
            "tolerations": [{"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
                            {"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "inMemoryVolumeSize": mtc.in_memory_volume_size,
            "gcsFuseMountOptions": list(mtc.gcs_fuse_mount_options),
        },
    } for name, selector in _selections(stack, mtc.slice_groups)]


def _selections(stack: ResolvedStack, groups: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """(name, nodeSelector) per configuration: a group's nodes by the stack's own label (every TPU pool it makes
    carries it), not xpk's machine type, which another group of the same type (a serve group) shares; a group on
    pools made elsewhere (slices[].nodePools), whose nodes carry no label of this project, one per pool by GKE's."""
    by_name = {g.name: g for g in stack.slices}
    out: list[tuple[str, dict[str, str]]] = []
    for group in groups:
        pools = by_name[group].node_pools
        out += [(f"{group}-{pool}", {NODE_POOL_LABEL: pool}) for pool in pools] or [(group, {SLICE_GROUP_LABEL: group})]
    return out
