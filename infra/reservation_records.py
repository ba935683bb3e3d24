"""Reservations judged before anything is created: the recorded ones (slices[].reservationRecord, a `gcloud compute
reservations describe --format=json` file) and, under `pulumi preview`/`up`, the ones read live
(slices[].readReservation, pulumi-gcp's get_reservation); each judged for its slice group with the same one-line
errors under `pulumi preview`/`up` and the offline plan (components/model/reservations.py)."""

from __future__ import annotations

import json
import re
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Optional

from components.model.config import StackConfig
from components.model.errors import ConfigError, Problem, config_key
from components.model.reservations import ReservationRecordError, ReservationState, from_describe, group_problems, owner_and_name

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


def live_reader(cfg: StackConfig) -> Callable[[str], dict[str, Any]]:
    """Reads a reservation (a name, or projects/<owner>/reservations/<name>) in the stack's zone through the provider."""
    def read(reservation: str) -> dict[str, Any]:
        import pulumi_gcp as gcp

        owner, name = owner_and_name(reservation, cfg.project)
        return describe_of(gcp.compute.get_reservation(name=name, project=owner, zone=cfg.zone))
    return read


def read_records(cfg: StackConfig, root: Path = PROJECT_ROOT,
                 read_live: Optional[Callable[[str], dict[str, Any]]] = None) -> dict[str, ReservationState]:
    """Slice group -> its reservation, recorded or (with `read_live`, for groups with readReservation) read now;
    ConfigError naming each unreadable record or reservation and each reservation that cannot hold its group."""
    states: dict[str, ReservationState] = {}
    problems: list[Problem] = []
    read: dict[str, Optional[ReservationState]] = {}  # one read a reservation, however many groups consume it
    for i, g in enumerate(cfg.slices):
        if read_live is not None and g.read_reservation and g.reservation:
            key = config_key(("slices", i, "reservation"))
            if g.reservation not in read:
                read[g.reservation] = None
                try:
                    read[g.reservation] = from_describe(read_live(g.reservation))
                except ReservationRecordError as e:
                    problems.append(Problem(key, f"{g.reservation}: {e}"))
                except Exception as e:  # the provider's error (not found, permission denied) as it says it
                    said = re.sub(r"^invoke of \S+ failed: ", "", str(e).strip().splitlines()[0]) if str(e).strip() else type(e).__name__
                    problems.append(Problem(key, (
                        f"{g.reservation}: cannot read it ({said}); the preview identity needs compute.reservations.get on its "
                        "project, or record it (reservationRecord) and remove readReservation")))
            state = read[g.reservation]
            if state is not None:
                states[g.name] = state
            continue
        if g.reservation_record is None:
            continue
        key = config_key(("slices", i, "reservationRecord"))
        record = g.reservation_record
        how = f"record it with: gcloud compute reservations describe NAME --zone {cfg.zone} --format=json > {record}"
        try:
            data = json.loads((root / record).read_text(encoding="utf-8"))
        except OSError as e:
            problems.append(Problem(key, f"{record}: cannot read it ({e.strerror}); {how}"))
            continue
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            problems.append(Problem(key, f"{record}: not JSON ({str(e).splitlines()[0]}); {how}"))
            continue
        try:
            states[g.name] = from_describe(data)
        except ReservationRecordError as e:
            problems.append(Problem(key, f"{record}: {e}"))
    live = frozenset(g.name for g in cfg.slices if read_live is not None and g.read_reservation and g.reservation)
    problems += group_problems(cfg.slices, states, project=cfg.project, zone=cfg.zone, live=live)
    if problems:
        raise ConfigError(problems)
    return states
