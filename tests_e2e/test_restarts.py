"""A crashed worker, as the real Job and JobSet controllers count it: restarts in place up to
workerRestartsPerHost per host, then the whole JobSet restarts, up to maxRestarts, then it fails."""

from __future__ import annotations

from tests.conftest import config_with
from tests_e2e.helpers import is_true, pods, running, wait_running

VERSION = "jax-0.9.0"


def fail_a_worker(cluster) -> None:
    worker = next(p for p in pods(cluster, "pathways", "crashy")
                  if running(p) and p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "worker")
    cluster.kubectl("annotate", "pod", "-n", "pathways", worker["metadata"]["name"], "e2e.pathways/fail=true")
    cluster.wait_for("the worker failed", lambda: cluster.get("pod", "-n", "pathways", worker["metadata"]["name"])
                     ["status"].get("phase") == "Failed" if cluster.kubectl("get", "pod", "-n", "pathways", worker["metadata"]["name"],
                                                                           check=False).returncode == 0 else True)


def restarts(cluster) -> int:
    return cluster.get("jobset", "-n", "pathways", "crashy").get("status", {}).get("restarts", 0)


def test_worker_failures_restart_the_jobset_as_configured(cluster, stacks):
    # one single-host slice: the worker may crash once per host (workerRestartsPerHost 1) before its Job fails
    stacks.use("restarts", config_with(slices=[{"name": "main", "tpu": "v6e-4"}], pathwaysVersion=VERSION,
                                       workloads=[{"name": "crashy", "image": "example.com/t:1", "workerRestartsPerHost": 1, "maxRestarts": 1}]))
    wait_running(cluster, "pathways", "crashy", 2)
    fail_a_worker(cluster)  # within the backoff limit: the Job replaces the pod
    wait_running(cluster, "pathways", "crashy", 2)
    assert restarts(cluster) == 0
    fail_a_worker(cluster)  # over it: the worker Job fails, the JobSet restarts whole (maxRestarts 1)
    cluster.wait_for("the JobSet restarted once", lambda: restarts(cluster) == 1)
    wait_running(cluster, "pathways", "crashy", 2)
    fail_a_worker(cluster)
    wait_running(cluster, "pathways", "crashy", 2)
    assert restarts(cluster) == 1
    fail_a_worker(cluster)  # a second restart would exceed maxRestarts: the JobSet fails
    cluster.wait_for("the JobSet failed", lambda: is_true(cluster.get("jobset", "-n", "pathways", "crashy"), "Failed"), timeout=90)
    assert restarts(cluster) == 1 and not [p for p in pods(cluster, "pathways", "crashy") if running(p)]
