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

# (family, quota kind) -> (quota ID, the dimension it is read at besides the region, or None), and the evidence for
# the row. "read" rows: published live reads of Cloud Quotas on compute.googleapis.com (2026-08-10/11, public notes found
# by exact search of public sources: `gcloud beta quotas info describe TPUS-PER-TPU-FAMILY-per-project-region` with
# dimensions region and tpu_family=CT6E; PREEMPTIBLE-TPU-V6E-per-project-region for Spot and flex-start; "no
# TPU-V6E-per-project-region exists"); the v5e read found the family's IDs per zone (TPU-LITE-PODSLICE-V5-per-project-
# zone, PREEMPTIBLE-TPU-LITE-PODSLICE-V5-per-project-zone), so the regional spellings here may not exist: an unknown ID
# is a notice (infra/quota_read.py), never a refusal. "named" rows: IDs Google's pages and issue threads give, not seen
# read. tpu7x Spot: no public source at all.
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
EVIDENCE: dict[tuple[str, str], str] = {
    ("v4", "on-demand"): "named", ("v4", "preemptible"): "named",
    ("v5e", "on-demand"): "per zone when read", ("v5e", "preemptible"): "per zone when read",
    ("v5p", "on-demand"): "named", ("v5p", "preemptible"): "named",
    ("v6e", "on-demand"): "read", ("v6e", "preemptible"): "read",
    ("tpu7x", "on-demand"): "read for v6e's family ID", ("tpu7x", "preemptible"): "no public source",
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
    evidence: str = "named"

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
                      dimension=QUOTA_IDS[(family, kind)][1], evidence=EVIDENCE[(family, kind)])
            for (family, kind), n in sorted(chips.items())]


def flex_start_chips(groups: Iterable[SliceGroup], pools_of=lambda g: g.pools) -> dict[str, int]:
    """Flex-start chips per family: the part of a preemptible need that may fall back to on-demand quota."""
    out: dict[str, int] = defaultdict(int)
    for g in groups:
        if g.capacity is Capacity.FLEX_START and pools_of(g):
            out[g.tpu.family] += pools_of(g) * g.tpu.chips
    return dict(out)


UNLIMITED = float("inf")
"""A limit of -1: Cloud Quotas' QuotaDetails "value": "-1 means unlimited" (cloudquotas v1)."""


def limit_in(info: dict, region: str, dimension: Optional[tuple[str, str]]) -> Optional[float]:
    """The limit a quota info (Cloud Quotas' QuotaInfo, as `gcloud beta quotas info describe --format=json` prints it
    or pulumi-gcp's get_s_quota_info returns it) gives the region (and the dimension), else its default; None when
    it gives neither; UNLIMITED for -1. Dimension values compare without case (tpu_family CT6E and ct6e)."""
    default: Optional[float] = None
    for d in info.get("dimensionsInfos") or []:
        dims = {str(k): str(v) for k, v in (d.get("dimensions") or {}).items()}
        details = d.get("details") or {}
        value = details.get("value") if isinstance(details, dict) else None
        if value is None:
            continue
        if dimension is not None and dims.get(dimension[0]) is not None and dims[dimension[0]].lower() != dimension[1].lower():
            continue
        limit = UNLIMITED if int(value) < 0 else float(int(value))
        if dims.get("region", "").lower() == region.lower():
            return limit
        if "region" not in dims:
            default = limit
    return default


def quota_problems(needed: list[QuotaNeed], limits: dict[str, Optional[float]], region: str,
                   flex_chips: Optional[dict[str, int]] = None) -> list[Problem]:
    """A need over its read limit is refused, naming the groups, the chips and the limit. Flex-start chips draw on the
    preemptible quota and, past it, on the family's on-demand quota (`flex_chips`: family -> flex-start chips), so
    they are refused only when both together cannot hold them; Spot chips have no fallback."""
    flex_chips = flex_chips or {}
    problems = []
    spill: dict[str, float] = {}  # family -> flex-start chips the preemptible quota leaves to the on-demand one
    for n in sorted(needed, key=lambda n: n.kind != "preemptible"):  # preemptible first: its spill adds to on-demand
        limit = limits.get(n.quota_id)
        chips = n.chips + (spill.get(n.family, 0) if n.kind == "on-demand" else 0)
        if n.kind == "preemptible" and limit is not None and limit < n.chips:
            over = n.chips - limit
            flex = flex_chips.get(n.family, 0)
            if over <= flex:  # only flex-start chips are over: they fall back to on-demand
                spill[n.family] = over
                continue
        if limit is not None and limit < chips:
            extra = f" (with {spill[n.family]:g} flex-start chips past the preemptible quota)" if n.kind == "on-demand" and spill.get(n.family) else ""
            problems.append(Problem(config_key(("slices",)), (
                f"slice group(s) {', '.join(n.groups)} need {chips:g} {n.family} {n.kind} chips in {region}{extra}, and quota "
                f"{n.quota_id} allows {limit:g}: request more (Cloud console, IAM & Admin > Quotas) or shrink the groups")))
    for family, over in spill.items():
        if not any(n.family == family and n.kind == "on-demand" for n in needed):
            on_demand = QUOTA_IDS[(family, "on-demand")][0]
            limit = limits.get(on_demand)
            if limit is not None and limit < over:
                problems.append(Problem(config_key(("slices",)), (
                    f"flex-start slice groups need {over:g} {family} chips in {region} past the preemptible quota, and "
                    f"quota {on_demand} allows {limit:g}: request more or shrink the groups")))
    return problems


# Compute Engine's regional vCPU quotas the CPU pools draw on: every machine's vCPUs count against CPUS (all families),
# and the families with a quota of their own against <FAMILY>-CPUS as well (Compute Engine "Allocation quotas": N2,
# N2D, C2, C3, N4 CPUs); E2 has none of its own. infra/offline/preflight.py reads their limits.
CPU_FAMILIES_WITH_QUOTA = ("N2", "N2D", "C2", "C3", "N4")


def cpu_quota_needs(pools: Iterable[tuple[str, int]], vcpus_of) -> dict[str, int]:
    """Quota ID -> vCPUs the (machine type, nodes at most) pools need in the region; `vcpus_of(machine)`."""
    by_id: dict[str, int] = {}
    for machine, nodes in pools:
        cpus = vcpus_of(machine) * nodes
        if not cpus:
            continue
        by_id["CPUS-per-project-region"] = by_id.get("CPUS-per-project-region", 0) + cpus
        family = machine.split("-", 1)[0].upper()
        if family in CPU_FAMILIES_WITH_QUOTA:
            by_id[f"{family}-CPUS-per-project-region"] = by_id.get(f"{family}-CPUS-per-project-region", 0) + cpus
    return dict(sorted(by_id.items()))
