"""Read Pulumi stack config into the validated model: the only module that touches pulumi.Config."""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from components.model.config import GCP_KEYS, PROJECT_NAMESPACE, StackConfig, load, misspelt_namespaces
from components.model.errors import ConfigError


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
    try:
        cfg = load(raw, stack=pulumi.get_stack(), secret_keys=secret_config_keys(keys))
    except ConfigError as e:
        raise ConfigError([*misspelt, *e.problems]) from None
    if misspelt:
        raise ConfigError(misspelt)
    return cfg


def secret_config_keys(keys: list[str]) -> frozenset[str]:
    """Keys of ours that hold secrets. The CLI lists them in PULUMI_CONFIG_SECRET_KEYS (which
    runtime.is_config_secret does not read); mocks and automation set them with set_all_config."""
    listed = set(runtime_config.get_config_secret_keys_env())
    return frozenset(
        k for k in keys
        if (k in listed or runtime_config.is_config_secret(k)) and k.partition(":")[0] in (PROJECT_NAMESPACE, "gcp")
    )
