"""Offline tools: preview the stack, see what a change does, render its Kubernetes objects; no CLI, no cloud.

    python -m infra.offline plan   (--stack NAME | --config FILE) [--json] [--verbose]
    python -m infra.offline diff   (--stack NAME | --config FILE) (--against GIT_REF | --before FILE) [--json]
    python -m infra.offline render (--stack NAME | --config FILE) --out DIR
    python -m infra.offline plan-bootstrap (--project P | --config FILE)
    python -m infra.offline new-stack NAME --project P --zone Z --tpu TYPE [--slices N] [--spot | --flex-start | --reservation R]
    python -m infra.offline new-stack [NAME] --from-xpk 'xpk cluster create-pathways --cluster ... --tpu-type ...'

`plan` also runs the policy pack (policies/) over the recorded resources, as
`pulumi preview --policy-pack policies` would.

Exit status: 0 fine, 1 a mandatory policy failed (plan) or the protected-stack guard refused the change
(diff), 2 invalid config, stack file, git ref or policy config (one line per problem, no traceback).
"""

from __future__ import annotations

import gc

if __name__ == "__main__":
    # A one-shot command. The collector's full passes (generation 2) scan every object alive, and as the provider
    # SDKs' ~1,000 generated modules load they ran again and again over a growing heap: a third of a plan of the dev
    # stack (12.6 s -> 7.6 s for the largest stack the bounds allow). The young generations are still collected, so
    # peak memory is unchanged (377 MB for that stack, either way); what is left is freed by the exit. The process
    # ends with os._exit below, after flushing, for the same reason: the interpreter's teardown of those modules
    # took a second more (docs/performance.md, "Plan speed").
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1_000_000)

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from components.model.errors import ConfigError
from infra.offline.charts import ChartError, with_chart_objects
from infra.offline.critical_path import critical_path
from infra.offline.engine import Plan, UnsupportedSdk, run
from infra.offline.policy_runner import PolicyConfigError, PolicyViolation, load_policy_config, run_policies, stack_policy_config
from infra.offline.report import render_text
from infra.offline.stackfile import (
    PROJECT_ROOT,
    STACK_NAME,
    STACKS_DIR,
    StackFileError,
    config_from_text,
    load_config,
    raw_values,
    shown,
    stack_name_for,
    stack_names,
    stack_path,
)
from infra.offline.workflows import WorkflowError

if TYPE_CHECKING:
    from components.model.config import StackConfig
    from infra.offline.diff import Capacity

EXIT_POLICY = 1
EXIT_INVALID = 2


