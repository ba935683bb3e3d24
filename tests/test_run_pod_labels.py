"""#73.6: a run's pods carry only the labels the product writes and the keys pathways:runs.podLabels allows, so that
no run joins what the stack selects by label (a serving endpoint, its network policy, a scrape)."""

from __future__ import annotations

import copy

import pytest

from components.manifests import runs as runs_manifest
from components.manifests import teams as teams_manifest
from components.manifests.lws import leader_selector
from components.model.config import as_run, load_run, resolve
from components.model.errors import ConfigError
from tests.test_runs import RUNS, _policy_admits, model, run_object

SUBMITTER = ("rita@example.com", [])
SPEC = {"name": "exp", "image": "example.com/t:1"}
WORKLOADS = [{"name": "train", "image": "example.com/t:1"}]


def _labelled(js: dict, labels: dict[str, str | None], job: int = 0) -> dict:
    out = copy.deepcopy(js)
    pod = out["spec"]["replicatedJobs"][job]["template"]["spec"]["template"]
    for key, value in labels.items():
        if value is None:
            pod.setdefault("metadata", {}).setdefault("labels", {}).pop(key, None)
        else:
            pod.setdefault("metadata", {}).setdefault("labels", {})[key] = value
    return out


def _policy(stack):
    return next(o for o in runs_manifest.runs_only_policy(stack) if o["kind"] == "ValidatingAdmissionPolicy")


def test_the_jobset_submit_builds_carries_only_the_products_labels_and_is_admitted():
    run = run_object(SPEC, workloads=WORKLOADS)
    pod_labels = [rj["template"]["spec"]["template"]["metadata"]["labels"] for rj in run["spec"]["replicatedJobs"]]
    assert pod_labels and all(labels == {"pathways/workload": "exp"} for labels in pod_labels)
    assert _policy_admits(_policy(resolve(model(workloads=WORKLOADS))), *SUBMITTER, "CREATE", run, None)


@pytest.mark.parametrize("labels,why", [
    # LeaderWorkerSet's own labels: the serving Service, the InferencePool and the scrape select the leaders by them
    ({"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"}, "a serving endpoint"),
    ({"pathways/workload": "train"}, "another workload's name"),
    ({"pathways/team": "a"}, "a team's label in the stack's namespace"),
    ({"app": "chat"}, "a key runs.podLabels does not allow"),
    ({"k8s-app": "custom-metrics-stackdriver-adapter"}, "the metrics adapter's selector"),
])
def test_security_73_6_a_run_with_a_label_outside_the_allow_list_is_refused(labels, why):
    stack = resolve(model(workloads=WORKLOADS))
    run = run_object(SPEC, workloads=WORKLOADS)
    policy = _policy(stack)
    assert not _policy_admits(policy, *SUBMITTER, "CREATE", _labelled(run, labels), None), why
    # on any of the run's replicated jobs, not only the first
    if len(run["spec"]["replicatedJobs"]) > 1:
        assert not _policy_admits(policy, *SUBMITTER, "CREATE", _labelled(run, labels, job=1), None), why
    message = next(v["message"] for v in policy["spec"]["validations"] if "podLabels" in v["message"])
    assert "pathways/workload=<the run's name>" in message and "(none)" in message

def test_the_serving_selector_is_the_leaderworkerset_labels_the_policy_refuses():
    # the first case above is what a serving endpoint's Service, InferencePool and PodMonitoring select
    assert set(leader_selector(resolve(model(workloads=WORKLOADS)).workloads[0])) == {
        "leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/worker-index"}


def test_a_key_runs_pod_labels_allows_is_admitted_and_the_rest_still_refused():
    stack = resolve(model(workloads=WORKLOADS, runs={**RUNS, "podLabels": ["example.com/experiment"]}))
    run = run_object(SPEC, workloads=WORKLOADS, runs={**RUNS, "podLabels": ["example.com/experiment"]})
    policy = _policy(stack)
    assert _policy_admits(policy, *SUBMITTER, "CREATE", _labelled(run, {"example.com/experiment": "lr-sweep"}), None)
    assert not _policy_admits(policy, *SUBMITTER, "CREATE", _labelled(run, {"example.com/other": "x"}), None)
    # a run without the product's label is still a run (it carries fewer labels, none it should not)
    assert _policy_admits(policy, *SUBMITTER, "CREATE", _labelled(run, {"pathways/workload": None}), None)


def test_an_update_keeps_the_labels_kueue_wrote_but_adds_none():
    stack = resolve(model(workloads=WORKLOADS))
    run = run_object(SPEC, workloads=WORKLOADS)
    # Kueue writes its pod-set label into the templates when it admits; the submitter's later update keeps it
    admitted = _labelled(run, {"kueue.x-k8s.io/podset": "pathways-head"})
    policy = _policy(stack)
    assert _policy_admits(policy, *SUBMITTER, "UPDATE", admitted, admitted)
    assert not _policy_admits(policy, *SUBMITTER, "UPDATE", _labelled(admitted, {"app": "chat"}), admitted)
    assert not _policy_admits(policy, *SUBMITTER, "UPDATE", admitted, run)  # the submitter may not write Kueue's


def test_a_teams_runs_carry_its_name_and_no_other_teams():
    spec = {"name": "exp", "team": "b", "sliceGroup": "shared", "slices": 2, "image": "example.com/t:1", "command": ["python"]}
    from tests.test_teams import model as teams_model
    resolved = resolve(load_run(teams_model(), spec))
    run = runs_manifest.run_jobset(resolved, as_run(resolved, resolved.workloads[-1]), "bo@example.com")
    policy = next(o for o in teams_manifest.access(resolve(teams_model()))
                  if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "pathways-runs-only-b")
    assert _policy_admits(policy, "bo@example.com", [], "CREATE", run, None)
    assert not _policy_admits(policy, "bo@example.com", [], "CREATE", _labelled(run, {"pathways/team": "a"}), None)


@pytest.mark.parametrize("key,want", [
    ("leaderworkerset.sigs.k8s.io/name", "is a label Kubernetes, the controllers or the stack read"),
    ("pathways/workload", "is a label Kubernetes, the controllers or the stack read"),
    ("node-role.kubernetes.io/x", "is a label Kubernetes, the controllers or the stack read"),
    ("k8s-app", "is a label Kubernetes, the controllers or the stack read"),
    ("bad key", "is not a label key"),
    ("x" * 64, "is not a label key"),
])
def test_runs_pod_labels_refuses_a_key_that_is_not_the_users_own(key, want):
    with pytest.raises(ConfigError) as e:
        model(runs={**RUNS, "podLabels": [key]})
    lines = str(e.value).splitlines()
    assert len(lines) == 1 and lines[0].startswith("pathways:runs.podLabels") and want in lines[0], lines
