"""Shared fixtures: one mocked program run per config, reused by every test that asks for it."""

from __future__ import annotations

import copy
import datetime
import functools
import json

import pytest
import yaml

from components.model import cluster as cluster_rules
from infra.offline import engine, stackfile

# Rules that compare with the present (an exclusion that has ended) see a fixed day, so that the suite
# gives the same verdicts next year; tests of those rules move it themselves.
TODAY = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
cluster_rules.now = lambda: TODAY

STACKS = stackfile.stack_names()
# Committed stacks on a cluster made elsewhere (cluster.existing): no GCP resource, no controllers of their own; the
# tests of what the stack makes in GCP run on the others (made_stack), and test_existing_as_is judges these.
EXISTING_CLUSTER_STACKS = ("xpk-cluster",)
MADE_STACKS = tuple(s for s in STACKS if s not in EXISTING_CLUSTER_STACKS)
# A fleet manager runs no pod of its own (its runs are dispatched to its workers): no workload, dashboard tile or
# alert about one.
FLEET_MANAGERS = ("fleet-manager",)

# The smallest valid config; tests copy it and change one thing.
BASE_CONFIG = {
    "gcp:project": "test-proj-123",
    "gcp:region": "us-east5",
    "gcp:zone": "us-east5-b",
    "pathways:slices": [{"name": "main", "tpu": "v6e-16", "count": 2}],
}


# A zone each TPU family is offered in (components/model/tpu_zones.py), for tests of a family BASE_CONFIG's
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
    config, secrets = stackfile.load_config(stackfile.stack_path(stack))
    return engine.run(config, stack, secrets)


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


def pytest_sessionstart(session):
    # The admission checks read the upstream CRDs from build/crds (make crds, which make test runs first):
    # without them a whole layer would be skipped, so the suite refuses to start instead.
    from components.manifests import admission

    if not all(p.exists() for p in (admission.JOBSET_SCHEMA, admission.kueue_crd_path("ClusterQueue"), admission.LWS_SCHEMA)):
        raise pytest.UsageError(f"{admission.CRDS} is missing the JobSet, Kueue or LWS CRDs: run `make crds` (make test does)")
