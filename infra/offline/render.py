"""Write every Kubernetes object the stack creates as YAML, one file per object, after checking each
JobSet the way the API server and the JobSet webhook would. An invalid manifest is never written.

"Every object" includes what the controllers' Helm charts create (infra/offline/charts.py: their Deployments,
ServiceAccounts, RBAC, webhook configurations and CRDs, expanded with the values `pulumi up` uses), and every pod
template, the charts' and the stack's, is checked against the Pod Security level its namespace enforces."""

from __future__ import annotations

import errno
import functools
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from components.constants import NODE_POOL, SLICE_GROUP_LABEL, SPOT_LABEL
from components.manifests.admission import (
    PoolFacts,
    Report,
    check_builtin,
    check_gke_custom,
    check_jobset,
    check_kueue,
    check_lws,
    check_pod_security,
    gke_kind,
)
from components.manifests.jobset import KIND
from components.manifests.pod_security import namespace_policies
from infra.offline.charts import ChartError, ChartObject, chart_objects
from infra.offline.engine import Plan, Registration
from infra.offline.stackfile import shown


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
    if not plan.by_type(NODE_POOL) and plan.outputs.get("clusterPools"):
        # a cluster made elsewhere: the pools the stack expects there (placement.cluster_pools)
        return [PoolFacts(p["pool"], dict(p["labels"]), p.get("chipsPerVm"), p.get("hosts")) for p in plan.outputs["clusterPools"]]
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


def _schema_check(obj: dict[str, Any]) -> Report:
    """Built-in kinds against kubernetes-validate, Kueue's and LWS's against their upstream CRDs."""
    api = str(obj.get("apiVersion", ""))
    if gke_kind(api):
        return check_gke_custom(obj)
    check = check_kueue if api.startswith("kueue.x-k8s.io/") else check_lws if api.startswith("leaderworkerset.x-k8s.io/") else check_builtin
    return check(obj)


def check_builtins(plan: Plan) -> dict[str, Report]:
    """Schema report per object other than a JobSet, keyed kind/name: built-in kinds against
    kubernetes-validate, Kueue's against its upstream CRDs."""
    return {f"{obj['kind']}/{obj.get('metadata', {}).get('name')}": _schema_check(obj)
            for obj in manifests(plan) if obj.get("kind") != KIND and not _is_secret(obj)}


def describe(obj: dict[str, Any], chart: str = "") -> str:
    """`Deployment lws-system/lws-controller-manager (chart lws)`: how problems name an object."""
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))
    return f"{obj.get('kind')} {where}" + (f" (chart {chart})" if chart else "")


def check_charts(charts: list[ChartObject]) -> dict[str, Report]:
    """Schema report per chart object, keyed as `describe` names it: what the API server would refuse or prune."""
    return {describe(c.obj, c.release): _schema_check(c.obj) for c in charts}


def check_pod_security_levels(plan: Plan, charts: list[ChartObject]) -> dict[str, Report]:
    """Pod Security report per object that makes pods (the stack's and the charts'), keyed as `describe` names it:
    each pod template against the level its namespace enforces, as labelled by the stack's Namespaces."""
    stack = manifests(plan)
    policies = namespace_policies([*stack, *(c.obj for c in charts)])
    named = [(describe(o), o) for o in stack] + [(describe(c.obj, c.release), c.obj) for c in charts]
    return {name: check_pod_security(obj, policies) for name, obj in named}


# libyaml's emitter: the charts' CRDs are megabytes of YAML, which the pure-Python one takes seconds to write.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_FIRST = ("apiVersion", "kind", "metadata", "name", "namespace", "spec")


@functools.lru_cache(maxsize=512)
def _yaml_text(canonical_json: str) -> str:
    """An object's YAML, by its canonical JSON: the charts' CRDs (tens of thousands of scalars, which PyYAML's
    representer, in Python even with libyaml's emitter, takes seconds over) are written once per process, however
    many stacks a process renders (the test suite's do)."""
    return yaml.dump(ordered(json.loads(canonical_json)), Dumper=_DUMPER, sort_keys=False)


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


