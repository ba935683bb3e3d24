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


def judge_quota(cfg: StackConfig, read: Optional[Callable[[str], dict[str, Any]]]) -> None:
    """With readQuota and a reader: each need against its limit; ConfigError naming what does not fit or cannot be read."""
    if not cfg.read_quota or read is None or cfg.cluster.existing is not None:
        return
    from components.model.config import resolve

    stack = resolve(cfg)
    if stack.fleet_manager:
        return
    limits: dict[str, Optional[int]] = {}
    problems: list[Problem] = []
    for need in quota.needs(stack.slices, stack.group_pools):
        if need.quota_id in limits:
            continue
        try:
            limits[need.quota_id] = quota.limit_in(read(need.quota_id), cfg.region, need.dimension)
        except Exception as e:
            limits[need.quota_id] = None
            problems.append(Problem(config_key(("readQuota",)), (
                f"cannot read quota {need.quota_id} of {cfg.project}: {' '.join(str(e).split())[:300]}; the IDs are unverified, "
                f"find yours with {need.list_command(cfg.project)} (docs/capacity.md), or remove readQuota")))
    problems += quota.quota_problems(quota.needs(stack.slices, stack.group_pools), limits, cfg.region)
    if problems:
        raise ConfigError(problems)