_EXIT_CODES = {
    "plan": "exit status: 0 planned and every mandatory policy passed; 1 a mandatory policy failed;\n"
            "             2 invalid config, stack file or policy config (one 'error:' line per problem on stderr)",
    "diff": "exit status: 0 the change is allowed; 1 the guard refuses it (a change the real pulumi up fails on,\n"
            "             such as a replacement under the resource's own name; in a protected stack, replacements\n"
            "             or deletions not listed in pathways:allowDisruption); 2 invalid config, stack file or git ref",
    "render": "exit status: 0 written; 2 invalid config or stack file, a manifest the admission checks reject,\n"
              "             or an --out directory that cannot be written",
    "plan-bootstrap": "exit status: 0 planned and every mandatory policy passed; 1 a mandatory policy failed;\n"
                      "             2 invalid bootstrap config or a missing bootstrap file",
    "new-stack": "exit status: 0 written (the stack plans with Verdict: OK); 1 a mandatory policy refuses it; 2 what plan\n"
                 "             refuses, a stack file that exists, or flags that say no stack (nothing is written)",
}
_DESCRIPTIONS = {
    "plan": "Run the Pulumi program under the mock runtime and print what `pulumi up` would create: a summary\n"
            "(slice groups, CPU pools, buckets, workloads, estimated cost), the outputs in full, the deploy-time\n"
            "estimate, the policy pack's verdict, then the resource tree. Same program, same policies as\n"
            "`pulumi preview --policy-pack policies`; no cloud calls.",
    "diff": "Compare this stack file with another revision of it and say what each change creates, updates,\n"
            "replaces or deletes under the providers' replacement rules, and what it interrupts.",
    "render": "Write the stack's Kubernetes objects (JobSets, queues, guardrails) as YAML after the admission\n"
              "checks (JobSet and Kueue CRD schemas, strict Kubernetes schemas, the rules schemas miss).",
}
_JSON_DOCS = {
    "plan": "--json: {summary, deployTime, criticalPath, policyViolations, resources, outputs}; fields in\n"
            "README.md, 'Reading a plan'.",
    "diff": "--json: {stack, against, changes, guard}; fields in README.md, 'Changing a running stack'.",
    "render": "Writes one YAML file per object and .pathways-render.json (the list) under --out.",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m infra.offline", description=(__doc__ or "").split("\n")[0],
                                     epilog="Each subcommand has --help with its exit codes and JSON.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_ in (
        ("plan", "print the resources the stack would create"),
        ("diff", "what a config change creates, updates, replaces or deletes, and what it interrupts"),
        ("render", "write the Kubernetes objects as YAML"),
    ):
        p = sub.add_parser(name, help=help_, description=_DESCRIPTIONS[name], epilog=f"{_JSON_DOCS[name]}\n\n{_EXIT_CODES[name]}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml")
        src.add_argument("--config", type=Path, help="any file in Pulumi's stack-config format")
        if name == "plan":
            p.add_argument("--json", action="store_true", help="machine-readable output (see below)")
            p.add_argument("--verbose", action="store_true", help="show every key input of every resource in the tree")
            p.add_argument(
                "--policy-config", type=Path,
                help="policy pack config JSON (as --policy-pack-config); default policies/config.<stack>.json if present",
            )
        elif name == "diff":
            before = p.add_mutually_exclusive_group(required=True)
            before.add_argument("--against", metavar="GIT_REF", help="compare with the stack file at this git revision (e.g. origin/main, HEAD~1)")
            before.add_argument("--before", type=Path, metavar="FILE", help="compare with this stack file")
            p.add_argument("--json", action="store_true", help="machine-readable output")
        else:
            p.add_argument("--out", type=Path, required=True, help="directory for the YAML files")
    _new_stack_parser(sub)
    boot = sub.add_parser("plan-bootstrap", help="preview a project's bootstrap: its resources, grants and the policy verdict",
                          description="The bootstrap of one project (bootstrap/Pulumi.<PROJECT>.yaml) under the mock runtime:\n"
                                      "what it creates, every grant it makes, the policy pack's verdict. No cloud calls.",
                          epilog=_EXIT_CODES["plan-bootstrap"],
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    src = boot.add_mutually_exclusive_group(required=True)
    src.add_argument("--project", help="reads bootstrap/Pulumi.<PROJECT>.yaml")
    src.add_argument("--config", type=Path, help="a bootstrap file")
    from infra.offline.preflight import add_parser as add_preflight
    from infra.offline.remove_stack import add_parser as add_remove_stack
    from infra.verify.command import add_parser as add_verify

    add_verify(sub)
    add_preflight(sub)
    add_remove_stack(sub)
    return parser


def _new_stack_parser(sub) -> None:
    p = sub.add_parser("new-stack", help="write a new stack file and its bootstrap entry (from flags, an xpk line or a Cluster Toolkit blueprint)",
                       description="Write stacks/Pulumi.<NAME>.yaml, commented, and add the stack to its project's bootstrap\n"
                                   "file (bootstrap/Pulumi.<PROJECT>.yaml, made when missing), after planning it: what plan\n"
                                   "refuses, new-stack refuses in the same words and writes nothing. docs/adopting.md.",
                       epilog=_EXIT_CODES["new-stack"], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="the stack's name (default with --from-xpk: its --cluster; with --from-gcluster: "
                   "the blueprint's deployment_name)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--from-xpk", metavar="COMMAND_LINE", help="an `xpk cluster create[-pathways] ...` line to translate; "
                        "flags below override its values")
    source.add_argument("--from-gcluster", metavar="BLUEPRINT", type=Path, help=(
        "a Cluster Toolkit GKE TPU blueprint (gcluster deploy) to translate (docs/from-cluster-toolkit.md); flags below "
        "override its values"))
    p.add_argument("--gcluster-deployment", metavar="FILE", type=Path, help="with --from-gcluster: its deployment file (gcluster deploy -d)")
    p.add_argument("--gcluster-job", metavar="COMMAND_LINE", action="append", default=[], help=(
        "with --from-gcluster: a `gcluster job submit --pathways ...` line, declared as a workload (repeatable)"))
    p.add_argument("--project", help="GCP project ID")
    p.add_argument("--zone", help="the zone of the slices (the region follows)")
    p.add_argument("--tpu", help="TPU slice type: v6e-16, v5p-128, v5litepod-16, tpu7x-8, or xpk's v6e-4x4")
    p.add_argument("--slices", type=int, help="number of slices (one node pool each; default 1)")
    capacity = p.add_mutually_exclusive_group()
    capacity.add_argument("--reservation", help="consume this reservation (NAME or projects/P/reservations/NAME)")
    capacity.add_argument("--spot", action="store_true", help="Spot VMs")
    capacity.add_argument("--flex-start", action="store_true", help="flex-start (DWS) capacity")
    p.add_argument("--protected", action="store_true", help=(
        "production: pathways:protected, its own Cloud KMS secrets key, a maintenance window and an exclusion that holds "
        "node upgrades, and policies/config.<NAME>.json demanding protection"))
    p.add_argument("--slice-name", help="the slice group's name (default: the TPU family)")
    p.add_argument("--pathways-version", help="Pathways release, jax-<your program's JAX> (default jax-0.9.0)")
    ids = p.add_argument_group("the bootstrap file, when the project has none yet (bootstrap/README.md)")
    ids.add_argument("--repository", help="OWNER/NAME on GitHub (default: the origin remote)")
    ids.add_argument("--repository-id", help="gh api repos/OWNER/NAME --jq .id")
    ids.add_argument("--repository-owner-id", help="gh api repos/OWNER/NAME --jq .owner.id")
    ids.add_argument("--project-number", help="gcloud projects describe PROJECT --format='value(projectNumber)'")
    p.add_argument("--stacks-dir", type=Path, default=STACKS_DIR, help=argparse.SUPPRESS)
    p.add_argument("--bootstrap-dir", type=Path, default=PROJECT_ROOT / "bootstrap", help=argparse.SUPPRESS)
    p.add_argument("--dry-run", action="store_true", help="print the files instead of writing them")
    p.add_argument("--wire-workflows", action="store_true", help=(
        "also add the stack to the workflows: the pull request's previews, the end of the deploy chain and the daily "
        "verify (do it once its bootstrap ran and its GitHub environments exist: a preview needs its identity)"))
    p.add_argument("--root", type=Path, default=PROJECT_ROOT, help=argparse.SUPPRESS)


def _plan(args: argparse.Namespace) -> tuple[Plan, "StackConfig"]:
    """The plan and the validated config model, from one read of the stack file."""
    from components.model.config import load
    from infra.errors import InvalidStackConfig

    if args.stack is not None and (not STACK_NAME.fullmatch(args.stack) or args.stack.startswith(".")):
        raise StackFileError(f"--stack {args.stack[:60]!r} is not a stack name; use letters, digits, '-', '_', '.' (stacks: {', '.join(stack_names())})")
    path = stack_path(args.stack) if args.stack else args.config
    stack = args.stack or stack_name_for(path)
    config, secret_keys = load_config(path)
    try:
        # a fleet manager's workers are the stack files beside its own
        plan = run(config, stack, secret_keys, stacks_dir=path.parent)
    except InvalidStackConfig as e:
        raise StackFileError(str(e)) from None
    # The program accepted these values, so the model the summary and the guard read loads without error.
    return plan, load(raw_values(config), stack, frozenset(secret_keys))


def _policies(plan: Plan, config_path: Path | None) -> list[PolicyViolation]:
    from policies.rules import ALL_POLICIES

    # The pack sees the charts' objects too, as `pulumi preview` hands it the Chart's children.
    return run_policies(with_chart_objects(plan), ALL_POLICIES, load_policy_config(config_path or stack_policy_config(plan.stack)))


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
        # a control character in a message is printed escaped: no raw escape code reaches the terminal
        print(f"error: {line if line.isprintable() else repr(line)[1:-1]}", file=sys.stderr)
    return EXIT_INVALID


def _plan_command(args: argparse.Namespace, plan: Plan, model: "StackConfig") -> int:
    from components.model.config import resolve
    from components.model.cost.summary import stack_summary, summary_text, with_fleet_workers
    from infra.offline.project_quota import project_quota, project_quota_text

    violations = _policies(plan, args.policy_config)
    path = critical_path(plan, model.cluster.node_pool_concurrency)
    from infra.reservation_records import read_records

    summary = with_fleet_workers(stack_summary(resolve(model), read_records(model)), plan.outputs.get("fleet"))
    shared_quota = project_quota(stack_path(args.stack) if args.stack else args.config, model)
    if args.json:
        doc = {**plan.to_json(), "summary": summary, "projectQuota": shared_quota, "deployTime": path.to_json(),
               "policyViolations": [v.to_json() for v in violations], "criticalPath": [r.urn for r in path.chain]}
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        sys.stdout.write(render_text(plan, [*summary_text(summary), *project_quota_text(shared_quota)],
                                     [path.describe(), _violations_text(violations)], verbose=args.verbose,
                                     verdict=_verdict(plan, violations, path)))
    return EXIT_POLICY if any(v.enforcement == "mandatory" for v in violations) else 0


def _verdict(plan: Plan, violations: list[PolicyViolation], path) -> str:
    """One line: would `pulumi up` go ahead, and what to know before it does."""
    mandatory = sum(1 for v in violations if v.enforcement == "mandatory")
    advisory = len(violations) - mandatory
    if mandatory:
        head = f"Verdict: REFUSED - {mandatory} mandatory policy violation(s) (listed above); `pulumi up` with the pack would stop"
    else:
        head = "Verdict: OK - the policy pack passes" + (f" with {advisory} advisory finding(s)" if advisory else "")
    custom = sum(1 for r in plan.resources if r.custom)
    tail = f"; {custom} resources, deploy ~{path.expected:g} min expected"
    return head + tail + ("; see the deploy-time warning" if path.workflow_warning else "")


def _render_command(args: argparse.Namespace, plan: Plan) -> int:
    # Imported here: only render needs the admission checkers (jsonschema, kubernetes-validate).
    from infra.offline.render import RenderError, write_manifests

    try:
        written, notes = write_manifests(plan, args.out)
    except RenderError as e:
        return _fail(e)
    except OSError as e:
        return _fail(ValueError(f"--out {shown(args.out)}: cannot write there: {e.strerror}"))
    print(f"wrote {len(written)} Kubernetes object(s) to {shown(args.out)}")
    for path in written:
        print(f"  {shown(path)}")
    for note in notes:
        print(f"  note: {note}")
    return 0


def _before_config(args: argparse.Namespace, after_path: Path) -> Optional[tuple[dict[str, str], tuple[str, ...]]]:
    """The config to compare with: a file, or the stack file at a git revision (None: absent there)."""
    if args.before is not None:
        return load_config(args.before)
    try:
        rel = after_path.resolve().relative_to(PROJECT_ROOT)
    except ValueError:
        raise StackFileError(f"--against needs a stack file inside the repository; {after_path} is not (use --before FILE)") from None
    if not re.fullmatch(r"[A-Za-z0-9_./~^@{}-]{1,200}", args.against) or args.against.startswith("-"):
        raise StackFileError(f"--against {args.against[:60]!r} is not a git revision")
    proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.against}^{{commit}}"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise StackFileError(f"--against {args.against}: not a git revision here (fetch it first, e.g. git fetch origin main)")
    proc = subprocess.run(["git", "show", f"{args.against}:{rel.as_posix()}"], cwd=PROJECT_ROOT, capture_output=True)
    if proc.returncode != 0:
        return None  # the stack is new in this change: everything is a create
    try:
        text = proc.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise StackFileError(f"{args.against}:{rel}: not UTF-8 text") from None
    return config_from_text(text, Path(f"{args.against}:{rel}"))


