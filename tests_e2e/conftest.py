"""The real-engine tier: one local control plane (real kube-apiserver, etcd, controller-manager and
scheduler; real JobSet, Kueue and LWS controllers with their webhooks) for the whole session, each
scenario deploying a stack's Kubernetes layer onto GKE-shaped fake nodes and resetting it after.

Run with `make e2e` (it builds the engines first). A missing engine is a failure, never a skip."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from infra.offline.engine import Plan
from tools.cluster.deploy import deploy, reset
from tools.cluster.local import ROOT, LocalCluster, leftover_processes


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    workdir = Path(os.environ.get("PATHWAYS_E2E_WORKDIR") or ROOT / "build" / "e2e" / time.strftime("%Y%m%d-%H%M%S"))
    with LocalCluster.start(workdir) as c:
        yield c
    time.sleep(3)  # stopped processes are reaped by init
    left = leftover_processes(workdir)
    assert not left, f"the teardown left processes behind: {left}"


@pytest.fixture
def stack(cluster: LocalCluster) -> Iterator[Callable[[Plan], list[dict[str, Any]]]]:
    """deploy(plan) onto the cluster; whatever was deployed is removed after the test."""
    deployed: list[Plan] = []

    def _deploy(plan: Plan, region: str = "us-east5", zone: str = "us-east5-b") -> list[dict[str, Any]]:
        deployed.append(plan)
        return deploy(cluster, plan, region, zone)

    yield _deploy
    if deployed:
        reset(cluster)
