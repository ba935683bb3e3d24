"""What pathways:teams makes besides its Kueue queues (pure Python; the model: components/model/workloads/teams.py;
the queues: components/manifests/kueue.py, which builds every Kueue object once).

Per team, in the order they can be made:
- its namespace (the stack's Pod Security level, labelled pathways/team=<name> for cost reports), which the guards
  cover as they cover the stack's own; only the team's ClusterQueue admits from it (never the stack's: #73.19);
- its ClusterQueue team-<name> in the stack's cohort (or a Cohort teams-<parent> under it): every slice group's
  flavor, nominal quota its whole slices (0 where it owns none, so that it may borrow there), borrowing and lending
  limits in slices, the head flavor at 0 (it borrows the head pool from the stack's queue), fair-sharing weight,
  preemption that reclaims what it lent (reclaimWithinCohort Any) and keeps lower priorities below its own;
- its run queue runs-team-<name> in its namespace;
- its submitters' Role and binding there (the runs' rules), the node and ClusterQueue reader, and the policy that
  keeps them to runs on the team's queue (pathways-runs-only-<team>).
Kueue facts (v0.19.2): ClusterQueue spec.cohortName, spec.fairSharing.weight, resourceGroups[].flavors[].resources[]
{nominalQuota, borrowingLimit, lendingLimit}; Cohort spec.parentName (apis/kueue/v1beta2/cohort_types.go); fair
sharing on in the Configuration (components/manifests/controller_charts.py).
"""

from __future__ import annotations

from typing import Any

from components.manifests.guardrails import workload_namespace_labels
from components.manifests.runs import NODE_RULES, RBAC, ROLE, ROLE_RULES, _subjects, run_object_quota, runs_only_policy
from components.model.resolved import ResolvedStack
from components.model.workloads.teams import TEAM_LABEL


def namespaces(stack: ResolvedStack) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": t.team_namespace, "labels": {**workload_namespace_labels(), TEAM_LABEL: t.name}}} for t in stack.teams]


def access(stack: ResolvedStack) -> list[dict[str, Any]]:
    """Per team with submitters: the policy first (no moment grants the Role without it), then its Role and binding in
    the team's namespace and the cluster-wide reader binding; nothing in any other team's namespace."""
    if stack.runs is None:
        return []
    out: list[dict[str, Any]] = []
    for t in stack.teams:
        if not t.submitters:
            continue
        name = f"{ROLE}-{t.name}"
        subjects = _subjects(t.submitters)
        out += [
            run_object_quota(stack, t.team_namespace, name),  # before any grant: no moment without the cap
            *runs_only_policy(stack, t),
            {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": name, "namespace": t.team_namespace},
             "rules": [dict(r) for r in ROLE_RULES]},
            {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": t.team_namespace},
             "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name}, "subjects": subjects},
            {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": f"{name}-nodes"},
             "rules": [dict(r) for r in NODE_RULES]},
            {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": f"{name}-nodes"},
             "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"{name}-nodes"}, "subjects": subjects},
        ]
    return out
