"""Read a file in Pulumi's stack-config format (stacks/Pulumi.<stack>.yaml) into flat config."""

from __future__ import annotations

import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from components.model.config import GCP_KEYS

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


# A stack file is a few KB; 1 MiB leaves room for long env values and refuses /dev/zero and friends.
MAX_STACK_FILE_BYTES = 1 << 20
# Keys Pulumi's stack files hold besides config (pulumi/pulumi sdk/go/common/workspace/project.go, ProjectStack).
_STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")


# Values a stack file may expand to. YAML aliases (*name) share one node, so a few lines can stand
# for billions of values ("billion laughs"): count them expanded before building anything.
MAX_STACK_FILE_VALUES = 100_000


def _expanded_size(node: yaml.Node, memo: dict[int, int], limit: int) -> int:
    key = id(node)
    if key in memo:
        if memo[key] < 0:
            raise StackFileError("a YAML alias refers to itself")
        return memo[key]
    memo[key] = -1
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            size += _expanded_size(child, memo, limit)
            if size > limit:
                break
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo, limit) + _expanded_size(v, memo, limit)
            if size > limit:
                break
    memo[key] = size
    return size


def read_stack_file(path: Path) -> str:
    """The text of a stack file: a regular file, at most MAX_STACK_FILE_BYTES, UTF-8; else StackFileError."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        known = ", ".join(stack_names()) or "none"
        raise StackFileError(f"{path}: no such stack file (stacks: {known})") from None
    except OSError as e:
        raise StackFileError(f"{path}: cannot read the stack file: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StackFileError(f"{path}: not a regular file; give a stack file (stacks/Pulumi.<name>.yaml)")
        if info.st_size > MAX_STACK_FILE_BYTES:
            raise StackFileError(f"{path}: {info.st_size} bytes, over the {MAX_STACK_FILE_BYTES} a stack file may have")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_STACK_FILE_BYTES + 1)
    except OSError as e:
        raise StackFileError(f"{path}: cannot read the stack file: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_STACK_FILE_BYTES:
        raise StackFileError(f"{path}: over the {MAX_STACK_FILE_BYTES} bytes a stack file may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StackFileError(
            f"{path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); save the file as UTF-8"
        ) from None


def parse_stack_file(text: str, path: Path) -> Any:
    stream = io.StringIO(text)
    stream.name = str(path)  # so YAML errors name the file, not "<unicode string>"
    loader = None
    try:
        loader = yaml.SafeLoader(stream)  # its reader already checks the characters
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            size = _expanded_size(node, {}, MAX_STACK_FILE_VALUES)
        except StackFileError as e:
            raise StackFileError(f"{path}: {e}") from None
        if size > MAX_STACK_FILE_VALUES:
            raise StackFileError(
                f"{path}: expands to more than {MAX_STACK_FILE_VALUES} values (YAML aliases); write the values out"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        raise StackFileError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise StackFileError(f"{path}: nested too deeply to be a stack file") from None
    except StackFileError:
        raise
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise StackFileError(f"{path}: not a valid stack file value: {e}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_config(path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """-> (flat config {"ns:key": text}, secret keys). Unqualified keys belong to the project."""
    return config_from_text(read_stack_file(path), path)


def config_from_text(text: str, path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """The same from a stack file's text (e.g. `git show REF:stacks/Pulumi.<stack>.yaml`)."""
    if len(text.encode()) > MAX_STACK_FILE_BYTES:
        raise StackFileError(f"{path}: over the {MAX_STACK_FILE_BYTES} bytes a stack file may have")
    doc = parse_stack_file(text, path)
    if doc is None:
        raise StackFileError(f"{path}: empty; a stack file is a mapping with a 'config:' mapping (Pulumi stack-config format)")
    if not isinstance(doc, dict):
        raise StackFileError(f"{path}: expected a mapping with a 'config:' mapping (Pulumi stack-config format), found a {type(doc).__name__}")
    config = doc.get("config")
    if config is None:
        others = [str(k) for k in doc if k not in _STACK_FILE_KEYS]
        hint = f"; put {', '.join(others[:5])}{' …' if len(others) > 5 else ''} under 'config:'" if others else ""
        raise StackFileError(f"{path}: no 'config:' mapping (Pulumi stack-config format){hint}")
    if not isinstance(config, dict):
        raise StackFileError(f"{path}: 'config:' must be a mapping of keys to values, found a {type(config).__name__}")
    return flatten(config)


def raw_values(config: dict[str, str]) -> dict[str, Any]:
    """Flat config -> the model's raw mapping (keys without namespace), as infra.config builds it."""
    raw: dict[str, Any] = {}
    for key, text in config.items():
        namespace, _, name = key.partition(":")
        if namespace == PROJECT_NAME or (namespace == "gcp" and name in GCP_KEYS):
            try:
                raw[name] = json.loads(text) if text[:1] in "[{" else text
            except json.JSONDecodeError:
                raw[name] = text
    return raw


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
            if not _SECRET_ENV_PATH.fullmatch(path):
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
