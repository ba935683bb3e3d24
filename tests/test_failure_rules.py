"""Failure rules (workloads[].onFailure) and the autoscaler's safe-to-evict annotation, as rendered.

Sources: JobSet v0.12.0 api/jobset/v1alpha2/jobset_types.go (failurePolicy, rules, restartStrategy); the Job
controller's failure messages (k8s v1.36 pkg/controller/job/pod_failure_policy.go) and its validation
(pkg/apis/batch/validation/validation.go); cluster-autoscaler's FAQ. The real controllers' decisions are in
tests_e2e/test_failures.py.
"""

from __future__ import annotations

import copy
import re

import pytest

from components.manifests import admission
from components.manifests.jobset import DISRUPTION_MESSAGE_PATTERN, PROGRAM_ERROR_MESSAGE_PATTERN, SAFE_TO_EVICT
from components.model.workloads.workload import DEFAULT_FAIL_ON_EXIT_CODES
from infra.offline.__main__ import main as offline_main
from infra.offline.render import manifests
from tests.conftest import config_with, example_path, example_plan, plan_of
from tests.test_serving import WEIGHTS
from tests.test_workload_contract import problem

VERSION = "jax-0.9.0"
SLICES = [{"name": "main", "tpu": "v6e-16", "count": 3}]


def workload(**extra):
    return {"name": "train", "image": "example.com/t:1", **extra}


def the_jobset(**extra):
    plan = plan_of(config_with(slices=SLICES, pathwaysVersion=VERSION, workloads=[workload(**extra)]))
    (js,) = [o for o in manifests(plan) if o["kind"] == "JobSet"]
    return js


def jobs(js):
    head, worker = js["spec"]["replicatedJobs"]
    return head["template"]["spec"], worker["template"]["spec"]


