"""Reservations judged before anything is created: the recorded ones (slices[].reservationRecord, a `gcloud compute
reservations describe --format=json` file; slices[].reservationBlockRecord, a block's or sub-block's) and, under
`pulumi preview`/`up`, the ones read live (slices[].readReservation: pulumi-gcp's get_reservation, and
get_reservation_block / get_reservation_sub_block for a targeted block); each judged for its slice group with the same
one-line errors under `pulumi preview`/`up` and the offline plan (components/model/capacity/reservations.py)."""

from __future__ import annotations

import json
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Optional

from components.model.capacity.reservations import (
    BlockState,
    Recorded,
    ReservationPath,
    ReservationRecordError,
    ReservationState,
    block_from_describe,
    from_describe,
    group_problems,
    parse_path,
)
from components.model.config import StackConfig
from components.model.errors import ConfigError, Problem, config_key
from infra.config import read_input_file

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# Whether the program may read reservations live: the offline engine turns it off (no cloud call) unless a test gives
# it recorded invoke responses (infra/offline/engine.py).
LIVE_READS: ContextVar[bool] = ContextVar("LIVE_READS", default=True)


def describe_of(result: Any) -> dict[str, Any]:
    """pulumi-gcp's get_reservation result as `gcloud compute reservations describe --format=json` prints the same
    reservation (the provider gives one-element lists where the API has objects), for from_describe."""
    specific = next(iter(result.specific_reservations or []), None)
    properties = next(iter(specific.instance_properties or []), None) if specific is not None else None
    share = next(iter(result.share_settings or []), None)
    return {
        "name": result.name, "status": result.status, "zone": result.zone, "deleteAtTime": result.delete_at_time or None,
        **({"specificReservation": {"count": specific.count, "inUseCount": specific.in_use_count,
                                    "instanceProperties": {"machineType": properties.machine_type if properties else None}}}
           if specific is not None else {}),
        **({"shareSettings": {"shareType": share.share_type,
                              "projectMap": {m.id: {"projectId": m.project_id} for m in share.project_maps or []}}}
           if share is not None else {}),
    }


def block_describe_of(result: Any, level: str) -> dict[str, Any]:
    """pulumi-gcp's get_reservation_block / get_reservation_sub_block result as `gcloud compute reservations blocks
    describe --format=json` (sub-blocks describe) prints it: the provider renames count to block_count/sub_block_count
    and gives healthInfo as a list of one."""
    health = next(iter(result.health_infos or []), None)
    return {
        "kind": "compute#reservationSubBlock" if level == "sub-block" else "compute#reservationBlock",
        "name": result.name, "status": result.status, "inUseCount": result.in_use_count,
        "count": result.sub_block_count if level == "sub-block" else result.block_count,
        **({"healthInfo": {"healthStatus": health.health_status}} if health is not None and health.health_status else {}),
    }


class LiveReader:
    """Reads a reservation, and a block or sub-block of one, in the stack's zone through the provider (in the
    owner's project for a shared one)."""

    def __init__(self, cfg: StackConfig):
        self.zone = cfg.zone

    def reservation(self, path: ReservationPath) -> dict[str, Any]:
        import pulumi_gcp as gcp

        return describe_of(gcp.compute.get_reservation(name=path.name, project=path.owner, zone=self.zone))

    def block(self, path: ReservationPath) -> dict[str, Any]:
        import pulumi_gcp as gcp

        if path.sub_block:
            return block_describe_of(gcp.compute.get_reservation_sub_block(
                name=path.sub_block, reservation_block=path.block, reservation=path.name, project=path.owner, zone=self.zone),
                "sub-block")
        return block_describe_of(gcp.compute.get_reservation_block(
            name=path.block, reservation=path.name, project=path.owner, zone=self.zone), "block")


def _cannot_read(what: str, e: Exception, *, block: bool = False) -> str:
    """The provider's error (not found, permission denied) as it says it."""
    said = re.sub(r"^invoke of \S+ failed: ", "", str(e).strip().splitlines()[0]) if str(e).strip() else type(e).__name__
    return (f"{what}: cannot read it ({said}); the preview identity needs compute.reservations.get on its project (the "
            "bootstrap grants it in its own: re-run it once readReservation is on, as it is by default in a protected stack), or "
            f"record it ({'reservationRecord and reservationBlockRecord' if block else 'reservationRecord'}) and set readReservation: false")