# What the last render wrote into the directory, so the next one removes what the stack no longer has
# (and never anything else).
INDEX = ".pathways-render.json"
# First line of every file render writes: the index names candidates for removal, but only a file that
# still starts with this line is ours to remove (an edited index cannot make render delete a user's file).
HEADER = "# Rendered by `python -m infra.offline render`; regenerated on every run, edit the stack file instead.\n"
_SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{0,250}\.yaml")


def _is_secret(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def _read_index(dir_fd: int) -> list[str]:
    try:
        fd = os.open(INDEX, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return []
    with os.fdopen(fd) as f:
        try:
            names = json.load(f)
        except ValueError:
            return []
    return [n for n in names if isinstance(n, str) and _SAFE_NAME.fullmatch(n)] if isinstance(names, list) else []


def _ours(dir_fd: int, name: str) -> bool:
    """The file starts with render's header line (read without following a symlink)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read(len(HEADER.encode())) == HEADER.encode()


def _write(dir_fd: int, name: str, text: str) -> None:
    """Create `name` in the directory as a new regular file; a symlink (or anything) there is replaced,
    never followed."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise RenderError(f"{name} is a directory in the output directory; remove it") from None
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def write_manifests(plan: Plan, out: Path) -> tuple[list[Path], list[str]]:
    """Write every object except Secrets (their values exist only in Pulumi state; a manifest would
    carry a placeholder the API server would store) into `out`, and nowhere else. -> (written, notes)."""
    try:
        charts = chart_objects(plan)
    except ChartError as e:
        raise RenderError(str(e)) from None
    reports = check_plan(plan)
    builtins = check_builtins(plan)
    chart_reports = check_charts(charts)
    pod_security = check_pod_security_levels(plan, charts)
    problems = [f"JobSet {name}: {v}" for name, rep in reports.items() for v in rep.violations]
    problems += [f"{name}: {v}" for name, rep in [*builtins.items(), *chart_reports.items(), *pod_security.items()] for v in rep.violations]
    if problems:
        raise RenderError("\n".join(problems))
    # A schema layer that could not run (no build/crds: `make crds`) is said, once per kind of notice.
    every = [*reports.values(), *builtins.values(), *chart_reports.values(), *pod_security.values()]
    notes = list(dict.fromkeys(n for rep in every for n in rep.notices))
    objects = []
    for obj, chart in [*((o, "") for o in manifests(plan)), *((c.obj, c.release) for c in charts)]:
        if _is_secret(obj):
            meta = obj.get("metadata", {})
            why = f" of chart {chart}: render writes no Secrets" if chart else ": its values exist only in Pulumi state"
            notes.append(f"skipped Secret {meta.get('namespace')}/{meta.get('name')}{why}")
            continue
        name = file_name(obj)
        if not _SAFE_NAME.fullmatch(name):
            raise RenderError(f"{name!r} is not a safe file name")
        objects.append((name, HEADER + _yaml_text(json.dumps(obj, sort_keys=True))))
    clashes = sorted({n for n, _ in objects if [m for m, _ in objects].count(n) > 1})
    if clashes:
        raise RenderError(f"two objects would be written to {clashes[0]}")
    if out.is_symlink():
        raise RenderError(f"--out {shown(out)} is a symlink; give the directory itself")
    out.mkdir(parents=True, exist_ok=True)
    try:
        dir_fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR) and out.is_symlink():  # swapped in since the check
            raise RenderError(f"--out {shown(out)} is a symlink; give the directory itself") from None
        raise
    try:
        previous = _read_index(dir_fd)
        names = [n for n, _ in objects]
        for name, text in objects:
            _write(dir_fd, name, text)
        for stale in sorted(set(previous) - set(names)):
            try:
                mode = os.stat(stale, dir_fd=dir_fd, follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    os.unlink(stale, dir_fd=dir_fd)  # a symlink is removed itself, never its target
                elif stat.S_ISREG(mode) and _ours(dir_fd, stale):
                    os.unlink(stale, dir_fd=dir_fd)
                else:
                    notes.append(f"kept {stale}: listed in {INDEX} but not a file render wrote")
                    continue
                notes.append(f"removed {stale}: the stack no longer has it")
            except FileNotFoundError:
                pass
        _write(dir_fd, INDEX, json.dumps(sorted(names)) + "\n")
    finally:
        os.close(dir_fd)
    return [out / n for n in names], notes
