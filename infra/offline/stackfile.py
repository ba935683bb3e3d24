"""Read a file in Pulumi's stack-config format (stacks/Pulumi.<stack>.yaml) into flat config."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from .engine import PROJECT_NAME, PROJECT_ROOT, SECRET

STACKS_DIR = PROJECT_ROOT / "stacks"


class StackFileError(ValueError):
    """A stack file that cannot be read: missing, not YAML, or not Pulumi's format."""


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def stack_name_for(path: Path) -> str:
    m = re.fullmatch(r"Pulumi\.(.+)\.ya?ml", path.name)
    return m.group(1) if m else path.stem


def _text(value: Any) -> str:
    # The language host passes scalars as text and objects/lists as JSON, as `pulumi config` does.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def load_config(path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """-> (flat config {"ns:key": text}, secret keys). Unqualified keys belong to the project."""
    try:
        doc = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        known = ", ".join(stack_names()) or "none"
        raise StackFileError(f"{path}: no such stack file (stacks: {known})") from None
    except yaml.YAMLError as e:
        raise StackFileError(f"{path}: not valid YAML: {e}") from None
    except OSError as e:
        raise StackFileError(f"{path}: cannot read the stack file: {e.strerror}") from None
    doc = doc or {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise StackFileError(f"{path}: expected a mapping with a 'config:' mapping (Pulumi stack-config format)")
    return flatten(doc.get("config") or {})


def flatten(values: dict[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
    """A stack file's `config:` mapping -> (flat config {"ns:key": text}, secret keys)."""
    config: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in values.items():
        full = key if ":" in str(key) else f"{PROJECT_NAME}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            # Ciphertext needs the stack's secrets provider; offline, stand in a marker.
            value = SECRET
            secrets.append(full)
        config[full] = _text(value)
    return config, tuple(secrets)
