"""Shared fixtures: one mocked program run per config, reused by every test that asks for it."""

from __future__ import annotations

import copy
import datetime
import functools
import gc
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from components.model.cluster import cluster as cluster_rules
from infra.offline import engine, stackfile

# Rules that compare with the present (an exclusion that has ended) see a fixed day, so that the suite
# gives the same verdicts next year; tests of those rules move it themselves.
TODAY = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
cluster_rules.now = lambda: TODAY

SHARED_PLANS = "PATHWAYS_TEST_SHARED_PLANS"
_OWN_SHARED_PLANS = False
# Plans of equal inputs are made once for the whole suite (a plan is a function of its PlanInputs); a test that
# monkeypatches may change what the program reads beyond them, and gets plans of its own (_fresh_plans_when_patched).
# Across the run's processes too (pytest-xdist's workers, and a test's own pytest run): a private folder the first of
# them makes, the others find in the environment.
if not os.environ.get(SHARED_PLANS):
    os.environ[SHARED_PLANS] = tempfile.mkdtemp(prefix="pathways-plans-")
    _OWN_SHARED_PLANS = True
engine.share_plans(Path(os.environ[SHARED_PLANS]))

ROOT = Path(__file__).resolve().parents[1]

# Two kinds of test read stack files:
# - tests over every stack (STACKS, MADE_STACKS, the committed_stack and made_stack fixtures, @every_stack) read
#   stacks/, the team's own files, and derive what they expect from each stack's file: a team adds, re-points or
#   removes stacks and they stay green (tests/test_own_stacks.py proves it in a scratch copy);
# - tests about a particular example read its copy in tests/fixtures/examples/ (example_plan("prod")), as the
#   example was written, never the live file a team edits.
EXAMPLES = ROOT / "tests" / "fixtures" / "examples"
EXAMPLE_STACKS = EXAMPLES / "stacks"
EXAMPLE_BOOTSTRAP = EXAMPLES / "bootstrap"

STACKS = stackfile.stack_names()


