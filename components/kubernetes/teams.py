"""Teams: each team's namespace, then its submitters' access there (components.manifests.teams, pure). The teams'
Kueue queues are the Kueue component's, after these namespaces."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.constants import TEAMS
from components.kubernetes.kubernetes_object import KubernetesObject


@dataclass(frozen=True)
class TeamsArgs:
    namespaces: tuple[dict[str, Any], ...]
    access: tuple[dict[str, Any], ...]
    """Per team: its runs policy and binding, Role, RoleBinding, ClusterRole and binding, in order."""
    usage: tuple[dict[str, Any], ...] = ()
    """The usage recorder: its namespace first, then its identity, grants, program, schedule and the teams' readers."""
    after: tuple[pulumi.Resource, ...] = ()
    """What the namespaces wait for (the ClusterQueues admitting their workloads: deleted after them)."""


class Teams(pulumi.ComponentResource):
    namespaces: list[pulumi.Resource]
    """What a team's queue and workloads wait for."""

    def __init__(self, name: str, args: TeamsArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(TEAMS, name, None, opts)
        self.namespaces = [KubernetesObject(f"{name}-namespace-{obj['metadata']['name']}", obj,
                                            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)))
                           for obj in args.namespaces]
        made: list[pulumi.Resource] = []
        for obj in args.access:
            # each after the one before it (a binding after its role, the Role after its policy), all in the namespaces
            made.append(KubernetesObject(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj,
                                         opts=pulumi.ResourceOptions(parent=self, depends_on=[*self.namespaces, *made[-1:]])))
        recorder: list[pulumi.Resource] = []
        for obj in args.usage:
            # in order (a binding after its role, the schedule after its program), after the teams' namespaces
            where = f"{obj['metadata']['namespace']}-" if obj["metadata"].get("namespace") else ""
            recorder.append(KubernetesObject(f"{name}-usage-{obj['kind'].lower()}-{where}{obj['metadata']['name']}", obj,
                                             opts=pulumi.ResourceOptions(parent=self, depends_on=[*self.namespaces, *recorder[-1:]])))
        self.register_outputs({})
