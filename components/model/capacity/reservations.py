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

A group may consume one block or sub-block of a reservation (a Cluster Director, DENSE one), named by the path GKE's
--reservation and a node pool's reservationAffinity take: <reservation>/reservationBlocks/<b>[/reservationSubBlocks/<s>]
(Cluster Toolkit modules/compute/gke-node-pool; xpk src/xpk/core/reservation.py). The block or sub-block is judged
as the Compute API's ReservationBlock / ReservationSubBlock describes it (status, healthInfo.healthStatus HEALTHY or
DEGRADED, count and inUseCount of hosts): xpk keeps only HEALTHY sub-blocks and counts (count - inUseCount) // hosts
a slice of them (capacity.py _assess_healthy_and_fitting_sub_blocks_in_block).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timezone
from typing import Any, Iterable, Mapping, Optional, Sequence

from components.model.capacity.pools import RESERVATION_PATH, SliceGroup
from components.model.capacity.tpu import TpuSlice
from components.model.errors import Problem, config_key

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


@dataclass(frozen=True)
class ReservationPath:
    """A slice group's reservation: owner project, name, and the block and sub-block it targets, if any."""

    owner: str
    name: str
    block: Optional[str] = None
    sub_block: Optional[str] = None

    @property
    def parent(self) -> str:
        """The whole reservation's path, whatever block the group targets (groups on its blocks share it)."""
        return f"projects/{self.owner}/reservations/{self.name}"

    @property
    def level(self) -> Optional[str]:
        return "sub-block" if self.sub_block else "block" if self.block else None

    @property
    def target(self) -> Optional[str]:
        """The block or sub-block's own name (what its describe calls it)."""
        return self.sub_block or self.block


# What reading a group's reservation live takes (slices[].readReservation: pulumi-gcp's get_reservation, and
# get_reservation_block / get_reservation_sub_block for a targeted block): the Compute API's reservations.get,
# reservationBlocks.get ("Authorization requires ... compute.reservationBlocks.get on the specified resource
# reservation") and reservationSubBlocks.get (its REST reference, "IAM Permissions").
READ_PERMISSIONS = {None: "compute.reservations.get", "block": "compute.reservationBlocks.get",
                    "sub-block": "compute.reservationSubBlocks.get"}


def read_permissions(paths: Iterable["ReservationPath"]) -> tuple[str, ...]:
    """The permissions that read these reservations and the blocks and sub-blocks they target: get on each level."""
    levels = {p.level for p in paths}
    return tuple(sorted({READ_PERMISSIONS[None], *(READ_PERMISSIONS[lv] for lv in levels)})) if levels else ()


def parse_path(reservation: str, project: str) -> ReservationPath:
    """The config's reservation (validated by the model's pattern, RESERVATION_PATH) split into its parts."""
    m = RESERVATION_PATH.fullmatch(reservation)
    if m is None:
        raise ValueError(f"{reservation!r} is not a reservation path")
    return ReservationPath(owner=m["owner"] or project, name=m["name"], block=m["block"], sub_block=m["sub_block"])


@dataclass(frozen=True)
class BlockState:
    """One reservation block or sub-block, as the Compute API describes it: its hosts (TPU VMs) and their health."""

    name: str
    level: str
    """block or sub-block"""
    status: str
    health: Optional[str]
    """healthInfo.healthStatus (HEALTHY, DEGRADED), when the API gives one"""
    hosts: int
    hosts_in_use: int


class Recorded(dict[str, ReservationState]):
    """Slice group -> its reservation as recorded or read, with the block or sub-block it targets in `blocks`."""

    def __init__(self, states: Mapping[str, ReservationState], blocks: Mapping[str, BlockState]):
        super().__init__(states)
        self.blocks = dict(blocks)


def block_availability(state: BlockState, path: ReservationPath) -> str:
    """The plan's line for a targeted block: block b of reservation r: 48 of 64 hosts free."""
    return f"{path.level} {state.name} of reservation {path.name}: {max(state.hosts - state.hosts_in_use, 0)} of {state.hosts} hosts free"


BLOCK_KINDS = {"compute#reservationBlock": "block", "compute#reservationSubBlock": "sub-block"}


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


