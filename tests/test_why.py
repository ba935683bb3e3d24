"""`python -m infra.run why` (infra/run/why.py): the dominant reason from the objects as Kueue, the JobSet controller,
the Job controller, the scheduler and the kubelet write them (their field names and messages as the pinned releases
write them; the real-engine suite tests_e2e/test_why.py seeds the same cases on the real controllers)."""

from __future__ import annotations

from typing import Any

import pytest

from components.model.config import load, resolve
from infra.run.gather import stack_view
from infra.run.kueue_verdict import BYPASSED, Verdict, quota_verdict
from infra.run.refusals import file_verdict, refusal
from infra.run.why import diagnose
from infra.run.why_facts import Evidence, parse_time
from tests.conftest import GROUPS_RBAC, config_with

SLICES = [{"name": "main", "tpu": "v6e-4", "count": 2}, {"name": "res", "tpu": "v6e-4", "count": 1, "reservation": "r1"},
          {"name": "flex", "tpu": "v6e-4", "count": 1, "flexStart": True, "queuedProvisioning": True}]
CONFIG = config_with(pathwaysVersion="jax-0.9.0", slices=SLICES, cluster=GROUPS_RBAC,
                     runs={"submitters": [{"name": "r@example.com"}], "buckets": [{"name": "data"}]},
                     workloads=[{"name": "train", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "onFailure": {}},
                                {"name": "paused", "image": "example.com/t:1", "sliceGroup": "main", "slices": 1, "state": "suspended"}])
VIEW = stack_view(resolve(load({k.split(":", 1)[1]: v for k, v in CONFIG.items() if k.startswith("pathways:")}
                               | {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "why")))
T0 = "2026-12-06T08:00:00Z"


def cond(kind: str, status: str = "True", reason: str = "", message: str = "", at: str = T0) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason or kind, "message": message, "lastTransitionTime": at}


def jobset(name: str = "exp", queue: str = "runs-pathways", conditions=(), **status) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"u-{name}", "creationTimestamp": T0, "labels": {"kueue.x-k8s.io/queue-name": queue}},
            "spec": {"failurePolicy": {"maxRestarts": 2}, "replicatedJobs": []}, "status": {"conditions": list(conditions), **status}}


def wl(name: str = "jobset-exp-1", owner: str = "exp", conditions=(), priority: int = 100_000, active: bool = True, **status) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"w-{owner}", "ownerReferences": [{"kind": "JobSet", "name": owner, "uid": f"u-{owner}"}]},
            "spec": {"queueName": "runs-pathways", "priority": priority, "active": active}, "status": {"conditions": list(conditions), **status}}


LQ = {"metadata": {"name": "runs-pathways"}, "spec": {"clusterQueue": "pathways", "stopPolicy": "None"}}
ADMITTED = [cond("QuotaReserved"), cond("Admitted")]


def pod(name: str, role: str = "worker", phase: str = "Running", node: str = "n1", statuses=(), conditions=(), group: str = "main",
        **spec) -> dict[str, Any]:
    job = "pathways-head" if role == "head" else "worker"
    return {"metadata": {"name": name, "labels": {"jobset.sigs.k8s.io/jobset-name": "exp", "jobset.sigs.k8s.io/replicatedjob-name": job,
                                                  "jobset.sigs.k8s.io/job-index": "0"}},
            "spec": {**({"nodeName": node} if node else {}), "nodeSelector": {"pathways/slice-group": group,
                                                                          "cloud.google.com/gke-tpu-topology": "2x2"}, **spec},
            "status": {"phase": phase, "startTime": T0, "containerStatuses": list(statuses), "conditions": list(conditions)}}


def ended(container: str, code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": container, "image": "i", "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": T0}}}


def ev(**kw) -> Evidence:
    kw.setdefault("local_queues", [LQ])
    return Evidence(name=kw.pop("name", "exp"), **kw)


def node(name: str, group: str, topology: str = "2x2") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"pathways/slice-group": group, "cloud.google.com/gke-tpu-topology": topology}}}


