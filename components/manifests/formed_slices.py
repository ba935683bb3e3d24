"""A worker template's request for a slice formed on a pool set (tpu7x dynamic slicing; docs/dynamic-slicing.md)."""

from __future__ import annotations

from typing import Any, Optional

from components.model.capacity import dynamic_slicing
from components.model.resolved import ResolvedWorkload


def formed_slice_request(w: ResolvedWorkload) -> Optional[tuple[dict[str, str], dict[str, Any]]]:
    """On a pool set, the worker template's request for its slice: the annotations that name the topology GKE forms
    and ask Kueue's topology-aware scheduling for one block and pieces of one partition each, and the node affinity
    to partitions that serve; what the slice controller's JobSet webhook would add, written out so that the plan shows
    it (the webhook writes the same annotations again and keeps a state affinity that is there). docs/dynamic-slicing.md."""
    if w.formed is None:
        return None
    shape = dynamic_slicing.SliceShape(w.formed.topology)
    annotations = {
        dynamic_slicing.SLICE_TOPOLOGY_ANNOTATION: shape.topology,
        dynamic_slicing.REQUIRED_TOPOLOGY: dynamic_slicing.BLOCK_LABEL,
        dynamic_slicing.SLICE_REQUIRED_TOPOLOGY: dynamic_slicing.partition_label(shape.partition),
        dynamic_slicing.SLICE_SIZE: str(shape.piece_hosts),
    }
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": dynamic_slicing.partition_state_label(shape.partition), "operator": "In",
                               "values": list(dynamic_slicing.PARTITION_STATES)}]}]}}}
    return annotations, affinity
