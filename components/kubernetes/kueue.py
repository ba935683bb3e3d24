"""Kueue: the controller (Helm chart, on the system pool, JobSet integration on) and the queue objects
derived from the stack (components.manifests.kueue, pure). JobSets wait for both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import pulumi

from components.dependencies import Dependency, all_of
from components.kubernetes.controller_chart import install_chart
from components.kubernetes.kubernetes_object import KubernetesObject
from components.manifests.controller_charts import KUEUE, STACK_FRAMEWORKS, kueue_manager_config
from components.manifests.kueue import references


@dataclass(frozen=True)
class KueueArgs:
    version: str
    """Chart version (the git tag without its v, e.g. 0.19.2)."""
    chart: Optional[str]
    """oci://registry.k8s.io/kueue/charts/kueue, a local chart directory, or None: the cluster runs Kueue already."""
    system_role: str
    """Value of the pathways/role label on the system pool, where the controller runs."""
    frameworks: tuple[str, ...] = STACK_FRAMEWORKS
    """The integrations Kueue enables (controller_charts: STACK_FRAMEWORKS, SERVE_FRAMEWORKS, FLEET_FRAMEWORKS)."""
    fair_sharing: bool = False
    """Kueue's fair sharing among the cohort's queues (pathways:teams)."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    """ResourceFlavors, the ClusterQueue, the LocalQueue, WorkloadPriorityClasses (built from the stack)."""
    workload_namespaces: tuple[str, ...] = ()
    """The namespaces the stack's workloads and runs live in: their objects (LocalQueues) are made after `namespaces`."""
    namespaces: Optional[Callable[[Sequence[pulumi.Resource]], list[pulumi.Resource]]] = None
    """Makes those namespaces once the cluster-wide objects exist, after them (so that Pulumi deletes the namespaces,
    and the runs in them, before the ClusterQueues: Kueue holds a queue's deletion while it has workloads)."""


class Kueue(pulumi.ComponentResource):
    ready: list[Dependency]
    """Depend on these: the controller and webhooks are up and the queues exist."""

    def __init__(self, name: str, args: KueueArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:Kueue", name, None, opts)
        installed: list[Dependency] = []
        if args.chart is not None:
            # The values come from components/manifests/controller_charts.py, which the offline render uses too.
            installed.append(install_chart(self, name, namespace=KUEUE.namespace, pod_security=KUEUE.pod_security, chart=args.chart,
                                           version=args.version, values={**KUEUE.values(args.version, args.system_role),
                                                                         **manager_config(args)}).resources)
        made: dict[tuple[str, str], KubernetesObject] = {}

        def make(obj: dict[str, Any], after: Sequence[Any]) -> None:  # each after the objects it names (kueue.objects' order)
            named = [made[r] for r in references(obj) if r in made]
            made[(obj["kind"], obj["metadata"]["name"])] = KubernetesObject(
                "-".join(p for p in (name, obj["kind"].lower(), obj["metadata"].get("namespace"), obj["metadata"]["name"]) if p), obj,
                opts=pulumi.ResourceOptions(parent=self, depends_on=all_of([*installed, *named, *after])),
            )

        in_workload_namespaces = [o for o in args.objects if o["metadata"].get("namespace") in args.workload_namespaces]
        for obj in args.objects:
            if obj not in in_workload_namespaces:
                make(obj, ())
        queues = [o for k, o in made.items() if k[0] == "ClusterQueue"]
        self.namespaces: list[pulumi.Resource] = args.namespaces(queues) if args.namespaces is not None else []
        for obj in in_workload_namespaces:
            make(obj, self.namespaces)
        self.ready = [*installed, *made.values()]
        self.register_outputs({})


def manager_config(args: KueueArgs) -> dict[str, Any]:
    """The chart's manager config with the stack's integrations, managed namespaces and fair sharing."""
    return kueue_manager_config(args.frameworks, fair_sharing=args.fair_sharing)
