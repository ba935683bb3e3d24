"""Offline tools: preview the stack and render its Kubernetes objects with no CLI and no cloud.

    python -m infra.offline plan   (--stack NAME | --config FILE) [--json]
    python -m infra.offline render (--stack NAME | --config FILE) --out DIR

`plan` also runs the policy pack (policies/) over the recorded resources, as
`pulumi preview --policy-pack policies` would.

Exit status: 0 fine, 1 a mandatory policy failed, 2 invalid config, stack file or policy config
(one line per problem, no traceback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .critical_path import critical_path
from .engine import Plan, UnsupportedSdk, run
from .policy_runner import PolicyConfigError, PolicyViolation, load_policy_config, run_policies, stack_policy_config
from .report import render_text
from .stackfile import StackFileError, load_config, stack_name_for, stack_names, stack_path

EXIT_POLICY = 1
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
            p.add_argument(
                "--policy-config", type=Path,
                help="policy pack config JSON (as --policy-pack-config); default policies/config.<stack>.json if present",
            )
        else:
            p.add_argument("--out", type=Path, required=True, help="directory for the YAML files")
    return parser


_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # what Pulumi accepts as a stack name


def _plan(args: argparse.Namespace) -> Plan:
    from infra.program import InvalidStackConfig

    if args.stack is not None and (not _STACK_NAME.fullmatch(args.stack) or args.stack.startswith(".")):
        raise StackFileError(f"--stack {args.stack[:60]!r} is not a stack name; use letters, digits, '-', '_', '.' (stacks: {', '.join(stack_names())})")
    path = stack_path(args.stack) if args.stack else args.config
    stack = args.stack or stack_name_for(path)
    config, secret_keys = load_config(path)
    try:
        return run(config, stack, secret_keys)
    except InvalidStackConfig as e:
        raise StackFileError(str(e)) from None


def _policies(plan: Plan, config_path: Path | None) -> list[PolicyViolation]:
    from policies.rules import ALL_POLICIES

    return run_policies(plan, ALL_POLICIES, load_policy_config(config_path or stack_policy_config(plan.stack)))


def _violations_text(violations: list[PolicyViolation]) -> str:
    from policies.rules import ALL_POLICIES

    if not violations:
        return f"Policies: all {len(ALL_POLICIES)} passed (pack pathways-gke)"
    lines = [f"Policy violations ({len(violations)}):"]
    for v in violations:
        where = v.urn.rsplit("::", 1)[-1] if v.urn else "stack"
        lines.append(f"  [{v.enforcement}] {v.policy}  ({where})")
        lines.append(f"      {v.message}")
    return "\n".join(lines)


def _fail(error: Exception) -> int:
    for line in str(error).splitlines():
        print(f"error: {line}", file=sys.stderr)
    return EXIT_INVALID


def _plan_command(args: argparse.Namespace, plan: Plan) -> int:
    violations = _policies(plan, args.policy_config)
    path = critical_path(plan)
    if args.json:
        doc = {**plan.to_json(), "policyViolations": [v.to_json() for v in violations], "criticalPath": [r.urn for r in path.chain]}
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_text(plan, [path.describe(), _violations_text(violations)]))
    return EXIT_POLICY if any(v.enforcement == "mandatory" for v in violations) else 0


def _render_command(args: argparse.Namespace, plan: Plan) -> int:
    # Imported here: only render needs the admission checkers (jsonschema, kubernetes-validate).
    from .render import RenderError, write_manifests

    try:
        written, notes = write_manifests(plan, args.out)
    except RenderError as e:
        return _fail(e)
    except OSError as e:
        return _fail(ValueError(f"--out {args.out}: cannot write there: {e.strerror}"))
    print(f"wrote {len(written)} Kubernetes object(s) to {args.out}")
    for path in written:
        print(f"  {path}")
    for note in notes:
        print(f"  note: {note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        plan = _plan(args)
        return _plan_command(args, plan) if args.command == "plan" else _render_command(args, plan)
    except (StackFileError, PolicyConfigError, UnsupportedSdk) as e:
        return _fail(e)


if __name__ == "__main__":
    sys.exit(main())
