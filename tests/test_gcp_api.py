"""The GCP half judged by Google's own API (issue #72.10): every input every stack and the bootstrap give pulumi-gcp,
against the field it becomes in Google's discovery documents (google.golang.org/api v0.316.0, build/crds/gcp-api),
and the constraints the documents state in words (infra/offline/gcp_api.py)."""

from __future__ import annotations

import copy

import pytest

from infra.offline import gcp_api
from infra.offline.change_rules import forcing_paths
from tests.conftest import config_with, every_stack, in_zone_of, plan_of, stack_plan
from tests.test_bootstrap import example_bootstrap_plan

POOL = "gcp:container/nodePool:NodePool"


def test_the_documents_are_the_pinned_revisions():
    assert gcp_api.revision("container-api.json") == "20261027"
    assert gcp_api.revision("compute-api.json") == "20261106"


@every_stack()
def test_every_gcp_input_of_the_stack_is_a_settable_api_field_with_a_valid_value(stack):
    assert [str(f) for f in gcp_api.check_plan(stack_plan(stack))] == []


@pytest.mark.parametrize("project", ["pathways-dev-123", "pathways-prod-123"])
def test_every_gcp_input_of_the_bootstrap_is_a_settable_api_field(project):
    assert [str(f) for f in gcp_api.check_plan(example_bootstrap_plan(project))] == []


def _feature_plans():
    from tests.test_reservations import calendar_plan
    from tests.test_serving import _gateway_stack

    yield plan_of(_gateway_stack({"external": True, "clientRanges": ["203.0.113.0/24"]}), "serving")  # Cloud Armor
    yield calendar_plan()  # a calendar-mode future reservation
    yield plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128", "count": 2, "flexStart": True}], **in_zone_of("tpu7x")))
    yield plan_of(config_with(slices=[{"name": "q", "tpu": "v6e-16", "flexStart": True, "queuedProvisioning": True}],
                              workloads=[{"name": "t", "image": "example.com/t:1", "state": "finished"}], pathwaysVersion="jax-0.9.0"))


def test_the_features_no_example_stack_uses_are_judged_too():
    types = set()
    for plan in _feature_plans():
        assert [str(f) for f in gcp_api.check_plan(plan)] == []
        types |= {r.type for r in plan.resources if r.type.startswith("gcp:")}
    assert {"gcp:compute/regionSecurityPolicy:RegionSecurityPolicy", "gcp:compute/futureReservation:FutureReservation"} <= types


# --- the check can fail: each kind of finding, on a copy of a real plan ----------------------------------------------

def _mutated(plan, type_, name_prefix, path, value):
    plan = copy.deepcopy(plan)
    r = next(r for r in plan.resources if r.type == type_ and r.name.startswith(name_prefix))
    target = r.inputs
    *head, last = path.split(".")
    for part in head:
        target = target.setdefault(part, {})
    target[last] = value
    return plan


@pytest.mark.parametrize("type_,name,path,value,message", [
    (POOL, "slices-", "placementPolicy.type", "SPREAD", "'SPREAD' is not one of the API's values (TYPE_UNSPECIFIED, COMPACT)"),
    (POOL, "slices-", "nodeConfig.taints", [{"key": "k", "value": "v", "effect": "NoSchedule"}], "'NoSchedule' is not one of the API's values"),
    (POOL, "slices-", "maxPodsPerNode", "fifteen", "'fifteen' is not an integer (int64)"),
    (POOL, "slices-", "nodeConfig.machineTyp", "ct6e-standard-4t", "no API field (NodeConfig has no field 'machineTyp'"),
    ("gcp:container/cluster:Cluster", "cluster", "endpoint", "203.0.113.1", "output only in the API"),
    ("gcp:container/cluster:Cluster", "cluster", "maintenancePolicy.recurringWindow.startTime", "Saturday", "'Saturday' is not an RFC 3339 time"),
    ("gcp:compute/resourcePolicy:ResourcePolicy", "slices-", "name", "Bad_Name", "does not match the API's pattern"),
    ("gcp:monitoring/alertPolicy:AlertPolicy", "observability-alert-0", "combiner", "ANY", "'ANY' is not one of the API's values"),
])
def test_each_kind_of_finding_is_reported(type_, name, path, value, message):
    base = plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128", "count": 2}], **in_zone_of("tpu7x")))
    findings = [str(f) for f in gcp_api.check_plan(_mutated(base, type_, name, path, value))]
    assert any(message in f and path.split(".")[0] in f for f in findings), findings