CASES = {
    "not-found": (ev(jobset=None), "infra.run list"),
    "finished": (ev(jobset=jobset(conditions=[cond("Completed", reason="AllJobsCompleted", message="jobset completed successfully",
                                                   at="2026-12-06T08:05:00Z")]),
                    workload=wl(conditions=[cond("Admitted", at=T0)])), "infra.run logs"),
    "oom": (ev(jobset=jobset(conditions=[cond("Failed", reason="ReachedMaxRestarts")]),
               pods=[pod("w", statuses=[ended("pathways-worker", 137, "OOMKilled")])]), "memory"),
    "failure-rule": (ev(name="train", jobset=jobset("train", "train", [cond("Failed", reason="FailJobSetFailurePolicyAction")]),
                        pods=[pod("h", "head", statuses=[ended("jax-program", 2)])]), "infra.run logs"),
    "program-failed": (ev(jobset=jobset(conditions=[cond("Failed", reason="ReachedMaxRestarts")], restarts=2),
                          pods=[pod("w", statuses=[ended("pathways-worker", 143), ended("x", 1)])]), "infra.run logs"),
    "deactivated": (ev(jobset=jobset(), workload=wl(active=False, conditions=[cond("Evicted", reason="InactiveWorkload")])), "active"),
    "no-such-queue": (ev(jobset=jobset(queue="runs-nowhere"), workload=wl()), "kueue.x-k8s.io/queue-name"),
    "preempted": (ev(jobset=jobset(), workload=wl(conditions=[
        cond("QuotaReserved", "False", "WaitingForQuota"),
        cond("Preempted", reason="InClusterQueue", message="Preempted to accommodate a workload (UID: w-big, JobUID: u-big) due to prioritization")]),
        workloads=[wl("jobset-big-1", "big", ADMITTED, priority=1_000_000)]), "priority"),
    "over-quota": (ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "ExceedsMaxQuota", "couldn't assign flavors")])),
                   "at most"),
    "waiting-for-quota": (ev(jobset=jobset(), workload=wl(conditions=[cond(
        "QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set worker: insufficient unused quota for google.com/tpu in flavor "
        "tpu-main, 4 more needed")]), workloads=[wl("jobset-train-1", "train", ADMITTED, status_admission=None)]), "fewer slices"),
    "queue-held": (ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "Suspended")]),
                      local_queues=[{**LQ, "spec": {"clusterQueue": "pathways", "stopPolicy": "Hold"}}]), "stopPolicy"),
    "suspended": (ev(name="paused", jobset=jobset("paused", "paused"), workload=wl(owner="paused"),
                     local_queues=[{"metadata": {"name": "paused"}, "spec": {"stopPolicy": "HoldAndDrain"}}]), "state"),
    "not-provisioned": (ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved"), cond("Admitted", "False")],
                                                        admissionChecks=[{"name": "queued-flex", "state": "Pending"}]),
                           provisioning_requests=[{"metadata": {"name": "pr-1", "ownerReferences": [{"name": "jobset-exp-1"}]},
                                                   "status": {"conditions": [cond("Accepted", message="waiting for capacity")]}}]), "ladder"),
    "no-free-hosts": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), nodes=[],
                         pods=[pod("w", phase="Pending", node="", group="res", conditions=[cond("PodScheduled", "False", "Unschedulable")])]),
                      "reservation"),
    "topology": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), nodes=[node("n1", "main", "2x4"), node("n2", "main", "2x4")],
                    pods=[pod("w", phase="Pending", node="", conditions=[cond("PodScheduled", "False", "Unschedulable")])]), "topology"),
    "image-pull": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), pods=[pod("h", "head", phase="Pending", statuses=[
        {"name": "jax-program", "image": "bad:1", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}}])]),
        "image"),
    "bucket-access": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), pods=[pod("h", "head", phase="Pending", volumes=[
        {"name": "gcs", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {"bucketName": "other"}}}])],
        events=[{"reason": "FailedMount", "involvedObject": {"name": "h"},
                 "message": "MountVolume.SetUp failed: rpc error: code = PermissionDenied desc = googleapi: Error 403"}]), "runs.buckets"),
    "refused-by-guard": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), events=[{"reason": "JobCreationFailed", "message": (
        "jobs.batch \"exp-pathways-head-0\" is forbidden: ValidatingAdmissionPolicy 'pathways-workload-templates' with binding "
        "'pathways-workload-templates' denied request: no privileged container")}]), "infra.run submit"),
    "restarted": (ev(jobset=jobset(restarts=1), workload=wl(conditions=ADMITTED), pods=[pod("h", "head"), pod("w")]), "restarts left"),
    "running": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED), pods=[pod("h", "head"), pod("w")], now=1_796_544_000.0),
                "nothing to do"),
    "dispatching": (ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved"), cond("Admitted", "False")],
                                                    admissionChecks=[{"name": "pathways-fleet", "state": "Pending"}])), "first worker"),
    # on a fleet manager: the pods are the worker's
    "dispatched": (ev(jobset=jobset(), workload=wl(conditions=ADMITTED, clusterName="east")), "why --stack <east's stack> exp"),
    # #74.4: Kueue's maximum execution time (kueue.x-k8s.io/max-exec-time-seconds), as v0.19.2 deactivates at it
    "time-limit": (ev(jobset={**jobset(), "metadata": {**jobset()["metadata"], "labels": {
        "kueue.x-k8s.io/queue-name": "runs-pathways", "kueue.x-k8s.io/max-exec-time-seconds": "7200"}}},
        workload=wl(active=False, conditions=[cond("Evicted", reason="DeactivatedDueToMaximumExecutionTimeExceeded",
                                                   message="The workload is deactivated due to exceeding the maximum execution time")])),
        "submit it again with a longer --time-limit"),
    # #74.3: the program's last words in its status (FallbackToLogsOnError), as jax 0.10.2's xla_bridge writes them
    "proxy-not-initialized": (ev(jobset=jobset(conditions=[cond("Failed", reason="ReachedMaxRestarts")]), pods=[pod("h", "head", statuses=[{
        **ended("jax-program", 1), "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": T0, "message":
            "Traceback (most recent call last):\n  ...\nRuntimeError: Unable to initialize backend 'proxy': Unknown backend 'proxy' "
            "(set JAX_PLATFORMS='' to automatically choose an available backend)\n"}}}])]),
        "pathwaysutils.initialize()"),
}


