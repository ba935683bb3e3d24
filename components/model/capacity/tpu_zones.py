"""Which zones Google lists each TPU family in, so a stack asking for a family where it is not offered fails in the
plan, not at node-pool create (Pulumi-free).

Source: Cloud TPU's "TPU regions and zones" page (cloud.google.com/tpu/docs/regions-zones, also served as
/tpu/docs/types-zones and docs.cloud.google.com/tpu/docs/regions-zones.md.txt), read 2026-12 from stored copies.
The page is undated and has changed often: the copies read differ (AI zones in the newest, single-tenant zones in
one, zones that later left in older ones). So a zone is listed here if any copy lists it for the family, and a
family is refused only where no copy offers it. Only the North America section could be read whole in every copy:
the catalog judges zones of North American regions (COVERED_REGIONS) and says plainly that it does not judge others.

Google adds zones, and offers some (single-tenant, AI zones) to some customers only: `slices[].unlistedZone: true`
lets a group through with a notice in the plan.
"""

from __future__ import annotations

SOURCE = "Cloud TPU's \"TPU regions and zones\" page (docs/capacity.md)"

# The page's North America section, every copy read, union (ST: listed as single-tenant in one copy; AI: an AI zone,
# listed in the newest copies; OLD: listed only in copies before v6e's wider rollout).
TPU_ZONES: dict[str, dict[str, str]] = {
    "tpu7x": {"us-central1-c": "", "us-central1-ai1a": "AI zone"},
    "v6e": {
        "us-central1-b": "", "us-east1-d": "", "us-east5-a": "", "us-east5-b": "",
        "us-east5-c": "single-tenant", "us-east4-a": "single-tenant", "us-east4-b": "single-tenant",
        "us-west1-c": "single-tenant, no Spot quota", "us-central1-ai1a": "AI zone", "us-south1-ai1b": "AI zone",
    },
    "v5p": {
        "us-central1-a": "", "us-east5-a": "", "us-east5-b": "single-tenant", "us-east5-c": "older copies only",
        "us-south1-a": "single-tenant",
    },
    "v5e": {
        "us-central1-a": "", "us-south1-a": "", "us-west1-c": "", "us-west4-a": "", "us-west4-b": "older copies only",
        "us-east5-a": "single-tenant", "us-east5-b": "single-tenant", "us-east5-c": "single-tenant",
    },
    "v4": {"us-central2-b": ""},
}

# Regions whose section of the page the catalog holds whole: zones elsewhere are not judged.
COVERED_REGIONS = ("us-", "northamerica-")


def covered(zone: str) -> bool:
    """Whether the catalog can say a family is not offered in this zone."""
    return zone.startswith(COVERED_REGIONS)


def offered(family: str, zone: str) -> bool:
    return zone in TPU_ZONES.get(family, {})


def zones_text(family: str) -> str:
    """The zones listed for a family, with what the page says of them, for a refusal."""
    return ", ".join(f"{z} ({note})" if note else z for z, note in TPU_ZONES.get(family, {}).items())