def test_an_input_with_no_mapping_to_the_api_is_reported():
    base = plan_of(config_with())
    plan = copy.deepcopy(base)
    next(r for r in plan.resources if r.type == POOL).__dict__["type"] = "gcp:container/nodePoolV2:NodePoolV2"
    assert any("has no mapping to Google's API" in str(f) for f in gcp_api.check_plan(plan))


# --- the constraints the documents state ---------------------------------------------------------------------------

@pytest.mark.parametrize("rule", gcp_api.RULES, ids=[r.name for r in gcp_api.RULES])
def test_each_rule_quotes_its_document(rule):
    schema = gcp_api.document(rule.doc)["schemas"][rule.schema]
    texts = [schema.get("description", "")] + [p.get("description", "") for p in (schema.get("properties") or {}).values()]
    assert any(rule.quote in t for t in texts), f"{rule.doc} {rule.schema} no longer says: {rule.quote}"


def test_the_rules_find_what_they_encode():
    base = plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128", "count": 2}], **in_zone_of("tpu7x")))
    off = _mutated(base, POOL, "slices-g-0", "management.autoUpgrade", False)
    assert any("release channel, where node auto-upgrade cannot be disabled" in str(f) for f in gcp_api.check_plan(off))
    moved = _mutated(base, "gcp:compute/resourcePolicy:ResourcePolicy", "slices-", "region", "us-east5")
    assert any("the pool in" in str(f) for f in gcp_api.check_plan(moved))
    routes = _mutated(base, "gcp:container/cluster:Cluster", "cluster", "networkingMode", "ROUTES")
    assert any("without IP aliases" in str(f) for f in gcp_api.check_plan(routes))


def _updated_in_place_though_the_api_cannot(plans) -> set[str]:
    updatable = gcp_api.updatable_node_pool_fields()
    mapping = gcp_api.MAPPINGS[POOL]
    unsafe = set()
    for plan in plans:
        for pool in plan.by_type(POOL):
            for path, _ in gcp_api._leaves(pool.inputs):
                api = gcp_api._api_path(mapping, path)
                if api in (None, gcp_api.PROVIDER) or path == "name":
                    continue
                field = (api.split(".")[1] if api.startswith("config.") else api.split(".")[0]).removesuffix("[]")
                if field not in updatable and not forcing_paths(POOL, [path]) and path.split(".")[0] not in pool.options["ignoreChanges"]:
                    unsafe.add(path)
    return unsafe


def test_every_node_pool_input_the_api_cannot_change_in_place_replaces_the_pool(monkeypatch):
    # Derived from the document: a NodePool field no call updates (UpdateNodePoolRequest, setAutoscaling, setManagement,
    # setSize) can only change with a new pool, so `diff` must say "replace" for it (infra/offline/change_rules.py) or
    # the program must never change it (ignoreChanges). The reverse need not hold: the provider may replace where
    # the API could update.
    plans = [stack_plan(s) for s in ("dev", "prod", "ironwood")] + list(_feature_plans())
    assert _updated_in_place_though_the_api_cannot(plans) == set()
    updatable = gcp_api.updatable_node_pool_fields()
    assert "maxPodsConstraint" not in updatable and "placementPolicy" not in updatable and "machineType" in updatable
    # the check can fail: a table without placementPolicy would let diff call a new policy an in-place update
    from infra.offline import change_rules

    monkeypatch.setitem(change_rules.FORCE_NEW, POOL, tuple(p for p in change_rules.FORCE_NEW[POOL] if p != "placementPolicy"))
    assert "placementPolicy.tpuTopology" in _updated_in_place_though_the_api_cannot(plans)
