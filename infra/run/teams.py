"""`python -m infra.run teams [--team T]`: each team's TPU chip-hours in a calendar month against its budget, from
the usage record the stack's recorder keeps (components/manifests/usage_record.py, a ConfigMap `usage-<team>` in
`pathways-usage` that no team may write, and that keeps what deleted runs used), with what is left and the share
of the budget spent. A team's submitters may read their own team's record (`--team T`), no other.

Where no record is there yet (a stack deployed before the recorder, or a month before it), the line is counted from
the Workloads still in the team's namespace, Kueue's own account (usage_record.chip_seconds), and says it is a
lower bound: what Kueue deleted with its run is not there.

The hold is the recorder's, in the cluster, each minute: over budget, the team's ClusterQueue is held (stopPolicy
Hold), then drained (HoldAndDrain) after teams[].drainAfterMinutes, and released in a month it is under budget.
"""

from __future__ import annotations

import calendar
import datetime
import json
from typing import Any, Optional

from components.manifests import usage_record
from components.manifests.usage import NAMESPACE
from components.model.resolved import ResolvedStack
from components.model.workloads.teams import Team
from infra.offline.stackfile import StackFileError
from infra.run.kube import Kubectl

chip_seconds = usage_record.chip_seconds
workload_chips = usage_record.workload_chips


def month_bounds(month: Optional[str], now: float) -> tuple[float, float]:
    """[start, end) of a calendar month in UTC, epoch seconds: YYYY-MM, or the month of `now`."""
    if month is None:
        today = datetime.datetime.fromtimestamp(now, datetime.timezone.utc)
        year, mon = today.year, today.month
    else:
        try:
            year, mon = (int(x) for x in month.split("-"))
            datetime.date(year, mon, 1)
        except ValueError:
            raise StackFileError(f"--month {month[:20]!r} is not a month; valid: YYYY-MM, e.g. 2026-12") from None
    start = datetime.datetime(year, mon, 1, tzinfo=datetime.timezone.utc)
    days = calendar.monthrange(year, mon)[1]
    return start.timestamp(), (start + datetime.timedelta(days=days)).timestamp()


def _record(kube: Kubectl, team: Team, month: str) -> Optional[dict[str, Any]]:
    """The recorder's month for the team, or None when there is none (not yet recorded, or no recorder)."""
    proc = kube.run("get", "configmap", "-n", NAMESPACE, usage_record.record_name(team.name), "-o", "json", check=False)
    if proc.returncode != 0:
        if "NotFound" in proc.stderr or "not found" in proc.stderr:
            return None
        if "Forbidden" in proc.stderr or "forbidden" in proc.stderr:
            raise StackFileError(f"team {team.name}'s usage record: the cluster refuses it to you; a team's submitters "
                                 f"read their own team's line only (teams --team <yours>)")
        raise StackFileError(f"team {team.name}'s usage record: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'kubectl failed'}")
    data = (json.loads(proc.stdout).get("data") or {}).get(month)
    return json.loads(data) if data else None


def _row(team: Team, used: float, source: str, stack: ResolvedStack, start: float, end: float) -> dict[str, Any]:
    budget = team.chip_hours_per_month
    return {"team": team.name, "namespace": team.team_namespace, "chipHours": round(used, 2), "budgetChipHours": budget,
            "leftChipHours": None if budget is None else round(max(0.0, budget - used), 2),
            "shareOfBudget": None if not budget else round(used / budget, 4),
            "overBudget": budget is not None and used > budget, "source": source,
            "ownedChipHours": round(stack.owned_chips(team) * (end - start) / 3600, 2)}


def report(kube: Kubectl, stack: ResolvedStack, start: float, end: float, only: Optional[str] = None) -> list[dict[str, Any]]:
    """One row a team (or only team `only`): its chip-hours in [start, end) from the record, else from its Workloads."""
    if not stack.teams:
        raise StackFileError(f"stack {stack.stack} declares no teams (pathways:teams); docs/teams.md")
    teams = [t for t in stack.teams if only is None or t.name == only]
    if not teams:
        raise StackFileError(f"--team {only!r} is not a team of pathways:teams ({', '.join(t.name for t in stack.teams)})")
    month = usage_record.month_key(start)
    rows = []
    for t in teams:
        kept = _record(kube, t, month)
        if kept is not None:
            rows.append(_row(t, float(kept["chipSeconds"]) / 3600, f"record, updated {kept['updated']}", stack, start, end))
            continue
        workloads = kube.items("workloads.kueue.x-k8s.io", t.team_namespace)
        used = sum(chip_seconds(w, start, end) for w in workloads) / 3600
        rows.append(_row(t, used, f"no record: {len(workloads)} Workloads now there, a lower bound", stack, start, end))
    return rows


def report_table(rows: list[dict[str, Any]]) -> str:
    table = [["team", "namespace", "chip-hours", "budget", "left", "spent", "owned slices at full use", "from"]]
    for r in rows:
        budget = "-" if r["budgetChipHours"] is None else f"{r['budgetChipHours']:,}" + (" OVER" if r["overBudget"] else "")
        left = "-" if r["leftChipHours"] is None else f"{r['leftChipHours']:,.2f}"
        share = "-" if r["shareOfBudget"] is None else f"{r['shareOfBudget']:.0%}"
        table.append([r["team"], r["namespace"], f"{r['chipHours']:,.2f}", budget, left, share, f"{r['ownedChipHours']:,.2f}", r["source"]])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table) + "\n"
