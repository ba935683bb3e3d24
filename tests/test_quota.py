"""Quota before spend: the plan says how many TPU chips each family and capacity kind needs in the stack's region,
which quota that is and how to see its limit; with pathways:readQuota the program reads the limits under `pulumi
preview` (here: recorded get_s_quota_info responses through the offline engine's invoke hook) and refuses a stack
that cannot fit, before any resource is registered."""

from __future__ import annotations

import pytest

from components.model.capacity import quota
from components.model.config import load, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.errors import ConfigError
from infra.errors import InvalidStackConfig
from infra.offline import engine, stackfile
from tests.conftest import config_with

GROUPS = [
    {"name": "spot", "tpu": "v6e-16", "count": 2, "spot": True},
    {"name": "flex", "tpu": "v6e-8", "flexStart": True},
    {"name": "ondemand", "tpu": "v6e-4", "count": 1, "spares": 1},
    {"name": "reserved", "tpu": "v6e-16", "reservation": "r1"},
]


def summary(cfg: dict) -> dict:
    flat, secrets = stackfile.flatten(cfg)
    return stack_summary(resolve(load(stackfile.raw_values(flat), "test", frozenset(secrets))))


def test_the_plan_counts_chips_per_family_and_quota_kind():
    s = summary(config_with(slices=GROUPS))
    got = {(q["family"], q["kind"]): (q["chips"], q["groups"]) for q in s["quota"]}
    # Spot and flex-start draw on the preemptible quota, a spare pool counts, a reservation holds its own
    assert got == {("v6e", "preemptible"): (2 * 16 + 8, ["spot", "flex"]), ("v6e", "on-demand"): (2 * 4, ["ondemand"])}
    q = next(q for q in s["quota"] if q["kind"] == "on-demand")
    assert q["region"] == "us-east5" and q["dimension"] == "tpu_family=CT6E"
    assert q["describe"] == f"gcloud beta quotas info describe {q['quotaId']} --service=compute.googleapis.com --project=test-proj-123"
    text = "\n".join(summary_text(s))
    assert "regional TPU quota needed in us-east5 (a reserved group uses its reservation's): 8 v6e on-demand chips" in text
    assert "40 v6e preemptible chips (PREEMPTIBLE-TPU-V6E-per-project-region; ID read)" in text
    assert "gcloud beta quotas info list --service=compute.googleapis.com --project=test-proj-123 --filter='quotaId~TPU'" in text


def test_a_reserved_stack_needs_no_quota_line():
    s = summary(config_with(slices=[GROUPS[3]]))
    assert s["quota"] == [] and "regional TPU quota" not in "\n".join(summary_text(s))


def info(value: int, region: str | None = "us-east5", **dims) -> dict:
    """A get_s_quota_info response in the provider's shape (details a list of one)."""
    return {"quotaId": "X", "dimensionsInfos": [
        {"dimensions": {**({"region": region} if region else {}), **dims}, "details": [{"value": str(value)}], "applicableLocations": []}]}


def gcloud(response: dict) -> dict:
    """The same QuotaInfo as `gcloud beta quotas info describe --format=json` prints it (details an object)."""
    return {**response, "dimensionsInfos": [{**d, "details": d["details"][0]} for d in response["dimensionsInfos"]]}


def plan_read(cfg: dict, quotas: dict[str, dict]):
    flat, secrets = stackfile.flatten({**cfg, "pathways:readQuota": True})
    return engine.run(flat, "test", secrets, quotas=quotas)


def refusal(cfg: dict, quotas: dict[str, dict]) -> str:
    with pytest.raises(InvalidStackConfig) as e:
        plan_read(cfg, quotas)
    return str(e.value)


ON_DEMAND, PREEMPTIBLE = quota.QUOTA_IDS[("v6e", "on-demand")][0], quota.QUOTA_IDS[("v6e", "preemptible")][0]