@pytest.mark.parametrize("reason", sorted(CASES))
def test_why_names_the_dominant_reason_and_its_fix(reason):
    evidence, fix = CASES[reason]
    got = diagnose(evidence, VIEW)
    assert got.reason == reason, got
    assert fix in got.fix, got.fix


def test_a_known_error_while_it_restarts_is_named_too_and_an_unknown_one_is_not():
    evidence, _ = CASES["proxy-not-initialized"]
    (head,) = evidence.pods
    status = head["status"]["containerStatuses"][0]
    restarting = ev(jobset=jobset(restarts=1), workload=wl(conditions=ADMITTED), pods=[{**head, "status": {
        **head["status"], "containerStatuses": [{"name": "jax-program", "image": "i", "state": {"running": {}},
                                                 "lastState": status["state"]}]}}])
    got = diagnose(restarting, VIEW)
    assert got.reason == "proxy-not-initialized" and got.evidence[0] == "its output says: Unable to initialize backend 'proxy'", got
    other = {**status, "state": {"terminated": {**status["state"]["terminated"], "message": "ValueError: bad batch size"}}}
    assert diagnose(ev(**{**evidence.__dict__, "pods": [{**head, "status": {**head["status"], "containerStatuses": [other]}}]}),
                    VIEW).reason == "program-failed"


