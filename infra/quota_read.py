"""The regional TPU quota limits, read under `pulumi preview`/`up` when the stack asks (pathways:readQuota), and the
slice groups judged against them before any resource is created (components/model/capacity/quota.py); the offline engine
reads nothing (infra/reservation_records.py's LIVE_READS)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from components.model.capacity import quota
from components.model.config import StackConfig
from components.model.errors import ConfigError, Problem, config_key


def info_of(result: Any) -> dict[str, Any]:
    """pulumi-gcp's get_s_quota_info result as `gcloud beta quotas info describe --format=json` prints the QuotaInfo
    (the provider gives details as a list of one)."""
    return {"quotaId": result.quota_id, "dimensionsInfos": [
        {"dimensions": dict(d.dimensions or {}), "details": {"value": next(iter(d.details or []), None) and d.details[0].value}}
        for d in result.dimensions_infos or []]}


def live_reader(cfg: StackConfig) -> Callable[[str], dict[str, Any]]:
    """Reads one quota's info in the stack's project through the provider."""
    import pulumi_gcp as gcp

    def read(quota_id: str) -> dict[str, Any]:
        return info_of(gcp.cloudquota.get_s_quota_info(parent=f"projects/{cfg.project}", service=quota.SERVICE, quota_id=quota_id))
    return read


# How Cloud Quotas answers a quota ID it does not know (google.rpc.Code NOT_FOUND, HTTP 404): the ID is wrong or
# renamed, which says nothing about the stack; anything else (PERMISSION_DENIED, an API not enabled) is the reader's.
def _unknown_id(error_text: str) -> bool:
    squeezed = error_text.lower().replace(" ", "").replace("_", "")
    return "notfound" in squeezed or "404" in squeezed


def judge_quota(cfg: StackConfig, read: Optional[Callable[[str], dict[str, Any]]]) -> list[str]:
    """With readQuota and a reader: each need against its limit; ConfigError naming what does not fit or cannot be
    read. A quota ID Cloud Quotas does not know is a notice (returned), never a refusal: the IDs are unverified."""
    if not cfg.read_quota or read is None or cfg.cluster.existing is not None:
        return []
    from components.model.config import resolve

    stack = resolve(cfg)
    if stack.fleet_manager:
        return []
    needed = quota.needs(stack.slices, stack.group_pools)
    flex = quota.flex_start_chips(stack.slices, stack.group_pools)
    ids = list(dict.fromkeys([n.quota_id for n in needed] + [quota.QUOTA_IDS[(f, "on-demand")][0] for f in flex]))
    limits: dict[str, Optional[float]] = {}
    problems: list[Problem] = []
    notices: list[str] = []
    dimension = {n.quota_id: n.dimension for n in needed} | {quota.QUOTA_IDS[(f, "on-demand")][0]: quota.QUOTA_IDS[(f, "on-demand")][1] for f in flex}
    for quota_id in ids:
        try:
            limits[quota_id] = quota.limit_in(read(quota_id), cfg.region, dimension[quota_id])
        except Exception as e:
            limits[quota_id] = None
            text = " ".join(str(e).split())[:300]
            if _unknown_id(text):
                notices.append(f"readQuota: Cloud Quotas does not know quota {quota_id} in {cfg.project} ({text}); it was not "
                               f"judged. The IDs are unverified: find yours with gcloud beta quotas info list --service="
                               f"{quota.SERVICE} --project={cfg.project} --filter='quotaId~TPU' (docs/capacity.md)")
                continue
            problems.append(Problem(config_key(("readQuota",)), (
                f"cannot read quota {quota_id} of {cfg.project}: {text}; the preview identity needs "
                f"cloudquotas.quotas.get (roles/cloudquotas.viewer), or remove readQuota")))
    problems += quota.quota_problems(needed, limits, cfg.region, flex)
    if problems:
        raise ConfigError(problems)
    return notices
