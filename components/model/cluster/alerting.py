"""Alerting settings of a stack: where alerts go and when they fire (the config part; the dashboard and
the alert policies are built in components/manifests/monitoring.py)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from components.model.common import _Model


class MonitoringConfig(_Model):
    notification_channels: list[str] = Field(default_factory=list, max_length=10, description=(
        "Cloud Monitoring notification channels the alerts go to (projects/<p>/notificationChannels/<id>)."
    ))
    duty_cycle_threshold: int = Field(default=10, ge=1, le=100, description="Alert when a running workload's TPU duty cycle stays below this %.")
    duty_cycle_minutes: int = Field(default=30, ge=5, le=1440, description="... for this many minutes.")
    restart_storm: int = Field(default=5, ge=1, le=10_000, description="Alert on more container restarts than this in 10 minutes.")

    @field_validator("notification_channels")
    @classmethod
    def _channels(cls, v: list[str]) -> list[str]:
        for c in v:
            if not re.fullmatch(r"projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/notificationChannels/[0-9]{1,30}", c):
                raise ValueError(f"{c[:80]!r} is not a notification channel; use projects/<project>/notificationChannels/<id>")
        return v
