"""Write every Kubernetes object the stack creates as YAML, one file per object, after checking each
JobSet the way the API server and the JobSet webhook would. An invalid manifest is never written."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from components.labels import SLICE_GROUP_LABEL, SPOT_LABEL
from components.manifests.admission import PoolFacts, Report, check_jobset
from components.manifests.jobset import KIND
from components.resource_types import NODE_POOL

from .engine import Plan, Registration


class RenderError(ValueError):
    """A manifest that an API server would refuse; nothing is written."""


def is_kubernetes_object(r: Registration) -> bool:
    # Helm releases are one resource for a whole chart, not an object: the chart renders in-cluster.
    return r.custom and r.type.startswith("kubernetes:") and not r.type.startswith("kubernetes:helm.sh/")


def manifest(r: Registration) -> dict[str, Any]:
    return {k: v for k, v in r.inputs.items() if v is not None}


def manifests(plan: Plan) -> list[dict[str, Any]]:
    return [manifest(r) for r in plan.resources if is_kubernetes_object(r)]


def pool_facts(plan: Plan) -> list[PoolFacts]:
    """The labels each node pool's nodes will carry: ours, plus those GKE sets on TPU nodes."""
    groups = plan.outputs.get("sliceGroups", {})
    facts = []
    for r in plan.by_type(NODE_POOL):
        labels = {**(r.input("nodeConfig.labels") or {}), "cloud.google.com/gke-nodepool": r.input("name")}
        group = groups.get(labels.get(SLICE_GROUP_LABEL, ""))
        if group is None:
            facts.append(PoolFacts(r.input("name"), labels))
            continue
        labels["cloud.google.com/gke-tpu-accelerator"] = group["accelerator"]
        labels["cloud.google.com/gke-tpu-topology"] = group["topology"]
        if r.input("nodeConfig.spot"):
            labels[SPOT_LABEL] = "true"
        facts.append(PoolFacts(r.input("name"), labels, group["chipsPerVm"], group["hosts"]))
    return facts


def check_plan(plan: Plan) -> dict[str, Report]:
    """Admission report per JobSet name."""
    pools = pool_facts(plan)
    return {obj["metadata"]["name"]: check_jobset(obj, pools) for obj in manifests(plan) if obj.get("kind") == KIND}


_FIRST = ("apiVersion", "kind", "metadata", "name", "namespace", "spec")


def ordered(value: Any) -> Any:
    """Keys in the order people read manifests (RPC structs lose it): apiVersion, kind, metadata, …"""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_FIRST.index(k) if k in _FIRST else len(_FIRST), k))
        return {k: ordered(value[k]) for k in keys}
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def file_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    parts = [obj.get("kind", "object").lower(), meta.get("namespace"), meta.get("name", "unnamed")]
    return "-".join(p for p in parts if p) + ".yaml"


def write_manifests(plan: Plan, out: Path) -> list[Path]:
    reports = check_plan(plan)
    problems = [f"JobSet {name}: {v}" for name, rep in reports.items() for v in rep.violations]
    if problems:
        raise RenderError("\n".join(problems))
    for notice in sorted({n for rep in reports.values() for n in rep.notices}):
        print(f"notice: {notice}", file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for obj in manifests(plan):
        path = out / file_name(obj)
        path.write_text(yaml.safe_dump(ordered(obj), sort_keys=False))
        written.append(path)
    return written