def test_limits_that_fit_let_the_program_register_its_pools():
    plan = plan_read(config_with(slices=GROUPS), {ON_DEMAND: info(8, tpu_family="CT6E"), PREEMPTIBLE: info(64)})
    assert len(plan.by_type("gcp:container/nodePool:NodePool")) > 4


def test_a_limit_too_small_is_refused_before_any_resource():
    # 32 Spot and 8 flex-start chips against a preemptible quota of 24: the Spot chips alone do not fit
    message = refusal(config_with(slices=GROUPS), {ON_DEMAND: info(64, tpu_family="CT6E"), PREEMPTIBLE: info(24)})
    assert message == (f"pathways:slices: slice group(s) spot, flex need 40 v6e preemptible chips in us-east5, and quota {PREEMPTIBLE} "
                       "allows 24: request more (Cloud console, IAM & Admin > Quotas) or shrink the groups")


def test_flex_start_chips_past_the_preemptible_quota_fall_back_to_on_demand():
    # 40 preemptible chips needed (32 Spot, 8 flex-start), 32 allowed: the 8 flex-start chips spill to on-demand
    fits = {ON_DEMAND: info(16, tpu_family="CT6E"), PREEMPTIBLE: info(32)}
    assert plan_read(config_with(slices=GROUPS), fits).by_type("gcp:container/nodePool:NodePool")
    # ... where 8 on-demand chips are already taken by the on-demand group: 16 needed, 8 allowed
    message = refusal(config_with(slices=GROUPS), {ON_DEMAND: info(8, tpu_family="CT6E"), PREEMPTIBLE: info(32)})
    assert message == (f"pathways:slices: slice group(s) ondemand need 16 v6e on-demand chips in us-east5 (with 8 flex-start "
                       f"chips past the preemptible quota), and quota {ON_DEMAND} allows 8: request more (Cloud console, "
                       "IAM & Admin > Quotas) or shrink the groups")
    # only flex-start groups: the on-demand quota is read for them too
    flex_only = [GROUPS[1]]
    assert plan_read(config_with(slices=flex_only), {ON_DEMAND: info(8, tpu_family="CT6E"), PREEMPTIBLE: info(0)})
    assert "past the preemptible quota, and quota" in refusal(config_with(slices=flex_only),
                                                              {ON_DEMAND: info(4, tpu_family="CT6E"), PREEMPTIBLE: info(0)})


def test_a_limit_of_minus_one_is_unlimited():
    # Cloud Quotas' QuotaDetails.value: "-1 means unlimited"
    assert plan_read(config_with(slices=GROUPS), {ON_DEMAND: info(-1, tpu_family="CT6E"), PREEMPTIBLE: info(-1)})
    assert quota.limit_in(gcloud(info(-1)), "us-east5", None) == quota.UNLIMITED


def test_dimension_values_compare_without_case():
    assert quota.limit_in(gcloud(info(16, tpu_family="ct6e")), "us-east5", ("tpu_family", "CT6E")) == 16
    assert quota.limit_in(gcloud(info(16, region="US-EAST5")), "us-east5", None) == 16


def test_an_unknown_quota_id_is_a_notice_and_the_plan_goes_on():
    # the stand-in answers an unrecorded ID as Cloud Quotas does (404 notFound): the program registers its pools
    plan = plan_read(config_with(slices=[GROUPS[2]]), {})
    assert plan.by_type("gcp:container/nodePool:NodePool")
    from infra.quota_read import judge_quota

    cfg = load(stackfile.raw_values(stackfile.flatten({**config_with(slices=[GROUPS[2]]), "pathways:readQuota": True})[0]), "test")

    def unknown(quota_id):
        raise RuntimeError(f"googleapi: Error 404: QuotaInfo {quota_id} not found, notFound")

    [notice] = judge_quota(cfg, unknown)
    assert notice.startswith(f"readQuota: Cloud Quotas does not know quota {ON_DEMAND} in test-proj-123")
    assert "gcloud beta quotas info list" in notice


