"""The error contract for stack configuration: one line per problem, naming the key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.model.common import GCP_KEYS, PROJECT_NAMESPACE


@dataclass(frozen=True)
class Problem:
    key: str  # full config key path, e.g. pathways:slices[0].tpu
    message: str  # the bad value and what would be valid

    def __str__(self) -> str:
        return f"{self.key}: {self.message}"


class ConfigError(ValueError):
    """Invalid stack configuration. ``str()`` is one line per problem, ready to print."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def config_key(loc: tuple[Any, ...]) -> str:
    """('slices', 0, 'tpu') -> pathways:slices[0].tpu; ('zone',) -> gcp:zone."""
    if not loc:
        return f"{PROJECT_NAMESPACE}:"
    head, *rest = loc
    out = f"gcp:{head}" if head in GCP_KEYS else f"{PROJECT_NAMESPACE}:{head}"
    for part in rest:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out