def test_a_bucket_listed_in_runs_buckets_points_at_the_missing_grant_not_the_stack_file():
    evidence, _ = CASES["bucket-access"]
    listed = ev(**{**evidence.__dict__, "pods": [pod("h", "head", phase="Pending", volumes=[
        {"name": "gcs", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": {"bucketName": "data"}}}])]})
    assert "run the bootstrap again" in diagnose(listed, VIEW).fix


def test_a_queue_it_cannot_read_proves_nothing():
    # a kubeconfig without LocalQueue reads: no "no such queue" from the absence
    got = diagnose(ev(jobset=jobset(), workload=wl(conditions=ADMITTED), local_queues=[], unread=("localqueues.kueue.x-k8s.io: forbidden",),
                      pods=[pod("h", "head"), pod("w")]), VIEW)
    assert got.reason == "running"


def test_the_waiting_answer_names_its_place_and_who_holds_the_quota():
    holder = wl("jobset-train-1", "train", ADMITTED, priority=1_000_000)
    holder["status"]["admission"] = {"clusterQueue": "pathways", "podSetAssignments": [{"flavors": {"google.com/tpu": "tpu-main"}}]}
    got = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "WaitingForQuota",
                                                                    "insufficient unused quota for google.com/tpu in flavor tpu-main, 4 more needed")]),
                      workloads=[holder], pending=[{"metadata": {"name": "jobset-exp-1"}, "positionInClusterQueue": 1}]), VIEW)
    assert got.summary == "waiting in line for quota: 2 in ClusterQueue, held by train (priority 1000000)", got
    # of Kueue's flavor-by-flavor message, the part that says what is short
    noisy = wl(conditions=[cond("QuotaReserved", "False", "WaitingForQuota", "couldn't assign flavors to pod set worker: flavor tpu-big doesn't "
                                "match node affinity, insufficient unused quota for google.com/tpu in flavor tpu-main, 4 more needed")])
    said = diagnose(ev(jobset=jobset(), workload=noisy), VIEW).evidence[0]
    assert said == ("Kueue (WaitingForQuota): couldn't assign flavors to pod set worker: insufficient unused quota for google.com/tpu in "
                    "flavor tpu-main, 4 more needed")


# Kueue v0.19's message for a worker pod set without its gates (reason Pending), as the real Kueue wrote it in the
# suite: the head flavor holds no TPUs (maximum capacity 0), the group's flavor is only busy ("unused"): waiting
HEAD_PASS = ("couldn't assign flavors to pod set worker: insufficient quota for google.com/tpu in flavor pathways-head, previously "
             "considered podsets requests (0) + current podset request (4) > maximum capacity (0), ")


@pytest.mark.parametrize("reason, message, want", [
    ("Pending", HEAD_PASS + "insufficient unused quota for google.com/tpu in flavor tpu-tight, 4 more needed", "waiting-for-quota"),
    ("Pending", HEAD_PASS + "insufficient quota for google.com/tpu in flavor tpu-flex, previously considered podsets requests (0) + "
     "current podset request (8) > maximum capacity (4)", "over-quota"),
    ("WaitingForQuota", HEAD_PASS + "insufficient unused quota for google.com/tpu in flavor tpu-tight, 4 more needed", "waiting-for-quota"),
    ("ExceedsMaxQuota", HEAD_PASS + "insufficient quota for google.com/tpu in flavor tpu-flex, previously considered podsets requests (0) + "
     "current podset request (8) > maximum capacity (4)", "over-quota"),
])
def test_more_than_a_flavor_ever_holds_is_told_from_a_busy_one(reason, message, want):
    got = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", reason, message)])), VIEW)
    assert got.reason == want, got
    assert "pathways-head" not in got.evidence[0]  # the head flavor's pass is noise


def test_refusals_name_the_policy_and_pod_security_check():
    runs = refusal("ValidatingAdmissionPolicy 'pathways-runs-only' with binding 'pathways-runs-only' denied request: a run is queued by Kueue", VIEW)
    assert runs is not None and runs.reason == "refused-by-runs-policy" and "pathways-runs-only" in runs.summary
    ps = refusal('pods "x" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)', VIEW)
    assert ps is not None and ps.reason == "refused-by-pod-security" and "baseline:latest" in ps.summary
    assert file_verdict({"kind": "JobSet", "metadata": {"name": "x"}}, None, VIEW).reason == "accepted"
    assert file_verdict({"kind": "JobSet", "metadata": {"name": "x"}}, "the server could not find the requested resource", VIEW).reason == "refused"


def test_a_program_that_cannot_start_says_to_check_its_command():
    got = diagnose(ev(name="train", jobset=jobset("train", "train", [cond("Failed", reason="FailJobSetFailurePolicyAction")]),
                      pods=[pod("h", "head", statuses=[ended("jax-program", 128, "StartError")])]), VIEW)
    assert got.reason == "failure-rule" and "command" in got.fix and "128" in got.summary


# --- what the sampled mutation run of #60 found untested (docs/development.md) -------------------------------------

def _policy_jobset(codes):
    js = jobset(conditions=[cond("Failed", reason="ReachedMaxRestarts")], restarts=2)
    js["spec"]["replicatedJobs"] = [{"name": "pathways-head", "template": {"spec": {"podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"containerName": "jax-program", "operator": "In", "values": codes}}]}}}}]
    return js


def test_the_fail_fast_codes_are_the_jobsets_own_and_the_rules_action_counts_without_them():
    # a run's codes come from its JobSet's podFailurePolicy (a run is not in the stack file)
    got = diagnose(ev(jobset=_policy_jobset([42]), pods=[pod("h", "head", statuses=[ended("jax-program", 42)])]), VIEW)
    assert got.reason == "failure-rule" and "[42]" in got.summary, got
    # JobSet's FailJobSet action decides even when the code is not one the reader knows
    js = jobset(conditions=[cond("Failed", reason="FailJobSetFailurePolicyAction")])
    assert diagnose(ev(jobset=js, pods=[pod("h", "head", statuses=[ended("jax-program", 9)])]), VIEW).reason == "failure-rule"
    # and an exit among no rule's codes, restarts spent: the program failed, after how many restarts
    spent = diagnose(ev(jobset=_policy_jobset([42]), pods=[pod("h", "head", statuses=[ended("jax-program", 1)])]), VIEW)
    assert spent.reason == "program-failed" and spent.summary.startswith("the program of the head exited 1 after 2 restart(s); "), spent


def test_a_held_queue_names_the_patch_that_releases_it():
    lq = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "Suspended")]),
                     local_queues=[{**LQ, "spec": {"clusterQueue": "pathways", "stopPolicy": "Hold"}}]), VIEW)
    assert "kubectl patch localqueue -n pathways runs-pathways" in lq.fix, lq.fix
    cq = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "Suspended")]),
                     cluster_queue={"metadata": {"name": "pathways"}, "spec": {"stopPolicy": "HoldAndDrain"}}), VIEW)
    assert cq.reason == "queue-held" and "kubectl patch clusterqueue pathways" in cq.fix and "HoldAndDrain" in cq.summary, cq


