"""A plan is a pure function of its PlanInputs (issue #79.1): the stack's config and name, its secret keys, the clock,
the bootstrap config beside it, other stacks' outputs and each live read, passed explicitly; nothing read from the
environment, module state or the wall clock inside the program. Two plans of equal inputs are equal, so the suite
shares them (engine.share_plans); changing any one input changes what it should, and nothing else does."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from components.model.cluster import cluster as cluster_rules
from infra.errors import InvalidStackConfig
from infra.offline import engine, stackfile
from tests.conftest import TODAY, config_with

PROJECT = "test-proj-123"
EXCLUSION = {"name": "launch", "startTime": "2026-12-10T00:00:00Z", "endTime": "2026-12-20T00:00:00Z", "scope": "NO_UPGRADES"}


def inputs(config: dict, stack: str = "test", now: dt.datetime = TODAY, **more) -> engine.PlanInputs:
    flat, secrets = stackfile.flatten(config)
    return engine.PlanInputs.of(flat, stack, secrets, now=now, **more)


def fresh(i: engine.PlanInputs) -> engine.Plan:
    with engine.unshared():
        return engine.plan(i)


def as_json(plan: engine.Plan) -> str:
    return json.dumps(plan.to_json(), sort_keys=True)


BASE = config_with(cluster={"maintenance": {"exclusions": [EXCLUSION]}})


def test_two_plans_of_equal_inputs_in_one_process_are_equal():
    first, second = fresh(inputs(BASE)), fresh(inputs(BASE))
    assert first is not second and as_json(first) == as_json(second)
    assert first.revealed_outputs == second.revealed_outputs


def test_the_shared_plan_is_made_once_for_equal_inputs():
    i = inputs(config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 3}]))
    assert engine.plan(i) is engine.plan(inputs(config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 3}])))
    assert engine.plan(i) is not fresh(i)


def test_the_environment_module_state_and_the_wall_clock_are_not_read(monkeypatch):
    before = as_json(fresh(inputs(BASE)))

    def no_clock() -> dt.datetime:
        raise AssertionError("the program read the clock outside its inputs")

    monkeypatch.setattr(cluster_rules, "now", no_clock)
    for name in ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS", "KUBERNETES_SERVICE_HOST", "TZ", "PATHWAYS_STACK_CONFIG"):
        monkeypatch.setenv(name, "{}" if name.startswith("PULUMI_CONFIG") else "elsewhere")
    monkeypatch.chdir(os.path.dirname(__file__))
    assert as_json(fresh(inputs(BASE))) == before


def test_the_clock_is_an_input():
    # the exclusion holds on the suite's day; a clock after its end makes GKE (and the plan) refuse it
    assert fresh(inputs(BASE)).by_type("gcp:container/cluster:Cluster")
    with pytest.raises(InvalidStackConfig, match=r"exclusions\[0\]\.endTime: 2026-12-20T00:00:00Z has passed"):
        fresh(inputs(BASE, now=dt.datetime(2026, 12, 21, tzinfo=dt.timezone.utc)))


def test_the_config_the_stack_name_and_the_secret_keys_are_inputs():
    base = fresh(inputs(BASE))
    grown = fresh(inputs(config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 3}], cluster={"maintenance": {"exclusions": [EXCLUSION]}})))
    assert len(grown.by_type("gcp:container/nodePool:NodePool")) == len(base.by_type("gcp:container/nodePool:NodePool")) + 1
    renamed = fresh(inputs(BASE, stack="other"))
    assert {r.urn.replace("urn:pulumi:other::", "urn:pulumi:test::") for r in renamed.resources} == {r.urn for r in base.resources}
    env = {**BASE, "pathways:pathwaysVersion": "jax-0.9.0", "pathways:workloads": [{"name": "train", "image": "example.com/t:1", "env": {"TOKEN": "hunter2"}}]}
    flat, _ = stackfile.flatten(env)
    plain = fresh(engine.PlanInputs.of(flat, "test", (), now=TODAY))
    secret = fresh(engine.PlanInputs.of(flat, "test", ("pathways:workloads",), now=TODAY))
    assert "hunter2" in as_json(plain) and "hunter2" not in as_json(secret)


def test_the_bootstrap_beside_the_stack_is_an_input():
    mounts = {**config_with(pathwaysVersion="jax-0.9.0", workloads=[{"name": "train", "image": "example.com/t:1", "mounts": [
        {"path": "/data", "bucket": "other-proj-datasets"}]}]), "gcp:project": PROJECT}
    boot = {"gcp:project": PROJECT, "pathways-bootstrap:stacks": ["test"]}
    assert fresh(inputs(mounts))  # no bootstrap config for the stack: nothing to judge the grant by
    with pytest.raises(InvalidStackConfig, match="other-proj-datasets' is not a bucket this stack makes"):
        fresh(inputs(mounts, bootstrap=(f"Pulumi.{PROJECT}.yaml", boot)))
    allowed = {**boot, "pathways-bootstrap:externalBuckets": {"test": {"other-proj-datasets": "read"}}}
    assert fresh(inputs(mounts, bootstrap=(f"Pulumi.{PROJECT}.yaml", allowed))).by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")


def test_each_live_read_is_an_input():
    cfg = {**config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}]), "pathways:readQuota": True}
    from components.model.capacity import quota

    on_demand = quota.QUOTA_IDS[("v6e", "on-demand")][0]

    def limit(value: int) -> dict:
        return {on_demand: {"quotaId": on_demand, "dimensionsInfos": [{"dimensions": {"region": "us-east5", "tpu_family": "CT6E"},
                                                                       "details": [{"value": str(value)}], "applicableLocations": []}]}}

    assert fresh(inputs(cfg, quotas=limit(64))).by_type("gcp:container/nodePool:NodePool")
    with pytest.raises(InvalidStackConfig, match=f"quota {on_demand} allows 8"):
        fresh(inputs(cfg, quotas=limit(8)))


def test_other_stacks_outputs_are_an_input():
    manager = stackfile.load_config(stackfile.STACKS_DIR.parent / "tests" / "fixtures" / "examples" / "stacks" / "Pulumi.fleet-manager.yaml")
    flat, secrets = manager
    workers = json.loads(flat["pathways:fleet"])["workers"]
    with pytest.raises(InvalidStackConfig, match="fleet-east publishes no fleet output"):
        fresh(engine.PlanInputs.of(flat, "fleet-manager", secrets, now=TODAY))
    examples = stackfile.STACKS_DIR.parent / "tests" / "fixtures" / "examples" / "stacks"
    outputs = engine.fleet_worker_outputs(flat, examples, TODAY)
    assert set(outputs) == {w["stack"] for w in workers}
    given = fresh(engine.PlanInputs.of(flat, "fleet-manager", secrets, now=TODAY, stack_outputs=outputs))
    assert given.by_type("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig")
    # what run() gathers from the files beside the stack is exactly these inputs
    assert as_json(engine.run(flat, "fleet-manager", secrets, stacks_dir=examples)) == as_json(given)


def test_plans_are_shared_across_processes_through_a_folder_except_those_of_secret_inputs(tmp_path):
    plain = inputs(BASE)
    made = fresh(plain)
    first, other = engine.SharedPlans(tmp_path), engine.SharedPlans(tmp_path)  # as two workers of one run
    first.put(plain, made)
    found = other.get(plain)
    assert found is not None and found is not made and as_json(found) == as_json(made)
    assert other.get(inputs(BASE, stack="other")) is None
    env = {**BASE, "pathways:pathwaysVersion": "jax-0.9.0", "pathways:workloads": [{"name": "t", "image": "example.com/t:1", "env": {"K": "v"}}]}
    flat, _ = stackfile.flatten(env)
    secret = engine.PlanInputs.of(flat, "test", ("pathways:workloads",), now=TODAY)
    first.put(secret, fresh(secret))
    assert other.get(secret) is None and len(list(tmp_path.glob("*.pickle"))) == 1


def test_the_files_the_config_names_are_inputs(tmp_path):
    # a recorded reservation describe file is read at the boundary into PlanInputs.files, and the program reads that
    flat, secrets = stackfile.load_config(stackfile.STACKS_DIR.parent / "tests" / "fixtures" / "examples" / "stacks" / "Pulumi.prod.yaml")
    files = engine.named_files(flat)
    [(path, text)] = [(p, t) for p, t in files.items() if p.endswith(".json")][:1]
    assert text is not None and json.loads(text)
    with_record = engine.PlanInputs.of(flat, "prod", secrets, now=TODAY, files=files)
    assert as_json(fresh(with_record)) == as_json(engine.run(flat, "prod", secrets, stacks_dir=stackfile.STACKS_DIR.parent / "tests" / "fixtures" / "examples" / "stacks"))
    # the same config with the file gone is other inputs, refused naming the key; on disk nothing changed
    with pytest.raises(InvalidStackConfig, match=r"reservationRecord: .*cannot read it \(No such file or directory\)"):
        fresh(engine.PlanInputs.of(flat, "prod", secrets, now=TODAY, files={**files, path: None}))
