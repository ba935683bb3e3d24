"""Recorded reservations (slices[].reservationRecord): read the `gcloud compute reservations describe --format=json`
files a stack names and judge each reservation for its slice group before anything is created, with the same
one-line errors under `pulumi preview`/`up` and the offline plan (components/model/reservations.py)."""

from __future__ import annotations

import json
from pathlib import Path

from components.model.config import StackConfig
from components.model.errors import ConfigError, Problem, config_key
from components.model.reservations import ReservationRecordError, ReservationState, from_describe, group_problems

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def read_records(cfg: StackConfig, root: Path = PROJECT_ROOT) -> dict[str, ReservationState]:
    """Slice group -> its recorded reservation; ConfigError naming each unreadable record and each reservation that
    cannot hold its group."""
    states: dict[str, ReservationState] = {}
    problems: list[Problem] = []
    for i, g in enumerate(cfg.slices):
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
    problems += group_problems(cfg.slices, states, project=cfg.project, zone=cfg.zone)
    if problems:
        raise ConfigError(problems)
    return states