def _stack_doc(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


# each stack file read once, at collection
_CONFIGS = {s: _stack_doc(stackfile.stack_path(s)).get("config") or {} for s in STACKS}


def stack_config(name: str) -> dict:
    """A stack's config as its file in stacks/ writes it (the YAML's `config:` mapping): what a test over every stack
    derives its expectations from."""
    return _CONFIGS[name]


def section(config: dict, key: str) -> dict:
    """pathways:<key> of a stack file's config, {} when the file leaves it out."""
    return config.get(f"pathways:{key}") or {}


def is_protected(name: str) -> bool:
    """pathways:protected as the stack file sets it (off unless set)."""
    return bool(_CONFIGS[name].get("pathways:protected", False))


# Stacks on a cluster made elsewhere (cluster.existing): no GCP resource, no controllers of their own; the tests of
# what the stack makes in GCP run on the others (made_stack), and test_existing_as_is judges these.
EXISTING_CLUSTER_STACKS = tuple(s for s in STACKS if (_CONFIGS[s].get("pathways:cluster") or {}).get("existing"))
MADE_STACKS = tuple(s for s in STACKS if s not in EXISTING_CLUSTER_STACKS)
# A fleet manager runs no pod of its own (its runs are dispatched to its workers): no workload, dashboard tile or
# alert about one.
FLEET_MANAGERS = tuple(s for s in STACKS if (_CONFIGS[s].get("pathways:fleet") or {}).get("role") == "manager")


def every_stack(argname: str = "stack", stacks: "tuple[str, ...] | list[str] | None" = None):
    """Parametrize a test over every stack in stacks/ (or the given subset of them) and mark it every_stack, the
    set tests/test_own_stacks.py runs again in a scratch copy with a team's stacks."""
    params = STACKS if stacks is None else stacks

    def mark(test):
        return pytest.mark.every_stack(pytest.mark.parametrize(argname, params)(test))

    return mark


def example_path(name: str) -> Path:
    """The copy of example stack `name` the tests about it read (tests/fixtures/examples/stacks)."""
    return EXAMPLE_STACKS / f"Pulumi.{name}.yaml"


def example_config(name: str) -> dict:
    """An example stack's config as written (the YAML's `config:` mapping)."""
    return _stack_doc(example_path(name))["config"]


@functools.lru_cache(maxsize=None)
def example_plan(name: str) -> engine.Plan:
    """The plan of an example stack's copy; a fleet manager's workers are the example copies beside it."""
    config, secrets = stackfile.load_config(example_path(name))
    return engine.run(config, name, secrets, stacks_dir=EXAMPLE_STACKS)

# Google Groups for RBAC on the cluster: what a stack that names a Google group in RBAC needs (cluster.securityGroup).
GROUPS_RBAC = {"securityGroup": "gke-security-groups@example.com"}

# The smallest valid config; tests copy it and change one thing.
BASE_CONFIG = {
    "gcp:project": "test-proj-123",
    "gcp:region": "us-east5",
    "gcp:zone": "us-east5-b",
    "pathways:slices": [{"name": "main", "tpu": "v6e-16", "count": 2}],
}


# A zone each TPU family is offered in (components/model/capacity/tpu_zones.py), for tests of a family BASE_CONFIG's
# us-east5-b does not offer.
ZONE_OF_FAMILY = {"tpu7x": "us-central1-c", "v4": "us-central2-b", "v5e": "us-west4-a", "v5p": "us-east5-a", "v6e": "us-east5-b"}


def in_zone_of(tpu: str) -> dict:
    """config_with arguments placing the stack in a zone that offers this TPU (v6e-16, tpu7x-128, ...)."""
    zone = ZONE_OF_FAMILY[tpu.split("-")[0].replace("v5litepod", "v5e")]
    return {"gcp_region": zone.rsplit("-", 1)[0], "gcp_zone": zone}


def config_with(**changes) -> dict:
    """BASE_CONFIG with pathways:<key> (or gcp_<key>) replaced: config_with(slices=[...], gcp_zone='x')."""
    cfg = copy.deepcopy(BASE_CONFIG)
    for key, value in changes.items():
        full = f"gcp:{key[4:]}" if key.startswith("gcp_") else f"pathways:{key}"
        if value is None:
            cfg.pop(full, None)
        else:
            cfg[full] = value
    return cfg


@functools.lru_cache(maxsize=None)
def _plan_cached(config_json: str, stack: str) -> engine.Plan:
    config, secrets = stackfile.flatten(json.loads(config_json))
    return engine.run(config, stack, secrets)


def plan_of(config: dict, stack: str = "test") -> engine.Plan:
    return _plan_cached(json.dumps(config, sort_keys=True), stack)


@functools.lru_cache(maxsize=None)
def stack_plan(stack: str) -> engine.Plan:
    """The plan of stacks/Pulumi.<stack>.yaml, the team's file: for tests over every stack only."""
    config, secrets = stackfile.load_config(stackfile.stack_path(stack))
    return engine.run(config, stack, secrets)


@functools.lru_cache(maxsize=None)
def stack_model(stack: str):
    """The resolved model of stacks/Pulumi.<stack>.yaml (its workloads' derived facts): for tests over every stack."""
    from components.model.config import load, resolve

    config, secrets = stackfile.load_config(stackfile.stack_path(stack))
    return resolve(load(stackfile.raw_values(config), stack, frozenset(secrets)))


def example_model(name: str):
    """The resolved model of an example stack's copy (tests/fixtures/examples): for tests about that example."""
    from components.model.config import load, resolve

    config, secrets = stackfile.load_config(example_path(name))
    return resolve(load(stackfile.raw_values(config), name, frozenset(secrets)))


@pytest.fixture(autouse=True)
def _fresh_plans_when_patched(request):
    if "monkeypatch" in request.fixturenames:
        with engine.unshared():
            yield
    else:
        yield


@pytest.fixture(params=STACKS)
def committed_stack(request) -> tuple[str, engine.Plan]:
    return request.param, stack_plan(request.param)


@pytest.fixture(params=MADE_STACKS)
def made_stack(request) -> tuple[str, engine.Plan]:
    """A committed stack that makes its cluster (its GCP half: cluster, pools, buckets, dashboard, alerts)."""
    return request.param, stack_plan(request.param)


def write_stack_file(tmp_path, config: dict, name: str = "Pulumi.test.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def pytest_addoption(parser):
    parser.addoption("--only-stacks", default=None, metavar="NAMES", help=(
        "with -m every_stack: of the tests parametrized by stack (or bootstrap project), keep only these (comma-separated); "
        "the checks across all stacks still run. tests/test_own_stacks.py runs a scratch copy's changed stacks so."))
    parser.addoption("--whole-files", default="", metavar="PATHS", help=(
        "with -m every_stack: also every test of these test files (comma-separated, relative to the rootdir), all their "
        "stacks: tests/test_own_stacks.py runs the tests that read the repository's own files so, in the same run."))


def _bootstrap_projects() -> set[str]:
    return {p.name[len("Pulumi."):-len(".yaml")] for p in (ROOT / "bootstrap").glob("Pulumi.*.yaml")} - {"Pulumi"}


def pytest_collection_finish(session):
    # The suite builds some 800 plans, each a few hundred thousand short-lived objects, and keeps them (the caches
    # above); with the default thresholds the collector walks the imported providers' modules and every kept plan
    # again and again. Freezing what collection imported and collecting less often saves about a quarter of the
    # suite's time; cycles are still collected, less often.
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 50, 20)


def pytest_unconfigure(config):
    if _OWN_SHARED_PLANS:
        shutil.rmtree(os.environ.pop(SHARED_PLANS), ignore_errors=True)


def pytest_sessionfinish(session):
    # collected while pytest still captures: a plan the program refused leaves futures holding its error, and
    # collected at exit asyncio would print each ("Future exception was never retrieved") after the summary
    gc.collect()


# The suite's longest tests (tens of seconds each: a scratch copy's own run, the fuzzers) start first: pytest-xdist hands
# tests out in collection order, and one of them started last would be the run's tail on one worker.
LONGEST = ("tests/test_own_stacks.py::", "tests/test_hostile_input.py::test_fuzzed_stack_files_exit_cleanly",
           "tests/test_ci_run.py::test_the_record_counts_every_scenario_the_tier_has_now", "tests/test_rule_fuzz.py::")


def pytest_collection_modifyitems(config, items):
    whole = {ROOT / p for p in config.getoption("--whole-files").split(",") if p}
    entire = set()  # the tests of --whole-files that check no stack in particular: kept whatever --only-stacks says
    for item in items:
        if {"committed_stack", "made_stack"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.every_stack)
        elif item.path in whole and not item.get_closest_marker("every_stack"):
            item.add_marker(pytest.mark.every_stack)
            entire.add(item.nodeid)
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST))  # stable: the rest in collection order
    only = config.getoption("--only-stacks")
    if only is None:
        return
    keep, named = set(only.split(",")), set(STACKS) | _bootstrap_projects()
    kept, dropped = [], []
    for item in items:
        if item.nodeid in entire:
            kept.append(item)
            continue
        params = getattr(item, "callspec", None)
        values = {v for v in (params.params.values() if params else ()) if isinstance(v, str)}
        (dropped if values & named and not values & keep else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
