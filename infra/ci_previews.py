"""Which stacks a pull request previews with `pulumi preview` (.github/workflows/pull-request.yml), printed as a
GitHub step output:

    python -m infra.ci_previews dev staging prod      # stacks=["dev", "staging"]

A protected stack's preview identity decrypts its secrets, and a fleet manager's reads and decrypts its workers'
state (their tokens for the manager): the bootstrap lets such an identity serve main's previews only
(bootstrap/program.py takes_pull_request_previews), so a pull request gets no real preview of those stacks; the
offline plan and diff, which every stack gets, are their review. Each stack left out is named, with why, on stderr
(the job's log)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

import yaml
from pydantic import TypeAdapter, ValidationError

from components.model.cluster.identities import pull_request_preview_refusal

ROOT = Path(__file__).resolve().parents[1]


def refusal(stack: str, stacks_dir: Path = ROOT / "stacks") -> Optional[str]:
    """Why this stack's pull requests get no real preview (None: they do), read from its stack file as written."""
    config = (yaml.safe_load((stacks_dir / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")) or {}).get("config") or {}
    fleet = config.get("pathways:fleet") or {}
    return pull_request_preview_refusal(_protected(config.get("pathways:protected", False)),
                                        isinstance(fleet, dict) and fleet.get("role") == "manager")


def _protected(value: object) -> bool:
    """pathways:protected as the stack's model reads it (pydantic's bool: true, "true", "yes", "on", 1 ...), never
    `is True` alone (#75.8: a quoted "true" was protected to the program and previewed here); a value the model
    refuses counts as protected, so nothing is previewed that might be."""
    try:
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        return True


def main(argv: Optional[list[str]] = None, stacks_dir: Path = ROOT / "stacks") -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.ci_previews", description="Which stacks a pull request previews.")
    parser.add_argument("stacks", nargs="+")
    args = parser.parse_args(argv)
    previewed = []
    for stack in args.stacks:
        try:
            why = refusal(stack, stacks_dir)
        except (OSError, yaml.YAMLError) as e:
            print(f"error: stacks/Pulumi.{stack}.yaml cannot be read ({type(e).__name__})", file=sys.stderr)
            return 1
        if why is None:
            previewed.append(stack)
        else:
            print(f"{stack}: no pull-request preview ({why}); its offline plan and diff are in the test job", file=sys.stderr)
    print(f"stacks={json.dumps(previewed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
