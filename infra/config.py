"""Read Pulumi stack config into the validated model: the only module that touches pulumi.Config."""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.model.config import GCP_KEYS, PROJECT_NAMESPACE, StackConfig, load


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


def read_stack_config() -> StackConfig:
    """Stack config -> StackConfig, or ConfigError naming every bad key."""
    raw: dict[str, Any] = {}
    project_cfg = pulumi.Config(PROJECT_NAMESPACE)
    gcp_cfg = pulumi.Config("gcp")
    for key in sorted(_config_keys()):
        namespace, _, name = key.partition(":")
        if namespace == PROJECT_NAMESPACE:
            raw[name] = _decode(project_cfg.get(name))
    for name in GCP_KEYS:
        value = gcp_cfg.get(name)
        if value is not None:
            raw[name] = value
    return load(raw, stack=pulumi.get_stack())
