"""Rules of the names the stack derives from the stack and project names (``stack.StackConfig``'s properties):
the cluster, the buckets, the node service accounts. Registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

from components.model.cluster.bucket import check_bucket_name
from components.model.common import _dns_label
from components.model.errors import Problem, config_key
from components.model.stack import SERVICE_ACCOUNT_ID, StackConfig

# IAM ("Create service accounts"): an account ID is 6-30 lowercase letters, digits and '-', from a letter.


def derived_names(cfg: StackConfig) -> list[Problem]:
    """Names derived from the stack and project must still be names GCP accepts."""
    problems = []
    checks = [
        (("cluster", "name"), cfg.cluster_name, lambda v: _dns_label(v, 40)),
        (("bucket", "name"), cfg.bucket_name, check_bucket_name),
        (("bucket", "artifactsName"), cfg.artifacts_bucket_name, check_bucket_name),
        (("resilience", "mtc", "bucket"), cfg.mtc_bucket_name, check_bucket_name),
    ]
    for key, value, check in checks:
        if value is None:  # resilience.mtc off: no backups' bucket
            continue
        try:
            check(value)
        except ValueError as e:
            problems.append(Problem(config_key(key), f"derived {e}; set it explicitly"))
    for purpose in ("sys", "nodes"):
        sa = cfg.service_account_id(purpose)
        if not SERVICE_ACCOUNT_ID.fullmatch(sa):
            problems.append(Problem(config_key(("cluster", "name")), (
                f"the node service account ID {sa!r} derived from it is not 6-30 lowercase letters, digits or '-'; "
                "use a cluster name of at least 3 characters"
            )))
    return problems


def distinct_buckets(cfg: StackConfig) -> list[Problem]:
    """The artifacts bucket has its own lifecycle rules (a TTL); on the scratch bucket they would fight Pathways'."""
    if cfg.artifacts_bucket_name == cfg.bucket_name:
        return [Problem(config_key(("bucket", "artifactsName")), "must differ from bucket.name (its lifecycle rules would fight Pathways')")]
    return []
