"""What a Compute Engine reservation can give a slice group, judged before anything is created (Pulumi-free).

Sources: the Compute API v1 `Reservation` resource (status CREATING/DELETING/INVALID/READY/UPDATING;
specificReservation {count, inUseCount, instanceProperties {machineType, guestAccelerators}}, int64 counts sent as JSON
strings; aggregateReservation {vmFamily, reservedResources[], inUseResources[] of {accelerator {acceleratorCount,
acceleratorType}}}; shareSettings {shareType LOCAL/SPECIFIC_PROJECTS/ORGANIZATION/..., projectMap {<id>: {projectId}}};
deleteAtTime; reservationMode CALENDAR for calendar-mode reservations), as `gcloud compute reservations describe
--format=json` prints it; and xpk's own check before it creates anything (AI-Hypercomputer/xpk src/xpk/core/
reservation.py and capacity.py, PR #1057: READY, the machine type, free VMs = count - inUseCount per slice; for an
aggregate reservation the accelerator type projects/<p>/zones/<z>/acceleratorTypes/<machine type prefix>, free
slices = (reserved - in use chips) // chips per slice).

pulumi-gcp 10.2's `gcp.compute.get_reservation` returns the specific-reservation fields (as lists of one) but not
the aggregate ones: an aggregate TPU reservation is read from a recorded describe file only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timezone
from typing import Any, Mapping, Optional, Sequence

from .errors import Problem, config_key
from .pools import SliceGroup
from .tpu import TpuSlice

READY = "READY"


class ReservationRecordError(ValueError):
    """A recorded describe file that is not a reservation."""


@dataclass(frozen=True)
class ReservationState:
    """One reservation, as the Compute API describes it."""

    name: str
    status: str
    zone: str
    machine_type: Optional[str] = None
    """specificReservation: the VMs' machine type."""
    vms: int = 0
    vms_in_use: int = 0
    accelerators: tuple[tuple[str, int, int], ...] = ()
    """aggregateReservation: (accelerator type's last path segment, chips reserved, chips in use)."""
    share_type: str = "LOCAL"
    shared_projects: tuple[str, ...] = ()
    delete_at: Optional[datetime] = None
    calendar: bool = False

    @property
    def aggregate(self) -> bool:
        return bool(self.accelerators)


def _int(value: Any, where: str) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        raise ReservationRecordError(f"{where} is {value!r}, not a count") from None


def _time(value: Any) -> Optional[datetime]:
    if not value:
        return None
    try:
        t = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ReservationRecordError(f"deleteAtTime is {value!r}, not an RFC 3339 time") from None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def from_describe(data: Any) -> ReservationState:
    """A `gcloud compute reservations describe --format=json` document."""
    if not isinstance(data, dict) or "name" not in data or "status" not in data:
        raise ReservationRecordError("not a reservation: `gcloud compute reservations describe NAME --zone Z --format=json` prints one")
    specific = data.get("specificReservation") or {}
    aggregate = data.get("aggregateReservation") or {}
    properties = specific.get("instanceProperties") or {}
    in_use: dict[str, int] = {}
    for r in aggregate.get("inUseResources") or []:
        acc = r.get("accelerator") or {}
        kind = str(acc.get("acceleratorType", "")).rstrip("/").rsplit("/", 1)[-1]
        in_use[kind] = in_use.get(kind, 0) + _int(acc.get("acceleratorCount"), "inUseResources.acceleratorCount")
    accelerators = []
    for r in aggregate.get("reservedResources") or []:
        acc = r.get("accelerator") or {}
        kind = str(acc.get("acceleratorType", "")).rstrip("/").rsplit("/", 1)[-1]
        accelerators.append((kind, _int(acc.get("acceleratorCount"), "reservedResources.acceleratorCount"), in_use.get(kind, 0)))
    share = data.get("shareSettings") or {}
    projects = [v.get("projectId", k) if isinstance(v, dict) else k for k, v in (share.get("projectMap") or {}).items()]
    return ReservationState(
        name=str(data["name"]), status=str(data["status"]), zone=str(data.get("zone", "")).rsplit("/", 1)[-1],
        machine_type=properties.get("machineType"),
        vms=_int(specific.get("count"), "specificReservation.count"),
        vms_in_use=_int(specific.get("inUseCount"), "specificReservation.inUseCount"),
        accelerators=tuple(accelerators),
        share_type=str(share.get("shareType") or "LOCAL"), shared_projects=tuple(sorted(projects)),
        delete_at=_time(data.get("deleteAtTime")), calendar=data.get("reservationMode") == "CALENDAR",
    )


def free_vms(state: ReservationState, tpu: TpuSlice) -> int:
    """TPU VMs of this slice's machine type the reservation can still give."""
    if state.aggregate:
        prefix = tpu.machine_type.split("-", 1)[0]
        chips = sum(reserved - used for kind, reserved, used in state.accelerators if kind == prefix)
        return max(chips, 0) // tpu.chips_per_vm
    return max(state.vms - state.vms_in_use, 0)


def total_vms(state: ReservationState, tpu: TpuSlice) -> int:
    if state.aggregate:
        prefix = tpu.machine_type.split("-", 1)[0]
        return sum(reserved for kind, reserved, _ in state.accelerators if kind == prefix) // tpu.chips_per_vm
    return state.vms


