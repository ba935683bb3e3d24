"""Helpers the rules share: resource kinds, stack protection, the JobSet containers."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from pulumi_policy import PolicyConfigSchema

from components.constants import (  # noqa: F401 (re-exported for the rules)
    BUCKET,
    BUCKET_IAM_TYPES,
    CLUSTER,
    CUSTOM_ROLE,
    HEAD_ROLE,
    HELM_TYPES,
    JOBSET,
    LEADER_WORKER_SET,
    NODE_POOL,
    PROJECT_IAM_TYPES,
    PROTECTED_LABEL,
    ROLE_LABEL,
)
from components.model.capacity import tpu

# Which stacks must declare pathways:protected: true (a guard against forgetting the flag). Whether a
# stack *is* protected is its own flag alone, carried by the PROTECTED_LABEL on its cluster and buckets.
PROTECTED_STACKS_SCHEMA = PolicyConfigSchema(
    properties={"protectedStacks": {"type": "array", "items": {"type": "string"}, "default": ["prod"]}}
)


def get(props: Mapping[str, Any], path: str, default: Any = None) -> Any:
    value: Any = props
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def stack_of(urn: str) -> str:
    """urn:pulumi:<stack>::<project>::<type>::<name>"""
    return urn.split("::")[0].split(":")[-1]


def has_protected_label(props: Mapping[str, Any]) -> bool:
    """The stack's pathways:protected flag, as the program stamps it on the cluster and the buckets."""
    key, value = PROTECTED_LABEL
    labels = get(props, "resourceLabels") or get(props, "labels") or {}
    return isinstance(labels, Mapping) and labels.get(key) == value


def must_be_protected(config: Mapping[str, Any], urn: str) -> bool:
    """The pack's config lists this stack as one that must set pathways:protected: true."""
    # the schema's default (["prod"]) when the pack's config says nothing: the analyzer fills it in, as the offline
    # runner does (infra/offline/policy_runner.py), so it is written once, there
    return stack_of(urn) in (config.get("protectedStacks") or [])


def is_tpu_pool(props: Mapping[str, Any]) -> bool:
    return tpu.is_tpu_machine(get(props, "nodeConfig.machineType", ""))


def is_head_pool(props: Mapping[str, Any]) -> bool:
    return (get(props, "nodeConfig.labels") or {}).get(ROLE_LABEL) == HEAD_ROLE


WORKLOAD_TYPES = (JOBSET, LEADER_WORKER_SET)


def pod_specs(props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(part, pod spec) of a JobSet (its replicatedJobs) or a LeaderWorkerSet (its leader and worker templates)."""
    for rj in get(props, "spec.replicatedJobs") or []:
        yield rj.get("name", ""), get(rj, "template.spec.template.spec") or {}
    for role in ("leaderTemplate", "workerTemplate"):
        spec = get(props, f"spec.leaderWorkerTemplate.{role}.spec")
        if spec:
            yield role, spec


def containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(pod.get("initContainers") or []) + list(pod.get("containers") or [])