def test_without_rules_every_failure_counts_and_workers_restart_in_place():
    # the default: a JobSet's failurePolicy is immutable, so turning rules on replaces a running workload; an
    # upgrade of the package must not do that on its own
    js = the_jobset()
    head, worker = jobs(js)
    assert js["spec"]["failurePolicy"] == {"maxRestarts": 3}
    assert "podFailurePolicy" not in head and "podFailurePolicy" not in worker
    assert worker["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_rules_restart_on_disruption_without_spending_and_fail_on_the_programs_exit_codes():
    js = the_jobset(onFailure={})
    policy = js["spec"]["failurePolicy"]
    assert policy["maxRestarts"] == 3 and policy["restartStrategy"] == "Recreate"
    disruption, program_error = policy["rules"]
    assert disruption == {"name": "Disruption", "action": "RestartJobSetAndIgnoreMaxRestarts",
                          "onJobFailureReasons": ["PodFailurePolicy"], "onJobFailureMessagePatterns": [DISRUPTION_MESSAGE_PATTERN]}
    # only the head's verdict fails the JobSet: a worker's exit is not the program's
    assert program_error["action"] == "FailJobSet" and program_error["targetReplicatedJobs"] == ["pathways-head"]
    head, worker = jobs(js)
    assert head["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "jax-program", "operator": "In", "values": list(DEFAULT_FAIL_ON_EXIT_CODES)}},
    ]
    assert worker["podFailurePolicy"]["rules"] == [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    # the Job API takes a podFailurePolicy only with restartPolicy Never
    assert head["template"]["spec"]["restartPolicy"] == worker["template"]["spec"]["restartPolicy"] == "Never"
    assert admission.check_jobset(js).violations == []


# The Job controller's own texts (pod_failure_policy.go: "Container %s for pod %s/%s failed with exit code %v
# matching %v rule at index %d", "Pod %s/%s has condition %v matching %v rule at index %d").
EXIT_MESSAGE = "Container jax-program for pod pathways/train-pathways-head-0-0-x7k2p failed with exit code 2 matching FailJob rule at index 1"
DISRUPTION_MESSAGE = "Pod pathways/train-pathways-head-0-0-x7k2p has condition DisruptionTarget matching FailJob rule at index 0"
WORKER_EXIT = "Container pathways-worker for pod pathways/train-pathways-worker-0-0-abcde failed with exit code 2 matching FailJob rule at index 1"


def test_the_rules_patterns_match_the_job_controllers_messages_and_nothing_else():
    assert re.search(DISRUPTION_MESSAGE_PATTERN, DISRUPTION_MESSAGE) and not re.search(DISRUPTION_MESSAGE_PATTERN, EXIT_MESSAGE)
    assert re.search(PROGRAM_ERROR_MESSAGE_PATTERN, EXIT_MESSAGE) and not re.search(PROGRAM_ERROR_MESSAGE_PATTERN, DISRUPTION_MESSAGE)
    assert not re.search(PROGRAM_ERROR_MESSAGE_PATTERN, WORKER_EXIT)


def test_exit_codes_are_the_users_sorted_and_an_empty_list_drops_the_rule():
    js = the_jobset(onFailure={"failOnExitCodes": [137, 3]})
    head, _ = jobs(js)
    assert head["podFailurePolicy"]["rules"][1]["onExitCodes"]["values"] == [3, 137]
    js = the_jobset(onFailure={"failOnExitCodes": []})
    head, _ = jobs(js)
    assert [r["name"] for r in js["spec"]["failurePolicy"]["rules"]] == ["Disruption"]
    assert len(head["podFailurePolicy"]["rules"]) == 1


def test_blocking_recreate_is_rendered():
    assert the_jobset(onFailure={"restartStrategy": "BlockingRecreate"})["spec"]["failurePolicy"]["restartStrategy"] == "BlockingRecreate"


def test_an_elastic_workload_ignores_a_disrupted_worker():
    js = the_jobset(slices=3, elastic={"maxMissingSlices": 1}, onFailure={})
    head, worker = jobs(js)
    assert worker["podFailurePolicy"]["rules"][0]["action"] == "Ignore"
    assert head["podFailurePolicy"]["rules"][0]["action"] == "FailJob"


def test_interactive_and_service_take_disruption_rules_only():
    plan = plan_of(config_with(slices=SLICES, pathwaysVersion=VERSION, workloads=[{"name": "nb", "mode": "interactive", "onFailure": {}}]))
    (js,) = [o for o in manifests(plan) if o["kind"] == "JobSet"]
    head, _ = jobs(js)
    assert [r["name"] for r in js["spec"]["failurePolicy"]["rules"]] == ["Disruption"]
    assert len(head["podFailurePolicy"]["rules"]) == 1


@pytest.mark.parametrize("on_failure,key,says", [
    ({"failOnExitCodes": [0, 2]}, "onFailure.failOnExitCodes", "[0] are not failure exit codes; valid: 1 to 255"),
    ({"failOnExitCodes": [256]}, "onFailure.failOnExitCodes", "[256] are not failure exit codes"),
    ({"failOnExitCodes": [2, 2]}, "onFailure.failOnExitCodes", "repeats a code"),
    ({"restartStrategy": "InPlaceRestart"}, "onFailure.restartStrategy", "alpha in JobSet v0.12.0"),
    ({"restartStrategy": "Rebuild"}, "onFailure.restartStrategy", "valid: Recreate, BlockingRecreate"),
    ({"retries": 2}, "onFailure.retries", ""),
])
def test_bad_rules_are_refused_in_one_line(on_failure, key, says):
    msg = problem(config_with(slices=SLICES, pathwaysVersion=VERSION, workloads=[workload(onFailure=on_failure)]))
    assert len(msg.splitlines()) == 1 and f"workloads[0].{key}" in msg and says in msg


def test_rules_that_do_not_fit_the_mode_are_refused():
    msg = problem(config_with(slices=SLICES, pathwaysVersion=VERSION,
                              workloads=[{"name": "nb", "mode": "interactive", "onFailure": {"failOnExitCodes": [2]}}]))
    assert "workloads[0].onFailure.failOnExitCodes" in msg and "run no program of their own" in msg
    serve = {"name": "chat", "mode": "serve", "onFailure": {},
             "serve": {"model": "llama3.1-8b", "weights": WEIGHTS}}
    msg = problem(config_with(slices=SLICES, pathwaysVersion=VERSION, workloads=[serve]))
    assert "workloads[0].onFailure" in msg and "LeaderWorkerSets" in msg


def test_the_offline_admission_refuses_what_the_job_api_refuses():
    js = copy.deepcopy(the_jobset(onFailure={}))
    worker = js["spec"]["replicatedJobs"][1]["template"]["spec"]
    worker["template"]["spec"]["restartPolicy"] = "OnFailure"
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]
    head["podFailurePolicy"]["rules"][1]["onExitCodes"]["containerName"] = "trainer"
    rules = {v.rule for v in admission.check_jobset(js).violations}
    messages = " ".join(v.message for v in admission.check_jobset(js).violations)
    assert rules == {"pod-failure-policy"}
    assert "only 'Never' is supported" in messages and "'trainer' must be one of the container" in messages


def test_no_long_running_pathways_pod_is_the_autoscalers_to_evict():
    # tunix #2342: with headPool.scaleToZero the autoscaler took the head's node
    for stack in ("dev", "staging", "prod", "serving"):
        for obj in manifests(example_plan(stack)):
            if obj["kind"] == "JobSet":
                templates = [rj["template"]["spec"]["template"] for rj in obj["spec"]["replicatedJobs"]]
            elif obj["kind"] == "LeaderWorkerSet":
                lt = obj["spec"]["leaderWorkerTemplate"]
                templates = [lt["leaderTemplate"], lt["workerTemplate"]]
            else:
                continue
            for t in templates:
                assert t["metadata"]["annotations"][SAFE_TO_EVICT] == "false", (stack, obj["metadata"]["name"])


def test_the_plan_says_what_each_failure_does(capsys):
    assert offline_main(["plan", "--config", str(example_path("prod"))]) == 0
    text = capsys.readouterr().out
    assert "  pretrain on failure:" in text
    assert "program exits 2, 126, 127: fails the JobSet at once, no restart" in text
    assert "of a worker: restarts the JobSet without spending maxRestarts (restartStrategy BlockingRecreate), unless the program exits" in text
    assert "notebook on failure:\n    no failure rules: every failure counts, disruptions included" in text


def test_a_command_that_cannot_start_fails_the_run_at_once_by_default():
    # containerd's CRI ends a container whose command cannot start with reason StartError, exit code 128: running
    # it again cannot help, like 126 and 127
    head, worker = jobs(the_jobset(onFailure={}))
    (rule,) = [r for r in head["podFailurePolicy"]["rules"] if r["action"] == "FailJob" and "onExitCodes" in r]
    assert rule["onExitCodes"]["values"] == [2, 126, 127, 128]


def test_without_rules_the_plan_says_an_evicted_worker_is_replaced_and_counted():
    from components.model.config import load, resolve
    from components.model.workloads.failures import DISRUPTION, failure_handling
    from infra.offline import stackfile

    stack = resolve(load(stackfile.raw_values(stackfile.load_config(example_path("dev"))[0]), "dev"))
    lines = dict(failure_handling(next(w for w in stack.workloads if w.name == "notebook")))
    assert lines["worker crashes"].startswith("retried in place on its host")
    assert lines[f"{DISRUPTION} of a worker"].startswith("its pod is gone: the worker's Job makes a new one on its slice")
    assert not [k for k in lines if "worker crashes, or" in k]
