"""What a run spec may not do beyond the stack's rules (Pulumi-free): a team's run stays at or under its team's
priority, and a run mounts only what its namespace's runs account is granted (runs.buckets in the stack's namespace,
teams[].buckets in a team's, #74.1) and the file systems runs.fileSystems lists."""

from __future__ import annotations

from components.model.errors import Problem
from components.model.stack import StackConfig
from components.model.workloads.runs import RUN_PRIORITIES, team_run_priorities
from components.model.workloads.workload import Workload


def run_team_problems(cfg: StackConfig, workload: Workload) -> list[Problem]:
    """A team's priority is its runs' ceiling (the runs policy holds it server-side too)."""
    if workload.team is None:
        return []
    problems = []
    team = cfg.team(workload.team)
    allowed = team_run_priorities(team.priority) if team is not None else RUN_PRIORITIES
    if workload.priority is not None and workload.priority not in allowed:
        problems.append(Problem("run.priority", (
            f"{workload.priority!r} is above team {workload.team}'s priority {allowed[0]!r}; its runs may take "
            f"{', '.join(allowed)} (pathways:teams[].priority, raised in the stack file by whoever owns the stack)")))
    return problems


def run_mount_problems(cfg: StackConfig, workload: Workload) -> list[Problem]:
    """A run mounts only the buckets runs.buckets (a team's run: its team's buckets) grants its service account and
    the file systems runs.fileSystems lists (security #58.10), and writes only where it may; an undeclared file system
    is storage_checks' to name."""
    assert cfg.runs is not None
    declared = {f.name for f in cfg.storage.file_systems}
    team = cfg.team(workload.team)
    buckets, where = ((team.buckets, f"teams[{cfg.teams.index(team)}].") if team is not None else (cfg.runs.buckets, "runs."))
    kinds = (("bucket", "bucket", {b.name: b for b in buckets}, f"{where}buckets",
              "the bootstrap grants their service account: add it there, then run the bootstrap and pulumi up", "grants"),
             ("fileSystem", "file_system", {f.name: f for f in cfg.runs.file_systems}, "runs.fileSystems",
              "the stack lists for them: add it there and pulumi up", "lists"))
    problems = []
    for j, m in enumerate(workload.mounts):
        if team is not None and m.file_system is not None:
            # a file system's claim is in the stack's namespace, where no team's pod can use it
            problems.append(Problem(f"run.mounts[{j}].fileSystem", (
                f"team {team.name}'s runs mount no file system: its claim is in the stack's namespace "
                f"({cfg.kubernetes.namespace}); mount a bucket of pathways:teams[{cfg.teams.index(team)}].buckets")))
            continue
        for key, field, allowed, listed_key, fix, verb in kinds:
            name = getattr(m, field)
            if name is None or (field == "file_system" and name not in declared):
                continue
            entry = allowed.get(name)
            if entry is None:
                problems.append(Problem(f"run.mounts[{j}].{key}", (
                    f"{name!r} is not in pathways:{listed_key} (listed: {', '.join(allowed) or 'none'}); runs mount only "
                    f"the {'buckets' if field == 'bucket' else 'file systems'} {fix}")))
            elif entry.read_only and not m.read_only:
                problems.append(Problem(f"run.mounts[{j}].readOnly", (
                    f"false, but pathways:{listed_key} {verb} {name!r} read-only; mount it readOnly: true, or set "
                    "readOnly: false on it in the stack file")))
    return problems