def _diff_command(args: argparse.Namespace) -> int:
    from components.model.capacity.reservation_notices import growth_notes
    from components.model.config import load
    from infra.errors import InvalidStackConfig
    from infra.offline.diff import capacity_text, diff, guard, render_text

    path = stack_path(args.stack) if args.stack else args.config
    stack = args.stack or stack_name_for(path)
    after_plan, model = _plan(args)
    before = _before_config(args, path)
    label = f"--against {args.against}" if args.against else f"--before {args.before}"
    before_capacity = None
    was_protected = False
    reservation_notes: list[str] = []
    if before is None:
        before_plan = Plan(stack=stack)
    else:
        try:
            before_plan = run(before[0], stack, before[1], stacks_dir=path.parent)
        except InvalidStackConfig as e:
            raise StackFileError(f"{label}: that config is invalid: {str(e).splitlines()[0]}") from None
        before_model = load(raw_values(before[0]), stack, frozenset(before[1]))
        before_capacity = _capacity(before_model)
        was_protected = before_model.protected
        reservation_notes = growth_notes(before_model.slices, model.slices)
    after_capacity = _capacity(model)
    changes = diff(before_plan, after_plan)
    # protection is judged from the stack as it is and as it will be (#75.2): a change that turns protection off
    # is itself guarded, so one change cannot both drop protection and replace what it protected
    verdict = guard(changes, before_plan, after_plan, model.protected or was_protected, list(model.allow_disruption))
    if args.json:
        print(json.dumps({"stack": stack, "against": args.against or str(args.before), "changes": [c.to_json() for c in changes],
                          "capacity": {"before": before_capacity and before_capacity.__dict__, "after": after_capacity.__dict__},
                          "reservationNotes": reservation_notes,
                          "guard": {"protected": verdict.protected, "ok": verdict.ok, "refusals": verdict.refusals,
                                    "unusedAllowances": verdict.unused_allowances, "suggestions": verdict.suggestions}},
                         indent=2, sort_keys=True))
    else:
        title = f"Changes to stack {stack!r} against {args.against or args.before} (offline, providers' replacement rules; no cloud calls)"
        capacity = "\n".join([capacity_text(before_capacity, after_capacity), *(f"Reservation: {n}" for n in reservation_notes)])
        sys.stdout.write(render_text(changes, verdict, title, capacity))
    return 0 if verdict.ok else EXIT_POLICY


