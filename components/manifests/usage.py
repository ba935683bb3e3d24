"""The teams' usage recorder in the cluster (security #73.7; its program: components/manifests/usage_record.py).

What `pulumi up` makes for a stack with teams: the namespace `pathways-usage` (Pod Security `restricted`, not
Kueue-managed), the recorder's ServiceAccount and the least it needs (read Workloads in the teams' namespaces only;
get and patch the teams' ClusterQueues by name only; its records, by name, in its own namespace), its program and settings in a
ConfigMap, a CronJob every minute on the system pool, and for each team with submitters a Role that lets them read
their own team's record (`usage-<team>`) and no other. The records are written by the recorder, never by Pulumi: a
`pulumi up` neither resets nor deletes them; destroying the stack deletes the namespace and them with it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from components.constants import ROLE_LABEL
from components.manifests import usage_record
from components.manifests.guardrails import psa_labels
from components.manifests.kueue_api import API_VERSION
from components.manifests.runs import RBAC, _admission_policy, _subjects
from components.model.resolved import ResolvedStack
from components.model.workloads.teams import USAGE_NAMESPACE

NAMESPACE = USAGE_NAMESPACE
NAME = "usage-recorder"
# Python's standard library is all the program needs: Docker's official image, pinned to a patch release (GKE pulls
# Docker Hub's library images through mirror.gcr.io); docs/teams.md says to mirror it where clusters pull only
# from a registry of their own.
IMAGE = "docker.io/library/python:3.13.9-slim"
SCHEDULE = "* * * * *"  # each minute: a run deleted between two looks loses at most its last minute from the record
_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "pathways"}
_GROUP = API_VERSION.split("/")[0]


# Every spec field of Kueue v0.19.2's v1beta2 ClusterQueue but stopPolicy (tests/test_usage_record.py holds the list
# to the pinned CRD): what the recorder's patches may not change. RBAC scopes its patch to the teams' queues by
# name, not by field; this policy scopes it to the switch and the recorder's own two annotations.
HELD_SPEC_FIELDS = ("admissionChecksStrategy", "admissionScope", "cohortName", "concurrentAdmissionPolicy", "fairSharing",
                    "flavorFungibility", "namespaceSelector", "preemption", "queueingStrategy", "resourceGroups")
RECORDER_USER = f"system:serviceaccount:{USAGE_NAMESPACE}:{NAME}"


def _unchanged(path: str) -> str:
    return (f"(has(object.{path}) == has(oldObject.{path}) && (!has(object.{path}) || object.{path} == oldObject.{path}))")


def stop_switch_only_policy() -> list[dict[str, Any]]:
    """The recorder's ClusterQueue writes: an update of stopPolicy and of its annotations, nothing else."""
    ours = "[" + ", ".join(f"'{a}'" for a in (usage_record.HOLD_ANNOTATION, usage_record.HELD_SINCE_ANNOTATION)) + "]"
    ann = "metadata.annotations"
    annotations = (f"(!has(object.{ann}) || object.{ann}.all(k, k in {ours} || (has(oldObject.{ann}) && k in oldObject.{ann} "
                   f"&& oldObject.{ann}[k] == object.{ann}[k]))) && (!has(oldObject.{ann}) || oldObject.{ann}.all(k, k in {ours} "
                   f"|| (has(object.{ann}) && k in object.{ann})))")
    held = " && ".join([*(_unchanged(f"spec.{f}") for f in HELD_SPEC_FIELDS), _unchanged("metadata.labels"),
                        _unchanged("metadata.finalizers"), _unchanged("metadata.ownerReferences")])
    return _admission_policy(
        f"pathways-{NAME}-stop-switch-only", [(_GROUP, "clusterqueues")], f"request.userInfo.username == '{RECORDER_USER}'",
        [{"expression": f"request.operation == 'UPDATE' && {held} && {annotations}",
          "message": (f"the usage recorder may change a team queue's stopPolicy and its {usage_record.HOLD_ANNOTATION} and "
                      f"{usage_record.HELD_SINCE_ANNOTATION} annotations, nothing else")}], None)


