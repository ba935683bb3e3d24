"""Read Pulumi stack config into the validated model: the only module that touches pulumi.Config."""

from __future__ import annotations

import errno
import json
import os
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Optional

import pulumi
import yaml
from pulumi.runtime import config as runtime_config

from components.model.config import (
    GCP_KEYS,
    PROJECT_NAMESPACE,
    StackConfig,
    is_secure_value,
    load,
    misspelt_namespaces,
    secret_path_problems,
    secure_paths,
)
from components.model.errors import ConfigError, Problem
from infra import bucket_allowlist

# Which values below a secret top-level key are the secret ones, when the caller has read the stack file
# itself and checked them (the offline engine, after infra/offline/stackfile.py): {top-level key: paths}.
# Under the Pulumi CLI it is unset and the program reads the stack file (nested_secret_problems below).
CHECKED_SECRET_PATHS: ContextVar[Optional[Mapping[str, tuple[str, ...]]]] = ContextVar("checked_secret_paths", default=None)
# The plan's clock when the offline engine runs the program (its PlanInputs.now); unset under the CLI, where the
# composition root reads the wall clock once (infra/program.py main).
PLANNED_AT: ContextVar[Optional[datetime]] = ContextVar("planned_at", default=None)
# The files the stack's config names that the program reads (a slice group's recorded reservation describe files, a
# cluster made elsewhere's kubeconfig), when the offline engine runs it: absolute path -> the text the engine read
# (undecodable bytes kept as surrogates), None for a file it could not read (its PlanInputs.files). Unset under the CLI.
INPUT_FILES: ContextVar[Optional[Mapping[str, Optional[str]]]] = ContextVar("input_files", default=None)


def read_input_file(path: Path) -> str:
    """A file the config names, as the plan's inputs hold it (INPUT_FILES), else from disk; the same errors either way
    (OSError for one that cannot be read, UnicodeDecodeError for one that is not UTF-8)."""
    given = INPUT_FILES.get()
    if given is None:
        return path.read_text(encoding="utf-8")
    text = given.get(str(path))
    if text is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
    return text.encode("utf-8", "surrogateescape").decode("utf-8")


# A stack file is a few KB (infra/offline/stackfile.py reads at most this much too).
MAX_STACK_FILE_BYTES = 1 << 20


def _config_keys() -> set[str]:
    # pulumi.Config reads one key at a time; to reject misspelt keys we need the whole set, which the
    # runtime holds in set_all_config's map (mocks, automation) or the PULUMI_CONFIG env (the CLI).
    explicit = getattr(runtime_config, "CONFIG", None)
    return set(explicit.get() if explicit is not None else ()) | set(runtime_config.get_config_env())


def _decode(value: str) -> Any:
    # Pulumi hands structured values over as JSON text and scalars as plain text; pydantic coerces
    # "true" / "3" for bool and int fields, so only objects and lists need decoding here.
    if value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def read_stack_config(now: datetime) -> StackConfig:
    """Stack config -> StackConfig, or ConfigError naming every bad key.

    Values are read as text with the runtime's get_config (pulumi.Config.get would warn on secret
    keys): the model validates plain values, and the keys that were secret travel with it so that
    what they feed stays secret (see StackConfig.secret_env)."""
    raw: dict[str, Any] = {}
    keys = sorted(_config_keys())
    for key in keys:
        namespace, _, name = key.partition(":")
        if namespace == PROJECT_NAMESPACE:
            raw[name] = _decode(runtime_config.get_config(key))
    for name in GCP_KEYS:
        value = runtime_config.get_config(f"gcp:{name}")
        if value is not None:
            raw[name] = _decode(value)
    misspelt = misspelt_namespaces(keys)
    secret = secret_config_keys(keys)
    nested = nested_secret_problems(secret, raw)  # before load(): a value refused here is never validated, so never quoted
    if nested:
        raise ConfigError([*misspelt, *nested])
    try:
        cfg = load(raw, stack=pulumi.get_stack(), secret_keys=secret, now=now)
    except ConfigError as e:
        raise ConfigError([*misspelt, *e.problems]) from None
    if misspelt:
        raise ConfigError(misspelt)
    refused = bucket_allowlist.problems(cfg)  # the bootstrap's word on buckets the stack does not make (#58.5)
    if refused:
        raise ConfigError(refused)
    return cfg


def secret_config_keys(keys: list[str]) -> frozenset[str]:
    """Keys of ours that hold secrets. The CLI lists them in PULUMI_CONFIG_SECRET_KEYS (which
    runtime.is_config_secret does not read); mocks and automation set them with set_all_config."""
    listed = set(runtime_config.get_config_secret_keys_env())
    return frozenset(
        k for k in keys
        if (k in listed or runtime_config.is_config_secret(k)) and k.partition(":")[0] in (PROJECT_NAMESPACE, "gcp")
    )


# --- which nested values are secret ------------------------------------------------------------------
#
# `pulumi config set --secret --path 'pathways:workloads[0].serve.extraArgs[0]' ...` encrypts one value, but the
# CLI tells the program only that the top-level key holds a secret: the engine sends Config.SecureKeys()
# (pulumi/pulumi pkg/resource/deploy/source_eval.go), the keys whose value is or contains a `secure:` leaf
# (sdk/go/common/resource/config/object.go, Secure()), as PULUMI_CONFIG_SECRET_KEYS or the run request's
# configSecretKeys, with every value decrypted. Which leaf was the secret is only in the stack file, which the
# Python language host lets the program find: it passes the project root (the directory of Pulumi.yaml) as
# --root_directory (sdk/python/cmd/pulumi-language-python-exec), pulumi.get_root_directory() here.


