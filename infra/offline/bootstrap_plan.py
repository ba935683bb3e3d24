"""`python -m infra.offline plan-bootstrap`: the bootstrap of one project (bootstrap/Pulumi.<project>.yaml) under
the same mock runtime as `plan`: what it creates, every grant it makes (who gets which role, where), and the
policy pack's verdict, so the first-day steps are reviewed before anyone holds owner rights. No cloud calls."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Callable

from infra.offline.engine import Plan, run
from infra.offline.report import render_text
from infra.offline.stackfile import PROJECT_ROOT, StackFileError, load_config, shown

BOOTSTRAP_DIR = PROJECT_ROOT / "bootstrap"
EXIT_POLICY = 1

# IAM resource types and where their grant applies.
_GRANT_TYPES = {
    "gcp:projects/iAMMember:IAMMember": "project",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "bucket",
    "gcp:serviceaccount/iAMMember:IAMMember": "service account",
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": "KMS key",
}
# Project-wide grants the pack's rules, written for the stacks, flag but the bootstrap makes on purpose: none since
# the deploy identities create buckets with a custom role of storage.buckets.create alone (security #73.1).
BY_DESIGN: dict[tuple[str, str], str] = {}


def grants_lines(plan: Plan) -> list[str]:
    """Each member's roles, by where they apply, with the condition that narrows them."""
    by_member: dict[str, list[str]] = defaultdict(list)
    for r in plan.resources:
        where = _GRANT_TYPES.get(r.type)
        if where is None:
            continue
        target = {"project": r.input("project"), "bucket": r.input("bucket"), "service account": r.input("serviceAccountId"),
                  "KMS key": r.input("cryptoKeyId")}[where]
        condition = (r.input("condition") or {}).get("title")
        by_member[str(r.input("member"))].append(f"{r.input('role')} on {where} {target}" + (f" (condition: {condition})" if condition else ""))
    lines = [f"Grants ({sum(len(v) for v in by_member.values())}):"]
    for member in sorted(by_member):
        lines.append(f"  {member}")
        lines += [f"    {g}" for g in sorted(by_member[member])]
    return lines


def bootstrap_plan_command(args: argparse.Namespace, policies: Callable, violations_text: Callable) -> int:
    from bootstrap.program import InvalidBootstrapConfig

    path = args.config or BOOTSTRAP_DIR / f"Pulumi.{args.project}.yaml"
    if not path.exists():
        known = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in BOOTSTRAP_DIR.glob("Pulumi.*.yaml"))
        raise StackFileError(f"{shown(path)}: no such bootstrap file (projects with one: {', '.join(known) or 'none'}; "
                             "`python -m infra.offline new-stack` writes one)")
    config, _ = load_config(path)
    project = config.get("gcp:project") or path.stem
    try:
        plan = run(config, project, program_dir=BOOTSTRAP_DIR)
    except InvalidBootstrapConfig as e:
        raise StackFileError(str(e)) from None
    found = policies(plan, None)
    accepted, violations = [], []
    for v in found:
        role = next((r.input("role") for r in plan.resources if r.urn == v.urn), None)
        why = BY_DESIGN.get((v.policy, str(role)))
        (accepted if why else violations).append((v, why))
    mandatory = sum(1 for v, _ in violations if v.enforcement == "mandatory")
    checks = [violations_text([v for v, _ in violations])]
    if accepted:
        checks.append("By design (the pack's stack rules flag it; the bootstrap needs it):\n" +
                      "\n".join(f"  {v.urn.rsplit('::', 1)[-1]}: {why}" for v, why in accepted))
    custom = sum(1 for r in plan.resources if r.custom)
    verdict = (f"Verdict: REFUSED - {mandatory} mandatory policy violation(s) (listed above)" if mandatory else
               "Verdict: OK - the policy pack passes") + f"; {custom} resources to create as a project owner, once"
    summary = [f"Bootstrap of project {project!r} from {shown(path)}: apply it once as a project owner "
               "(bootstrap/README.md); the workflows run every stack after it", "", *grants_lines(plan)]
    text = render_text(plan, summary, checks, verdict=verdict)
    sys.stdout.write(text.replace(f"Plan for stack {plan.stack!r}", f"Plan for the bootstrap of {project!r}", 1))
    return EXIT_POLICY if mandatory else 0
