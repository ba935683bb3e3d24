"""`python -m infra.offline verify`: the live stack checked against what it should be (docs/operating.md).

    python -m infra.offline verify --stack S --live [--json]               # runs `pulumi refresh --preview-only --json`
    python -m infra.offline verify --stack S --refresh-json FILE [--json]  # reads that output (a workflow's step)
    python -m infra.offline verify --stack S --upstream                    # the pins beside their newest releases
    python -m infra.offline verify --stack S --reservations DIR            # blocks, maintenance, future reservations

Drift (infra/verify/drift.py: what changed, old -> new, who, the fix; benign changes filtered by rule) and the
audit (infra/verify/audit.py: the policy pack on the live objects), upstream releases (infra/verify/upstream.py).
Read-only: the refresh is a preview, nothing is
written to the state or the cluster. Exit status: 0 nothing but info; 3 findings (listed); 2 invalid input or a
refresh that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from infra.offline.policy_runner import load_policy_config, stack_policy_config
from infra.offline.stackfile import StackFileError, shown
from infra.verify import audit, drift, reservations, upstream
from infra.verify.findings import report, text

EXIT_FINDINGS = 3


def add_parser(sub: Any) -> None:
    p = sub.add_parser("verify", help="check the live stack: drift since `pulumi up` and the policy pack on the live objects",
                       description=(__doc__ or "").split("\n\n", 2)[2].strip(), formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="exit status: 0 nothing but info; 3 findings; 2 invalid input or a refresh that failed")
    p.add_argument("--stack", required=True, help="the stack (its policies/config.<stack>.json applies to the audit)")
    p.add_argument("--config", type=Path, help="its stack file (default stacks/Pulumi.<stack>.yaml): the options the program declares")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--live", action="store_true", help="run `pulumi refresh --preview-only --json --stack S` (pulumi on PATH or $PULUMI)")
    src.add_argument("--refresh-json", type=Path, metavar="FILE", help="the output of `pulumi refresh --preview-only --json` ('-': stdin)")
    p.add_argument("--reservations", type=Path, metavar="DIR", help=(
        "reservation health from describes in DIR (<group>.block.json, <group>.future.json); with --live, read by gcloud"))
    p.add_argument("--upstream", action="store_true", help=(
        "also compare every pin with the newest release its registry offers (the Go module proxy, PyPI; the network)"))
    p.add_argument("--json", action="store_true", help="{stack, checked, findings: [{severity, area, subject, what, fix}], filtered}")


def _refresh_preview(args: argparse.Namespace) -> dict[str, Any]:
    if args.live:
        pulumi = os.environ.get("PULUMI") or shutil.which("pulumi")
        if not pulumi:
            raise StackFileError("--live runs `pulumi refresh --preview-only --json`: no pulumi on PATH (or set $PULUMI)")
        env = {**os.environ, "PULUMI_SKIP_CONFIRMATIONS": "false"}  # --preview-only refuses the implied --yes
        proc = subprocess.run([pulumi, "refresh", "--preview-only", "--json", "--non-interactive", "--stack", args.stack],
                              capture_output=True, text=True, env=env, timeout=1800)
        raw, where = proc.stdout, "pulumi refresh --preview-only"
        if proc.returncode != 0 and not raw.strip():
            raise StackFileError(f"{where} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    else:
        where = shown(args.refresh_json)
        try:
            raw = sys.stdin.read() if str(args.refresh_json) == "-" else args.refresh_json.read_text(encoding="utf-8")
        except OSError as e:
            raise StackFileError(f"--refresh-json {where}: cannot read it: {e.strerror}") from None
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        raise StackFileError(f"{where}: not the JSON of `pulumi refresh --preview-only --json` ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise StackFileError(f"{where}: no steps; give the output of `pulumi refresh --preview-only --json`")
    errors = [d.get("message", "") for d in doc.get("diagnostics") or [] if d.get("severity") == "error"]
    if errors:
        raise StackFileError(f"{where}: the refresh failed: {' '.join(m.strip() for m in errors)[:800]}")
    return doc


StackFile = tuple[Path, dict[str, Any], tuple[str, ...]]


def _stack_file(args: argparse.Namespace) -> StackFile:
    """The stack file (--config, or stacks/Pulumi.<stack>.yaml): its path, flat config and secret keys."""
    from infra.offline.stackfile import STACK_NAME, load_config, stack_names, stack_path

    if args.config is None and (not STACK_NAME.fullmatch(args.stack) or args.stack.startswith(".")):
        raise StackFileError(f"--stack {args.stack[:60]!r} is not a stack name; use letters, digits, '-', '_', '.' "
                             f"(stacks: {', '.join(stack_names())})")
    path = args.config or stack_path(args.stack)
    config, secret_keys = load_config(path)
    return path, config, tuple(secret_keys)


def _model(stack: str, source: StackFile) -> Any:
    from components.model.config import load
    from infra.offline.stackfile import raw_values

    _, config, secret_keys = source
    return load(raw_values(config), stack, frozenset(secret_keys))


def _declared(stack: str, source: StackFile) -> Any:
    """The stack's offline plan, its charts' objects included: the resource options its program declares."""
    from infra.errors import InvalidStackConfig
    from infra.offline.charts import with_chart_objects
    from infra.offline.engine import run

    path, config, secret_keys = source
    try:
        return with_chart_objects(run(config, stack, secret_keys, stacks_dir=path.parent))
    except InvalidStackConfig as e:
        raise StackFileError(str(e)) from None


ACKNOWLEDGED = Path(__file__).resolve().parents[2] / "policies"


def acknowledged(stack: str, today: str, directory: Path = ACKNOWLEDGED) -> list[dict[str, str]]:
    """policies/verify.<stack>.json: findings a reviewer accepted for a while, [{subject, why, until: YYYY-MM-DD}];
    an entry past its date no longer applies. Reviewed in a pull request, as the policy config is."""
    path = directory / f"verify.{stack}.json"
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise StackFileError(f"{shown(path)}: not JSON ({e})") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and {"subject", "why", "until"} <= set(e) for e in entries):
        raise StackFileError(f"{shown(path)}: a list of {{subject, why, until: YYYY-MM-DD}}, one a finding accepted for a while")
    return [e for e in entries if str(e["until"]) >= today]


def verify_command(args: argparse.Namespace) -> int:
    from policies.rules import ALL_POLICIES

    if not (args.live or args.refresh_json or args.upstream or args.reservations):
        raise StackFileError("verify what? --live (or --refresh-json FILE) for drift, audit and reservations, --reservations DIR, "
                             "--upstream for releases")
    source = _stack_file(args)
    found, filtered, checked = [], {}, []
    if args.live or args.refresh_json:
        preview = _refresh_preview(args)
        found, filtered = drift.findings(preview, args.stack)
        found += audit.findings(preview, args.stack, ALL_POLICIES, load_policy_config(stack_policy_config(args.stack)), _declared(args.stack, source))
        checked += ["drift (pulumi refresh --preview-only)", "audit (the policy pack on the live objects)"]
    model = _model(args.stack, source) if (args.upstream or args.reservations or args.live) else None
    if model is not None and (args.reservations or (args.live and any(g.reservation for g in model.slices))):
        read = reservations.read_files(args.reservations) if args.reservations else reservations.read_live(model)
        found += reservations.findings(model, read, datetime.now(timezone.utc))
        checked.append("reservation and maintenance health")
    if args.upstream:
        found += upstream.findings(model)
        found += upstream.gke_findings(model, upstream.server_config(model) if args.live else None)
        checked.append("upstream releases")
    accepted = acknowledged(args.stack, time.strftime("%Y-%m-%d", time.gmtime()))
    silenced = [f for f in found if any(a["subject"] == f.subject for a in accepted)]
    found = [f for f in found if f not in silenced]
    if args.json:
        doc = {**report(found, args.stack, checked), "filtered": filtered, "acknowledged": [f.to_json() for f in silenced]}
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(text(found, args.stack, checked))
        for rule, n in sorted(filtered.items()):
            print(f"filtered: {n} change(s) by rule {rule} (known benign: docs/operating.md)")
        for f in silenced:
            why = next(a for a in accepted if a["subject"] == f.subject)
            print(f"acknowledged until {why['until']}: {f.subject}: {f.what} ({why['why']}; policies/verify.{args.stack}.json)")
    # upstream news alone (info) is no finding to act on today
    return EXIT_FINDINGS if any(f.severity != "info" for f in found) else 0
