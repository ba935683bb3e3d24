"""The namespace a command works in: the stack's, or `--team`'s (one line when the team is not the stack's)."""

from __future__ import annotations

import argparse
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
