"""Several teams on one stack (pathways:teams): the refusals before deploy, the Kueue objects each team gets (their
quotas add up to the pools), its namespace, Role and runs policy (judged as the API server evaluates it), the plan's
table and its contention figures. The real Kueue's side is tests_e2e/test_teams.py."""

from __future__ import annotations

import pytest

from components.manifests import kueue as kueue_manifest
from components.manifests import runs as runs_manifest
from components.manifests import teams as teams_manifest
from components.manifests.controller_charts import FAIR_SHARING
from components.model.config import ConfigError, as_run, load, load_run, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.workloads.teams import expected_shares
from infra.offline import stackfile
from infra.offline.stackfile import raw_values
from tests.conftest import GROUPS_RBAC, config_with, every_stack, example_config, plan_of, stack_model, stack_plan
from tests.test_runs import _policy_admits

VERSION = "jax-0.9.0"
SLICES = [{"name": "shared", "tpu": "v6e-4", "count": 12}, {"name": "reserved", "tpu": "v6e-4", "count": 4}]
TEAMS = [
    {"name": "a", "submitters": [{"name": "team-a@example.com"}], "slices": {"reserved": {"slices": 4, "lend": 2}}, "weight": 3},
    {"name": "b", "submitters": [{"kind": "User", "name": "bo@example.com"}], "weight": 2, "slices": {"shared": {"slices": 2, "borrow": 3}}},
    {"name": "c", "submitters": [{"name": "team-c@example.com"}], "namespace": "evals", "parent": "research"},
]


