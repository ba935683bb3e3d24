"""The regional TPU quota a project's stacks need together (issue #75.3): a quota is the project's, not a stack's,
so two stacks of one project and region that each fit it alone may not fit it together. The plan of a stack adds the
needs of the other stack files beside it (the same directory) that name the same project and region; a file it
cannot read is named, never silently left out."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from components.model.capacity import quota
from components.model.config import StackConfig, load, resolve
from components.model.errors import ConfigError
from infra.offline.stackfile import StackFileError, load_config, raw_values


def _needs(cfg: StackConfig) -> list[quota.QuotaNeed]:
    stack = resolve(cfg)
    if stack.existing_cluster or stack.fleet_manager:  # no pools of its own
        return []
    return quota.needs(stack.slices, stack.group_pools)


def project_quota(path: Path, own: StackConfig) -> dict[str, Any] | None:
    """{region, stacks, needs: [{family, kind, chips, byStack}], unread} for the stack at `path` and its siblings of the
    same project and region; None when no sibling shares them."""
    project, region = own.project, own.region
    by_stack: dict[str, list[quota.QuotaNeed]] = {own.stack: _needs(own)}
    unread: list[str] = []
    for other in sorted(path.parent.glob("Pulumi.*.yaml")):
        name = other.name[len("Pulumi."):-len(".yaml")]
        if other.resolve() == path.resolve() or name == own.stack:
            continue
        try:
            flat, secrets = load_config(other)
            if flat.get("gcp:project") != project or flat.get("gcp:region", region) != region:
                continue
            cfg = load(raw_values(flat), name, frozenset(secrets))
        except (StackFileError, ConfigError, ValueError) as e:
            if f"gcp:project: {project}" in other.read_text(errors="replace"):
                unread.append(f"{name} ({str(e).splitlines()[0][:120]})")
            continue
        if cfg.region == region:
            by_stack[name] = _needs(cfg)
    if len(by_stack) < 2 and not unread:
        return None
    chips: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for name, needs in by_stack.items():
        for n in needs:
            chips[(n.family, n.kind)][name] = chips[(n.family, n.kind)].get(name, 0) + n.chips
    return {"project": project, "region": region, "stacks": sorted(by_stack), "unread": unread,
            "needs": [{"family": f, "kind": k, "chips": sum(per.values()),
                       "byStack": [{"stack": name, "chips": n} for name, n in sorted(per.items())]}
                      for (f, k), per in sorted(chips.items())]}


def _parts(by_stack: list[dict[str, Any]]) -> str:
    return ", ".join(f"{b['stack']} {b['chips']:,}" for b in by_stack)


def project_quota_text(q: dict[str, Any] | None) -> list[str]:
    if q is None:
        return []
    lines = ["", f"Project quota: stacks {', '.join(q['stacks'])} share project {q['project']} in {q['region']}; its regional "
             "TPU quota must hold them together:"]
    lines += [f"  {n['chips']:,} {n['family']} {n['kind']} chips ({_parts(n['byStack'])})" for n in q["needs"]] or ["  none: every group is reserved, or has no slices"]
    lines += [f"  not counted, its file does not load: {u}" for u in q["unread"]]
    return lines