def test_a_failed_provisioning_request_is_said_and_its_message_kept_to_a_line():
    long = "no capacity in us-east5-b for ct6e-standard-4t: " + "x" * 300
    got = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved"), cond("Admitted", "False")],
                                                   admissionChecks=[{"name": "queued-flex", "state": "Retry"}]),
                      provisioning_requests=[{"metadata": {"name": "pr-1", "ownerReferences": [{"name": "jobset-exp-1"}]},
                                              "status": {"conditions": [cond("Failed", reason="ResourcePoolExhausted", message=long)]}}]), VIEW)
    assert got.summary.endswith(": the last request failed, Kueue retries"), got.summary
    (said,) = [e for e in got.evidence if e.startswith("ProvisioningRequest")]
    assert said == f"ProvisioningRequest pr-1: Failed (ResourcePoolExhausted): {long[:197]}..."


def test_a_reservation_whose_nodes_are_all_there_is_not_said_to_have_no_hosts():
    full = diagnose(ev(jobset=jobset(), workload=wl(conditions=ADMITTED), nodes=[node("r1", "res")],
                       pods=[pod("w", phase="Pending", node="", group="res", conditions=[cond("PodScheduled", "False", "Unschedulable")])]), VIEW)
    assert full.reason == "unschedulable", full


def test_refusals_say_which_policy_and_keep_its_words_to_a_line():
    said = "no privileged container " + "y" * 300
    guard = refusal(f"ValidatingAdmissionPolicy 'pathways-workload-templates' denied request: {said}", VIEW)
    assert guard is not None and guard.summary == f"the admission policy pathways-workload-templates refuses it: {said[:197]}..."
    assert "the stack's guards keep privileged, host and node-bound pods off the Pathways nodes" in guard.fix
    rbac = refusal('jobsets.jobset.x-k8s.io is forbidden: User "bob@example.com" cannot create resource "jobsets" in API group '
                   '"jobset.x-k8s.io" in the namespace "pathways"', VIEW)
    assert rbac is not None and rbac.reason == "not-allowed" and "runs.submitters of stack why" in rbac.fix
    assert refusal("the server is currently unable to handle the request", VIEW) is None
    runs = refusal("ValidatingAdmissionPolicy 'pathways-runs-only' denied request: a run is queued by Kueue", VIEW)
    assert runs is not None and runs.fix == "make runs with python -m infra.run submit, which builds them as the policies require"
    assert file_verdict({"metadata": {"name": "x"}}, "oops", VIEW).summary == "the cluster refuses object x"
    assert file_verdict({"kind": "JobSet", "metadata": {"name": "x"}}, None, VIEW).summary.startswith("the cluster would create JobSet x ")
    assert file_verdict({"kind": "JobSet", "metadata": {"name": "x"}}, "oops", VIEW).summary == "the cluster refuses JobSet x"


