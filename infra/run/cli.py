"""The command line of `python -m infra.run` (infra/run/__main__.py runs it): its subcommands and flags."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from components.model.workloads.ports import NOTEBOOK_PORT

STACK_CONFIG_ENV = "PATHWAYS_STACK_CONFIG"  # the stack file, when neither --stack nor --config is given

DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DESCRIPTION = "Ad-hoc runs on a stack's cluster: submit, list, logs, delete, describe, why, profile, teams (docs/runs.md)."
# The flags that set a run spec's keys (docs/runs.md lists the spec file's keys; these are a subset).
FLAG_KEYS = {"name": "name", "mode": "mode", "slice_group": "sliceGroup", "slices": "slices", "topology": "topology", "image": "image",
             "priority": "priority", "cpu": "cpu", "memory": "memory", "max_restarts": "maxRestarts", "team": "team"}


def _duration(text: str) -> int:
    """Seconds from 90, 90s, 30m, 2h or 7d."""
    unit = text[-1:] if text[-1:] in DURATION_UNITS else "s"
    number = text[:-1] if text[-1:] in DURATION_UNITS else text
    if not number.isdigit() or int(number) * DURATION_UNITS[unit] > 2**31 - 1:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a duration; valid: seconds, or a number with s, m, h or d (30m, 2h, 7d)")
    return int(number) * DURATION_UNITS[unit]


def _local_port(text: str) -> int:
    if not text.isdigit() or not 1024 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a local port; valid: 1024 to 65535")
    return int(text)


class _OneLineParser(argparse.ArgumentParser):
    """A usage error in one line and where the help is, not argparse's usage block (#74.7); exit 2 as before."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message}; see `{self.prog} --help`\n")


