"""Failure rules (workloads[].onFailure) as the real Job and JobSet controllers decide them, and hot-swap onto a
spare slice, timed.

The kubelet's part is kwok's (tools/cluster/stages.yaml): pod-fail ends a pod with the exit code of its
e2e.pathways/exit-code annotation; an eviction through the Eviction API, where the API server itself adds the
DisruptionTarget condition, ends as pod-terminate ends a deleted pod (143, Failed). The scenarios assert what the
controllers wrote: the Job's failure reason and message, the JobSet's conditions and restart counters, where the
scheduler put the new pods.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from components.manifests.jobset import PROGRAM_ERROR_MESSAGE_PATTERN
from tests.conftest import config_with
from tests_e2e.helpers import REPLICATED_JOB, condition, is_true, nodes, placement, pods, running, wait_running
from tools.cluster.local import LocalCluster, log

VERSION = "jax-0.9.0"
NS = "pathways"
HEAD, WORKER = "pathways-head", "worker"
RULES = {"failOnExitCodes": [2, 126, 127]}
# One stack for every scenario: three single-host workloads with failure rules on a v6e-4 group, and one
# two-slice workload on 4-host v6e-16 slices with a spare slice to swap onto.
CONFIG = config_with(
    slices=[{"name": "main", "tpu": "v6e-4", "count": 4}, {"name": "big", "tpu": "v6e-16", "count": 2, "spares": 1}],
    pathwaysVersion=VERSION,
    workloads=[
        {"name": "wrong", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "maxRestarts": 3, "onFailure": RULES},
        {"name": "evicted", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "maxRestarts": 3, "onFailure": RULES},
        {"name": "crash", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "maxRestarts": 3, "onFailure": RULES},
        {"name": "lost", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "maxRestarts": 3, "onFailure": RULES},
        {"name": "swap", "image": "example.com/t:1", "sliceGroup": "big", "slices": 2, "maxRestarts": 3, "onFailure": {}},
    ])
PODS = {"wrong": 2, "evicted": 2, "crash": 2, "lost": 2, "swap": 1 + 2 * 4}


def deploy(cluster: LocalCluster, stacks, workload: str) -> None:
    """The stack, up once for every scenario (an earlier scenario may have failed its own workload for good),
    and this scenario's workload running."""
    stacks.use("failures", CONFIG)
    wait_running(cluster, NS, workload, PODS[workload], timeout=180)


def pod_of(cluster: LocalCluster, jobset: str, replicated_job: str) -> dict[str, Any]:
    return next(p for p in pods(cluster, NS, jobset) if running(p) and p["metadata"]["labels"][REPLICATED_JOB] == replicated_job)


def status(cluster: LocalCluster, jobset: str) -> dict[str, Any]:
    return cluster.get("jobset", "-n", NS, jobset).get("status", {})


def counters(cluster: LocalCluster, jobset: str) -> tuple[int, int]:
    s = status(cluster, jobset)
    return s.get("restarts", 0), s.get("restartsCountTowardsMax", 0)


def fail(cluster: LocalCluster, pod: dict[str, Any], exit_code: int) -> None:
    cluster.kubectl("annotate", "pod", "-n", NS, pod["metadata"]["name"], f"e2e.pathways/exit-code={exit_code}", "e2e.pathways/fail=true")


def evict(cluster: LocalCluster, pod: dict[str, Any]) -> None:
    """What a drain, a node upgrade or a preemption by the scheduler does: the Eviction API, on which the API
    server adds the DisruptionTarget condition before it deletes the pod."""
    name = pod["metadata"]["name"]
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": NS}}
    cluster.kubectl("create", "--raw", f"/api/v1/namespaces/{NS}/pods/{name}/eviction", "-f", "-", stdin=json.dumps(eviction))


def failed_jobs(cluster: LocalCluster, jobset: str) -> list[dict[str, Any]]:
    jobs = cluster.get("jobs", "-n", NS, "-l", f"jobset.sigs.k8s.io/jobset-name={jobset}")["items"]
    return [j for j in jobs if is_true(j, "Failed")]


def restart_reasons(cluster: LocalCluster, jobset: str) -> set[str]:
    events = cluster.get("events", "-n", NS, "--field-selector", f"involvedObject.kind=JobSet,involvedObject.name={jobset}")["items"]
    return {e["reason"] for e in events if "FailurePolicyAction" in e.get("reason", "")}


def wait_restarted(cluster: LocalCluster, jobset: str, restarts: int) -> None:
    cluster.wait_for(f"JobSet {jobset} restarted {restarts} time(s)", lambda: counters(cluster, jobset)[0] >= restarts, timeout=90)
    wait_running(cluster, NS, jobset, PODS[jobset], timeout=120)


def test_a_program_error_fails_the_jobset_at_once(cluster, stacks):
    deploy(cluster, stacks, "wrong")
    head = pod_of(cluster, "wrong", HEAD)
    fail(cluster, head, 2)  # a usage error: restarting cannot help
    js = cluster.wait_for("JobSet wrong failed", lambda: (lambda o: o if is_true(o, "Failed") else None)(
        cluster.get("jobset", "-n", NS, "wrong")), timeout=90)
    # the JobSet controller's verdict: its FailJobSet action, not maxRestarts spent
    assert condition(js, "Failed")["reason"] == "FailJobSetFailurePolicyAction"
    assert counters(cluster, "wrong") == (0, 0)
    # the Job controller's: the podFailurePolicy rule on the program's container, with its own message
    (job,) = failed_jobs(cluster, "wrong")
    failed = condition(job, "Failed")
    assert failed["reason"] == "PodFailurePolicy" and re.search(PROGRAM_ERROR_MESSAGE_PATTERN, failed["message"]), failed
    assert f"pod {NS}/{head['metadata']['name']} failed with exit code 2" in failed["message"]
    cluster.wait_for("no pod of JobSet wrong running", lambda: not [p for p in pods(cluster, NS, "wrong") if running(p)], timeout=60)


