"""`python -m infra.run teams`: each team's TPU chip-hours in a calendar month, from Kueue's Workload records in its
namespace, against its budget (teams[].chipHoursPerMonth) and the plan's figure for its owned slices.

A Workload's time admitted is Kueue's own account (v0.19.2, apis/kueue/v1beta2/workload_types.go):
status.accumulatedPastExecutionTimeSeconds (earlier admit-evict cycles, added when Admitted turns False:
pkg/workload/admissionchecks.go) plus the current admission, from the Admitted condition's lastTransitionTime to
the Finished condition's (or now). Its chips are its PodSets' counts times their containers' google.com/tpu.
What Kueue has deleted (a run's JobSet and Workload go after runs.ttlSecondsAfterFinished) is not counted: the
figure is a lower bound, said so in its output.

`--enforce` holds a team over its budget with Kueue's own mechanism, the ClusterQueue's stopPolicy Hold (v1beta2:
the queue is inactive, no new reservation is made, admitted workloads run to completion), annotated with what it
used; and releases a queue it held once the team is under budget again (a new month). The stack never sets a team
queue's stopPolicy, so `pulumi up` neither owns nor undoes the hold (server-side apply: another field manager's).
Kueue v0.19.2 has no budget of its own: admission fair sharing orders queues by decayed usage, it holds none.
"""

from __future__ import annotations

import calendar
import datetime
import json
from typing import Any, Optional

from components.model.quantity import parse as parse_quantity
from components.model.resolved import ResolvedStack
from components.model.workloads.teams import BUDGET_FIELD_MANAGER, BUDGET_HOLD_ANNOTATION
from infra.offline.stackfile import StackFileError
from infra.run.kube import Kubectl

TPU = "google.com/tpu"


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


def _time(text: Optional[str]) -> Optional[float]:
    if not text:
        return None
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _condition(wl: dict[str, Any], kind: str) -> Optional[dict[str, Any]]:
    return next((c for c in (wl.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def workload_chips(wl: dict[str, Any]) -> int:
    """TPU chips the workload's pods ask for: each PodSet's count times its containers' google.com/tpu."""
    total = 0.0
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        spec = ((ps.get("template") or {}).get("spec")) or {}
        per_pod = 0.0
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            res = c.get("resources") or {}
            amount = (res.get("requests") or {}).get(TPU) or (res.get("limits") or {}).get(TPU)
            if amount is not None:
                per_pod += float(parse_quantity(str(amount)))
        total += per_pod * int(ps.get("count") or 0)
    return int(total)


def chip_seconds(wl: dict[str, Any], start: float, end: float) -> float:
    """Chip-seconds the workload was admitted within [start, end): its current admission clipped to the window, plus
    Kueue's accumulated past admissions when it was created in the window (Kueue does not say when those were)."""
    status = wl.get("status") or {}
    seconds = 0.0
    admitted = _condition(wl, "Admitted")
    if admitted is not None and admitted.get("status") == "True":
        since = _time(admitted.get("lastTransitionTime")) or end
        finished = _condition(wl, "Finished")
        until = _time(finished.get("lastTransitionTime")) if finished is not None and finished.get("status") == "True" else end
        seconds += max(0.0, min(until or end, end) - max(since, start))
    created = _time((wl.get("metadata") or {}).get("creationTimestamp"))
    if created is not None and start <= created < end:
        seconds += float(status.get("accumulatedPastExecutionTimeSeconds") or 0)
    return seconds * workload_chips(wl)


def report(kube: Kubectl, stack: ResolvedStack, start: float, end: float) -> list[dict[str, Any]]:
    """One row a team: its Workloads' chip-hours in [start, end), its budget, the plan's owned chips over the window."""
    if not stack.teams:
        raise StackFileError(f"stack {stack.stack} declares no teams (pathways:teams); docs/teams.md")
    hours = (end - start) / 3600
    rows = []
    for t in stack.teams:
        workloads = kube.items("workloads.kueue.x-k8s.io", t.team_namespace)
        used = sum(chip_seconds(w, start, end) for w in workloads) / 3600
        owned = stack.owned_chips(t)
        rows.append({"team": t.name, "namespace": t.team_namespace, "workloads": len(workloads), "chipHours": round(used, 2),
                     "budgetChipHours": t.chip_hours_per_month, "ownedChipHours": round(owned * hours, 2),
                     "overBudget": t.chip_hours_per_month is not None and used > t.chip_hours_per_month})
    return rows


def report_table(rows: list[dict[str, Any]]) -> str:
    table = [["team", "namespace", "workloads", "chip-hours", "budget", "owned slices at full use"]]
    for r in rows:
        budget = "-" if r["budgetChipHours"] is None else f"{r['budgetChipHours']:,}" + (" OVER" if r["overBudget"] else "")
        table.append([r["team"], r["namespace"], str(r["workloads"]), f"{r['chipHours']:,.2f}", budget, f"{r['ownedChipHours']:,.2f}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines.append("chip-hours: Kueue's admitted time of the Workloads that exist now (a run's go with its JobSet after its "
                 "ttl): a lower bound")
    return "\n".join(lines) + "\n"


def enforce(kube: Kubectl, stack: ResolvedStack, rows: list[dict[str, Any]], month: str) -> list[str]:
    """Hold each over-budget team's ClusterQueue (stopPolicy Hold), release the ones this held that are under budget
    again; what it did, one line each."""
    done = []
    queues = {(q.get("metadata") or {}).get("name"): q for q in kube.cluster_items("clusterqueues.kueue.x-k8s.io")}
    for row, team in zip(rows, stack.teams, strict=True):
        cq = queues.get(team.cluster_queue)
        if cq is None:
            done.append(f"team {team.name}: ClusterQueue {team.cluster_queue} not found (pulumi up first)")
            continue
        held_by_us = BUDGET_HOLD_ANNOTATION in ((cq.get("metadata") or {}).get("annotations") or {})
        if row["overBudget"]:
            note = f"{row['chipHours']:,.2f} of {row['budgetChipHours']:,} chip-hours in {month}"
            patch = {"metadata": {"annotations": {BUDGET_HOLD_ANNOTATION: note}}, "spec": {"stopPolicy": "Hold"}}
            done.append(f"team {team.name}: held (ClusterQueue {team.cluster_queue} stopPolicy Hold): {note}")
        elif held_by_us:
            patch = {"metadata": {"annotations": {BUDGET_HOLD_ANNOTATION: None}}, "spec": {"stopPolicy": "None"}}
            done.append(f"team {team.name}: released (under budget in {month})")
        else:
            continue
        kube.run("patch", "clusterqueue", team.cluster_queue, "--type", "merge", f"--field-manager={BUDGET_FIELD_MANAGER}",
                 "-p", json.dumps(patch))
    return done
