"""RunAccess: who may submit ad-hoc runs (pathways:runs.submitters): their Role, node reader and the policy that
keeps them to runs (components.manifests.runs, pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import pulumi

from components.constants import RUN_ACCESS
from components.kubernetes.kubernetes_object import KubernetesObject


@dataclass(frozen=True)
class RunAccessArgs:
    objects: tuple[dict[str, Any], ...]
    """The namespace's run object quota, the ValidatingAdmissionPolicy and its binding, Role, RoleBinding, ClusterRole,
    ClusterRoleBinding, in order."""


class RunAccess(pulumi.ComponentResource):
    def __init__(self, name: str, args: RunAccessArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(RUN_ACCESS, name, None, opts)
        made: list[pulumi.Resource] = []
        for obj in args.objects:
            # each after the ones before it: a binding after its role, the policy binding after its policy
            made.append(KubernetesObject(f"{name}-{obj['kind'].lower()}-{obj['metadata']['name']}", obj,
                                         opts=pulumi.ResourceOptions(parent=self, depends_on=made[-1:])))
        self.register_outputs({})