def block_from_describe(data: Any) -> BlockState:
    """A `gcloud compute reservations blocks describe` (or `sub-blocks describe`) --format=json document."""
    if not isinstance(data, dict) or data.get("kind") not in BLOCK_KINDS or "name" not in data:
        raise ReservationRecordError(
            "not a reservation block or sub-block (kind compute#reservationBlock or compute#reservationSubBlock): "
            "`gcloud compute reservations blocks describe RESERVATION --block-name B --zone Z --format=json` prints one, "
            "and `sub-blocks describe ... --sub-block-name S` a sub-block")
    health = (data.get("healthInfo") or {}).get("healthStatus")
    return BlockState(name=str(data["name"]), level=BLOCK_KINDS[data["kind"]], status=str(data.get("status", "")),
                      health=str(health) if health else None, hosts=_int(data.get("count"), "count"),
                      hosts_in_use=_int(data.get("inUseCount"), "inUseCount"))


def block_problems(state: BlockState, path: ReservationPath, needed_vms: int, *, live: bool = False) -> list[str]:
    """Why the targeted block or sub-block cannot hold the groups on it (empty: it can)."""
    where = f"{path.level} {path.target} of reservation {path.name}"
    if state.level != path.level or state.name != path.target:
        return [f"the recorded {state.level} is {state.name!r}; record the group's own {where}"]
    out: list[str] = []
    if state.status != READY:
        out.append(f"{where} is {state.status or 'without a status'}, not READY: GKE cannot create nodes in it")
    if state.health is not None and state.health != "HEALTHY":
        out.append(f"{where} is {state.health}, not HEALTHY: its hosts cannot be counted on (xpk places no slice on "
                   "such a sub-block); target another block or wait for its repair")
    if live:
        if state.hosts < needed_vms:
            out.append(f"{where} has {state.hosts} hosts in all; the groups on it need {needed_vms} (hosts x slices and spares)")
    elif state.hosts - state.hosts_in_use < needed_vms:
        out.append(f"{where} has {max(state.hosts - state.hosts_in_use, 0)} of {state.hosts} hosts free; the groups on it need "
                   f"{needed_vms} (hosts x slices and spares): target a larger block, or lower count or spares")
    return out


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
    """(owner project, name) of a slice group's reservation: its name, or projects/<owner>/reservations/<name>,
    either with a block or sub-block after it."""
    path = parse_path(reservation, project)
    return path.owner, path.name


def group_problems(groups: Sequence[SliceGroup], states: Mapping[str, ReservationState], *, project: str, zone: str,
                   live: frozenset[str] = frozenset(), blocks: Optional[Mapping[str, BlockState]] = None) -> list[Problem]:
    """Each recorded (or, for the groups in `live`, live-read) reservation judged for its slice group, one line each,
    keyed slices[i].reservation; and each targeted block or sub-block in `blocks` (slice group -> its state)."""
    out: list[Problem] = []
    paths = {g.name: parse_path(g.reservation, project) for g in groups if g.reservation is not None}
    # groups that consume one reservation share its free VMs, whichever of its blocks they target: each is judged
    # against what they need together; groups on one block or sub-block share that one's hosts the same way
    sharing: dict[str, list[SliceGroup]] = {}
    on_target: dict[str, list[SliceGroup]] = {}
    for g in groups:
        if g.name in paths:
            sharing.setdefault(paths[g.name].parent, []).append(g)
            on_target.setdefault(g.reservation or "", []).append(g)
    judged: set[str] = set()
    for i, g in enumerate(groups):
        if g.reservation is None:
            continue
        path = paths[g.name]
        block = (blocks or {}).get(g.name)
        if block is not None and path.level is not None and g.reservation not in judged:
            judged.add(g.reservation)
            together = on_target[g.reservation]
            lines = block_problems(block, path, sum(x.tpu.hosts * x.pools for x in together), live=g.name in live)
            key = ("slices", i, "reservationBlockRecord") if lines and lines[0].startswith("the recorded") else ("slices", i, "reservation")
            out += [Problem(config_key(key), line) for line in lines]
        state = states.get(g.name)
        if state is None:
            continue
        if state.name != path.name:
            out.append(Problem(config_key(("slices", i, "reservationRecord")), (
                f"records reservation {state.name!r}, not {path.name!r}; record the group's own reservation")))
            continue
        if path.parent in judged:
            continue
        judged.add(path.parent)
        together = sharing[path.parent]
        # the reservation must outlast the latest need; one open-ended group makes the need open-ended
        dates = [x.needed_until for x in together]
        until = None if None in dates else datetime.combine(max(d for d in dates if d), time(), tzinfo=timezone.utc)
        needed = sum(x.tpu.hosts * x.pools for x in together)
        lines = problems(state, g.tpu, needed, project=project, owner=path.owner, zone=zone, needed_until=until, live=g.name in live)
        if len(together) > 1:
            lines = [line.replace("; the group needs", f"; groups {', '.join(x.name for x in together)} need") for line in lines]
        out += [Problem(config_key(("slices", i, "reservation")), line) for line in lines]
    return out
