"""#73.7 (and #74.2): the teams' usage record survives the runs' deletion, the recorder holds then drains a team over
budget with Kueue's own switch, and its identity may do that and nothing more."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.manifests import usage, usage_record
from components.manifests.pod_security import check_pod
from components.model.config import resolve
from infra.run.teams import report, report_table
from tests.test_teams import TEAMS, model

DEC = 1796083200.0  # 2026-12-01T00:00:00Z


def _workload(uid: str, chips: int, admitted_at: float | None, finished_at: float | None = None, past: int = 0) -> dict[str, Any]:
    iso = usage_record._iso
    conditions = []
    if admitted_at is not None:
        conditions.append({"type": "Admitted", "status": "True", "lastTransitionTime": iso(admitted_at)})
    if finished_at is not None:
        conditions.append({"type": "Finished", "status": "True", "lastTransitionTime": iso(finished_at)})
    return {"metadata": {"uid": uid, "name": f"jobset-{uid}", "namespace": "team-a", "creationTimestamp": iso(DEC)},
            "spec": {"podSets": [{"count": chips // 4, "template": {"spec": {"containers": [
                {"resources": {"requests": {"google.com/tpu": "4"}}}]}}}]},
            "status": {"conditions": conditions, "accumulatedPastExecutionTimeSeconds": past}}


def test_the_month_is_kueues_admitted_time_and_a_deleted_runs_part_stays():
    assert usage_record.month_key(DEC) == "2026-12" and usage_record.month_start(DEC + 86400 * 5) == DEC
    a = _workload("a", 16, DEC + 60)
    first = usage_record.advance(None, [a], DEC, DEC + 3660)  # 1 hour admitted, 16 chips
    assert first["chipSeconds"] == 16 * 3600 and first["closedChipSeconds"] == 0
    # the team deletes the run: what it had reached when last seen stays in the record
    gone = usage_record.advance(first, [], DEC, DEC + 3720)
    assert gone["chipSeconds"] == 16 * 3600 and gone["closedChipSeconds"] == 16 * 3600 and gone["open"] == {}
    # a new run adds to it; the record never goes down, even if a Workload's figure did
    b = _workload("b", 8, DEC + 3720)
    later = usage_record.advance(gone, [b], DEC, DEC + 3720 + 1800)
    assert later["chipSeconds"] == 16 * 3600 + 8 * 1800
    assert usage_record.advance(later, [_workload("b", 8, None)], DEC, DEC + 7200)["chipSeconds"] == later["chipSeconds"]
    # Kueue's past admissions count when the Workload was made in the month; a finished one stops counting
    done = _workload("c", 4, DEC, finished_at=DEC + 600, past=100)
    assert usage_record.chip_seconds(done, DEC, DEC + 86400) == (600 + 100) * 4


TEAM = {"name": "a", "namespace": "team-a", "clusterQueue": "team-a", "budgetChipHours": 10, "drainAfterSeconds": 3600}


def test_over_budget_the_queue_is_held_then_drained_and_released_in_a_month_under_it():
    free: dict[str, Any] = {"metadata": {"name": "team-a"}, "spec": {"stopPolicy": "None"}}
    patch, line = usage_record.decide(TEAM, 16 * 3600, free, DEC + 100)
    assert patch == {"metadata": {"annotations": {"pathways/budget-hold": "16.00 of 10 chip-hours in 2026-12",
                                                  "pathways/budget-held-since": "2026-12-01T00:01:40Z"}},
                     "spec": {"stopPolicy": "Hold"}}
    assert line == "team a: held (ClusterQueue team-a stopPolicy Hold): 16.00 of 10 chip-hours in 2026-12"
    held = {"metadata": {"name": "team-a", "annotations": patch["metadata"]["annotations"]}, "spec": {"stopPolicy": "Hold"}}
    assert usage_record.decide(TEAM, 17 * 3600, held, DEC + 100 + 3599)[0] is None  # within the grace: held only
    drained, line = usage_record.decide(TEAM, 17 * 3600, held, DEC + 100 + 3600)
    assert drained is not None and drained["spec"] == {"stopPolicy": "HoldAndDrain"} and "drained" in line
    # never drained when the team says so (drainAfterMinutes: null)
    assert usage_record.decide({**TEAM, "drainAfterSeconds": None}, 17 * 3600, held, DEC + 10**6)[0] is None
    # a new month: under budget, released, its annotations removed
    released, line = usage_record.decide(TEAM, 0, {**held, "spec": {"stopPolicy": "HoldAndDrain"}}, DEC + 31 * 86400)
    assert released == {"metadata": {"annotations": {"pathways/budget-hold": None, "pathways/budget-held-since": None}},
                        "spec": {"stopPolicy": "None"}} and "released (under budget in 2027-01" in line
    # an operator's hold (no annotation of the recorder's) is never touched, over budget or not
    operator = {"metadata": {"name": "team-a"}, "spec": {"stopPolicy": "Hold"}}
    assert usage_record.decide(TEAM, 16 * 3600, operator, DEC)[0] is None
    assert usage_record.decide(TEAM, 0, operator, DEC)[0] is None
    # no budget: recorded, never held
    assert usage_record.decide({**TEAM, "budgetChipHours": None}, 10**9, free, DEC)[0] is None


class FakeApi:
    def __init__(self, workloads: list[dict[str, Any]], queue: dict[str, Any]):
        self.workloads, self.queue, self.config_maps, self.calls = workloads, queue, {}, []

    def call(self, method, path, body=None, content_type="application/json"):
        self.calls.append((method, path))
        if path.endswith("/workloads"):
            return {"items": self.workloads}
        if "/configmaps" in path:
            name = path.rsplit("/", 1)[-1]
            if method == "GET":
                return self.config_maps.get(name)
            stored = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
            self.config_maps[body["metadata"]["name"]] = stored
            return stored
        if method == "GET":
            return self.queue
        # a JSON merge patch (RFC 7386): null deletes
        annotations = {**(self.queue["metadata"].get("annotations") or {}), **body.get("metadata", {}).get("annotations", {})}
        self.queue = {"metadata": {**self.queue["metadata"], "annotations": {k: v for k, v in annotations.items() if v is not None}},
                      "spec": {**self.queue["spec"], **body["spec"]}}
        return self.queue


def test_a_tick_writes_the_record_then_holds_and_a_deleted_run_does_not_lift_the_hold():
    api = FakeApi([_workload("a", 16, DEC)], {"metadata": {"name": "team-a"}, "spec": {"stopPolicy": "None"}})
    config = {"namespace": "pathways-usage", "kueueApi": "kueue.x-k8s.io/v1beta2", "teams": [TEAM]}
    assert usage_record.tick(api, config, DEC + 3600) == ["team a: held (ClusterQueue team-a stopPolicy Hold): 16.00 of 10 chip-hours in 2026-12"]
    record = json.loads(api.config_maps["usage-a"]["data"]["2026-12"])
    assert record["chipSeconds"] == 16 * 3600
    assert api.queue["spec"]["stopPolicy"] == "Hold"
    api.workloads = []  # the team deletes its run to escape
    lines = usage_record.tick(api, config, DEC + 3660)
    assert lines == ["team a: over budget, held (16.00 of 10 chip-hours in 2026-12)"], lines
    assert json.loads(api.config_maps["usage-a"]["data"]["2026-12"])["chipSeconds"] == 16 * 3600
    # it touched only the team's namespace, its own ConfigMaps and the team's ClusterQueue
    assert {p.split("?")[0] for _, p in api.calls} == {
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads", "/api/v1/namespaces/pathways-usage/configmaps",
        "/api/v1/namespaces/pathways-usage/configmaps/usage-a", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/team-a"}


def _objects() -> list[dict[str, Any]]:
    return usage.objects(resolve(model(teams=[{**TEAMS[0], "chipHoursPerMonth": 10}, TEAMS[1], TEAMS[2]])), "system")


def test_the_recorders_identity_holds_only_what_it_needs():
    objs = _objects()
    rules = {(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")): o.get("rules") for o in objs if o["kind"] in ("Role", "ClusterRole")}
    assert rules[("ClusterRole", "pathways-usage-recorder", None)] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "resourceNames": ["team-a", "team-b", "team-c"], "verbs": ["get", "patch"]}]
    assert rules[("ClusterRole", "pathways-usage-recorder-workloads", None)] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["get", "list"]}]
    # the workloads' reader is bound in the teams' namespaces only, never cluster-wide
    bound = [(o["kind"], o["metadata"].get("namespace")) for o in objs if o.get("roleRef", {}).get("name") == "pathways-usage-recorder-workloads"]
    stack = resolve(model())
    assert bound == [("RoleBinding", t.team_namespace) for t in stack.teams] and len(bound) == 3
    # its own records by name: not its program and settings, which would let it raise a budget
    assert rules[("Role", "usage-recorder", "pathways-usage")] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "update"], "resourceNames": ["usage-a", "usage-b", "usage-c"]}]
    # each team's submitters read their own team's record, by name, and nothing else
    readers = {o["metadata"]["name"]: o["rules"] for o in objs if o["kind"] == "Role" and o["metadata"]["name"].endswith("-reader")}
    assert readers == {f"usage-{t}-reader": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [f"usage-{t}"], "verbs": ["get"]}]
                       for t in ("a", "b", "c") if next(x for x in TEAMS if x["name"] == t).get("submitters")}
    assert readers


def test_the_schedule_runs_the_shipped_program_under_restricted_pod_security():
    objs = _objects()
    (namespace,) = [o for o in objs if o["kind"] == "Namespace"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert "kueue.x-k8s.io/managed" not in str(namespace["metadata"]["labels"])  # Kueue does not gate its Jobs
    (cron,) = [o for o in objs if o["kind"] == "CronJob"]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]
    assert check_pod("restricted", pod["metadata"], pod["spec"]) == []
    assert cron["spec"]["schedule"] == "* * * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    (program,) = [o for o in objs if o["kind"] == "ConfigMap"]
    assert program["data"]["recorder.py"] == Path(usage_record.__file__).read_text()
    settings = json.loads(program["data"]["config.json"])
    assert settings["teams"][0] == {"name": "a", "namespace": "team-a", "clusterQueue": "team-a", "budgetChipHours": 10, "drainAfterSeconds": 3600}
    assert [o["kind"] for o in objs].index("ConfigMap") < [o["kind"] for o in objs].index("CronJob")


def test_the_program_needs_nothing_but_pythons_standard_library(tmp_path):
    # copied alone and run isolated (-I: no project, no site-packages), as the CronJob's container runs it
    script = tmp_path / "recorder.py"
    script.write_text(Path(usage_record.__file__).read_text())
    proc = subprocess.run([sys.executable, "-I", "-S", str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "record the teams' TPU usage" in proc.stdout, proc.stderr


class FakeKube:
    def __init__(self, records: dict[str, Any], refused: tuple[str, ...] = ()):
        self.records, self.refused = records, refused

    def run(self, *args, check=True, **kw):
        name = args[4]
        if name in self.refused:
            return subprocess.CompletedProcess(args, 1, "", f'Error from server (Forbidden): configmaps "{name}" is forbidden')
        if name not in self.records:
            return subprocess.CompletedProcess(args, 1, "", f'Error from server (NotFound): configmaps "{name}" not found')
        return subprocess.CompletedProcess(args, 0, json.dumps({"data": {"2026-12": json.dumps(self.records[name])}}), "")

    def items(self, resource, namespace, selector=""):
        return [_workload("w", 4, DEC, finished_at=DEC + 3600)]


def test_teams_reads_the_record_and_says_what_is_left_and_a_member_reads_their_own_line():
    stack = resolve(model(teams=[{**TEAMS[0], "chipHoursPerMonth": 10}, {**TEAMS[1], "chipHoursPerMonth": 100}, TEAMS[2]]))
    kube = FakeKube({"usage-a": {"chipSeconds": 16 * 3600, "updated": "2026-12-02T00:00:00Z"},
                     "usage-b": {"chipSeconds": 25 * 3600, "updated": "2026-12-02T00:00:00Z"}})
    rows = report(kube, stack, DEC, DEC + 86400)  # type: ignore[arg-type]
    assert [(r["team"], r["chipHours"], r["leftChipHours"], r["shareOfBudget"], r["overBudget"]) for r in rows] == [
        ("a", 16.0, 0.0, 1.6, True), ("b", 25.0, 75.0, 0.25, False), ("c", 4.0, None, None, False)]
    assert rows[0]["source"] == "record, updated 2026-12-02T00:00:00Z"
    assert rows[2]["source"] == "no record: 1 Workloads now there, a lower bound"
    table = report_table(rows)
    assert "10 OVER" in table and "75.00" in table and "25%" in table
    # a member of b reads b's line; the others' records are refused to them, said in one line
    only_b = FakeKube({"usage-b": {"chipSeconds": 3600, "updated": "x"}}, refused=("usage-a", "usage-c"))
    assert [r["team"] for r in report(only_b, stack, DEC, DEC + 86400, "b")] == ["b"]  # type: ignore[arg-type]
    with pytest.raises(Exception, match="a team's submitters read their own team's line only"):
        report(only_b, stack, DEC, DEC + 86400)  # type: ignore[arg-type]
    with pytest.raises(Exception, match="is not a team of pathways:teams"):
        report(only_b, stack, DEC, DEC + 86400, "zz")  # type: ignore[arg-type]


def test_the_offline_engine_refuses_two_resources_of_one_urn_as_pulumi_does(tmp_path):
    # the usage recorder's RoleBindings are one a team namespace, all named alike: named by name alone, they were one
    # URN, which the engine refuses ("Duplicate resource URN") and the offline plan kept the last of
    from infra.offline import engine

    (tmp_path / "__main__.py").write_text(
        "import pulumi\n"
        "class Thing(pulumi.ComponentResource):\n"
        "    def __init__(self, name):\n"
        "        super().__init__('test:index:Thing', name, None, None)\n"
        "Thing('same')\nThing('same')\n")
    with pytest.raises(RuntimeError, match="Duplicate resource URN .*the engine refuses the whole update"):
        engine.run({}, "test", program_dir=tmp_path)
    # and the teams' plan names each binding by its namespace
    import yaml as _yaml

    from tests.conftest import example_path, plan_of

    teams_plan = plan_of(_yaml.safe_load(example_path("teams").read_text())["config"], "teams")
    bindings = [r.name for r in teams_plan.resources if r.name.startswith("teams-usage-rolebinding-")]
    teams = len(_yaml.safe_load(example_path("teams").read_text())["config"]["pathways:teams"])
    assert len(bindings) == len(set(bindings)) == teams + 1 + teams  # the workloads' readers, its own, the teams' readers


def test_a_change_of_the_teams_replaces_the_recorders_program_as_the_provider_does():
    # pulumi-kubernetes replaces a ConfigMap whose data changes (diff.go forceNewProperties, enableConfigMapMutable
    # off); the day-two scenario on the real engine found the diff calling it an update
    from tests.test_change_safety import run_diff, stack_config

    cfg = stack_config("teams")
    teams = [*cfg["pathways:teams"], {"name": "vision", "submitters": [{"name": "vision@example.com"}]}]
    changes, _ = run_diff("teams", {**cfg, "pathways:teams": teams})
    program = changes["teams-usage-configmap-pathways-usage-usage-recorder-program"]
    assert program.action == "replace" and program.forced_by == ["data.config.json"], (program.action, program.forced_by)
    # the records themselves are the recorder's, never Pulumi's: no change of the stack touches them
    assert not [n for n in changes if n.startswith("teams-usage-configmap-pathways-usage-usage-") and "program" not in n]


def test_the_recorder_may_flip_the_stop_switch_and_nothing_else():
    import yaml as _yaml

    from components.manifests.admission import CRDS
    from tests.test_runs import _policy_admits

    policy = next(o for o in usage.stop_switch_only_policy() if o["kind"] == "ValidatingAdmissionPolicy")
    # the fields it holds are every spec field of the pinned CRD but stopPolicy
    crd = _yaml.safe_load((CRDS / "kueue" / "kueue.x-k8s.io_clusterqueues.yaml").read_text())
    spec = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(usage.HELD_SPEC_FIELDS) == set(spec["properties"]) - {"stopPolicy"}
    queue = {"metadata": {"name": "team-a", "labels": {"app.kubernetes.io/managed-by": "pulumi"}, "annotations": {"pulumi.com/x": "1"}},
             "spec": {"cohortName": "pathways", "stopPolicy": "None",
                      "resourceGroups": [{"coveredResources": ["google.com/tpu"], "flavors": [{"name": "tpu", "resources": [
                          {"name": "google.com/tpu", "nominalQuota": 16}]}]}]}}
    who = (usage.RECORDER_USER, [])
    patch, _ = usage_record.decide(TEAM, 16 * 3600, queue, DEC)
    assert patch is not None
    held = {"metadata": {**queue["metadata"], "annotations": {**queue["metadata"]["annotations"], **patch["metadata"]["annotations"]}},
            "spec": {**queue["spec"], **patch["spec"]}}
    assert _policy_admits(policy, *who, "UPDATE", held, queue, ("kueue.x-k8s.io", "clusterqueues"))
    released = {"metadata": queue["metadata"], "spec": {**queue["spec"], "stopPolicy": "None"}}
    assert _policy_admits(policy, *who, "UPDATE", released, held, ("kueue.x-k8s.io", "clusterqueues"))
    grown = {**held, "spec": {**held["spec"], "resourceGroups": [{**queue["spec"]["resourceGroups"][0], "flavors": [
        {"name": "tpu", "resources": [{"name": "google.com/tpu", "nominalQuota": 64}]}]}]}}
    assert not _policy_admits(policy, *who, "UPDATE", grown, queue, ("kueue.x-k8s.io", "clusterqueues"))  # its quota
    moved = {**held, "spec": {**held["spec"], "cohortName": "elsewhere"}}
    assert not _policy_admits(policy, *who, "UPDATE", moved, queue, ("kueue.x-k8s.io", "clusterqueues"))
    relabelled = {**held, "metadata": {**held["metadata"], "labels": {}}}
    assert not _policy_admits(policy, *who, "UPDATE", relabelled, queue, ("kueue.x-k8s.io", "clusterqueues"))
    annotated = {**held, "metadata": {**held["metadata"], "annotations": {**held["metadata"]["annotations"], "other/x": "y"}}}
    assert not _policy_admits(policy, *who, "UPDATE", annotated, queue, ("kueue.x-k8s.io", "clusterqueues"))
    assert not _policy_admits(policy, *who, "DELETE", None, queue, ("kueue.x-k8s.io", "clusterqueues"))
    # anyone else is not this policy's to judge (RBAC and the stack decide)
    assert _policy_admits(policy, "admin@example.com", [], "UPDATE", grown, queue, ("kueue.x-k8s.io", "clusterqueues"))
    kinds = [o["kind"] for o in _objects()]
    assert kinds.index("ValidatingAdmissionPolicyBinding") < kinds.index("ClusterRoleBinding")
