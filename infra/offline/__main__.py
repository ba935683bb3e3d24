"""Offline tools: preview the stack and render its Kubernetes objects with no CLI and no cloud.

    python -m infra.offline plan   (--stack NAME | --config FILE) [--json]
    python -m infra.offline render (--stack NAME | --config FILE) --out DIR

Exit status: 0 fine, 2 invalid config or stack file (one line per problem, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .engine import Plan, run
from .render import RenderError, write_manifests
from .report import render_text
from .stackfile import StackFileError, load_config, stack_name_for, stack_path

EXIT_INVALID = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.offline", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (("plan", "print the resources the stack would create"), ("render", "write the Kubernetes objects as YAML")):
        p = sub.add_parser(name, help=help_)
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
        src.add_argument("--config", type=Path, help="any file in Pulumi's stack-config format")
        if name == "plan":
            p.add_argument("--json", action="store_true", help="machine-readable output")
        else:
            p.add_argument("--out", type=Path, required=True, help="directory for the YAML files")
    return parser


def _plan(args: argparse.Namespace) -> Plan:
    from infra.program import InvalidStackConfig

    path = stack_path(args.stack) if args.stack else args.config
    stack = args.stack or stack_name_for(path)
    config, secret_keys = load_config(path)
    try:
        return run(config, stack, secret_keys)
    except InvalidStackConfig as e:
        raise StackFileError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        plan = _plan(args)
        if args.command == "plan":
            if args.json:
                print(json.dumps(plan.to_json(), indent=2, sort_keys=True))
            else:
                sys.stdout.write(render_text(plan))
            return 0
        written = write_manifests(plan, args.out)
        print(f"wrote {len(written)} Kubernetes object(s) to {args.out}")
        for path in written:
            print(f"  {path}")
        return 0
    except (StackFileError, RenderError) as e:
        for line in str(e).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
