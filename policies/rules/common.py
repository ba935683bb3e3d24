"""Helpers the rules share: resource kinds, stack protection, the JobSet containers."""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from pulumi_policy import PolicyConfigSchema

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_IAM_TYPES = ("gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding")
PROJECT_IAM_TYPES = ("gcp:projects/iAMMember:IAMMember", "gcp:projects/iAMBinding:IAMBinding", "gcp:projects/iAMPolicy:IAMPolicy")
CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
HEAD_LABEL = ("pathways/role", "head")

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


def is_protected(config: Mapping[str, Any], urn: str) -> bool:
    return stack_of(urn) in config.get("protectedStacks", ["prod"])


def is_tpu_pool(props: Mapping[str, Any]) -> bool:
    from components.model import tpu

    machine = get(props, "nodeConfig.machineType", "")
    return any(machine in f.machine_types for f in tpu.FAMILIES.values())


def is_head_pool(props: Mapping[str, Any]) -> bool:
    return (get(props, "nodeConfig.labels") or {}).get(HEAD_LABEL[0]) == HEAD_LABEL[1]


def pod_specs(jobset_props: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for rj in get(jobset_props, "spec.replicatedJobs") or []:
        yield rj.get("name", ""), get(rj, "template.spec.template.spec") or {}


def containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(pod.get("initContainers") or []) + list(pod.get("containers") or [])
