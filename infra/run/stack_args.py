"""The namespace a command works in: the stack's, or `--team`'s (one line when the team is not the stack's)."""

from __future__ import annotations

import argparse
from contextvars import ContextVar
from typing import Any

from infra.offline.stackfile import StackFileError


def team_namespace(args: argparse.Namespace, cfg: Any) -> str:
    name = getattr(args, "team", None)
    if name is None:
        return cfg.kubernetes.namespace
    team = cfg.team(name)
    if team is None:
        raise StackFileError(f"--team {name[:60]!r} is not a team of stack {cfg.stack}; valid: {', '.join(t.name for t in cfg.teams) or 'none declared (pathways:teams)'}")
    return team.team_namespace


# How the user ran this command: the installed client (`pathways-run`, from a code folder, the stack file given by
# --config or $PATHWAYS_STACK_CONFIG) or the checkout's module (`python -m infra.run --stack NAME`). The commands
# the CLI prints to run next use the same, so that each works as printed (main sets it).
INVOCATION: ContextVar[tuple[str, str | None]] = ContextVar("INVOCATION", default=("python -m infra.run", None))


def again(command: str, stack: str) -> str:
    """`<prog> <command> <the stack, as given>`: a command to run next, as this one was run."""
    prog, source = INVOCATION.get()
    given = source if source is not None else f"--stack {stack}"
    return f"{prog} {command}" + (f" {given}" if given else "")


def invocation(args: argparse.Namespace, argv0: str) -> tuple[str, str | None]:
    """For INVOCATION: the program as run, and the stack as given (None: --stack, named by the stack; "": the
    environment's stack file)."""
    prog = "pathways-run" if argv0.rsplit("/", 1)[-1] == "pathways-run" else "python -m infra.run"
    if getattr(args, "stack", None):
        return prog, None
    config = getattr(args, "config", None)
    return prog, f"--config {config}" if config is not None else ""
