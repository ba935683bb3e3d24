"""Run the CrossGuard pack (policies/) over a recorded plan, as `pulumi preview --policy-pack` would.

The rules are the same objects the pack serves to the engine; this module only builds the
arguments the analyzer would pass (PolicyResource, options, per-policy config with schema defaults).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

from infra.offline.engine import Plan, Registration, duration_seconds
from infra.offline.stackfile import PROJECT_ROOT

POLICY_CONFIG_DIR = PROJECT_ROOT / "policies"


@dataclass(frozen=True)
class PolicyViolation:
    policy: str
    enforcement: str
    urn: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "enforcement": self.enforcement, "urn": self.urn, "message": self.message}


class PolicyConfigError(ValueError):
    pass


def _options(r: Registration) -> PolicyResourceOptions:
    t = r.options.get("customTimeouts", {})
    return PolicyResourceOptions(
        protect=r.options.get("protect", False),
        ignore_changes=list(r.options.get("ignoreChanges", [])),
        delete_before_replace=r.options.get("deleteBeforeReplace", False),
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(*(duration_seconds(t.get(k, "")) for k in ("create", "update", "delete"))),
        additional_secret_outputs=[],
        parent=r.parent or None,
    )


def policy_resources(plan: Plan) -> list[PolicyResource]:
    by_urn: dict[str, PolicyResource] = {}
    for r in plan.resources:
        # The analyzer hands rules read-only proxies (Mapping / Sequence, not dict / list): so do we.
        props = unknown_checking_proxy(r.inputs)
        by_urn[r.urn] = PolicyResource(r.type, props, r.urn, r.name, _options(r), None, None, [], {})
    for r in plan.resources:
        pr = by_urn[r.urn]
        pr.parent = by_urn.get(r.parent)
        pr.dependencies = [by_urn[d] for d in r.dependencies if d in by_urn]
    return [by_urn[r.urn] for r in plan.resources if r.custom]


def stack_policy_config(stack: str) -> Optional[Path]:
    """policies/config.<stack>.json: a stack's overrides, also passed to `pulumi preview` in CI."""
    path = POLICY_CONFIG_DIR / f"config.{stack}.json"
    return path if path.exists() else None


def load_policy_config(path: Optional[Path]) -> dict[str, Any]:
    """A --policy-pack-config file: {"policy-name": "advisory" | {"enforcementLevel": …, prop: …}}."""
    if path is None:
        return {}
    try:
        doc = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as e:
        raise PolicyConfigError(f"{path}: cannot read policy config: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise PolicyConfigError(f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); {_FORMAT}") from None
    except json.JSONDecodeError as e:
        raise PolicyConfigError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}); {_FORMAT}") from None
    if not isinstance(doc, dict):
        raise PolicyConfigError(f"{path}: a JSON {type(doc).__name__}; {_FORMAT}")
    return doc


_FORMAT = 'a policy config is a JSON object keyed by policy name, e.g. {"pathways-single-zone": "advisory"}'
_LEVELS = "advisory, mandatory, disabled"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _level_and_config(policy: Policy, config: dict[str, Any]) -> tuple[EnforcementLevel, dict[str, Any]]:
    entry = config.get(policy.name, {})
    props: dict[str, Any] = {}
    if policy.config_schema:
        props = {k: v["default"] for k, v in policy.config_schema.properties.items() if "default" in v}
    level = policy.enforcement_level or EnforcementLevel.MANDATORY
    if isinstance(entry, str):
        entry = {"enforcementLevel": entry}
    if not isinstance(entry, dict):
        raise PolicyConfigError(f"{policy.name}: {_shown(entry)}; valid: an enforcement level ({_LEVELS}), or an object "
                                "with enforcementLevel and the policy's settings")
    for k, v in entry.items():
        if k == "enforcementLevel":
            try:
                level = EnforcementLevel(v)
            except ValueError:
                raise PolicyConfigError(f"{policy.name}.enforcementLevel: {_shown(v)}; valid: {_LEVELS}") from None
        else:
            props[k] = v
    settings = {k: v for k, v in entry.items() if k != "enforcementLevel"}
    if policy.config_schema and settings:  # nothing to check (and jsonschema not imported) for a plain plan
        _check_settings(policy, settings)
    return level, props


_TYPE_WORDS = {"array": "a list", "string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "object": "an object"}


def _expected(schema: dict[str, Any]) -> str:
    if schema.get("type") == "array" and (schema.get("items") or {}).get("type"):
        return f"a list of {schema['items']['type']}s"
    return _TYPE_WORDS.get(str(schema.get("type")), f"a {schema.get('type')}")


def _check_settings(policy: Policy, settings: dict[str, Any]) -> None:
    """The settings against the policy's config schema, as the Pulumi engine checks a --policy-pack-config before it
    runs the pack (tests_e2e/test_pulumi.py): the first setting of the wrong type, in one line."""
    import jsonschema

    assert policy.config_schema is not None
    properties = dict(policy.config_schema.properties)
    schema = {"type": "object", "properties": properties}
    error = min(jsonschema.Draft7Validator(schema).iter_errors(settings), key=lambda e: [str(p) for p in e.absolute_path], default=None)
    if error is not None:
        key = str(error.absolute_path[0]) if error.absolute_path else ""
        expected = _expected(properties.get(key) or {})
        raise PolicyConfigError(f"{policy.name}.{key}: {_shown(settings.get(key))}; valid: {expected}")


def _validators(validate: Any) -> list[Any]:
    """The SDK takes one validate function or a list of them (ResourceValidationPolicy's validate)."""
    if validate is None:
        return []
    return list(validate) if isinstance(validate, (list, tuple)) else [validate]


def run_policies(plan: Plan, policies: list[Policy], config: Optional[dict[str, Any]] = None) -> list[PolicyViolation]:
    config = config or {}
    unknown = set(config) - {p.name for p in policies}
    if unknown:
        raise PolicyConfigError(f"unknown policies in config: {', '.join(sorted(unknown))}; valid: {', '.join(p.name for p in policies)}")
    resources = policy_resources(plan)
    violations: list[PolicyViolation] = []
    for policy in policies:
        level, props = _level_and_config(policy, config)
        if level is EnforcementLevel.DISABLED:
            continue

        def reporter(default_urn: str, policy: Policy = policy, level: EnforcementLevel = level):
            def report(message: str, urn: Optional[str] = None) -> None:
                violations.append(PolicyViolation(policy.name, level.value, urn or default_urn, message))
            return report

        if isinstance(policy, ResourceValidationPolicy):
            for r in resources:
                args = ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, None, props)
                for validate in _validators(policy.validate):
                    validate(args, reporter(r.urn))
        elif isinstance(policy, StackValidationPolicy):
            for validate in _validators(policy.validate):
                validate(StackValidationArgs(resources, props), reporter(""))
        else:
            raise PolicyConfigError(f"{policy.name}: not a resource or stack validation policy")
    return sorted(violations, key=lambda v: (v.policy, v.urn, v.message))
