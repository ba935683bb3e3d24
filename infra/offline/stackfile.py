"""Read a file in Pulumi's stack-config format (stacks/Pulumi.<stack>.yaml) into flat config."""

from __future__ import annotations

import io
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Optional

import yaml

from components.model.config import GCP_KEYS, is_secure_value, secret_path_problems, secure_paths

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROJECT_NAME = "pathways"  # Pulumi.yaml's name
SECRET = "[secret]"  # how a secret value shows in a plan


STACKS_DIR = PROJECT_ROOT / "stacks"


class StackFileError(ValueError):
    """A stack file that cannot be read: missing, not YAML, or not Pulumi's format."""


def stack_path(stack: str) -> Path:
    return STACKS_DIR / f"Pulumi.{stack}.yaml"


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


# What Pulumi accepts as a stack name (sdk/go/common/tokens: letters, digits, '-', '_', '.').
STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def shown(path: Any) -> str:
    """A path as it may appear in a message: as written when printable, else quoted with escapes, so a
    newline or an escape code in a file name can neither forge an output line nor reach a terminal."""
    text = str(path)
    return text if text.isprintable() else repr(text)


def stack_name_for(path: Path) -> str:
    """The stack a file is for (Pulumi.<name>.yaml, else the file's stem), which must be a stack name."""
    m = re.fullmatch(r"Pulumi\.(.+)\.ya?ml", path.name)
    name = m.group(1) if m else path.stem
    if not STACK_NAME.fullmatch(name) or name.startswith("."):
        raise StackFileError(f"{shown(path)}: {shown(name)} is not a stack name; name the file Pulumi.<name>.yaml with "
                             "letters, digits, '-', '_' and '.'")
    return name


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
# Collections nested in one another. A stack file's values nest a few levels deep (config -> key ->
# list -> object -> list -> object). Checked on the composed nodes, and for flow collections ([...],
# {...}) already while scanning with the pure-Python loader: its scanner re-checks every open flow
# level on each token, so a 400-deep list costs ~160,000 checks and a 1 MiB file of them minutes.
MAX_NESTING = 32


