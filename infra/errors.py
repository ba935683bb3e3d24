"""The program's error for bad stack config: Pulumi prints its message (one line per problem, naming the key) with
no traceback. Here, below the program and the fleet block that both raise it, so neither imports the other."""

from __future__ import annotations

import pulumi

from components.model.errors import ConfigError


class InvalidStackConfig(pulumi.RunError):
    """Bad stack config: Pulumi prints the message (one line per problem) with no traceback."""

    def __init__(self, error: ConfigError):
        self.problems = error.problems
        super().__init__(str(error))
