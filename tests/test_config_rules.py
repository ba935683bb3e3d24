"""The rules that span keys: each feature's <feature>_checks module, run in the order components/model/checks.py
lists them. A rule written but not listed would never run; a change of the list changes what users read first."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

from components.model import checks
from components.model.config import load
from components.model.errors import ConfigError

MODEL = Path(checks.__file__).parent
REGISTERED = [*checks.STACK_RULES, *checks.EVERY_WORKLOAD_RULES, *checks.PLACED_WORKLOAD_RULES]


def test_every_feature_rule_is_listed_once():
    modules = sorted(".".join(p.relative_to(MODEL.parents[1]).with_suffix("").parts) for p in MODEL.rglob("*_checks.py"))
    assert sorted({rule.__module__ for rule in REGISTERED} - {checks.__name__}) == modules
    for name in modules:
        module = importlib.import_module(name)
        rules = [f for n, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == name and not n.startswith("_")]
        assert rules, name
        for rule in rules:
            assert REGISTERED.count(rule) == 1, f"{name}.{rule.__name__} is not listed once in components/model/checks.py"


@pytest.mark.parametrize("rule", REGISTERED, ids=lambda r: f"{r.__module__.rsplit('.', 1)[-1]}.{r.__name__}")
def test_every_rule_says_what_it_holds(rule):
    assert (rule.__doc__ or "").strip(), f"{rule.__name__}: a docstring saying what the rule holds (its source beside it)"


W = {"image": "example.com/trainer:1", "sliceGroup": "main"}


def test_problems_come_in_the_order_the_rules_are_listed():
    raw = {
        "project": "test-proj-123", "region": "us-east5", "zone": "us-central1-a", "protected": True,
        "cluster": {"publicEndpoint": True, "deletionProtection": False, "maintenance": {"exclusions": [
            {"name": "freeze", "startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-05T00:00:00Z"}]}},
        "network": {"existingNetwork": "shared", "existingSubnetwork": "projects/host-proj-1/regions/us-central1/subnetworks/tpu"},
        "slices": [{"name": "main", "tpu": "v6e-16", "count": 2}, {"name": "main", "tpu": "v6e-16"}],
        "bucket": {"name": "x-bucket", "artifactsName": "x-bucket"},
        "headPool": {"nodeCount": 1},
        "kubernetes": {"kueue": {"enabled": False}},
        "workloads": [{**W, "name": "a", "slices": 5}, {"name": "a", "mode": "interactive", "sliceGroup": "main", "env": {"A": "1"}},
                      {**W, "name": "b", "sliceGroup": "nope"}, {**W, "name": "c", "slices": 1}],
    }
    with pytest.raises(ConfigError) as err:
        load(raw, "test")
    got = [(p.key, p.message) for p in err.value.problems]
    want = [
        ("pathways:cluster.maintenance.exclusions[0].endTime", "2026-01-05T00:00:00Z has passed: exclusio"),
        ("gcp:zone", "us-central1-a is not in region us-east5"),
        ("pathways:slices[1].name", "'main' is already used by slices[0]"),
        ("pathways:workloads[0].slices", "5 exceeds the 2 slice(s) of group 'main' ("),
        ("pathways:workloads[1].name", "'a' is already used by workloads[0]"),
        ("pathways:workloads[1].env", "interactive workloads run no user contain"),
        ("pathways:workloads[2].sliceGroup", "'nope' is not a slice group"),
        ("pathways:kubernetes.kueue.enabled", "false, but workloads a, a, c want 8 slice"),
        ("pathways:kubernetes.kueue.enabled", "false, but workloads a, a, c want 8 slice"),
        ("pathways:slices[0].tpu", "TPU v6e is not offered in gcp:zone us-cent"),
        ("pathways:slices[1].tpu", "TPU v6e is not offered in gcp:zone us-cent"),
        ("pathways:pathwaysVersion", "required when workloads are set"),
        ("pathways:headPool.nodeCount", "1 node(s) cannot hold the head pods of 4 "),
        ("pathways:bucket.artifactsName", "must differ from bucket.name (its lifecyc"),
        ("pathways:cluster.publicEndpoint", "true with no masterAuthorizedNetworks ope"),
        ("pathways:network.existingSubnetwork", "is in region us-central1, but the stack'"),
        ("pathways:cluster.deletionProtection", "false conflicts with protected: true"),
    ]
    assert [key for key, _ in got] == [key for key, _ in want]
    assert all(message.startswith(start) for (_, message), (_, start) in zip(got, want, strict=True)), got