def test_a_quota_the_identity_may_not_read_is_refused_naming_the_permission():
    from infra.quota_read import judge_quota

    cfg = load(stackfile.raw_values(stackfile.flatten({**config_with(slices=[GROUPS[2]]), "pathways:readQuota": True})[0]), "test")

    def denied(quota_id):
        raise RuntimeError("googleapi: Error 403: Permission 'cloudquotas.quotas.get' denied, forbidden")

    with pytest.raises(ConfigError) as e:
        judge_quota(cfg, denied)
    assert str(e.value).startswith(f"pathways:readQuota: cannot read quota {ON_DEMAND} of test-proj-123: ")
    assert "cloudquotas.quotas.get" in str(e.value)


def test_every_quota_row_says_its_evidence():
    assert set(quota.EVIDENCE) == set(quota.QUOTA_IDS)
    s = summary(config_with(slices=GROUPS))
    assert {q["evidence"] for q in s["quota"]} == {"read"}  # v6e: both IDs read in public
    assert "ID read)" in "\n".join(summary_text(s))


def test_offline_nothing_is_read():
    flat, secrets = stackfile.flatten({**config_with(slices=GROUPS), "pathways:readQuota": True})
    assert engine.run(flat, "test", secrets).by_type("gcp:container/nodePool:NodePool")


@pytest.mark.parametrize("infos,dimension,expected", [
    ([info(8, region="us-east5"), info(100, region=None)], None, 8),  # the region's own limit over the default
    ([info(100, region=None)], None, 100),
    ([info(4, tpu_family="CT5P"), info(16, tpu_family="CT6E")], ("tpu_family", "CT6E"), 16),
    ([info(4, region="us-central1")], None, None),
])
def test_the_limit_is_the_regions(infos, dimension, expected):
    merged = {"dimensionsInfos": [d for i in infos for d in i["dimensionsInfos"]]}
    for d in merged["dimensionsInfos"]:
        d["details"] = d["details"][0]  # gcloud's shape: details an object
    assert quota.limit_in(merged, "us-east5", dimension) == expected


def test_the_bootstrap_lets_both_identities_read_quota_only_where_a_stack_asks(tmp_path, monkeypatch):
    from bootstrap import main_stack
    from components.model.cluster import identities
    from tests.test_bootstrap import BOOTSTRAP, example_bootstrap_config, example_stacks

    with example_stacks():
        stacks = main_stack.STACKS_DIR
        reading = tmp_path / "stacks"
        reading.mkdir()
        for path in stacks.glob("Pulumi.*.yaml"):
            text = path.read_text()
            (reading / path.name).write_text(text.replace("config:\n", "config:\n  pathways:readQuota: true\n", 1) if path.name == "Pulumi.dev.yaml" else text)
        monkeypatch.setattr(main_stack, "STACKS_DIR", reading)
        plan = engine.run(example_bootstrap_config("pathways-dev-123"), "pathways-dev-123", program_dir=BOOTSTRAP)
    members = {r.input("member") for r in plan.by_type("gcp:projects/iAMMember:IAMMember") if r.input("role") == identities.QUOTA_ROLE}
    assert members == {"serviceAccount:pulumi-dev-deploy@pathways-dev-123.iam.gserviceaccount.com",
                       "serviceAccount:pulumi-dev-preview@pathways-dev-123.iam.gserviceaccount.com"}
    assert identities.QUOTA_API in {r.input("service") for r in plan.by_type("gcp:projects/service:Service")}
    # and no stack of the examples asks, so no bootstrap grants it
    from tests.test_bootstrap import example_bootstrap_plan
    assert not [r for r in example_bootstrap_plan("pathways-dev-123").by_type("gcp:projects/iAMMember:IAMMember")
                if r.input("role") == identities.QUOTA_ROLE]