def _read_yaml(path: Path) -> Any:
    with open(path, "rb") as f:
        data = f.read(MAX_STACK_FILE_BYTES + 1)
    if len(data) > MAX_STACK_FILE_BYTES:
        raise ValueError(f"over {MAX_STACK_FILE_BYTES} bytes")
    return yaml.load(data.decode("utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _stack_file() -> Optional[Path]:
    """The stack's config file as the CLI finds it: <root>/<stackConfigDir>/Pulumi.<stack>.yaml (Pulumi.yaml's
    stackConfigDir, default the root). None when the host gave no project root (the Automation API's inline
    host does not)."""
    root = pulumi.get_root_directory()
    if not root or not os.path.isdir(root):
        return None
    project: Any = {}
    for name in ("Pulumi.yaml", "Pulumi.yml"):
        if os.path.isfile(os.path.join(root, name)):
            project = _read_yaml(Path(root, name)) or {}
            break
    directory = Path(root, str(project.get("stackConfigDir") or "")) if isinstance(project, dict) else Path(root)
    stack = pulumi.get_stack().rsplit("/", 1)[-1]
    for suffix in (".yaml", ".yml"):
        if (directory / f"Pulumi.{stack}{suffix}").is_file():
            return directory / f"Pulumi.{stack}{suffix}"
    return directory / f"Pulumi.{stack}.yaml"


def _with_secrets_from(file_value: Any, decrypted: Any) -> Any:
    """The stack file's value with each `secure:` leaf replaced by what the program received there: equal to the
    decrypted value exactly when the file holds the config this run uses."""
    if is_secure_value(file_value):
        return decrypted
    if isinstance(file_value, dict) and isinstance(decrypted, dict):
        return {k: _with_secrets_from(v, decrypted.get(k)) for k, v in file_value.items()}
    if isinstance(file_value, list) and isinstance(decrypted, list) and len(file_value) == len(decrypted):
        return [_with_secrets_from(v, d) for v, d in zip(file_value, decrypted, strict=True)]
    return file_value


def _same(a: Any, b: Any) -> bool:
    # the language host hands scalars over as text and structures as JSON; compare them as JSON would
    def norm(v: Any) -> Any:
        return json.loads(json.dumps(v, sort_keys=True, default=str))
    try:
        return norm(a) == norm(b)
    except (TypeError, ValueError):
        return False


def nested_secret_problems(secret_keys: frozenset[str], raw: Mapping[str, Any]) -> list[Problem]:
    """Problems for secrets the stack cannot keep secret below a secret top-level key of ours (the same lines as
    infra/offline/stackfile.py), or for a secret key whose stack file cannot say which of its values are secret.
    A secret top-level key other than workloads is load()'s to refuse, with or without a file."""
    ours = sorted(k for k in secret_keys if k.partition(":")[2] in raw)
    if not ours:
        return []
    checked = CHECKED_SECRET_PATHS.get()
    if checked is not None:
        return [p for key in ours for p in secret_path_problems(key, checked.get(key, (key,)))]
    workloads = f"{PROJECT_NAMESPACE}:workloads"
    try:
        path = _stack_file()
        doc = _read_yaml(path) if path is not None and path.is_file() else None
    except (OSError, ValueError, yaml.YAMLError) as e:
        return [Problem(workloads if workloads in ours else ours[0], (
            f"holds a secret, but the stack file that says which of its values are secret cannot be read ({type(e).__name__}); "
            "fix the file, or keep secrets only in workload env values"))]
    config = doc.get("config") if isinstance(doc, dict) else None
    problems: list[Problem] = []
    for key in ours:
        value = raw[key.partition(":")[2]]
        found = None
        if isinstance(config, dict):
            for written in (key, key.partition(":")[2] if key.startswith(f"{PROJECT_NAMESPACE}:") else None):
                if written is not None and written in config:
                    found = config[written]
                    break
        if found is not None and _same(_with_secrets_from(found, value), value):
            problems += secret_path_problems(key, secure_paths(key, found))
        elif key == workloads and path is not None:
            # fail closed: env values are the only secrets the stack keeps, and which values are secret is unknown
            problems.append(Problem(key, (
                f"holds a secret, but {path} does not hold the value this run uses (missing, or another config file), "
                "so which of its values are secret cannot be told and none may reach a resource; run `pulumi` from the "
                "project with its own stack file, with secrets only at pathways:workloads[i].env.NAME")))
        elif key == workloads:
            # A host that gives no project root (the Automation API's inline server; tools/pulumi_real/host.py, the
            # real-engine tier's stand-in for the Python host) runs a program the user wired up themselves: the
            # stack file cannot be found, so say what is not checked rather than refuse every secret env value.
            pulumi.log.warn(f"{key} holds a secret, and this Pulumi host gives the program no project root to find the stack "
                            "file in: secrets outside workload env values cannot be refused here (the Pulumi CLI's Python "
                            "host passes the root, and they are)")
    return problems
