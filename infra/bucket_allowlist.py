"""The bootstrap's word on the buckets a stack does not make (components/model/cluster/bucket_grants.py): the program
finds the bootstrap config of the stack's project beside the stack files (bootstrap/Pulumi.*.yaml, the one whose
gcp:project is the stack's and whose pathways-bootstrap:stacks lists it) and refuses grants it does not allow.

Without such a bootstrap config the grants are not this repository's bootstrap's to make: nothing is refused, and
the plan lists every grant on a bucket the stack does not make (summary notices), for whoever grants IAM there."""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path
from typing import Optional

import yaml

from components.model.cluster.bucket_grants import external_bucket_problems, external_grants, parse_external_buckets
from components.model.errors import Problem
from components.model.stack import StackConfig

DEFAULT_BOOTSTRAP_DIR = Path(__file__).resolve().parents[1] / "bootstrap"
# What the offline engine passes as an input of the plan (PlanInputs.bootstrap): the bootstrap config it found for the
# stack beside the stack files, ("Pulumi.<project>.yaml", config), or None for none. Unset under the CLI, where the
# program looks in the project's bootstrap/ folder itself.
_FIND = ("", {})
BOOTSTRAP: ContextVar[Optional[tuple[str, dict]]] = ContextVar("bootstrap", default=_FIND)


def bootstrap_config(project: str, stack: str, folder: Optional[Path] = None) -> Optional[tuple[Path, dict]]:
    """(file, config) of the bootstrap that sets up this stack in this project, or None."""
    folder = folder or DEFAULT_BOOTSTRAP_DIR
    for path in sorted(folder.glob("Pulumi.*.yaml")):
        try:
            config = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config") or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        stacks = config.get("pathways-bootstrap:stacks")
        if config.get("gcp:project") == project and isinstance(stacks, list) and stack in stacks:
            return path, config
    return None


def problems(cfg: StackConfig) -> list[Problem]:
    """Grants on buckets the stack does not make that its project's bootstrap does not allow (none to judge without
    a bootstrap config for it)."""
    if not external_grants(cfg):
        return []
    given = BOOTSTRAP.get()
    found = bootstrap_config(cfg.project, cfg.stack) if given is _FIND else given
    if found is None:
        return []
    path, config = Path(found[0]), found[1]
    key = "pathways-bootstrap:externalBuckets"
    allowed, bad = parse_external_buckets(config.get(key), list(config.get("pathways-bootstrap:stacks") or []), key)
    where = f"bootstrap/{path.name}"
    if bad:
        return [Problem(key, f"{where}: {p.key.removeprefix(key)} {p.message}") for p in bad]
    return external_bucket_problems(cfg, allowed.get(cfg.stack, {}), where)