def settings(stack: ResolvedStack) -> dict[str, Any]:
    """What the program reads (config.json): the teams, their namespaces, queues, budgets and drain delays."""
    return {"namespace": NAMESPACE, "kueueApi": API_VERSION, "teams": [
        {"name": t.name, "namespace": t.team_namespace, "clusterQueue": t.cluster_queue, "budgetChipHours": t.chip_hours_per_month,
         "drainAfterSeconds": None if t.drain_after_minutes is None else t.drain_after_minutes * 60} for t in stack.teams]}


@functools.cache
def _program() -> str:
    """The recorder's source, shipped as it is (read once a process: every plan of a stack with teams ships it)."""
    return Path(usage_record.__file__).read_text(encoding="utf-8")


def _meta(name: str, namespace: str | None = NAMESPACE) -> dict[str, Any]:
    return {"name": name, **({"namespace": namespace} if namespace else {}), "labels": dict(_LABELS)}


def objects(stack: ResolvedStack, system_role: str) -> list[dict[str, Any]]:
    """In the order they can be made: the namespace, the identity and its grants, the program, the schedule, and
    each team's reader of its own record."""
    if not stack.teams:
        return []
    account = [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]
    queues = sorted(t.cluster_queue for t in stack.teams)
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": {**_LABELS, **psa_labels("restricted")}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(NAME)},
        *stop_switch_only_policy(),  # before the grant it narrows: no moment with the patch and without the policy
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": _meta(f"pathways-{NAME}", None), "rules": [
            {"apiGroups": [_GROUP], "resources": ["clusterqueues"], "resourceNames": queues, "verbs": ["get", "patch"]}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": _meta(f"pathways-{NAME}", None),
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"pathways-{NAME}"}, "subjects": account},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": _meta(f"pathways-{NAME}-workloads", None), "rules": [
            {"apiGroups": [_GROUP], "resources": ["workloads"], "verbs": ["get", "list"]}]},
        *({"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": _meta(f"pathways-{NAME}", t.team_namespace),
           "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"pathways-{NAME}-workloads"}, "subjects": account}
          for t in stack.teams),
        # its records by name: not its own program and settings (RBAC cannot name what `create` makes, and a create of
        # an existing name fails)
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": _meta(NAME), "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"],
             "resourceNames": sorted(usage_record.record_name(t.name) for t in stack.teams)}]},
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": _meta(NAME),
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": NAME}, "subjects": account},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(f"{NAME}-program"),
         "data": {"recorder.py": _program(), "config.json": json.dumps(settings(stack), sort_keys=True, indent=1)}},
        cron_job(system_role),
    ]
    for t in stack.teams:
        if not t.submitters:
            continue
        name = f"{usage_record.RECORD_PREFIX}{t.name}"
        out += [
            {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": _meta(f"{name}-reader"), "rules": [
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [usage_record.record_name(t.name)], "verbs": ["get"]}]},
            {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": _meta(f"{name}-reader"),
             "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": f"{name}-reader"}, "subjects": _subjects(t.submitters)},
        ]
    return out


def cron_job(system_role: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(NAME), "spec": {
        "schedule": SCHEDULE, "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid", "startingDeadlineSeconds": 50,
        "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 3,
        "jobTemplate": {"spec": {"backoffLimit": 0, "activeDeadlineSeconds": 55, "ttlSecondsAfterFinished": 600, "template": {
            "metadata": {"labels": dict(_LABELS)},
            "spec": {
                "serviceAccountName": NAME, "restartPolicy": "Never", "nodeSelector": {ROLE_LABEL: system_role},
                # a one-minute script: no reason to hold a namespace's deletion for the default 30 s
                "terminationGracePeriodSeconds": 5,
                "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "runAsGroup": 65534,
                                    "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "recorder", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                    "command": ["python3", "/recorder/recorder.py", "/recorder/config.json"],
                    "env": [{"name": "PYTHONDONTWRITEBYTECODE", "value": "1"}],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "program", "mountPath": "/recorder", "readOnly": True}],
                }],
                "volumes": [{"name": "program", "configMap": {"name": f"{NAME}-program"}}],
            }}}}}}
