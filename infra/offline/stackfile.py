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


def _is_secure(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def _stand_in_secrets(value: Any, path: str, found: list[str]) -> Any:
    """Replace every `secure:` leaf (ciphertext needs the stack's secrets provider) by a marker."""
    if _is_secure(value):
        found.append(path)
        return SECRET
    if isinstance(value, dict):
        return {k: _stand_in_secrets(v, f"{path}.{k}", found) for k, v in value.items()}
    if isinstance(value, list):
        return [_stand_in_secrets(v, f"{path}[{i}]", found) for i, v in enumerate(value)]
    return value


_SECRET_ENV_PATH = re.compile(rf"^{PROJECT_NAME}:workloads\[[0-9]+\]\.env\.[^.\[\]]+$")


def flatten(values: dict[str, Any]) -> tuple[dict[str, str], tuple[str, ...]]:
    """A stack file's `config:` mapping -> (flat config {"ns:key": text}, secret keys).

    As the CLI does, a key is secret when any value under it is (`config set --secret --path`
    writes nested `secure:` leaves); the program then keeps what that key feeds secret. Nested
    secrets are refused where the stack cannot keep them secret (anything but workload env values),
    naming the path; the model refuses secret top-level keys other than workloads the same way."""
    config: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in values.items():
        full = key if ":" in str(key) else f"{PROJECT_NAME}:{key}"
        found: list[str] = []
        value = _stand_in_secrets(value, full, found)
        nested = [p for p in found if p != full]
        for path in nested:
            if not _SECRET_ENV_PATH.match(path):
                raise StackFileError(
                    f"{path}: a secret value here would reach resources in plaintext; only workload env values can be "
                    "kept secret: pulumi config set --secret --path 'pathways:workloads[i].env.NAME' VALUE"
                )
        if full == f"{PROJECT_NAME}:workloads" and full in found:
            raise StackFileError(
                f"{full}: the whole value is encrypted, so its workloads cannot be checked; keep workloads in plain "
                "text and set each secret with pulumi config set --secret --path 'pathways:workloads[i].env.NAME' VALUE"
            )
        if found:
            secrets.append(full)
        config[full] = _text(value)
    return config, tuple(secrets)