def model(teams=TEAMS, **changes):
    base = {"pathwaysVersion": VERSION, "slices": SLICES, "runs": {"submitters": [{"name": "admins@example.com"}]},
            "teams": teams, "cluster": GROUPS_RBAC}
    raw = config_with(**{**base, **changes})
    cfg = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("pathways:")}
    return load({**cfg, "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")


def refused(teams=TEAMS, **changes) -> list[str]:
    with pytest.raises(ConfigError) as e:
        model(teams, **changes)
    return [str(p) for p in e.value.problems]


def _kueue(stack, kind):
    return {o["metadata"]["name"]: o for o in kueue_manifest.objects(stack) if o["kind"] == kind}


def test_each_team_gets_a_queue_in_the_cohort_whose_quotas_add_up_to_the_pools():
    stack = resolve(model())
    queues = _kueue(stack, "ClusterQueue")
    assert list(queues) == ["pathways", "team-a", "team-b", "team-c"]
    one = kueue_manifest.slice_quota(stack.slices[0])  # a v6e-4 slice: one host, 4 chips
    assert one["google.com/tpu"] == 4

    def tpu(cq, flavor, field="nominalQuota"):
        (rg,) = queues[cq]["spec"]["resourceGroups"]
        (f,) = [f for f in rg["flavors"] if f["name"] == flavor]
        (r,) = [r for r in f["resources"] if r["name"] == "google.com/tpu"]
        return r.get(field)
    # a owns reserved (lends 2), b owns 2 of shared (borrows at most 3 more); the stack's queue keeps the rest
    assert [tpu(q, "tpu-reserved") for q in queues] == ["0", "16", "0", "0"]
    assert [tpu(q, "tpu-shared") for q in queues] == ["40", "0", "8", "0"]
    assert tpu("team-a", "tpu-reserved", "lendingLimit") == "8" and tpu("team-a", "tpu-reserved", "borrowingLimit") is None
    assert tpu("team-b", "tpu-shared", "borrowingLimit") == "12"
    # every team lists every group (0 where it owns none: it may borrow there) and the head pool at 0 (borrowed)
    assert all(tpu(q, "pathways-head") == "0" for q in ("team-a", "team-b", "team-c"))
    specs = {n: q["spec"] for n, q in queues.items()}
    assert {n: s.get("cohortName") for n, s in specs.items()} == {"pathways": "pathways", "team-a": "pathways", "team-b": "pathways",
                                                                  "team-c": "teams-research"}
    assert [s["fairSharing"]["weight"] for n, s in specs.items() if n != "pathways"] == ["3", "2", "1"]
    assert specs["team-a"]["preemption"]["reclaimWithinCohort"] == "Any"  # what it lent comes back
    assert specs["team-c"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["evals"]
    # the stack's queue admits from the stack's own namespace only, never a team's (#73.19)
    assert specs["pathways"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["pathways"]
    assert _kueue(stack, "Cohort") == {"teams-research": {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                                                          "metadata": {"name": "teams-research"}, "spec": {"parentName": "pathways"}}}
    local = [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"])
             for o in kueue_manifest.objects(stack) if o["kind"] == "LocalQueue"]
    assert local == [("pathways", "runs-pathways", "pathways"), ("team-a", "runs-team-a", "team-a"),
                     ("team-b", "runs-team-b", "team-b"), ("evals", "runs-team-c", "team-c")]
    # each made after what it names (the Kueue component's dependency edges)
    assert ("Cohort", "teams-research") in kueue_manifest.references(queues["team-c"])


def test_without_teams_the_stack_keeps_its_one_queue_and_kueue_its_chart_config():
    stack = resolve(model(teams=[]))
    assert list(_kueue(stack, "ClusterQueue")) == ["pathways"]
    assert "cohortName" not in _kueue(stack, "ClusterQueue")["pathways"]["spec"]
    assert teams_manifest.namespaces(stack) == [] and teams_manifest.access(stack) == []


def test_teams_turn_on_kueues_fair_sharing():
    import yaml

    from components.kubernetes.kueue import KueueArgs, manager_config
    config = yaml.safe_load(manager_config(KueueArgs("0.19.2", None, "system", fair_sharing=True))["managerConfig"]["controllerManagerConfigYaml"])
    assert config["fairSharing"] == FAIR_SHARING
    assert config["integrations"]["frameworks"] == ["jobset.x-k8s.io/jobset"]  # what the stack's workloads are
    assert "fairSharing" not in yaml.safe_load(manager_config(KueueArgs("0.19.2", None, "system"))["managerConfig"]["controllerManagerConfigYaml"])


def test_a_team_submitter_reaches_its_own_namespace_only():
    stack = resolve(model())
    objs = teams_manifest.access(stack)
    roles = [(o["metadata"]["namespace"], [s["name"] for s in o["subjects"]]) for o in objs if o["kind"] == "RoleBinding"]
    assert roles == [("team-a", ["team-a@example.com"]), ("team-b", ["bo@example.com"]), ("evals", ["team-c@example.com"])]
    policies = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert bindings["pathways-runs-only-b"]["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == ["team-b"]
    # the policy comes before the Role it guards
    kinds = [o["kind"] for o in objs[:6]]
    assert kinds.index("ValidatingAdmissionPolicy") < kinds.index("Role")
    cfg = load_run(model(), {"name": "exp", "team": "b", "sliceGroup": "shared", "slices": 2, "image": "us-docker.pkg.dev/p/r/t@sha256:" + "a" * 64, "command": ["python"]})
    resolved = resolve(cfg)
    w = as_run(resolved, resolved.workloads[-1])
    assert (w.namespace, w.local_queue, w.cluster_queue) == ("team-b", "runs-team-b", "team-b")
    jobset = runs_manifest.run_jobset(resolved, w, "bo@example.com")
    assert jobset["metadata"]["namespace"] == "team-b"
    # the team's cost label on the JobSet and on every pod (GKE's cost allocation reads pod labels)
    assert jobset["metadata"]["labels"]["pathways/team"] == "b"
    assert {rj["template"]["spec"]["template"]["metadata"]["labels"]["pathways/team"] for rj in jobset["spec"]["replicatedJobs"]} == {"b"}
    assert _policy_admits(policies["pathways-runs-only-b"], "bo@example.com", [], "CREATE", jobset, None)
    # the same JobSet on another team's queue, or the stack's, is refused by b's policy
    for queue in ("runs-team-a", "runs-pathways"):
        other = {**jobset, "metadata": {**jobset["metadata"], "labels": {**jobset["metadata"]["labels"], "kueue.x-k8s.io/queue-name": queue}}}
        assert not _policy_admits(policies["pathways-runs-only-b"], "bo@example.com", [], "CREATE", other, None)


def test_a_team_run_takes_the_teams_priority_and_mounts_no_runs_bucket():
    cfg = load_run(model(teams=[{**TEAMS[0], "priority": "training"}]), {"name": "exp", "team": "a", "sliceGroup": "reserved", "image": "busybox@sha256:" + "b" * 64})
    assert cfg.workloads[-1].priority == "training"
    with pytest.raises(ConfigError) as e:
        load_run(model(runs={"submitters": [], "buckets": [{"name": "data-bkt"}]}),
                 {"name": "exp", "team": "a", "sliceGroup": "reserved", "image": "busybox@sha256:" + "b" * 64, "mounts": [{"bucket": "data-bkt", "path": "/data"}]})
    # runs.buckets are the stack's runs' (granted in its namespace): a team's run mounts only its team's buckets
    assert "run.mounts[0].bucket: 'data-bkt' is not in pathways:teams[0].buckets (listed: none)" in str(e.value)


@pytest.mark.parametrize("teams,changes,text", [
    ([{"name": "a", "slices": {"shared": {"slices": 1.5}}}], {}, "teams[0].slices.shared.slices: 1.5 is not a whole number of slices"),
    ([{"name": "a", "slices": {"shared": {"slices": 8}}}, {"name": "b", "slices": {"shared": {"slices": 5}}}], {},
     "the teams own 13 slices of shared (a 8, b 5), but the group has 12"),
    ([{"name": "a", "slices": {"nope": {"slices": 1}}}], {}, "teams[0].slices.nope: 'nope' is not a slice group of this stack"),
    ([{"name": "a", "slices": {"reserved": {"slices": 2, "lend": 3}}}], {}, "3 slices, more than the team owns of reserved (2)"),
    ([{"name": "a", "namespace": "kube-system"}], {}, "'kube-system' is a system or controller namespace"),
    ([{"name": "a", "namespace": "kueue-system"}], {}, "'kueue-system' is a system or controller namespace"),
    ([{"name": "a", "namespace": "pathways"}], {}, "'pathways' is the stack's own namespace"),
    ([{"name": "a"}, {"name": "b", "namespace": "team-a"}], {}, "'team-a' is team a's namespace too"),
    ([{"name": "a"}, {"name": "a"}], {}, "teams[1].name: 'a' names two teams"),
    ([{"name": "a", "submitters": [{"name": "x@example.com"}]}, {"name": "b", "submitters": [{"name": "X@example.com"}]}], {},
     "teams[1].submitters[0].name: X@example.com submits for team a too; list each submitter in one team, or say so with "
     "sharesSubmittersWith: [a] on team b"),
    ([{"name": "a", "sharesSubmittersWith": ["z"]}], {}, "'z' is not another team of this stack"),
    ([{"name": "a"}], {"runs": None}, "needs pathways:runs"),
    ([{"name": "a"}], {"kubernetes": {"kueue": {"enabled": False}}}, "needs Kueue"),
    ([{"name": "a"}], {"workloads": [{"name": "nb", "mode": "interactive", "team": "zz", "sliceGroup": "shared"}]},
     "workloads[0].team: 'zz' is not a team of pathways:teams (a)"),
    ([{"name": "a", "weight": 0}], {}, "teams[0].weight"),
    ([{"name": "a", "workers": ["east"]}], {}, "teams[0].workers[0]: 'east': only a fleet manager dispatches a team's runs to workers"),
])
def test_what_no_kueue_could_honour_is_refused_before_deploy(teams, changes, text):
    problems = refused(teams, **changes)
    assert any(text in p for p in problems), problems


def test_two_teams_may_share_a_submitter_when_they_say_so():
    both = [{"name": "a", "submitters": [{"name": "lead@example.com"}], "sharesSubmittersWith": ["b"]},
            {"name": "b", "submitters": [{"name": "lead@example.com"}]}]
    assert [t.name for t in model(teams=both).teams] == ["a", "b"]


def test_a_declared_workload_of_a_team_runs_in_its_namespace_on_its_queue():
    stack = resolve(model(workloads=[{"name": "nb", "mode": "interactive", "team": "c", "sliceGroup": "shared"}]))
    (w,) = stack.workloads
    assert (w.namespace, w.cluster_queue, w.local_queue) == ("evals", "team-c", "nb")
    (lq,) = [o for o in kueue_manifest.local_queues(stack)]
    assert (lq["metadata"]["namespace"], lq["spec"]["clusterQueue"]) == ("evals", "team-c")


def test_fair_sharing_equilibrium_splits_the_unowned_slices_by_weight_under_borrowing_limits():
    assert expected_shares(12, [("a", 0, None, 3), ("b", 0, None, 2), ("c", 0, None, 1)]) == {"a": 6, "b": 4, "c": 2}
    # b may borrow 1: the rest goes to a and c by their weights
    got = expected_shares(12, [("a", 0, None, 3), ("b", 2, 1, 2), ("c", 0, None, 1)])
    assert got["b"] == pytest.approx(3) and got["a"] == pytest.approx(8.25) and got["c"] == pytest.approx(2.75)
    assert sum(got.values()) == pytest.approx(14)


def test_the_plan_prints_each_teams_share_weight_budget_and_cost():
    stack = resolve(model(teams=[{**TEAMS[0], "chipHoursPerMonth": 1000}, *TEAMS[1:]]))
    s = stack_summary(stack)["teams"]
    a = s["teams"][0]
    assert a["ownedChips"] == 16 and a["chipHoursPerMonthOwned"] == 16 * 730
    assert a["monthlyAtFullOwnedUse"] is not None and a["monthlyAtFullOwnedUse"] > 0
    assert [g["underContention"] for g in s["teams"][1]["groups"]] == [pytest.approx(2 + 3), 0]  # b: its 2 + borrow limit 3
    text = "\n".join(summary_text(stack_summary(stack)))
    assert "Teams (docs/teams.md)" in text and "owned slices used all month exceed the budget of: a" in text


def test_the_example_stack_declares_three_teams_that_plan():
    from infra.offline.__main__ import _policies
    from tests.conftest import example_plan

    config = example_config("teams")
    plan = example_plan("teams")
    queues = {r.input("metadata.name") for r in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")}
    domains = {f"domain-{t['isolationDomain']}" for t in config["pathways:teams"] if t.get("isolationDomain")}
    assert queues == {"pathways", *(f"team-{t['name']}" for t in config["pathways:teams"]), *domains} and len(queues) >= 3
    assert [v for v in _policies(plan, None) if v.enforcement == "mandatory"] == []  # Verdict: OK


def test_every_teams_kueue_object_passes_the_upstream_crd_schema():
    # the ClusterQueues with weights, limits and a team group's cohort, and the Cohort object (no committed stack
    # nests teams): the pinned Kueue v0.19.2 CRDs, unknown fields refused, and their CEL rules
    from components.manifests import admission

    stack = resolve(model())
    made = [o for o in kueue_manifest.objects(stack) if o["kind"] in ("ClusterQueue", "Cohort", "LocalQueue")]
    assert {o["kind"] for o in made} == {"ClusterQueue", "Cohort", "LocalQueue"}
    reports = {f"{o['kind']}/{o['metadata']['name']}": admission.check_kueue(o) for o in made}
    assert {k: [str(v) for v in r.violations] + r.notices for k, r in reports.items() if r.violations or r.notices} == {}


# --- python -m infra.run: --team, the chip-hour report, the budget hold, why ------------------------------------

def _workload(name, chips, admitted_at=None, finished_at=None, past=0, created="2026-12-02T00:00:00Z"):
    conditions = []
    if admitted_at:
        conditions.append({"type": "Admitted", "status": "True", "lastTransitionTime": admitted_at})
    if finished_at:
        conditions.append({"type": "Finished", "status": "True", "lastTransitionTime": finished_at})
    return {"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"podSets": [{"name": "worker", "count": chips // 4, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"google.com/tpu": "4"}}}]}}},
                {"name": "head", "count": 1, "template": {"spec": {"containers": [{"name": "h", "resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {"conditions": conditions, **({"accumulatedPastExecutionTimeSeconds": past} if past else {})}}


def test_the_chip_hours_are_kueues_admitted_time_times_the_chips_clipped_to_the_month():
    from infra.run.teams import chip_seconds, month_bounds, workload_chips

    start, end = month_bounds("2026-12", 0)
    assert (end - start) / 86400 == 31
    w = _workload("a", 8, admitted_at="2026-12-03T00:00:00Z", finished_at="2026-12-03T10:00:00Z", past=3600)
    assert workload_chips(w) == 8
    assert chip_seconds(w, start, end) == (10 * 3600 + 3600) * 8  # this admission, plus Kueue's past ones
    # admitted before the month: only its part inside counts; created before it, its past admissions do not
    old = _workload("b", 4, admitted_at="2026-11-30T12:00:00Z", past=7200, created="2026-11-29T00:00:00Z")
    assert chip_seconds(old, start, start + 3600) == 3600 * 4
    with pytest.raises(Exception, match="is not a month"):
        month_bounds("2026-13", 0)


def test_why_names_a_budget_hold():
    from infra.run.gather import stack_view
    from infra.run.why import diagnose
    from infra.run.why_facts import Evidence

    stack = resolve(model())
    js = {"metadata": {"name": "exp", "labels": {"kueue.x-k8s.io/queue-name": "runs-team-a"}}, "spec": {}, "status": {}}
    wl = {"metadata": {"name": "jobset-exp-1", "ownerReferences": [{"kind": "JobSet", "name": "exp"}]},
          "spec": {"queueName": "runs-team-a", "active": True},
          "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Inactive", "message": "ClusterQueue team-a is inactive"}]}}
    cq = {"metadata": {"name": "team-a", "annotations": {"pathways/budget-hold": "16.00 of 10 chip-hours in 2026-12"}}, "spec": {"stopPolicy": "Hold"}}
    lq = {"metadata": {"name": "runs-team-a"}, "spec": {"clusterQueue": "team-a"}}
    got = diagnose(Evidence(name="exp", jobset=js, workload=wl, cluster_queue=cq, local_queues=[lq], now=0.0), stack_view(stack, "a"))
    assert got.reason == "over-budget" and "16.00 of 10 chip-hours" in got.summary and "usage recorder releases it" in got.fix, got


def test_submit_with_a_team_goes_to_its_namespace_and_an_unknown_team_is_one_line(tmp_path, capsys):
    import yaml

    from infra.run.__main__ import main
    from tests.conftest import write_stack_file

    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, slices=SLICES, cluster=GROUPS_RBAC,
                                                  runs={"submitters": []}, teams=TEAMS))
    argv = ["submit", "--config", str(path), "--name", "exp", "--slice-group", "shared", "--slices", "2",
            "--image", "busybox@sha256:" + "c" * 64]
    assert main([*argv, "--team", "b", "--dry-run", "--", "python", "train.py"]) == 0
    obj = yaml.safe_load(capsys.readouterr().out)
    assert obj["metadata"]["namespace"] == "team-b" and obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "runs-team-b"
    assert main([*argv, "--team", "zz", "--dry-run"]) == 2
    assert "run.team: 'zz' is not a team of pathways:teams (a, b, c)" in capsys.readouterr().err
    assert main(["list", "--config", str(path), "--team", "zz"]) == 2
    assert capsys.readouterr().err == "error: --team 'zz' is not a team of stack test; valid: a, b, c\n"


def test_a_fleet_managers_teams_may_not_own_more_than_its_workers_have_nor_name_another_worker():
    import json

    from infra.errors import InvalidStackConfig
    from infra.offline import engine, stackfile
    from tests.conftest import example_path
    from tests.test_fleet import outputs_of

    flat, secrets = stackfile.load_config(example_path("fleet-manager"))
    teams = json.loads(flat["pathways:teams"])
    teams[0]["slices"] = {"train": {"slices": 7}}  # 7 v6e-16 slices: 112 chips; east 2 + central 4 slices have 96
    with pytest.raises(InvalidStackConfig) as err:
        engine.run({**flat, "pathways:teams": json.dumps(teams)}, "fleet-manager", secrets, stack_outputs=outputs_of("fleet-east", "fleet-central"))
    assert str(err.value) == ("pathways:teams: the teams own 112 chips of train, but the workers have 96 of it; lower the teams' slices "
                              "or add workers")
    teams[0] = {**teams[0], "slices": {}, "workers": ["west"]}
    with pytest.raises(Exception, match=r"teams\[0\]\.workers\[0\]: 'west' is not a worker of this fleet \(east, central\)"):
        engine.run({**flat, "pathways:teams": json.dumps(teams)}, "fleet-manager", secrets, stack_outputs=outputs_of("fleet-east", "fleet-central"))
    # #76.2: its MultiKueueConfig would list a worker twice, which Kueue's CRD refuses ("must be unique")
    teams[0] = {**teams[0], "workers": ["east", "central", "east"]}
    with pytest.raises(Exception, match=r"teams\[0\]\.workers\[2\]: 'east' is listed twice; name each worker once"):
        engine.run({**flat, "pathways:teams": json.dumps(teams)}, "fleet-manager", secrets, stack_outputs=outputs_of("fleet-east", "fleet-central"))


def test_no_queue_under_fair_sharing_sets_what_kueue_ignores_there():
    # the v0.19.2 ClusterQueue CRD: borrowWithinCohort "May only be configured with Classical Preemption, and __not__
    # with Fair Sharing"; Kueue accepts it and takes the fair-sharing path instead (preemption.go): never written there
    stack = resolve(load(raw_values(stackfile.flatten(example_config("teams"))[0]), "teams"))
    queues = [o for o in kueue_manifest.objects(stack) if o["kind"] == "ClusterQueue"]
    assert len(queues) > 1 and all("borrowWithinCohort" not in q["spec"]["preemption"] for q in queues)
    assert all(q["spec"]["preemption"]["reclaimWithinCohort"] == "Any" for q in queues)


def test_namespaces_go_before_the_queues_that_admit_their_runs():
    # Kueue holds a ClusterQueue's deletion while it has workloads (finalizer kueue.x-k8s.io/resource-in-use): the
    # namespaces depend on the queues, so Pulumi deletes a team's namespace (and the runs in it) before its queue,
    # and each LocalQueue after its namespace exists
    from tests.conftest import example_plan

    plan = example_plan("teams")
    queues = {r.input("metadata.name"): r.urn for r in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")}
    namespaces = {r.input("metadata.name"): r for r in plan.resources if r.type == "kubernetes:core/v1:Namespace"}
    for team in example_config("teams")["pathways:teams"]:
        ns = namespaces[f"team-{team['name']}"] if f"team-{team['name']}" in namespaces else next(
            n for n in namespaces.values() if (n.input("metadata.labels") or {}).get("pathways/team") == team["name"])
        assert queues[f"team-{team['name']}"] in ns.dependencies
    assert set(queues.values()) <= set(namespaces["pathways"].dependencies)
    for lq in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"):
        own = namespaces[lq.input("metadata.namespace")]
        assert own.urn in lq.dependencies, lq.name


@every_stack()
def test_security_73_2_every_stack_with_teams_says_they_share_one_node_identity(stack):
    # teams are a quota boundary: every team's runs are hostNetwork pods acting as the pools' one node service account
    from tests.conftest import stack_config, stack_model

    shared = [t["name"] for t in stack_config(stack).get("pathways:teams") or [] if not t.get("isolationDomain")]
    said = [n for n in stack_summary(stack_model(stack))["notices"] if "a quota boundary, not a security boundary" in n]
    assert len(said) == (1 if shared else 0)
    assert all(f" {name}" in said[0] for name in shared)


def _made_namespaces(plan) -> set[str]:
    return {r.input("metadata.name") for r in plan.resources if r.type in ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:NamespacePatch")
            and not (r.input("metadata.labels") or {}).get("pathways/team")}


def test_security_73_6_no_team_takes_a_namespace_the_stack_makes():
    # derived from the plans, not a list: every namespace any committed stack (and an autoscaled serving one) makes
    # is refused as a team's, in one line naming what owns it
    from components.model.workloads.teams_checks import CONTROLLER_NAMESPACES
    from tests.conftest import STACKS, stack_plan
    from tests.test_serving import _gateway_stack

    made = set().union(*(_made_namespaces(stack_plan(s)) for s in STACKS), _made_namespaces(plan_of(_gateway_stack({}), "serving")))
    assert "custom-metrics" in made
    for ns in sorted(made):
        lines = [p for p in refused([{**TEAMS[0], "namespace": ns}]) if p.startswith("pathways:teams[0].namespace")]
        assert len(lines) == 1 and f"{ns!r} is " in lines[0] and "give the team one of its own" in lines[0], (ns, lines)
    assert set(CONTROLLER_NAMESPACES) - {"default"} <= made


def test_security_73_8_a_teams_priority_is_its_runs_ceiling_and_no_pod_preempts_on_the_schedulers_word():
    from components.manifests.guardrails import priority_classes

    image = "us-docker.pkg.dev/p/r/t@sha256:" + "a" * 64
    spec = {"name": "exp", "team": "b", "sliceGroup": "shared", "slices": 2, "image": image, "command": ["python"]}
    # team b's priority is experiment (the default): above it, refused before anything is sent, in one line
    with pytest.raises(ConfigError) as e:
        load_run(model(), {**spec, "priority": "training"})
    assert [str(p) for p in e.value.problems] == [
        "run.priority: 'training' is above team b's priority 'experiment'; its runs may take experiment "
        "(pathways:teams[].priority, raised in the stack file by whoever owns the stack)"]
    lifted = model(teams=[TEAMS[0], {**TEAMS[1], "priority": "interactive"}, TEAMS[2]])
    assert load_run(lifted, {**spec, "priority": "experiment"}).workloads[-1].priority == "experiment"  # below: fine
    assert load_run(lifted, spec).workloads[-1].priority == "interactive"  # the default is the ceiling
    # the same ceiling server-side: a JobSet written by hand (kubectl) at training is refused by b's runs policy
    resolved = resolve(load_run(model(), spec))
    jobset = runs_manifest.run_jobset(resolved, as_run(resolved, resolved.workloads[-1]), "bo@example.com")
    policy = next(o for o in teams_manifest.access(resolve(model()))  # the deployed stack's, without the run
                  if o["kind"] == "ValidatingAdmissionPolicy" and o["metadata"]["name"] == "pathways-runs-only-b")
    assert _policy_admits(policy, "bo@example.com", [], "CREATE", jobset, None)

    def at(priority: str, pod_class: str) -> dict:
        labels = {**jobset["metadata"]["labels"], "kueue.x-k8s.io/priority-class": f"pathways-{priority}"}
        jobs = [{**rj, "template": {**rj["template"], "spec": {**rj["template"]["spec"], "template": {
            **rj["template"]["spec"]["template"], "spec": {**rj["template"]["spec"]["template"]["spec"],
                                                           "priorityClassName": f"pathways-{pod_class}"}}}}}
                for rj in jobset["spec"]["replicatedJobs"]]
        return {**jobset, "metadata": {**jobset["metadata"], "labels": labels}, "spec": {**jobset["spec"], "replicatedJobs": jobs}}
    assert not _policy_admits(policy, "bo@example.com", [], "CREATE", at("training", "experiment"), None)  # Kueue's
    assert not _policy_admits(policy, "bo@example.com", [], "CREATE", at("experiment", "training"), None)  # the pods'
    assert _policy_admits(policy, "bo@example.com", [], "CREATE", at("experiment", "experiment"), None)
    # the stack's own runs keep every run priority (runs.submitters are the stack's)
    stack_policy = next(o for o in runs_manifest.runs_only_policy(resolve(model())) if o["kind"] == "ValidatingAdmissionPolicy")
    assert "pathways-training" in str(stack_policy["spec"]["validations"])
    # no PriorityClass of the stack preempts: Kueue alone preempts, by WorkloadPriorityClass, within the quotas
    assert {pc["metadata"]["name"]: pc["preemptionPolicy"] for pc in priority_classes()} == {
        f"pathways-{k}": "Never" for k in ("serving", "training", "interactive", "experiment")}
    # the field is immutable in the API: a stack deployed before this replaces the classes (by name: delete first),
    # which diff shows, rather than sending an update the API server refuses
    from infra.offline.change_rules import forcing_paths
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=SLICES))
    classes = plan.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert len(classes) == 4 and all(pc.input("preemptionPolicy") == "Never" for pc in classes)
    for pc in classes:
        assert pc.options["deleteBeforeReplace"] is True
        assert forcing_paths(pc.type, ["preemptionPolicy"], pc.options["replaceOnChanges"]) == ["preemptionPolicy"]


@every_stack()
def test_security_73_19_each_queue_admits_only_from_the_namespaces_of_the_local_queues_the_stack_points_at_it(stack):
    """Derived from each stack's plan: a ClusterQueue's namespaceSelector is exactly the namespaces of the LocalQueues
    pointing at it, so no LocalQueue made by hand in a team's namespace reaches the stack's quota."""
    plan = stack_plan(stack)
    pointing: dict[str, set[str]] = {}
    for lq in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"):
        pointing.setdefault(lq.input("spec.clusterQueue"), set()).add(lq.input("metadata.namespace"))
    teams = {t.team_namespace: t.cluster_queue for t in stack_model(stack).teams}
    domains = {d.cluster_queue for d in stack_model(stack).domains}
    for cq in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        name = cq.input("metadata.name")
        (selector,) = cq.input("spec.namespaceSelector.matchExpressions")
        if name in domains:  # an isolation domain's own queue lends to its teams and admits from no namespace
            assert selector == {"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"} and name not in pointing
            continue
        assert (selector["key"], selector["operator"]) == ("kubernetes.io/metadata.name", "In")
        assert set(selector["values"]) == (pointing.get(name) or {stack_model(stack).namespace}), name
        assert all(teams[ns] == name for ns in selector["values"] if ns in teams), (name, selector["values"])


def test_a_team_workload_may_not_take_its_teams_run_queue_name():
    # #76: its LocalQueue (the workload's name, in the team's namespace) and the team's run queue were one object
    (problem,) = refused(workloads=[{"name": "runs-team-b", "team": "b", "sliceGroup": "shared", "slices": 1,
                                     "image": "example.com/t:1"}])
    assert problem == ("pathways:workloads[0].name: 'runs-team-b' is the name of team b's run queue in team-b, and a "
                       "workload's LocalQueue takes its name; choose another name")
    model(workloads=[{"name": "runs-team-b", "team": "a", "sliceGroup": "shared", "slices": 1, "image": "example.com/t:1"}])
