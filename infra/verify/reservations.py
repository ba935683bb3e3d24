"""Reservation and maintenance health of a running stack (`verify --reservations DIR` or `--live`; pure but for the
reads). For each slice group on a reservation block or sub-block, and each calendar-mode future reservation:

- the block as the Compute API describes it (`gcloud compute reservations blocks describe ... --format=json`,
  `sub-blocks describe`): status READY and healthInfo.healthStatus HEALTHY, and hosts enough for the groups on it
  (components/model/capacity/reservations.py block_problems, the plan's own rule, judged live);
- its `reservationMaintenance` (the API's GroupMaintenanceInfo: maintenanceOngoingCount, maintenancePendingCount,
  schedulingType, upcomingGroupMaintenance, an UpcomingMaintenance of type, maintenanceStatus, canReschedule,
  windowStartTime and windowEndTime; Compute Engine v1 reference, "GroupMaintenanceInfo", "UpcomingMaintenance"):
  maintenance that starts outside the stack's own window (cluster.maintenance.window) is a finding, since it stops
  the slice's VMs whatever GKE's window says;
- a future reservation request (`gcloud compute future-reservations describe ... --format=json`): its
  status.procurementStatus (the API's FutureReservationStatus: PENDING_APPROVAL, APPROVED, DECLINED, CANCELLED,
  PROCURING, PROVISIONING, FULFILLED, FAILED, ...) against its timeWindow.startTime: not approved a week before the
  start, or declined, cancelled or failed, is a finding.
Read from files named <group>.block.json and <group>.future.json; `--live` reads them with gcloud (`compute
reservations blocks|sub-blocks describe`, `compute future-reservations describe`: the gcloud reference's commands,
not run here). The fix for movable maintenance is `gcloud compute reservations blocks perform-maintenance RESERVATION
--block-name B --zone Z` (gcloud reference, GA; --scope all by default).
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from components.model.capacity.reservations import ReservationRecordError, block_from_describe, block_problems, parse_path
from components.model.cluster.cluster import parse_rrule
from infra.offline.stackfile import StackFileError, shown
from infra.verify.findings import Finding

APPROVED = ("APPROVED", "COMMITTED", "PROCURING", "PROVISIONING", "FULFILLED")
REFUSED = ("DECLINED", "CANCELLED", "FAILED", "FAILED_PARTIALLY_FULFILLED")
APPROVAL_LEAD = timedelta(days=7)
_DAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
Read = Callable[[str, str], Optional[dict[str, Any]]]
"""(group, "block" or "future") -> the describe document, or None when there is none."""


def _time(text: Any) -> Optional[datetime]:
    """An RFC 3339 time as the API writes it; None when absent or not one."""
    try:
        t = datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None
    return None if t is None else t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def in_window(t: datetime, start: str, end: str, recurrence: str) -> Optional[bool]:
    """Whether `t` falls in an occurrence of the recurring window (first occurrence start..end, repeated by RRULE);
    None where it cannot be told (a monthly rule)."""
    first, last = _time(start), _time(end)
    rule = parse_rrule(recurrence)
    if first is None or last is None or rule.freq == "MONTHLY" or t < first:
        return None if rule.freq == "MONTHLY" else False
    length = last - first
    for back in range(0, 8):  # an occurrence that began up to a week before t
        day = (t - timedelta(days=back)).date()
        if rule.freq == "WEEKLY" and _DAYS[day.weekday()] not in (rule.days or (_DAYS[first.weekday()],)):
            continue
        begins = datetime.combine(day, first.timetz())
        if begins <= t < begins + length:
            return True
    return False


def findings(cfg: Any, read: Read, now: datetime) -> list[Finding]:
    out: list[Finding] = []
    window = cfg.cluster.maintenance.window
    for g in cfg.slices:
        path = parse_path(g.reservation, cfg.project) if g.reservation else None
        subject = f"slice group {g.name}"
        if path is not None and path.level is not None:
            doc = read(g.name, "block")
            if doc is None:
                out.append(Finding("info", "reservation", subject, f"no describe of {path.level} {path.target} read",
                                   f"gcloud compute reservations {'sub-blocks' if path.sub_block else 'blocks'} describe ... --format=json"))
            else:
                try:
                    state = block_from_describe(doc)
                except ReservationRecordError as e:
                    out.append(Finding("info", "reservation", subject, str(e), "read the block again"))
                    continue
                for problem in block_problems(state, path, g.pools * g.tpu.hosts, live=True):
                    out.append(Finding("high", "reservation", subject, problem,
                                       "until it is READY and HEALTHY, GKE cannot replace a failed slice there: target another "
                                       f"block (slices[].reservation) or ask Google Cloud support about {path.target}"))
                upcoming = (doc.get("reservationMaintenance") or {}).get("upcomingGroupMaintenance") or {}
                starts = _time(upcoming.get("windowStartTime"))
                if starts is not None and starts >= now - timedelta(hours=1):
                    inside = in_window(starts, window.start_time, window.end_time, window.recurrence)
                    if inside is not True:
                        when = f"{upcoming.get('type', 'maintenance')} {upcoming.get('maintenanceStatus', '').lower()} from {starts:%Y-%m-%d %H:%M} UTC"
                        where = "outside the stack's maintenance window" if inside is False else "(the monthly window is not judged)"
                        reschedule = (f"it can be moved: `gcloud compute reservations blocks perform-maintenance {path.name} "
                                      f"--block-name {path.block} --zone {cfg.zone}` inside the window"
                                      if upcoming.get("canReschedule") else "it cannot be moved: suspend or checkpoint the "
                                      "workloads on it before then")
                        out.append(Finding("medium", "reservation", subject, f"{path.level} {path.target}: {when}, {where} "
                                           f"({window.recurrence}, {window.start_time[11:16]}-{window.end_time[11:16]} UTC)", reschedule))
        if g.future_reservation is not None and g.reservation:
            doc = read(g.name, "future")
            start = g.future_reservation.start_time
            if doc is None:
                out.append(Finding("info", "reservation", subject, "no describe of its future reservation read",
                                   "gcloud compute future-reservations describe ... --format=json"))
                continue
            status = str((doc.get("status") or {}).get("procurementStatus") or "unknown")
            if status in REFUSED:
                out.append(Finding("high", "reservation", subject, f"its future reservation is {status}: no TPUs come at {start:%Y-%m-%d}",
                                   "request capacity again (or another way: flex-start, spot) and move the workloads' dates"))
            elif status not in APPROVED and start - now <= APPROVAL_LEAD and start > now:
                out.append(Finding("high", "reservation", subject, f"its future reservation is {status}, "
                                   f"{(start - now).days} day(s) before its start {start:%Y-%m-%d}",
                                   "ask your Google Cloud account team about its approval; plan for the start moving"))
    return out


def read_files(directory: Path) -> Read:
    def read(group: str, what: str) -> Optional[dict[str, Any]]:
        path = directory / f"{group}.{what}.json"
        if not path.exists():
            return None
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise StackFileError(f"{shown(path)}: not the JSON a `gcloud ... describe --format=json` prints ({e})") from None
        if not isinstance(doc, dict):
            raise StackFileError(f"{shown(path)}: a describe is one JSON object")
        return doc
    return read


def read_live(cfg: Any) -> Read:
    """gcloud's describes of each group's block or sub-block and future reservation (the identity's read rights)."""
    def read(group: str, what: str) -> Optional[dict[str, Any]]:
        g = next(x for x in cfg.slices if x.name == group)
        if what == "block":
            p = parse_path(g.reservation, cfg.project)
            cmd = ["gcloud", "compute", "reservations", "sub-blocks" if p.sub_block else "blocks", "describe", p.name,
                   *(["--block-name", p.block, "--sub-block-name", p.sub_block] if p.sub_block else ["--block-name", str(p.block)])]
            cmd += ["--zone", cfg.zone, "--project", p.owner, "--format=json"]
        else:  # named as the reservation it delivers (infra/program.py, CalendarReservation)
            cmd = ["gcloud", "compute", "future-reservations", "describe", parse_path(g.reservation, cfg.project).name,
                   "--zone", cfg.zone, "--project", cfg.project, "--format=json"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
    return read
