"""The one composition root: stack config -> validated model -> components -> stack outputs."""

from __future__ import annotations

import pulumi

from components.model.config import StackConfig
from components.model.errors import ConfigError
from infra.config import read_stack_config


class InvalidStackConfig(pulumi.RunError):
    """Bad stack config: Pulumi prints the message (one line per problem) with no traceback."""

    def __init__(self, error: ConfigError):
        self.problems = error.problems
        super().__init__(str(error))


def build(cfg: StackConfig) -> dict[str, object]:
    """Create every resource of the stack; return the stack outputs."""
    outputs: dict[str, object] = {
        "stack": cfg.stack,
        "cacheLocation": cfg.cache_location,
    }
    return outputs


def main() -> None:
    try:
        cfg = read_stack_config()
    except ConfigError as e:
        raise InvalidStackConfig(e) from None
    for name, value in build(cfg).items():
        pulumi.export(name, value)
