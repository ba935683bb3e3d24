"""The scratch and artifacts buckets."""

from __future__ import annotations

import re
from typing import Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.model.common import (
    _BUCKET_NAME,
    _Model,
)

# --- bucket --------------------------------------------------------------------------------


class BucketConfig(_Model):
    name: Optional[str] = Field(default=None, description="Scratch bucket name; default <project>-<stack>-pathways.")
    artifacts_name: Optional[str] = Field(default=None, description="Artifacts bucket (profiles, HLO dumps); default <name>-artifacts.")
    cache_prefix: str = Field(default="pathways-cache", description="The one --gcs_scratch_location prefix all workloads share.")
    artifacts_prefix: str = Field(default="artifacts", description="Prefix for profiles and HLO dumps (own TTL).")
    artifacts_ttl_days: int = Field(default=30, ge=1, le=36500, description="Days before objects under artifactsPrefix are deleted.")
    soft_delete_days: int = Field(default=7, ge=7, le=90, description="Soft-delete retention (GCS allows 7-90 days).")

    @field_validator("name", "artifacts_name")
    @classmethod
    def _name(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else check_bucket_name(v)

    @field_validator("cache_prefix", "artifacts_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not re.fullmatch(r"^[a-z0-9][-a-z0-9_]*(/[a-z0-9][-a-z0-9_]*)*$", v):
            raise ValueError(f"{v!r} is not a prefix; use path segments of lowercase letters, digits, '-', '_' without leading or trailing '/'")
        return v

    @model_validator(mode="after")
    def _apart(self) -> "BucketConfig":
        a, c = self.artifacts_prefix + "/", self.cache_prefix + "/"
        if a.startswith(c) or c.startswith(a):
            raise ValueError(
                f"artifactsPrefix {self.artifacts_prefix!r} and cachePrefix {self.cache_prefix!r} overlap; "
                "the artifacts TTL would delete the compilation cache: use separate prefixes"
            )
        return self


def check_bucket_name(v: str) -> str:
    """GCS bucket naming rules (names with dots need domain verification, so refuse them)."""
    if not _BUCKET_NAME.fullmatch(v) or "." in v or v.startswith("goog") or "google" in v or "g00gle" in v:
        raise ValueError(
            f"{v!r} is not a valid bucket name; use 3-63 lowercase letters, digits, '-' or '_', "
            "starting and ending with a letter or digit, no dots, not starting with 'goog' nor containing 'google'"
        )
    return v