def test_a_disruption_restarts_the_jobset_without_spending_max_restarts(cluster, stacks):
    deploy(cluster, stacks, "evicted")
    evict(cluster, pod_of(cluster, "evicted", HEAD))
    wait_restarted(cluster, "evicted", 1)
    assert counters(cluster, "evicted") == (1, 0)
    evict(cluster, pod_of(cluster, "evicted", WORKER))  # a worker's disruption too
    wait_restarted(cluster, "evicted", 2)
    assert counters(cluster, "evicted") == (2, 0)
    # the JobSet controller's events name the action it took (pkg/constants) and the Job that failed
    assert restart_reasons(cluster, "evicted") == {"RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"}


def test_a_crash_restarts_the_jobset_and_spends_one(cluster, stacks):
    deploy(cluster, stacks, "crash")
    head = pod_of(cluster, "crash", HEAD)
    fail(cluster, head, 1)  # an exception: maybe a lost worker, so a restart may help
    wait_restarted(cluster, "crash", 1)
    assert counters(cluster, "crash") == (1, 1)
    assert restart_reasons(cluster, "crash") == {"RestartJobSetFailurePolicyAction"}
    # the Job failed on its backoffLimit, which no rule matches: JobSet's default action
    assert not is_true(cluster.get("jobset", "-n", NS, "crash"), "Failed")


def test_a_head_that_exits_on_a_lost_worker_spends_a_restart(cluster, stacks):
    # What the plan and docs/resilience.md say of a worker's disruption with rules: it "restarts the JobSet without
    # spending maxRestarts, unless the program exits on losing the worker before the worker's Job has failed: then it
    # spends 1". An evicted worker's pod stays Terminating for its grace period (here its program exits only when
    # killed: tools/cluster/stages.yaml pod-terminate-graceful); the Pathways head, which exits when it loses a
    # worker, ends within that time, so the head's Job is the first to fail and the JobSet controller spends one.
    deploy(cluster, stacks, "lost")
    head, worker = pod_of(cluster, "lost", HEAD), pod_of(cluster, "lost", WORKER)
    grace = worker["spec"]["terminationGracePeriodSeconds"]
    cluster.kubectl("annotate", "pod", "-n", NS, worker["metadata"]["name"], "e2e.pathways/graceful-termination=true")
    evict(cluster, worker)
    terminating = cluster.get("pods", "-n", NS, worker["metadata"]["name"])
    assert terminating["metadata"].get("deletionTimestamp") and terminating["status"]["phase"] == "Running", terminating["status"]
    assert not failed_jobs(cluster, "lost")  # the worker's Job has not failed: its pod is still within its grace period
    fail(cluster, head, 1)  # the head exits on the lost worker
    wait_restarted(cluster, "lost", 1)
    assert counters(cluster, "lost") == (1, 1), (counters(cluster, "lost"), grace)
    assert restart_reasons(cluster, "lost") == {"RestartJobSetFailurePolicyAction"}
    assert not is_true(cluster.get("jobset", "-n", NS, "lost"), "Failed")


def test_a_failed_slice_is_swapped_for_the_spare_and_the_time_is_measured(cluster, stacks):
    deploy(cluster, stacks, "swap")
    before = placement(cluster, pods(cluster, NS, "swap"))
    worker_pools = {pools[0] for (rj, _), pools in before.items() if rj == WORKER}
    labels = nodes(cluster)
    all_pools = {lab["cloud.google.com/gke-nodepool"] for lab in labels.values() if lab.get("cloud.google.com/gke-tpu-topology") == "4x4"}
    (spare,) = all_pools - worker_pools
    # slice 0's VMs go into maintenance: GKE cordons them and evicts their pods
    broken = before[(WORKER, 0)][0]
    broken_nodes = [n for n, lab in labels.items() if lab["cloud.google.com/gke-nodepool"] == broken]
    cluster.kubectl("cordon", *broken_nodes)
    victim = next(p for p in pods(cluster, NS, "swap") if running(p) and p["spec"]["nodeName"] in broken_nodes)
    t0 = time.monotonic()
    evict(cluster, victim)
    try:
        cluster.wait_for("JobSet swap restarted", lambda: counters(cluster, "swap")[0] >= 1, timeout=90)
        running_again = wait_running(cluster, NS, "swap", PODS["swap"], timeout=180)
        seconds = time.monotonic() - t0
        after = placement(cluster, running_again)
        after_workers = {pools[0] for (rj, _), pools in after.items() if rj == WORKER}
        assert broken not in after_workers and spare in after_workers, (before, after)
        assert all(len(set(p)) == 1 for p in after.values()), after  # each slice still on one pool
        assert counters(cluster, "swap") == (1, 0)  # a disruption: no restart spent
        log(f"hot-swap: slice on {broken} evicted -> JobSet running again with {spare} in {seconds:.1f} s")
        figures = cluster.workdir / "figures.json"
        old = json.loads(figures.read_text()) if figures.exists() else {}
        figures.write_text(json.dumps({**old, "hotSwapSeconds": round(seconds, 1)}, indent=2) + "\n")
    finally:
        cluster.kubectl("uncordon", *broken_nodes)
        stacks.changed()  # this scenario restarted the stack's JobSet: a next use of it runs `pulumi up` again