def _capacity(model: "StackConfig") -> "Capacity":
    from components.model.config import resolve
    from components.model.cost import cost
    from infra.offline.diff import Capacity

    stack = resolve(model)
    return Capacity(chips=sum(g.pools * g.tpu.chips for g in stack.slices), hourly=round(cost.estimate(stack).hourly, 2))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "plan-bootstrap":
            from infra.offline.bootstrap_plan import bootstrap_plan_command

            return bootstrap_plan_command(args, _policies, _violations_text)
        if args.command == "new-stack":
            from infra.offline.new_stack_command import new_stack_command

            return new_stack_command(args, _policies, _verdict)
        if args.command == "remove-stack":
            from infra.offline.remove_stack import remove_stack_command

            return remove_stack_command(args)
        if args.command == "diff":
            return _diff_command(args)
        if args.command == "preflight":
            from infra.offline.preflight import command as preflight_command

            return preflight_command(args, _plan)
        if args.command == "verify":
            from infra.verify.command import verify_command

            return verify_command(args)
        plan, model = _plan(args)
        return _plan_command(args, plan, model) if args.command == "plan" else _render_command(args, plan)
    except (StackFileError, PolicyConfigError, UnsupportedSdk, ChartError, ConfigError, WorkflowError) as e:
        return _fail(e)


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