def _record(root: Path, record: str, how: str) -> Any:
    """A recorded describe file's JSON; ReservationRecordError saying why it cannot be read and how to record it."""
    try:
        return json.loads(read_input_file(root / record))
    except OSError as e:
        raise ReservationRecordError(f"{record}: cannot read it ({e.strerror}); {how}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReservationRecordError(f"{record}: not JSON ({str(e).splitlines()[0]}); {how}") from None


def read_records(cfg: StackConfig, root: Path = PROJECT_ROOT, live: Optional[LiveReader] = None) -> Recorded:
    """Slice group -> its reservation, recorded or (with `live`, for groups with readReservation) read now, and the
    block or sub-block it targets likewise; ConfigError naming each unreadable record or reservation and each
    reservation or block that cannot hold its groups."""
    states: dict[str, ReservationState] = {}
    blocks: dict[str, BlockState] = {}
    problems: list[Problem] = []
    # one read a reservation (and a block), however many groups consume it
    read: dict[str, Optional[ReservationState]] = {}
    read_blocks: dict[str, Optional[BlockState]] = {}
    live_groups_unjudged: set[str] = set()
    for i, g in enumerate(cfg.slices):
        if g.reservation is None:
            continue
        path = parse_path(g.reservation, cfg.project)
        if live is not None and g.read_reservation:
            key = config_key(("slices", i, "reservation"))
            if path.parent not in read:
                read[path.parent] = None
                try:
                    read[path.parent] = from_describe(live.reservation(path))
                except ReservationRecordError as e:
                    problems.append(Problem(key, f"{path.parent}: {e}"))
                except Exception as e:
                    problems.append(Problem(key, _cannot_read(g.reservation if path.level is None else path.parent, e, block=path.level is not None)))
            if path.level is not None and g.reservation not in read_blocks:
                read_blocks[g.reservation] = None
                try:
                    read_blocks[g.reservation] = block_from_describe(live.block(path))
                except ReservationRecordError as e:
                    problems.append(Problem(key, f"{g.reservation}: {e}"))
                except Exception as e:
                    problems.append(Problem(key, _cannot_read(g.reservation, e, block=True)))
            state = read[path.parent]
            if state is not None and state.machine_type is None and not state.aggregate:
                # pulumi-gcp's get_reservation returns no aggregate fields: an aggregate TPU reservation read live has
                # nothing to judge, so its record judges it (the default live read of a protected stack, #75.3), and
                # without one the fix is named
                live_groups_unjudged.add(g.name)
                if g.reservation_record is None:
                    problems.append(Problem(config_key(("slices", i, "reservation")), (
                        f"{path.parent}: read live, it holds no specific VMs, as an aggregate reservation reads (pulumi-gcp's "
                        "get_reservation returns no aggregate fields): record it (slices[].reservationRecord, docs/capacity.md) "
                        "or set slices[].readReservation: false")))
            else:
                if state is not None:
                    states[g.name] = state
                if (block := read_blocks.get(g.reservation)) is not None:
                    blocks[g.name] = block
                continue
        if g.reservation_record is not None:
            how = f"record it with: gcloud compute reservations describe {path.name} --zone {cfg.zone} --format=json > {g.reservation_record}"
            try:
                states[g.name] = from_describe(_record(root, g.reservation_record, how))
            except ReservationRecordError as e:
                message = str(e) if str(e).startswith(g.reservation_record) else f"{g.reservation_record}: {e}"
                problems.append(Problem(config_key(("slices", i, "reservationRecord")), message))
        if g.reservation_block_record is not None:
            flags = f"--block-name {path.block}" + (f" --sub-block-name {path.sub_block}" if path.sub_block else "")
            how = (f"record it with: gcloud compute reservations {'sub-blocks' if path.sub_block else 'blocks'} describe {path.name} "
                   f"{flags} --zone {cfg.zone} --format=json > {g.reservation_block_record}")
            try:
                blocks[g.name] = block_from_describe(_record(root, g.reservation_block_record, how))
            except ReservationRecordError as e:
                message = str(e) if str(e).startswith(g.reservation_block_record) else f"{g.reservation_block_record}: {e}"
                problems.append(Problem(config_key(("slices", i, "reservationBlockRecord")), message))
    live_groups = frozenset(g.name for g in cfg.slices if live is not None and g.read_reservation and g.reservation
                            and g.name not in live_groups_unjudged)
    problems += group_problems(cfg.slices, states, project=cfg.project, zone=cfg.zone, live=live_groups, blocks=blocks)
    if problems:
        raise ConfigError(problems)
    return Recorded(states, blocks)
