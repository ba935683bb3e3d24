"""The stack's labels (gcp:defaultLabels) on every Kubernetes object it creates.

GCP resources get them from the GCP provider itself (its defaultLabels setting, which the same config key
sets). Kubernetes has no such setting, so a stack transformation adds them to the metadata of each
kubernetes:* resource the program registers, under the object's own labels (the object's win on a
clash). Helm charts render their objects in the provider, past the reach of a transformation: the
controllers' upstream objects keep their own labels."""

from __future__ import annotations

from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s

SKIPPED = ("kubernetes:helm.sh/", "pulumi:providers:")


def _labelled(metadata: Any, labels: dict[str, str]) -> Any:
    if metadata is None:
        return {"labels": dict(labels)}
    if isinstance(metadata, dict):
        return {**metadata, "labels": {**labels, **(metadata.get("labels") or {})}}
    if isinstance(metadata, k8s.meta.v1.ObjectMetaArgs):
        pulumi.set(metadata, "labels", {**labels, **(pulumi.get(metadata, "labels") or {})})
        return metadata
    return metadata  # an Output: not ours to rewrite


def kubernetes_labels(labels: dict[str, str]):
    """A stack transformation that labels every Kubernetes object (not Helm charts) with `labels`."""

    def transform(args: pulumi.ResourceTransformationArgs) -> Optional[pulumi.ResourceTransformationResult]:
        if not args.type_.startswith("kubernetes:") or args.type_.startswith(SKIPPED) or "metadata" not in args.props:
            return None
        return pulumi.ResourceTransformationResult(props={**args.props, "metadata": _labelled(args.props["metadata"], labels)},
                                                   opts=args.opts)

    return transform


def label_kubernetes_objects(labels: dict[str, str]) -> None:
    if labels:
        pulumi.runtime.register_stack_transformation(kubernetes_labels(labels))
