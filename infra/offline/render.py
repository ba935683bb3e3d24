"""Write every Kubernetes object the stack creates as YAML, one file per object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

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


def file_name(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    parts = [obj.get("kind", "object").lower(), meta.get("namespace"), meta.get("name", "unnamed")]
    return "-".join(p for p in parts if p) + ".yaml"


def write_manifests(plan: Plan, out: Path) -> list[Path]:
    objs = manifests(plan)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for obj in objs:
        path = out / file_name(obj)
        path.write_text(yaml.safe_dump(obj, sort_keys=False))
        written.append(path)
    return written