class _Kube:
    """What gather.snapshot asks kubectl for, from a dict; a kind absent from it is refused as RBAC would."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]], pending: dict[str, Any]):
        self.objects, self.pending, self.asked = objects, pending, []

    def items(self, resource, namespace, selector=""):
        from infra.run.kube import KubeError

        if resource not in self.objects:
            raise KubeError(f"kubectl get {resource}: forbidden")
        return self.objects[resource]

    def cluster_items(self, resource):
        return self.items(resource, None)

    def pending_workloads(self, namespace, queue):
        self.asked.append(queue)
        return self.pending.get(queue, "Error from server (NotFound): localqueue not found")


def test_gather_reads_the_namespace_once_and_gives_each_run_what_is_about_it():
    from infra.run.gather import evidence, snapshot

    exp, other = jobset("exp"), jobset("other", queue="train")
    pods = [pod("exp-h", "head"), {**pod("o-h", "head"), "metadata": {"name": "o-h", "labels": {"jobset.sigs.k8s.io/jobset-name": "other"}}}]
    admitted = wl(conditions=ADMITTED)
    admitted["status"]["admission"] = {"clusterQueue": "pathways"}
    kube = _Kube({
        "jobsets.jobset.x-k8s.io": [exp, other], "jobs.batch": [], "pods": pods, "nodes": [],
        "events": [{"reason": "A", "involvedObject": {"name": "exp-h"}}, {"reason": "B", "involvedObject": {"name": "o-h"}},
                   {"reason": "C", "involvedObject": {"name": "jobset-exp-1"}}],
        "workloads.kueue.x-k8s.io": [admitted], "localqueues.kueue.x-k8s.io": [LQ, {"metadata": {"name": "train"}}],
        "clusterqueues.kueue.x-k8s.io": [{"metadata": {"name": "pathways"}}],
    }, {"runs-pathways": [{"metadata": {"name": "jobset-exp-1"}, "positionInClusterQueue": 0}]})
    snap = snapshot(kube, "pathways", kueue=True, only="exp")  # type: ignore[arg-type]
    assert kube.asked == ["runs-pathways"]  # only its own queue's places
    assert snap.unread == ["provisioningrequests.autoscaling.x-k8s.io: kubectl get provisioningrequests.autoscaling.x-k8s.io: forbidden"]
    got = evidence(snap, "exp")
    assert [p["metadata"]["name"] for p in got.pods] == ["exp-h"] and sorted(e["reason"] for e in got.events) == ["A", "C"]
    assert got.workload is admitted and got.cluster_queue == {"metadata": {"name": "pathways"}} and got.pending[0]["positionInClusterQueue"] == 0
    assert got.unread == tuple(snap.unread) and got.provisioning_requests == []
    # before admission, its ClusterQueue is its LocalQueue's
    waiting = snapshot(_Kube({**kube.objects, "workloads.kueue.x-k8s.io": [wl()]}, {}), "pathways", kueue=True, only="exp")  # type: ignore[arg-type]
    assert evidence(waiting, "exp").cluster_queue == {"metadata": {"name": "pathways"}}
    # `list` asks every queue a JobSet names; a queue the visibility API does not know (held, gone) is no error
    every = snapshot(kube, "pathways", kueue=True)  # type: ignore[arg-type]
    assert kube.asked[1:] == ["runs-pathways", "train"] and not [u for u in every.unread if "pending" in u]
    assert evidence(every, "nope").jobset is None
    assert VIEW.run_queues == ("runs-pathways",) and VIEW.runs_buckets == ("data",) and VIEW.runs_account == "pathways-runs-why"


def test_a_slice_a_pool_set_cannot_form_now_names_its_holders():
    # Kueue v0.19.2's message when its topology-aware scheduling finds too few free cubes (tas_flavor_snapshot.go
    # notFitMessage, reason Pending with UnadmittedWorkloadsObservability off)
    holder = wl("jobset-pretrain-1", "pretrain", ADMITTED, priority=1_000_000)
    holder["status"]["admission"] = {"clusterQueue": "pathways", "podSetAssignments": [{"flavors": {"google.com/tpu": "tpu-ironwood"}}]}
    message = 'couldn\'t assign flavors to pod set worker: topology "slices-ironwood" allows to fit only 1 out of 2 slice(s)'
    got = diagnose(ev(jobset=jobset(), workload=wl(conditions=[cond("QuotaReserved", "False", "Pending", message)]), workloads=[holder]), VIEW)
    assert got.reason == "topology", got
    assert got.summary == ("pool set ironwood has no free cubes or partitions in the shape of its slice now: held by pretrain "
                           "(priority 1000000)")
    assert got.evidence == (f"Kueue (Pending): {message}",)
    assert "ask for a smaller topology" in got.fix


# Kueue v0.19.2's scheduling-equivalence shortcut (infra/run/kueue_verdict.py): the Workload's condition says only
# that it was bypassed; the scheduler's words are in its Warning event on the Workload, or on an equivalent workload
POOL_SET_FULL = 'couldn\'t assign flavors to pod set worker: topology "slices-ironwood" allows to fit only 1 out of 2 slice(s)'


def kueue_event(workload: str, message: str, reason: str = "WaitingForQuota", at: str = T0) -> dict[str, Any]:
    return {"type": "Warning", "reason": reason, "message": message, "eventTime": at,
            "involvedObject": {"kind": "Workload", "name": workload, "namespace": "pathways"}}


def bypassed(name: str = "jobset-exp-1", owner: str = "exp", **kw) -> dict[str, Any]:
    return wl(name, owner, [cond("QuotaReserved", "False", "WaitingForQuota", BYPASSED)], **kw)


def test_a_bypassed_workload_is_judged_by_the_schedulers_own_event():
    events = [kueue_event("jobset-exp-1", "insufficient unused quota for google.com/tpu in flavor tpu-main, 4 more needed", at="2026-12-06T07:00:00Z"),
              kueue_event("jobset-exp-1", POOL_SET_FULL, at="2026-12-06T08:00:00Z"),
              kueue_event("jobset-other-1", "something else, later", at="2026-12-06T09:00:00Z"),
              {**kueue_event("jobset-exp-1", "a JobSet's event", at="2026-12-06T09:00:00Z"), "involvedObject": {"kind": "JobSet", "name": "jobset-exp-1"}}]
    verdict = quota_verdict(bypassed(), events)
    assert verdict == Verdict("WaitingForQuota", POOL_SET_FULL, "event") and verdict.evaluated
    got = diagnose(ev(jobset=jobset(), workload=bypassed(), events=events), VIEW)
    assert got.reason == "topology", got
    assert got.evidence[0].startswith(f"Kueue (WaitingForQuota): {POOL_SET_FULL} (its scheduler's event"), got


def test_a_bypassed_workload_with_no_event_is_judged_by_an_equivalent_one():
    judged = wl("jobset-twin-1", "twin", [cond("QuotaReserved", "False", "WaitingForQuota", POOL_SET_FULL)])
    other_priority = wl("jobset-hi-1", "hi", [cond("QuotaReserved", "False", "WaitingForQuota", "not this")], priority=1_000_000)
    assert quota_verdict(bypassed(), [], [other_priority, judged]) == Verdict("WaitingForQuota", POOL_SET_FULL, "workload jobset-twin-1")
    got = diagnose(ev(jobset=jobset(), workload=bypassed(), workloads=[other_priority, judged]), VIEW)
    assert got.reason == "topology" and "said of jobset-twin-1, of the same shape and priority" in got.evidence[0], got
    # the equivalent one's condition was written over too: its event
    twin_bypassed = bypassed("jobset-twin-1", "twin")
    assert quota_verdict(bypassed(), [kueue_event("jobset-twin-1", POOL_SET_FULL)], [twin_bypassed]) == Verdict(
        "WaitingForQuota", POOL_SET_FULL, "workload jobset-twin-1")
    # nothing better: Kueue's own words, and what they mean
    alone = quota_verdict(bypassed(), [], [other_priority])
    assert alone == Verdict("WaitingForQuota", BYPASSED, "bypassed") and alone.evaluated
    said = diagnose(ev(jobset=jobset(), workload=bypassed(), workloads=[other_priority]), VIEW)
    assert said.reason == "waiting-for-quota" and "set it aside unevaluated" in said.evidence[0], said


def _pod_set(group: str, count: int = 4) -> dict[str, Any]:
    return {"name": "worker", "count": count, "template": {"spec": {
        "nodeSelector": {"pathways/slice-group": group}, "containers": [{"name": "w", "resources": {"requests": {"google.com/tpu": "4"}}}]}}}


def test_an_equivalent_is_one_kueue_would_set_aside_with_it_and_its_words_are_found_through_gather():
    from infra.run.gather import evidence, snapshot

    me = bypassed()
    me["spec"]["podSets"] = [_pod_set("main")]
    # the same shape on another slice group (its node selector), another count, or another reason is no twin
    other_group = wl("jobset-a-1", "a", [cond("QuotaReserved", "False", "WaitingForQuota", "group-b's words")])
    other_group["spec"]["podSets"] = [_pod_set("other")]
    other_count = wl("jobset-b-1", "b", [cond("QuotaReserved", "False", "WaitingForQuota", "a bigger one's words")])
    other_count["spec"]["podSets"] = [_pod_set("main", count=8)]
    deactivated = wl("jobset-c-1", "c", [cond("QuotaReserved", "False", "Deactivated", "The workload is deactivated")])
    deactivated["spec"]["podSets"] = [_pod_set("main")]
    assert quota_verdict(me, [], [other_group, other_count, deactivated]) == Verdict("WaitingForQuota", BYPASSED, "bypassed")
    # a twin set aside too: its event, read from the namespace's events `gather` keeps for Workloads
    twin = bypassed("jobset-twin-1", "twin")
    twin["spec"]["podSets"] = [_pod_set("main")]
    kube = _Kube({"jobsets.jobset.x-k8s.io": [jobset("exp"), jobset("twin")], "jobs.batch": [], "pods": [], "nodes": [],
                  "events": [kueue_event("jobset-twin-1", POOL_SET_FULL)], "workloads.kueue.x-k8s.io": [me, twin, other_group],
                  "localqueues.kueue.x-k8s.io": [LQ], "clusterqueues.kueue.x-k8s.io": [{"metadata": {"name": "pathways"}}]}, {})
    got = diagnose(evidence(snapshot(kube, "pathways", kueue=True, only="exp"), "exp"), VIEW)  # type: ignore[arg-type]
    assert got.reason == "topology" and "said of jobset-twin-1" in got.evidence[0], got


def test_words_from_before_the_condition_last_changed_are_not_its_verdict():
    # evicted at 09:00 (its condition went back to False then): its event from its wait before admission is stale
    evicted = wl(conditions=[cond("QuotaReserved", "False", "WaitingForQuota", BYPASSED, at="2026-12-06T09:00:00Z")])
    old = kueue_event("jobset-exp-1", "old words", at="2026-12-06T08:30:00.000000Z")
    assert quota_verdict(evicted, [old]).source == "bypassed"  # type: ignore[union-attr]
    # in the same second as the transition (an event's time has microseconds, a condition's none), and a repeat's
    # series time counts
    now = kueue_event("jobset-exp-1", "new words", at="2026-12-06T09:00:00.250000Z")
    repeated = {**kueue_event("jobset-exp-1", "repeated words", at="2026-12-06T08:00:00.000000Z"),
                "series": {"count": 3, "lastObservedTime": "2026-12-06T09:30:00.000000Z"}}
    assert quota_verdict(evicted, [old, now]) == Verdict("WaitingForQuota", "new words", "event")
    assert quota_verdict(evicted, [old, now, repeated]) == Verdict("WaitingForQuota", "repeated words", "event")
    # an event about an earlier Workload of the same name (another uid) is not about this one
    evicted["metadata"]["uid"] = "w-now"
    elsewhere = {**now, "involvedObject": {**now["involvedObject"], "uid": "w-before"}}
    assert quota_verdict(evicted, [elsewhere]).source == "bypassed"  # type: ignore[union-attr]


def test_kueues_own_message_stands_when_it_is_not_the_shortcut():
    full = wl(conditions=[cond("QuotaReserved", "False", "WaitingForQuota", POOL_SET_FULL)])
    assert quota_verdict(full, [kueue_event("jobset-exp-1", "older words")]) == Verdict("WaitingForQuota", POOL_SET_FULL, "condition")
    pending = quota_verdict(wl(conditions=[cond("QuotaReserved", "False", "PendingEvaluation", "Workload is pending evaluation")]), [])
    assert pending is not None and not pending.evaluated
    assert quota_verdict(wl(conditions=ADMITTED), []) is None and quota_verdict(None, []) is None


def test_pods_waiting_for_a_pool_the_autoscaler_is_scaling_up_are_starting_not_missing_capacity():
    # #74.7: a scale-to-zero group has no nodes until a run asks; the cluster autoscaler's own events say which
    group = next(iter(VIEW.groups.values()))
    waiting = pod("w", phase="Pending", node="", group=group.name, conditions=[cond("PodScheduled", "False", "Unschedulable")])

    def scale(*reasons: str) -> Evidence:
        events = [{"reason": r, "message": {"TriggeredScaleUp": "pod triggered scale-up: [{gke-pool-grp 0->4 (max: 4)}]",
                                            "FailedScaleUp": "Node scale up in zones us-east5-b associated with this pod failed: GCE out of resources"}[r],
                   "lastTimestamp": f"2026-12-06T08:0{i}:00Z"} for i, r in enumerate(reasons)]
        return ev(jobset=jobset(), workload=wl(conditions=ADMITTED), pods=[waiting], events=events, now=parse_time("2026-12-06T08:03:00Z") or 0)
    up = diagnose(scale("TriggeredScaleUp"), VIEW)
    assert up.reason == "starting" and up.summary.startswith(f"group {group.name}'s nodes are coming up: the cluster autoscaler is scaling "
                                                            f"it up (0 of {group.count * group.hosts} nodes, asked 3m"), up
    assert "autoscaler: pod triggered scale-up" in up.evidence[-1]
    assert diagnose(scale("TriggeredScaleUp", "FailedScaleUp"), VIEW).reason == "no-capacity"
    assert diagnose(scale(), VIEW).reason == "no-capacity"
