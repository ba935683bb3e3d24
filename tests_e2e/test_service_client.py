"""A Shared Pathways Service as Google's own client sees it (pathwaysutils 0.1.13, run from its own
environment against the local API server, as a user the stack lets connect): the readiness check
run_workload makes, the image lookup connect() makes, and the client's proxy Job, which the guards and
the clients' Role admit and the scheduler places on the proxy pool."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from tests.conftest import config_with, plan_of
from tests_e2e.helpers import nodes, running, wait_running
from tools.cluster.local import BIN, ROOT

CLIENT_VENV = ROOT / "build" / "client-venv"
USER = "alice@example.com"


def client_kubeconfig(cluster, gke_context: str) -> Path:
    """Alice's kubeconfig with its context named as `gcloud container clusters get-credentials` names it,
    so that the client takes it for the service's cluster and fetches no credentials."""
    kc = yaml.safe_load(cluster.user_kubeconfig(USER).read_text())
    kc["clusters"][0]["name"] = kc["contexts"][0]["context"]["cluster"] = gke_context
    kc["contexts"][0]["name"] = kc["current-context"] = gke_context
    path = cluster.workdir / "users" / "client.kubeconfig"
    path.write_text(yaml.safe_dump(kc))
    return path


def test_the_pathwaysutils_client_finds_checks_and_uses_the_service(cluster, stacks):
    config = config_with(pathwaysVersion="jax-0.9.0", workloads=[
        {"name": "sps", "mode": "service", "service": {"maxClients": 2, "clients": [{"kind": "User", "name": USER}]}}])
    stacks.use("service", config)
    plan = plan_of(config, "service")
    access = plan.outputs["services"]["sps"]
    wait_running(cluster, "default", "sps", 1 + 2 * 4)
    kubeconfig = client_kubeconfig(cluster, f"gke_test-proj-123_us-east5-b_{plan.outputs['clusterName']}")
    proc = subprocess.run(
        [str(CLIENT_VENV / "bin" / "python"), str(Path(__file__).with_name("service_client_probe.py")),
         plan.outputs["clusterName"], "test-proj-123", "us-east5-b", access["address"], access["instanceType"], access["gcsScratchLocation"]],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "KUBECONFIG": str(kubeconfig), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ready"] is True
    assert out["serverImage"] == "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.9.0"
    assert out["proxyImage"] == access["proxyImage"]
    # the client's proxy Job runs on a proxy node, as alice may and the guards allow
    pod = cluster.wait_for("the client's proxy pod running", lambda: next(
        (p for p in cluster.get("pods", "-n", "default", "-l", "job-name=probe-proxy")["items"] if running(p)), None))
    assert nodes(cluster)[pod["spec"]["nodeName"]]["pathways/role"] == "proxy"
