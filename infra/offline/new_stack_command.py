"""`python -m infra.offline new-stack`: plan the stack the flags (or an xpk command line) describe, then write
its file and its bootstrap entry; what the plan refuses is refused in the plan's words, and nothing is written."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable

import yaml

from components.model.errors import ConfigError, Problem
from infra.offline import workflows
from infra.offline.critical_path import critical_path
from infra.offline.engine import run
from infra.offline.new_stack import (
    BootstrapIds,
    StackSpec,
    bootstrap_text,
    check,
    intended_config,
    policy_config,
    secrets_provider,
    stack_text,
    tpu_value,
)
from infra.offline.stackfile import PROJECT_ROOT, STACK_NAME, StackFileError, config_from_text, raw_values, shown

EXIT_POLICY = 1


def _spec(args: argparse.Namespace) -> tuple[StackSpec, list[str], list[str], list[str], "str | None"]:
    """(the stack, translated, already so, not translated, project number) from the flags and any xpk line."""
    translated: list[str] = []
    already: list[str] = []
    untranslated: list[str] = []
    number = args.project_number
    if (args.gcluster_deployment or args.gcluster_job) and not args.from_gcluster:
        raise ConfigError([Problem("new-stack", "--gcluster-deployment and --gcluster-job go with --from-gcluster BLUEPRINT")])
    if args.from_xpk:
        from infra.offline.xpk_flags import translate

        t = translate(args.from_xpk, args.name)
        spec, translated, already, untranslated = t.spec, t.translated, t.already, t.untranslated
        number = number or t.project_number
    elif args.from_gcluster:
        from infra.offline import gcluster

        g = gcluster.translate(args.from_gcluster, args.gcluster_deployment, args.name)
        spec, translated, already, untranslated = g.spec, g.translated, g.already, g.untranslated
    else:
        missing = [flag for flag, value in (("--project", args.project), ("--zone", args.zone), ("--tpu", args.tpu)) if not value]
        if not args.name:
            missing.insert(0, "NAME")
        if missing:
            raise ConfigError([Problem("new-stack", f"missing {', '.join(missing)} (or give --from-xpk 'xpk cluster create ...' "
                                                    "or --from-gcluster BLUEPRINT)")])
        spec = StackSpec(name=args.name, project=args.project, zone=args.zone, tpu=tpu_value(args.tpu))
    # the flags given here win over the xpk line's
    for attr, flag, value in (("name", "NAME", args.name), ("project", "--project", args.project), ("zone", "--zone", args.zone),
                              ("slices", "--slices", args.slices), ("slice_name", "--slice-name", args.slice_name),
                              ("pathways_version", "--pathways-version", args.pathways_version)):
        if value is not None:
            if (args.from_xpk or args.from_gcluster) and getattr(spec, attr) not in ("", None, value) and attr not in ("slice_name", "pathways_version"):
                translated.append(f"{flag} {value} given here, in place of the {'xpk line' if args.from_xpk else 'blueprint'}'s {getattr(spec, attr)}")
            setattr(spec, attr, value)
    if args.tpu:
        spec.tpu = tpu_value(args.tpu)
    if args.spot or args.flex_start or args.reservation:
        spec.capacity = "spot" if args.spot else "flex-start" if args.flex_start else "reservation"
        spec.reservation = args.reservation
    missing = [flag for flag, value in (("NAME", spec.name), ("--project", spec.project), ("--zone", spec.zone)) if not value]
    if missing:
        where = "xpk line" if args.from_xpk else "blueprint (nor its deployment file)"
        raise ConfigError([Problem("new-stack", f"the {where} gives no {', '.join(missing)}: add {' '.join(missing)} here")])
    for line in args.gcluster_job:  # after the flags: a job runs on the group they settle
        from infra.offline import gcluster

        workload, done, same, not_done = gcluster.job(line, spec)
        spec.workloads.append(workload)
        translated += done
        already += same
        untranslated += not_done
    return spec, translated, already, untranslated, number


def new_stack_command(args: argparse.Namespace, policies: Callable, verdict_line: Callable) -> int:
    from components.model.config import load
    from infra.errors import InvalidStackConfig

    spec, translated, already, untranslated, number = _spec(args)
    spec.protected = bool(args.protected)
    if not STACK_NAME.fullmatch(spec.name) or spec.name.startswith("."):
        raise StackFileError(f"{spec.name[:60]!r} is not a stack name; use letters, digits, '-', '_', '.'")
    check(spec)
    path = args.stacks_dir / f"Pulumi.{spec.name}.yaml"
    policy_path = args.root / "policies" / f"config.{spec.name}.json"
    if spec.protected and (policy_path.exists() or policy_path.is_symlink()):
        raise StackFileError(f"{shown(policy_path)} exists: new-stack writes a new stack's policy config only")
    for target in (path, args.bootstrap_dir / f"Pulumi.{spec.project}.yaml"):
        if target.is_symlink():  # a dangling one too, which exists() does not see (security #73.13)
            raise StackFileError(f"{shown(target)} is a symbolic link: new-stack writes regular files only; remove the link")
    if path.exists():
        raise StackFileError(f"{shown(path)} exists: new-stack writes new stacks only (edit that file, or pick another name)")
    if args.wire_workflows:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", spec.name):
            raise StackFileError(f"{spec.name!r}: a GitHub Actions job is named after the stack, and job IDs are letters, digits, "
                                 "'-' and '_' from a letter or '_'; pick another name or wire the workflows by hand")
        workflows.read(args.root)  # a workflow the tools cannot edit refuses before anything is written
    text = stack_text(spec)
    document = yaml.safe_load(text) or {}
    expected_keys = {"config", *(["secretsprovider"] if spec.protected else [])}
    # a value that made text of its own (a key of the config, or one beside it): refuse rather than write it (#73.5)
    if document.get("config") != intended_config(spec) or set(document) != expected_keys or (
            spec.protected and document.get("secretsprovider") != secrets_provider(spec)):
        raise StackFileError(f"{shown(path)}: the values given would write another file than they say (a value with YAML in "
                             "it); nothing written")
    config, secrets = config_from_text(text, path)
    try:
        plan = run(config, spec.name, secrets, stacks_dir=args.stacks_dir)
    except InvalidStackConfig as e:
        raise StackFileError(str(e)) from None
    model = load(raw_values(config), spec.name, frozenset(secrets))
    if spec.protected:  # judged with the policy config it will have
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "config.json").write_text(policy_config(spec))
            violations = policies(plan, Path(tmp) / "config.json")
    else:
        violations = policies(plan, None)
    verdict = verdict_line(plan, violations, critical_path(plan, model.cluster.node_pool_concurrency))
    refused = any(v.enforcement == "mandatory" for v in violations)
    bootstrap_path = args.bootstrap_dir / f"Pulumi.{spec.project}.yaml"
    ids = BootstrapIds(args.repository, args.repository_id, args.repository_owner_id, number)
    boot, todo = bootstrap_text(bootstrap_path, spec.project, spec.name, ids)
    out = sys.stdout.write
    source = "xpk flags" if args.from_xpk else "Cluster Toolkit settings" if args.from_gcluster else "flags"
    for title, lines in (("translated", translated), ("already so here", already), ("not translated", untranslated)):
        if lines:
            out(f"{source} {title}:\n" + "".join(f"  {line}\n" for line in lines))
    if refused:
        for v in violations:
            if v.enforcement == "mandatory":
                out(f"  [{v.enforcement}] {v.policy}: {v.message}\n")
        out(f"{verdict}\nnothing written\n")
        return EXIT_POLICY
    if args.dry_run:
        out(f"--- {shown(path)}\n{text}--- {shown(bootstrap_path)}\n{boot}")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_new(path, text)
        bootstrap_path.parent.mkdir(parents=True, exist_ok=True)
        _replace(bootstrap_path, boot)
        if spec.protected:
            policy_path.parent.mkdir(parents=True, exist_ok=True)
            _write_new(policy_path, policy_config(spec))
            out(f"wrote {_rel(policy_path)}\n")
        out(f"wrote {_rel(path)}\n{'wrote' if not todo else 'wrote (to finish)'} {_rel(bootstrap_path)}\n")
        if args.wire_workflows:
            for name in workflows.add(args.root, spec.name):
                out(f"wrote .github/workflows/{name} (stack {spec.name} added)\n")
    out(f"{verdict}\n")
    if todo:
        out("to fill in before the bootstrap can run: " + "; ".join(todo) + "\n")
    out(f"next: make plan STACK={spec.name}; make plan-bootstrap PROJECT={spec.project}; docs/adopting.md, 'Add an environment'\n")
    return 0


def _write_new(path: Path, text: str) -> None:
    """A new file, never through a link and never over a file that appeared meanwhile (O_EXCL, O_NOFOLLOW)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise StackFileError(f"{shown(path)} exists: new-stack writes new stacks only") from None
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _replace(path: Path, text: str) -> None:
    """The bootstrap file, new or updated: written beside it and renamed over it (a rename replaces a link, never
    writes through one; new_stack_command refused links before)."""
    tmp = path.with_name(f".{path.name}.new")
    if tmp.is_symlink() or tmp.exists():
        raise StackFileError(f"{shown(tmp)} is in the way (a link, or an earlier run's leftover): remove it")
    _write_new(tmp, text)
    os.replace(tmp, path)


def _rel(path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return shown(path)