def parser() -> argparse.ArgumentParser:
    # the installed client's command, or the checkout's module (infra/run/stack_args.py invocation)
    prog = "pathways-run" if Path(sys.argv[0]).name == "pathways-run" else "python -m infra.run"
    parser = _OneLineParser(prog=prog, description=DESCRIPTION,
                            epilog="Each subcommand has --help. docs/runs.md walks through a session.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = {
        "submit": "validate a run spec with the stack's rules and create its JobSet",
        "list": "the stack's JobSets, declared and ad hoc, with Kueue's state and place in line",
        "logs": "the head's program output (batch: jax-program; interactive: the IFRT proxy)",
        "delete": "delete an ad-hoc run (or --all of them), its Jobs and pods (never a declared workload)",
        "describe": "write what support needs about a run into one YAML file",
        "why": "the one reason a run (or a declared workload) is not running, or why it ended, its evidence and the fix",
        "profile": "capture a profile of a running run into the stack's artifacts bucket (pathwaysutils' profiler server)",
        "notebook": "forward a notebook run's JupyterLab to this machine (kubectl port-forward)",
        "notebook-image": "the notebook image --notebook uses by default for this stack, and the command that builds it",
        "teams": "each team's chip-hours this month (the stack's usage record) against its budget: used, left, spent",
    }
    for name, help_ in commands.items():
        p = sub.add_parser(name, help=help_, description=help_)
        # neither: $PATHWAYS_STACK_CONFIG (the installed client, run from a code folder: docs/runs.md)
        src = p.add_mutually_exclusive_group()
        src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<NAME>.yaml of the infrastructure checkout")
        src.add_argument("--config", type=Path, help=f"any file in Pulumi's stack-config format (default: ${STACK_CONFIG_ENV})")
        p.add_argument("--kubeconfig", help="kubeconfig file (default: kubectl's: $KUBECONFIG or ~/.kube/config)")
        p.add_argument("--context", help="kubeconfig context (default: the current one)")
        if name == "teams":
            p.add_argument("--team", help="only this team's line (a team's submitters may read their own team's only)")
        elif name != "notebook-image":
            p.add_argument("--team", help="a team of pathways:teams: its namespace and queue (default: the stack's own)")
        if name == "submit":
            p.add_argument("--spec", type=Path, help="a YAML run spec (keys in docs/runs.md); flags override its keys")
            p.add_argument("--name", help="run name (DNS label, at most 22 characters)")
            p.add_argument("--mode", help="batch (default) or interactive (a head for a notebook)")
            p.add_argument("--slice-group", help="slice group (required when the stack has several)")
            p.add_argument("--slices", type=int, help="slices (default: all of the group; one on a pool set; a team's run at most its queue's max in the plan's teams table)")
            p.add_argument("--topology", help=(
                "on a pool set (slices[].subBlocks): each slice's topology, a sub-slice (2x2x1 to 2x4x4) or a super-slice "
                "of whole cubes (4x4x4, 4x4x8, ...); docs/dynamic-slicing.md"))
            p.add_argument("--image", help="program image, pinned (tag or digest)")
            p.add_argument("--priority", help="training, interactive or experiment (default: runs.priority)")
            p.add_argument("--cpu", help="program container CPU")
            p.add_argument("--memory", help="program container memory")
            p.add_argument("--max-restarts", type=int, help="JobSet restarts after a failure")
            p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="program env (repeatable)")
            p.add_argument("--mount", action="append", default=[], metavar="PATH=SOURCE", help=(
                "mount gs://BUCKET (one of runs.buckets; with --team, of the team's buckets) or a file system by name (one of "
                "runs.fileSystems; not with --team) at PATH, read-only; "
                "add :rw to write, e.g. /ckpt=gs://my-ckpts:rw (repeatable)"))
            p.add_argument("--notebook", action="store_true", help=(
                f"run JupyterLab as the program, on the head's loopback port {NOTEBOOK_PORT} (JAX reaches the run's own "
                "proxy): open it with `notebook`. Without --image: the stack's notebook image (notebook-image)"))
            p.add_argument("--ttl", type=_duration, help=(
                "remove the run (JobSet, pods, logs) this long after it finishes: 30m, 2h, 7d (default: runs.ttlSecondsAfterFinished)"))
            p.add_argument("--time-limit", type=_duration, help=(
                "stop the run after it has run this long (Kueue's maximum execution time, admitted time summed over "
                "restarts): 30m, 2h, 7d; spec key timeLimitSeconds"))
            p.add_argument("--idle-stop", type=_duration, help=(
                "with --notebook: stop it after this long idle, freeing the slice: 30m, 2h; 0 never "
                "(default: runs.notebookIdleStopSeconds)"))
            p.add_argument("--save-to", metavar="gs://BUCKET", help=(
                "with --notebook: where its files go when it stops (idle, deleted, preempted): gs://BUCKET/notebooks/<run>/; "
                "default: the first bucket it mounts :rw, else the first its namespace may write; none: keep nothing"))
            p.add_argument("--workdir", type=Path, help=(
                "ship this directory's code with the run (no image build): unpacked into /workdir, where the command starts; "
                "its .gitignore and --exclude leave files out. Without --image: the stack's run image (notebook-image)"))
            p.add_argument("--exclude", action="append", default=[], metavar="PATTERN", help="with --workdir: a .gitignore-style pattern to leave out (repeatable)")
            p.add_argument("--dry-run", action="store_true", help="print the JobSet (and what --workdir ships), create nothing")
            p.add_argument("command_", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the program's command")
        elif name == "list":
            p.add_argument("--json", action="store_true", help="one JSON object per run")
        elif name == "notebook-image":
            pass
        elif name == "teams":
            p.add_argument("--month", help="YYYY-MM (default: this month, UTC)")
            p.add_argument("--json", action="store_true", help="one JSON object per team")
        elif name == "profile":
            p.add_argument("run", help="run or declared workload name")
            p.add_argument("--duration", type=_duration, default=10, help="how long to trace: 10s (default), 2m")
            p.add_argument("--token-file", type=Path, help="a declared workload's profiler token (its <name>-profiling-token Secret)")
        elif name == "why":
            which = p.add_mutually_exclusive_group(required=True)
            which.add_argument("run", nargs="?", help="run or declared workload name")
            which.add_argument("--file", type=Path, help="a JobSet made by hand: would the cluster create it (a server-side dry run)?")
            p.add_argument("-v", "--verbose", action="store_true", help="the detail behind the reason")
            p.add_argument("--json", action="store_true", help="one JSON object: reason, summary, evidence, fix, detail")
        elif name == "delete":
            which = p.add_mutually_exclusive_group(required=True)
            which.add_argument("run", nargs="?", help="run name")
            which.add_argument("--all", action="store_true", help="every ad-hoc run in the stack's namespace (before pulumi destroy)")
        else:
            p.add_argument("run", help="run name")
            if name == "logs":
                p.add_argument("--follow", "-f", action="store_true", help="stream until the container ends")
                p.add_argument("--worker", type=int, metavar="N", help="a worker's Pathways server log: slice N (0-based), its first host")
                p.add_argument("--host", type=int, default=0, metavar="H", help="with --worker: host H of that slice (default 0)")
                p.add_argument("--previous", action="store_true", help="the container's last attempt (before its restart)")
                p.add_argument("--cloud", action="store_true", help=(
                    "print the Cloud Logging query and console link for the run's pods instead (kept after `delete`: "
                    "GKE sends container logs to Cloud Logging)"))
            if name == "describe":
                p.add_argument("--out", type=Path, help="file to write (default run-<name>-<time>.yaml)")
            if name == "notebook":
                p.add_argument("--port", type=_local_port, default=NOTEBOOK_PORT, help=f"local port, 1024-65535 (default {NOTEBOOK_PORT})")
    return parser