def problems(state: ReservationState, tpu: TpuSlice, needed_vms: int, *, project: str, owner: str, zone: str,
             held_vms: int = 0, needed_until: Optional[datetime] = None, live: bool = False) -> list[str]:
    """Why the reservation cannot hold the group, one message each (empty: it can). `needed_vms`: hosts x (slices +
    spares); `held_vms`: the group's VMs already in it (they count as in use); `owner`: the project the reservation
    lives in (this one unless named by its projects/<owner>/... path). `live`: read now, while the stack's own VMs
    may be in inUseCount and nothing tells them from others': only the reservation's total is judged."""
    out: list[str] = []
    name = state.name
    if state.status != READY:
        out.append(f"reservation {name} is {state.status}, not READY: GKE cannot create nodes in it")
    if state.zone and state.zone != zone:
        out.append(f"reservation {name} is in {state.zone}, not gcp:zone {zone}: a node pool consumes a reservation of its own zone only")
    if state.aggregate:
        prefix = tpu.machine_type.split("-", 1)[0]
        if not any(kind == prefix for kind, _, _ in state.accelerators):
            kinds = ", ".join(sorted({k for k, _, _ in state.accelerators}))
            out.append(f"reservation {name} reserves {kinds} accelerators, not {prefix} ({tpu.machine_type})")
            return out
    elif state.machine_type != tpu.machine_type:
        out.append(f"reservation {name} reserves {state.machine_type} VMs, not {tpu.machine_type} (the group's {tpu.name})")
        return out
    if live:
        if total_vms(state, tpu) < needed_vms:
            out.append(f"reservation {name} has {total_vms(state, tpu)} {tpu.machine_type} VMs in all; the group needs {needed_vms} "
                       f"({tpu.hosts} hosts x slices and spares): lower count or spares, or grow the reservation")
    elif free_vms(state, tpu) + held_vms < needed_vms:
        free = free_vms(state, tpu) + held_vms
        out.append(f"reservation {name} has {free} of {total_vms(state, tpu)} {tpu.machine_type} VMs free"
                   f"{f' (with the {held_vms} this group holds)' if held_vms else ''}; the group needs {needed_vms} "
                   f"({tpu.hosts} hosts x slices and spares): lower count or spares, or grow the reservation")
    if owner != project and state.share_type != "ORGANIZATION" and project not in state.shared_projects:
        out.append(f"reservation {name} of project {owner} is not shared with {project} "
                   f"(shareType {state.share_type}{', projects ' + ', '.join(state.shared_projects) if state.shared_projects else ''})")
    if state.delete_at is not None and (needed_until is None or state.delete_at < needed_until):
        until = f"the group's neededUntil {needed_until:%Y-%m-%d}" if needed_until else "an open-ended use (set neededUntil)"
        out.append(f"reservation {name} ends at {state.delete_at:%Y-%m-%d %H:%M} UTC{' (calendar mode)' if state.calendar else ''}, "
                   f"before {until}: its nodes go with it")
    return out


def availability(state: ReservationState, tpu: TpuSlice) -> str:
    """The plan's line: reservation r: 12 of 16 VMs free."""
    return f"reservation {state.name}: {free_vms(state, tpu)} of {total_vms(state, tpu)} VMs free"


def owner_and_name(reservation: str, project: str) -> tuple[str, str]:
    """(owner project, name) of a slice group's reservation: its name, or projects/<owner>/reservations/<name>."""
    if reservation.startswith("projects/"):
        _, owner, _, name = reservation.split("/", 3)
        return owner, name
    return project, reservation


def group_problems(groups: Sequence[SliceGroup], states: Mapping[str, ReservationState], *, project: str, zone: str,
                   live: frozenset[str] = frozenset()) -> list[Problem]:
    """Each recorded (or, for the groups in `live`, live-read) reservation judged for its slice group, one line each,
    keyed slices[i].reservation."""
    out: list[Problem] = []
    # groups that consume one reservation share its free VMs: each is judged against what they need together
    sharing: dict[str, list[SliceGroup]] = {}
    for g in groups:
        if g.reservation is not None:
            sharing.setdefault(g.reservation, []).append(g)
    judged: set[str] = set()
    for i, g in enumerate(groups):
        state = states.get(g.name)
        if state is None or g.reservation is None:
            continue
        owner, name = owner_and_name(g.reservation, project)
        if state.name != name:
            out.append(Problem(config_key(("slices", i, "reservationRecord")), (
                f"records reservation {state.name!r}, not {name!r}; record the group's own reservation")))
            continue
        if g.reservation in judged:
            continue
        judged.add(g.reservation)
        together = sharing[g.reservation]
        # the reservation must outlast the latest need; one open-ended group makes the need open-ended
        dates = [x.needed_until for x in together]
        until = None if None in dates else datetime.combine(max(d for d in dates if d), time(), tzinfo=timezone.utc)
        needed = sum(x.tpu.hosts * x.pools for x in together)
        lines = problems(state, g.tpu, needed, project=project, owner=owner, zone=zone, needed_until=until, live=g.name in live)
        if len(together) > 1:
            lines = [line.replace("; the group needs", f"; groups {', '.join(x.name for x in together)} need") for line in lines]
        out += [Problem(config_key(("slices", i, "reservation")), line) for line in lines]
    return out