class _TooDeep(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses flow collections nested deeper than MAX_NESTING while scanning."""

    def fetch_flow_collection_start(self, TokenClass):
        if self.flow_level >= MAX_NESTING:
            raise _TooDeep
        super().fetch_flow_collection_start(TokenClass)


# libyaml (PyYAML's C loader; the manylinux wheels the lock installs include it) reads a 1 MiB file
# 6-8x faster than the pure-Python loader (measured on the bench's 1 MiB files) and bounds nesting itself (1000 levels), with the same error
# texts; the pure-Python loader, bounded above, is the fallback where PyYAML was built without it.
_LOADER: Any = getattr(yaml, "CSafeLoader", None) or _BoundedLoader


def _expanded(node: yaml.Node, memo: dict[int, tuple[int, int]], limit: int) -> tuple[int, int]:
    """(values, collection levels) of a node with its aliases expanded: an alias counts its anchor's
    values again and nests its anchor's levels where it stands. A scalar is 0 levels, [] is 1."""
    key = id(node)
    if key in memo:
        if memo[key][0] < 0:
            raise StackFileError("a YAML alias refers to itself")
        return memo[key]
    memo[key] = (-1, 0)
    children = node.value if isinstance(node, yaml.SequenceNode) else (
        [n for kv in node.value for n in kv] if isinstance(node, yaml.MappingNode) else [])
    size, levels = 1, int(isinstance(node, yaml.CollectionNode))
    for child in children:
        child_size, child_levels = _expanded(child, memo, limit)
        size, levels = size + child_size, max(levels, child_levels + 1)
        if size > limit or levels > MAX_NESTING:
            break
    memo[key] = (size, levels)
    return memo[key]


def read_stack_file(path: Path) -> str:
    """The text of a stack file: a regular file, at most MAX_STACK_FILE_BYTES, UTF-8; else StackFileError."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        known = ", ".join(stack_names()) or "none"
        raise StackFileError(f"{shown(path)}: no such stack file (stacks: {known})") from None
    except OSError as e:
        raise StackFileError(f"{shown(path)}: cannot read the stack file: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StackFileError(f"{shown(path)}: not a regular file; give a stack file (stacks/Pulumi.<name>.yaml)")
        if info.st_size > MAX_STACK_FILE_BYTES:
            raise StackFileError(f"{shown(path)}: {info.st_size} bytes, over the {MAX_STACK_FILE_BYTES} a stack file may have")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_STACK_FILE_BYTES + 1)
    except OSError as e:
        raise StackFileError(f"{shown(path)}: cannot read the stack file: {e.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_STACK_FILE_BYTES:
        raise StackFileError(f"{shown(path)}: over the {MAX_STACK_FILE_BYTES} bytes a stack file may have")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StackFileError(
            f"{shown(path)}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); save the file as UTF-8"
        ) from None


def _duplicate_key(node: yaml.Node, seen_nodes: set[int]) -> Optional[tuple[str, int, int]]:
    """The first key written twice in one mapping, with both of its lines: PyYAML keeps the last, Pulumi's parser
    refuses the file ("mapping key already defined"), so the offline tools would plan a file `pulumi up` rejects."""
    if id(node) in seen_nodes:
        return None
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value != "<<":
                line = key.start_mark.line + 1
                if key.value in lines:
                    return key.value, lines[key.value], line
                lines[key.value] = line
            found = _duplicate_key(value, seen_nodes)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = _duplicate_key(item, seen_nodes)
            if found:
                return found
    return None


def _named_stream(text: str, path: Path) -> io.StringIO:
    stream = io.StringIO(text)
    stream.name = str(path)  # so YAML errors name the file, not "<unicode string>"
    return stream


def _check_events(text: str, path: Path) -> None:
    """Refuse a file with more values, or deeper nesting, than a stack file has, from its parse events
    alone: cheap, where building the nodes of a 1 MiB file of short nested lists takes seconds. A value
    is what _expanded counts as one: a scalar, a collection, an alias (expanded there)."""
    depth = values = 0
    for event in yaml.parse(_named_stream(text, path), Loader=_LOADER):
        if isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent, yaml.CollectionStartEvent)):
            values += 1
            if values > MAX_STACK_FILE_VALUES:
                raise StackFileError(f"{shown(path)}: more than {MAX_STACK_FILE_VALUES} values; a stack file holds a few hundred")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise _TooDeep
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def parse_stack_file(text: str, path: Path) -> Any:
    loader = None
    try:
        _check_events(text, path)
        loader = _LOADER(_named_stream(text, path))  # its reader already checks the characters
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            size, levels = _expanded(node, {}, MAX_STACK_FILE_VALUES)
        except StackFileError as e:
            raise StackFileError(f"{shown(path)}: {e}") from None
        if levels > MAX_NESTING:
            raise _TooDeep
        if size > MAX_STACK_FILE_VALUES:
            raise StackFileError(
                f"{shown(path)}: expands to more than {MAX_STACK_FILE_VALUES} values (YAML aliases); write the values out"
            )
        duplicate = _duplicate_key(node, set())
        if duplicate:
            key, first, second = duplicate
            raise StackFileError(f"{shown(path)}: key {key[:80]!r} is written twice in one mapping (lines {first} and {second}): "
                                 "Pulumi refuses such a file; keep one")
        return loader.construct_document(node)
    except yaml.YAMLError as e:
        if getattr(e, "problem", "") == "exceeded maximum nesting depth":  # libyaml's own bound (1000)
            raise StackFileError(f"{shown(path)}: nested too deeply to be a stack file") from None
        raise StackFileError(f"{shown(path)}: not valid YAML: {' '.join(str(e).split())}") from None
    except (RecursionError, _TooDeep):
        raise StackFileError(f"{shown(path)}: nested too deeply to be a stack file") from None
    except StackFileError:
        raise
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise StackFileError(f"{shown(path)}: not a valid stack file value: {e}") from None
    finally:
        if loader is not None:
            loader.dispose()


def load_config(path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """-> (flat config {"ns:key": text}, secret keys). Unqualified keys belong to the project."""
    return config_from_text(read_stack_file(path), path)


def config_from_text(text: str, path: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """The same from a stack file's text (e.g. `git show REF:stacks/Pulumi.<stack>.yaml`)."""
    if len(text.encode()) > MAX_STACK_FILE_BYTES:
        raise StackFileError(f"{shown(path)}: over the {MAX_STACK_FILE_BYTES} bytes a stack file may have")
    doc = parse_stack_file(text, path)
    if doc is None:
        raise StackFileError(f"{shown(path)}: empty; a stack file is a mapping with a 'config:' mapping (Pulumi stack-config format)")
    if not isinstance(doc, dict):
        raise StackFileError(f"{shown(path)}: expected a mapping with a 'config:' mapping (Pulumi stack-config format), found a {type(doc).__name__}")
    config = doc.get("config")
    if config is None:
        others = [str(k) for k in doc if k not in _STACK_FILE_KEYS]
        hint = f"; put {', '.join(others[:5])}{' …' if len(others) > 5 else ''} under 'config:'" if others else ""
        raise StackFileError(f"{shown(path)}: no 'config:' mapping (Pulumi stack-config format){hint}")
    if not isinstance(config, dict):
        raise StackFileError(f"{shown(path)}: 'config:' must be a mapping of keys to values, found a {type(config).__name__}")
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


def _stand_in_secrets(value: Any) -> Any:
    """Replace every `secure:` leaf (ciphertext needs the stack's secrets provider) by a marker."""
    if is_secure_value(value):
        return SECRET
    if isinstance(value, dict):
        return {k: _stand_in_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stand_in_secrets(v) for v in value]
    return value


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
        found = secure_paths(full, value)
        problems = secret_path_problems(full, found)  # the same lines the program gives under `pulumi up`
        if problems:
            raise StackFileError(str(problems[0]))
        if found:
            secrets.append(full)
        config[full] = _text(_stand_in_secrets(value))
    return config, tuple(secrets)
