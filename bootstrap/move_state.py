"""Move the bootstrap's own state from the operator's machine into the state bucket it made (#75.6).

The bootstrap's first run cannot keep its state in the bucket it is about to make, so it starts in a local
backend (`file://~/.pulumi-bootstrap`, bootstrap/README.md). Once the bucket exists, one command moves it there:

    python -m bootstrap.move_state pathways-prod-123

It exports the stack from the local backend, refuses when the bucket already holds a bootstrap stack of that name
(nothing is overwritten), creates the stack there with the same passphrase secrets provider, imports the export,
and reads it back: the same resources, URN for URN, or it says what differs. The local state is left as it was, to
delete once `pulumi -C bootstrap preview` against the bucket shows no change. Pulumi's DIY backend keeps each
project's stacks apart (`.pulumi/stacks/<project>/<stack>.json`, pulumi/pulumi pkg/backend/diy), so the bootstrap's
state (project `pathways-bootstrap`) sits beside the main stacks' (project `pathways`) where no CI identity reaches:
their grants are conditioned on their own stack's paths (components/model/cluster/identities.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import yaml

from bootstrap.program import NAMESPACE, state_bucket_name

BOOTSTRAP_DIR = Path(__file__).resolve().parent
LOCAL_BACKEND = "file://~/.pulumi-bootstrap"


class MoveError(Exception):
    """Why nothing (more) was moved, in one line."""


def state_bucket(stack_file: Path) -> str:
    """The state bucket the bootstrap makes, by the bootstrap's own rule (program.state_bucket_name)."""
    try:
        config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    except yaml.YAMLError as e:
        raise MoveError(f"{stack_file} is not YAML: {str(e).splitlines()[0]}") from None
    values = {k: str(v) for k, v in config.items() if isinstance(v, (str, int))}
    if not values.get("gcp:project") and not values.get(f"{NAMESPACE}:stateBucket"):
        raise MoveError(f"{stack_file}: no gcp:project and no {NAMESPACE}:stateBucket, so no state bucket to move to")
    return state_bucket_name(values)


@dataclass(frozen=True)
class Cli:
    """The Pulumi CLI, run on the bootstrap project against one backend at a time."""

    pulumi: str
    project_dir: Path

    def run(self, backend: str, *args: str) -> str:
        # the bootstrap holds no secrets: its passphrase is empty unless the operator set one (README, "Run it")
        env = {**os.environ, "PULUMI_BACKEND_URL": backend}
        if "PULUMI_CONFIG_PASSPHRASE_FILE" not in env:
            env.setdefault("PULUMI_CONFIG_PASSPHRASE", "")
        try:
            proc = subprocess.run([self.pulumi, "--cwd", str(self.project_dir), "--non-interactive", *args],
                                  capture_output=True, text=True, env=env, timeout=600)
        except OSError as e:
            raise MoveError(f"cannot run {self.pulumi}: {e.strerror} (install the Pulumi CLI, or name it with --pulumi)") from None
        except subprocess.TimeoutExpired:
            raise MoveError(f"pulumi {' '.join(args[:2])} against {backend}: no answer in 600 s") from None
        if proc.returncode != 0:
            raise MoveError(f"pulumi {' '.join(args[:2])} against {backend} failed: {(proc.stderr or proc.stdout).strip()[-600:]}")
        return proc.stdout


def _urns(deployment: dict) -> list[str]:
    return [r["urn"] for r in (deployment.get("deployment") or {}).get("resources") or []]


def move(cli: Cli, stack: str, source: str, target: str) -> list[str]:
    """Export from `source`, import into `target`, read back; the lines to print. Raises MoveError."""
    if source.rstrip("/") == target.rstrip("/"):
        raise MoveError(f"the state is in {target} already: nothing to move")
    listed = json.loads(cli.run(target, "stack", "ls", "--json") or "[]")
    if any(s.get("name", "").split("/")[-1] == stack for s in listed):
        raise MoveError(f"{target} holds a bootstrap stack {stack} already: nothing moved (compare it with "
                        f"`PULUMI_BACKEND_URL={target} pulumi -C bootstrap stack export --stack {stack}` and delete the one you do not keep)")
    with tempfile.TemporaryDirectory() as tmp:
        exported = Path(tmp) / "state.json"
        cli.run(source, "stack", "export", "--stack", stack, "--file", str(exported))
        before = json.loads(exported.read_text())
        if not _urns(before):
            raise MoveError(f"bootstrap stack {stack} in {source} holds no resource: nothing to move (run the bootstrap "
                            "first, or name where its state is with --from)")
        cli.run(target, "stack", "init", stack, "--secrets-provider", "passphrase")
        cli.run(target, "stack", "import", "--stack", stack, "--file", str(exported))
    after = json.loads(cli.run(target, "stack", "export", "--stack", stack))
    if _urns(after) != _urns(before):
        missing = sorted(set(_urns(before)) - set(_urns(after)))
        raise MoveError(f"{target} holds {len(_urns(after))} resources of the {len(_urns(before))} exported; missing: {missing[:5]}")
    return [f"moved bootstrap stack {stack}: {len(_urns(after))} resources, from {source} to {target}",
            f"  from now on: export PULUMI_BACKEND_URL={target}",
            f"  then `pulumi -C bootstrap preview` must show no change; the copy in {source} is left as it was: delete it after"]


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bootstrap.move_state", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("stack", help="the bootstrap stack (the project ID: bootstrap/Pulumi.<stack>.yaml)")
    parser.add_argument("--from", dest="source", default=LOCAL_BACKEND, help=f"where the state is now (default {LOCAL_BACKEND})")
    parser.add_argument("--to", dest="target", help="where it goes (default gs://<the state bucket the bootstrap made>)")
    parser.add_argument("--pulumi", default="pulumi", help="the Pulumi CLI to run (default: pulumi on PATH)")
    parser.add_argument("--project-dir", type=Path, default=BOOTSTRAP_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        stack_file = args.project_dir / f"Pulumi.{args.stack}.yaml"
        if not stack_file.is_file():
            raise MoveError(f"{stack_file} is missing: the stack is the project ID the bootstrap ran for")
        target = args.target or f"gs://{state_bucket(stack_file)}"
        lines = move(Cli(args.pulumi, args.project_dir), args.stack, args.source, target)
    except MoveError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
