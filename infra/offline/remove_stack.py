"""`python -m infra.offline remove-stack NAME`: take a stack out of the repository the way docs/adopting.md's
checklist says (issue #75.1), so that nothing is edited by hand and `make test` stays green:

- stacks/Pulumi.NAME.yaml and policies/config.NAME.json (its policy levels, if any) go;
- its project's bootstrap file lists it no more (the file goes when it set up only this stack);
- the workflows name it no more (infra/offline/workflows.py: previews, the deploy chain closed over it, verify).

Refused, with nothing changed, while a fleet manager's stack file names it as a worker. Cloud resources and GitHub
environments are not touched: the command says what is left to do by hand.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from infra.offline import workflows
from infra.offline.stackfile import PROJECT_ROOT, STACK_NAME, StackFileError, shown


def add_parser(sub) -> None:
    p = sub.add_parser("remove-stack", help="remove a stack: its file, its bootstrap entry, its policy config and its workflow entries",
                       description="Remove stacks/Pulumi.<NAME>.yaml, policies/config.<NAME>.json, the stack's line in its\n"
                                   "project's bootstrap file (the file when it was its only stack) and its entries in the\n"
                                   "pull-request, deploy and verify workflows. docs/adopting.md.",
                       epilog="exit status: 0 removed; 2 refused (nothing changed)", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="the stack's name")
    p.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    p.add_argument("--root", type=Path, default=PROJECT_ROOT, help=argparse.SUPPRESS)


def _bootstrap_files(root: Path, name: str) -> list[Path]:
    out = []
    for path in sorted((root / "bootstrap").glob("Pulumi.*.yaml")):
        if path.name == "Pulumi.yaml":
            continue
        config = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config") or {}
        if name in (config.get("pathways-bootstrap:stacks") or []):
            out.append(path)
    return out


def _workers_of(root: Path, name: str) -> list[str]:
    """The fleet managers whose stack file names this stack as a worker (organization/<project>/<stack>)."""
    found = []
    for path in sorted((root / "stacks").glob("Pulumi.*.yaml")):
        config = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("config") or {}
        fleet = config.get("pathways:fleet") or {}
        if isinstance(fleet, dict) and any(str(w.get("stack", "")).rsplit("/", 1)[-1] == name
                                           for w in fleet.get("workers") or [] if isinstance(w, dict)):
            found.append(path.name[len("Pulumi."):-len(".yaml")])
    return found


def remove_stack_command(args: argparse.Namespace) -> int:
    root: Path = args.root
    name: str = args.name
    if not STACK_NAME.fullmatch(name) or name.startswith("."):
        raise StackFileError(f"{name[:60]!r} is not a stack name")
    stack_file = root / "stacks" / f"Pulumi.{name}.yaml"
    if not stack_file.is_file() or stack_file.is_symlink():
        raise StackFileError(f"{shown(stack_file)} is not a stack file of this repository; nothing removed")
    managers = _workers_of(root, name)
    if managers:
        raise StackFileError(f"stack {name} is a worker of fleet manager {', '.join(managers)} (pathways:fleet.workers); "
                             "remove it there first; nothing removed")
    wired = workflows.read(root)  # a workflow the tools cannot read refuses before anything changes
    boots = _bootstrap_files(root, name)
    policy = root / "policies" / f"config.{name}.json"
    plan = [f"delete stacks/Pulumi.{name}.yaml"]
    if policy.exists():
        plan.append(f"delete policies/config.{name}.json")
    for boot in boots:
        stacks = (yaml.safe_load(boot.read_text(encoding="utf-8"))["config"].get("pathways-bootstrap:stacks") or [])
        plan.append(f"delete bootstrap/{boot.name} (it set up only {name})" if stacks == [name] else f"take {name} out of bootstrap/{boot.name}")
    named = [f for f, lst in ((workflows.PULL_REQUEST, wired.previews), (workflows.DEPLOY, wired.deploys),
                              (workflows.VERIFY, wired.verifies)) if name in lst]
    plan += [f"take {name} out of .github/workflows/{f}" for f in named]
    out = sys.stdout.write
    if args.dry_run:
        out("would " + "\nwould ".join(plan) + "\n")
        return 0
    workflows.remove(root, name)
    for boot in boots:
        text = boot.read_text(encoding="utf-8")
        stacks = yaml.safe_load(text)["config"].get("pathways-bootstrap:stacks") or []
        if stacks == [name]:
            boot.unlink()
            continue
        kept = re.sub(rf"\n(\s+)- {re.escape(name)}[ \t]*(?=\n|$)", "", text, count=1)
        if (yaml.safe_load(kept)["config"].get("pathways-bootstrap:stacks") or []) != [s for s in stacks if s != name]:
            raise StackFileError(f"bootstrap/{boot.name}: its stacks list is not one item a line; take {name} out by hand")
        boot.write_text(kept, encoding="utf-8")
    if policy.exists():
        policy.unlink()
    stack_file.unlink()
    done = [line.replace("delete ", "deleted ", 1) if line.startswith("delete ") else line.replace("take ", "took ", 1) for line in plan]
    out("".join(f"{line}\n" for line in done))
    out(f"left to do by hand: `pulumi destroy -s {name}` first if it was ever deployed (its resources are untouched, and "
        f"its state stays in the state bucket); delete the GitHub environments {name}, {name}-preview and "
        f"{name}-pull-request; run `make test`\n")
    return 0
