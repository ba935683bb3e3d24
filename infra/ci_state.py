"""Where a CI job finds a stack's state, printed as GitHub step outputs (.github/workflows/pulumi-stack.yml):

    python -m infra.ci_state gs://<state bucket> <stack>            # the preview job
    python -m infra.ci_state --deploy gs://<state bucket> <stack>   # the up job

- `secrets-provider`: the stack file's `secretsprovider` (stacks/Pulumi.<stack>.yaml; a passphrase when it names
  none), for `pulumi stack init` when the stack is new: without it the CLI would pick the backend's default and
  rewrite the stack file's settings (pulumi/pulumi pkg/cmd/pulumi/stack/secrets.go, createSecretsManagerForNewStack).
- `exists` and `url` (preview only): whether the stack is in the state bucket yet, and the backend to preview
  against. The preview identity may only read the state (components/model/cluster/identities.py), and a stack with no
  state previews exactly as against an empty backend, so a stack's first preview (a fresh state bucket, a team's
  first pull request) runs against an empty throwaway one and writes nothing; the deploy creates the stack.

The listing is `gcloud storage ls` of the stack's checkpoint (pulumi/pulumi pkg/backend/diy, project-scoped layout:
.pulumi/stacks/<project>/<stack>.json, possibly compressed). "matched no objects" means no stack; any other error
(no permission, no bucket) fails the job rather than preview a deployed stack as if it were new."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]
PULUMI_PROJECT = "pathways"  # Pulumi.yaml's name
NO_MATCH = "matched no objects"


class StateError(RuntimeError):
    pass


def secrets_provider(stack: str, stacks_dir: Path = ROOT / "stacks") -> str:
    doc = yaml.safe_load((stacks_dir / f"Pulumi.{stack}.yaml").read_text()) or {}
    return str(doc.get("secretsprovider") or "passphrase")


def gcloud_ls(url: str) -> tuple[int, str]:
    proc = subprocess.run(["gcloud", "storage", "ls", url], capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def stack_exists(backend: str, stack: str, ls: Callable[[str], tuple[int, str]] = gcloud_ls) -> bool:
    code, text = ls(f"{backend.rstrip('/')}/.pulumi/stacks/{PULUMI_PROJECT}/{stack}.json*")
    if code == 0:
        return True
    if NO_MATCH in text:
        return False
    raise StateError(f"cannot tell whether stack {stack} has state in {backend}: {' '.join(text.split())[:300]}")


def outputs(backend: str, stack: str, deploy: bool, *, ls: Callable[[str], tuple[int, str]] = gcloud_ls,
            empty_dir: Optional[str] = None, stacks_dir: Path = ROOT / "stacks") -> dict[str, str]:
    out = {"secrets-provider": secrets_provider(stack, stacks_dir)}
    if deploy:
        return out
    exists = stack_exists(backend, stack, ls)
    if exists:
        return {**out, "exists": "true", "url": backend}
    empty = empty_dir or tempfile.mkdtemp(prefix="pulumi-empty-state-", dir=os.environ.get("RUNNER_TEMP"))
    return {**out, "exists": "false", "url": f"file://{empty}"}


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.ci_state", description="Where a CI job finds a stack's state.")
    parser.add_argument("--deploy", action="store_true", help="the up job: only the secrets provider")
    parser.add_argument("backend", help="the state backend, gs://<bucket>")
    parser.add_argument("stack")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"gs://[a-z0-9][a-z0-9._-]{1,220}", args.backend) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", args.stack):
        parser.error("give gs://<state bucket> and a stack name")
    try:
        for key, value in outputs(args.backend, args.stack, args.deploy).items():
            print(f"{key}={value}")
    except (StateError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
