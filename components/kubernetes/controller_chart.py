"""An upstream controller's Helm chart in a namespace of its own: how the stack installs JobSet, Kueue and
LeaderWorkerSet.

A helm.v4.Chart, not a helm.v3.Release: Helm (and so a Release) installs a chart's crds/ only when absent and
never upgrades them (Helm docs, "Custom Resource Definitions: limitations"; PLATFORM-FACTS §6), so a version
bump would run a new controller on an old CRD. A v4 Chart renders the chart (`helm template`, CRDs included)
and Pulumi applies every object server-side: a version bump updates the CRD in the same `pulumi up`, and
`pulumi preview` shows it."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import chart_post_render
from components.manifests.guardrails import psa_labels


def install_chart(parent: pulumi.Resource, name: str, *, namespace: str, pod_security: str, chart: str, version: str,
                  values: dict[str, Any]) -> k8s.helm.v4.Chart:
    """`<name>-namespace` (Pod Security `pod_security` enforced) and the chart `name` in it, both children of
    `parent`. A local chart directory is the version it holds; a registry is asked for the pinned one. The
    controller's own webhook certificate Secret is applied without data (components/manifests/chart_post_render.py)."""
    ns = k8s.core.v1.Namespace(
        f"{name}-namespace",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=namespace, labels=psa_labels(pod_security)),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return k8s.helm.v4.Chart(
        name,
        chart=chart,
        version=version if chart.startswith("oci://") else None,
        namespace=namespace,
        skip_crds=False,  # the CRDs are among the chart's objects: applied and upgraded with it
        values=values,
        post_renderer=k8s.helm.v4.PostRendererArgs(command=chart_post_render.COMMAND, args=chart_post_render.args()),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[ns]),
    )

