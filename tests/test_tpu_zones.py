"""A TPU family asked for where Google does not list it is refused in the plan, not at node-pool create
(components/model/capacity/tpu_zones.py)."""

from __future__ import annotations

import re

import pytest

from components.model.capacity import tpu_zones
from components.model.capacity.tpu import FAMILIES
from components.model.config import load, resolve
from components.model.cost.summary import stack_summary
from infra.offline.stackfile import raw_values
from tests.conftest import ZONE_OF_FAMILY, config_with, in_zone_of
from tests.test_storage import raw, refusal


def test_a_family_in_a_zone_the_table_does_not_list_is_refused_with_one_line_naming_the_zones_that_offer_it():
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16"}, {"name": "old", "tpu": "v4-16"}])
    assert refusal(cfg, "pathways:slices[1].tpu") == (
        "pathways:slices[1].tpu: TPU v4 is not offered in gcp:zone us-east5-b: Cloud TPU's \"TPU regions and zones\" page "
        "(docs/capacity.md) lists it in us-central2-b, so GKE would refuse the node pool; choose one of those zones, or set "
        "slices[1].unlistedZone: true if Google offers it to your project there")
    assert refusal(cfg, "pathways:slices[0].tpu") is None


def test_the_refusal_says_what_the_page_says_of_a_zone():
    line = refusal(config_with(slices=[{"name": "main", "tpu": "tpu7x-128"}]), "pathways:slices[0].tpu") or ""
    assert "lists it in us-central1-c, us-central1-ai1a (AI zone)," in line


def summary(cfg: dict) -> dict:
    values, secrets = raw(cfg)
    return stack_summary(resolve(load(values, "test", secrets)))


def test_unlisted_zone_lets_the_group_through_and_the_plan_says_so():
    cfg = config_with(slices=[{"name": "old", "tpu": "v4-16", "unlistedZone": True}])
    assert refusal(cfg, "pathways:slices[0].tpu") is None
    assert "slice group old: TPU v4 in us-east5-b is not in Google's TPU zone table (unlistedZone): GKE refuses the node pool " \
           "if the zone does not offer it to this project" in summary(cfg)["notices"]


def test_a_zone_outside_the_tables_regions_is_not_judged_and_the_plan_says_so():
    cfg = config_with(slices=[{"name": "main", "tpu": "v5p-128"}], gcp_region="europe-west4", gcp_zone="europe-west4-b")
    assert refusal(cfg, "pathways:slices[0].tpu") is None
    assert any(n.startswith("TPU zones: europe-west4-b is outside the regions of the stack's zone table")
               for n in summary(cfg)["notices"])
    assert not any(n.startswith("TPU zones:") for n in summary(config_with())["notices"])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_the_catalog_knows_has_zones_and_the_tests_zone_for_it_offers_it(family):
    assert tpu_zones.TPU_ZONES[family], family
    assert tpu_zones.offered(family, ZONE_OF_FAMILY[family])
    for zone in tpu_zones.TPU_ZONES[family]:
        assert re.fullmatch(r"[a-z]+-[a-z]+[0-9]+-[a-z0-9]+", zone) and tpu_zones.covered(zone), zone


def test_each_committed_stack_asks_for_its_families_where_they_are_offered(committed_stack):
    # (committed_stack plans each stack: a refusal would fail it first; this says why it passes)
    name, _ = committed_stack
    from infra.offline.stackfile import load_config, stack_path

    config, _ = load_config(stack_path(name))
    values = raw_values(config)
    for g in values["slices"]:
        family = (g["tpu"] if isinstance(g["tpu"], str) else g["tpu"]["family"]).split("-")[0]
        assert g.get("unlistedZone") or tpu_zones.offered(family, values["zone"]), (name, g["name"])


def test_in_zone_of_gives_a_zone_in_its_region():
    for family in FAMILIES:
        where = in_zone_of(f"{family}-8")
        assert where["gcp_zone"].startswith(where["gcp_region"] + "-")
