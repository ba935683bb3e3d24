"""The regional TPU quota a stack needs before `pulumi up` spends anything (Pulumi-free).

GKE's TPU node pools draw on Compute Engine's regional quota, by TPU family and capacity kind (GKE, "Plan TPUs in
GKE" / "Ensure quota"): on-demand pools on the family's on-demand chips, Spot pools on its preemptible chips, and
flex-start pools on the preemptible chips as well; a pool consuming a reservation draws on the reservation, which
already holds its quota. A pool counts whole: every slice and spare of a group at its full size (scale-to-zero and
flex-start pools reach it while a workload runs).

The quota IDs below are NOT verified against the Cloud Quotas API here (no cloud): they are the names Google's pages
and public issue threads give, and Google has renamed TPU quotas before. The plan therefore always prints the
listing that does not depend on them (`gcloud beta quotas info list --service=compute.googleapis.com
--filter=quotaId~TPU`), and `pathways:readQuota` names the ID it could not read instead of guessing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional

from components.model.capacity.pools import Capacity, SliceGroup
from components.model.errors import Problem, config_key

SERVICE = "compute.googleapis.com"

# (family, quota kind) -> (quota ID, the dimension it is read at besides the region, or None). Unverified: see above.
QUOTA_IDS: dict[tuple[str, str], tuple[str, Optional[tuple[str, str]]]] = {
    ("v4", "on-demand"): ("TPU-V4-PODSLICE-per-project-region", None),
    ("v4", "preemptible"): ("PREEMPTIBLE-TPU-V4-PODSLICE-per-project-region", None),
    ("v5e", "on-demand"): ("TPU-LITE-PODSLICE-V5-per-project-region", None),
    ("v5e", "preemptible"): ("PREEMPTIBLE-TPU-LITE-PODSLICE-V5-per-project-region", None),
    ("v5p", "on-demand"): ("TPU-V5P-per-project-region", None),
    ("v5p", "preemptible"): ("PREEMPTIBLE-TPU-V5P-per-project-region", None),
    ("v6e", "on-demand"): ("TPUS-PER-TPU-FAMILY-per-project-region", ("tpu_family", "CT6E")),
    ("v6e", "preemptible"): ("PREEMPTIBLE-TPU-V6E-per-project-region", None),
    ("tpu7x", "on-demand"): ("TPUS-PER-TPU-FAMILY-per-project-region", ("tpu_family", "TPU7X")),
    ("tpu7x", "preemptible"): ("PREEMPTIBLE-TPUS-PER-TPU-FAMILY-per-project-region", ("tpu_family", "TPU7X")),
}


def quota_kind(capacity: Capacity) -> Optional[str]:
    """The quota a pool of this capacity draws on; None for a reservation (its own)."""
    return {Capacity.ON_DEMAND: "on-demand", Capacity.SPOT: "preemptible", Capacity.FLEX_START: "preemptible"}.get(capacity)


@dataclass(frozen=True)
class QuotaNeed:
    family: str
    kind: str
    """on-demand or preemptible."""
    chips: int
    groups: tuple[str, ...]
    quota_id: str
    dimension: Optional[tuple[str, str]]

    def list_command(self, project: str) -> str:
        return f"gcloud beta quotas info list --service={SERVICE} --project={project} --filter='quotaId~TPU'"

    def describe_command(self, project: str) -> str:
        return f"gcloud beta quotas info describe {self.quota_id} --service={SERVICE} --project={project}"


def needs(groups: Iterable[SliceGroup], pools_of=lambda g: g.pools) -> list[QuotaNeed]:
    """Chips per family and quota kind across the slice groups (reserved ones need none)."""
    chips: dict[tuple[str, str], int] = defaultdict(int)
    names: dict[tuple[str, str], list[str]] = defaultdict(list)
    for g in groups:
        kind = quota_kind(g.capacity)
        if kind is None or pools_of(g) == 0:
            continue
        key = (g.tpu.family, kind)
        chips[key] += pools_of(g) * g.tpu.chips
        names[key].append(g.name)
    return [QuotaNeed(family=family, kind=kind, chips=n, groups=tuple(names[(family, kind)]), quota_id=QUOTA_IDS[(family, kind)][0],
                      dimension=QUOTA_IDS[(family, kind)][1]) for (family, kind), n in sorted(chips.items())]


def limit_in(info: dict, region: str, dimension: Optional[tuple[str, str]]) -> Optional[int]:
    """The limit a quota info (Cloud Quotas' QuotaInfo, as `gcloud beta quotas info describe --format=json` prints it
    or pulumi-gcp's get_s_quota_info returns it) gives the region (and the dimension), else its default; None when
    it gives neither."""
    default = None
    for d in info.get("dimensionsInfos") or []:
        dims = d.get("dimensions") or {}
        details = d.get("details") or {}
        value = details.get("value") if isinstance(details, dict) else None
        if value is None:
            continue
        if dimension is not None and dims.get(dimension[0]) not in (None, dimension[1]):
            continue
        if dims.get("region") == region:
            return int(value)
        if "region" not in dims:
            default = int(value)
    return default


def quota_problems(needed: list[QuotaNeed], limits: dict[str, Optional[int]], region: str) -> list[Problem]:
    """A need over its read limit is refused, naming the groups, the chips and the limit."""
    problems = []
    for n in needed:
        limit = limits.get(n.quota_id)
        if limit is not None and limit < n.chips:
            problems.append(Problem(config_key(("slices",)), (
                f"slice group(s) {', '.join(n.groups)} need {n.chips} {n.family} {n.kind} chips in {region}, and quota "
                f"{n.quota_id} allows {limit}: request more (Cloud console, IAM & Admin > Quotas) or shrink the groups")))
    return problems
