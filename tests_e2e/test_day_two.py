"""Day two on the real engines (issue #72.9): the teams stack, running, takes a sequence of ordinary changes through
the real `pulumi up` (CLI, Kubernetes provider, API server, Kueue), and for each the engine's own preview replaces
exactly what the offline `diff` predicted, and the up succeeds; then it is removed with researchers' runs still in
flight: a team whose runs are there, and at last the whole stack (`pulumi destroy`), each finishing with no
leftover. The stack's Kubernetes layer: the GCP half's changes (pools, protection) are the offline diff's alone.

1. grow a slice group, add a team, add a workload;
2. change a slice group's TPU type (its flavor, and the workload on it replaced);
3. remove a team with its runs still there, and retire the workload;
4. `pulumi destroy` with runs in a team's namespace and the stack's own."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from infra.offline.diff import diff, guard
from infra.offline.engine import run as offline_plan
from infra.offline.stackfile import flatten
from tests_e2e.helpers import user_stack_file
from tests_e2e.test_teams import Teams, config
from tools.cluster.deploy import existing_mode, leftovers, pulumi_up
from tools.cluster.local import LocalCluster, log

REPLACING = ("replace", "create-replacement")


def offline(cluster: LocalCluster, cfg: dict[str, Any], stack: str):
    flat, secrets = flatten(existing_mode(cfg, cluster))
    return offline_plan(flat, stack, secrets)


def predicted(cluster: LocalCluster, before: dict[str, Any], after: dict[str, Any], stack: str = "teams") -> tuple[set[str], set[str]]:
    """(replaced, deleted) Kubernetes resources by Pulumi name, as `diff` says, its guard passing."""
    a, b = offline(cluster, before, stack), offline(cluster, after, stack)
    changes = diff(a, b)
    assert guard(changes, a, b, False, []).ok
    k8s = [c for c in changes if c.type.startswith("kubernetes:")]
    return {c.name for c in k8s if c.action == "replace"}, {c.name for c in k8s if c.action == "delete"}


def engine_plan(run) -> tuple[set[str], set[str]]:
    """(replaced, deleted) resources of the declared program (not a chart's rendered children), by Pulumi name, as the
    real engine's preview steps give them."""
    preview = run.cli("preview", "--json")
    assert preview.returncode == 0, preview.output[-4000:]
    steps = json.loads(preview.stdout).get("steps") or []

    def name(step: dict[str, Any]) -> str:
        return step["urn"].rsplit("::", 1)[-1]

    ours = [s for s in steps if "kubernetes:" in s["urn"].rsplit("::", 2)[-2] and "helm.sh/v4:Chart$" not in s["urn"]]
    return ({name(s) for s in ours if s["op"] in REPLACING}, {name(s) for s in ours if s["op"] == "delete"})


class DayTwo:
    def __init__(self, cluster: LocalCluster, stacks, teams: Teams):
        self.cluster, self.stacks, self.teams = cluster, stacks, teams
        self.config = config()

    def change(self, what: str, after: dict[str, Any]) -> None:
        run = self.stacks.current.run
        replaced, deleted = predicted(self.cluster, self.config, after)
        run.set_config(existing_mode(after, self.cluster))
        engine_replaced, engine_deleted = engine_plan(run)
        assert engine_replaced == replaced, (what, "engine", sorted(engine_replaced), "diff", sorted(replaced))
        assert deleted <= engine_deleted, (what, sorted(deleted - engine_deleted))
        up = pulumi_up(self.cluster, run)
        assert up.returncode == 0, (what, up.output[-4000:])
        log(f"day two: {what}: pulumi up in {up.seconds:.0f} s, {len(replaced)} replaced, {len(deleted)} deleted as predicted")
        self.config = after
        self.stacks.current.config = after
        self.stacks.changed()


@pytest.fixture(scope="module")
def day_two(cluster, stacks, tmp_path_factory):
    stacks.use("teams", config())
    teams = Teams(cluster, user_stack_file(cluster, config(), tmp_path_factory.mktemp("day-two"), "teams"))
    yield DayTwo(cluster, stacks, teams)


def _group(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in cfg["pathways:slices"] if g["name"] == name)


def test_ordinary_changes_replace_what_diff_predicts_and_each_up_succeeds(cluster, day_two):
    d = day_two
    # 1. a bigger group, a new team, a workload
    grown = copy.deepcopy(d.config)
    _group(grown, "shared")["count"] = 14
    grown["pathways:teams"].append({"name": "inference", "submitters": [{"name": "inference@example.com"}], "weight": 1})
    # 2 of reserved: the stack's own queue keeps none of it (pretraining owns all 4) and borrows what pretraining lends (2);
    # the whole group would be a workload Kueue never admits, which the plan refuses (#76.1)
    grown["pathways:workloads"] = [{"name": "probe", "mode": "interactive", "sliceGroup": "reserved", "slices": 2}]
    d.change("grow a group, add a team and a workload", grown)
    assert any(n["metadata"]["name"] == "team-inference" for n in cluster.get("namespaces")["items"])
    assert cluster.get("jobsets.jobset.x-k8s.io", "-n", "pathways")["items"]
    # 2. another TPU type for a group: its flavor changes, and the workload on it is replaced (its nodeSelector)
    retyped = copy.deepcopy(grown)
    _group(retyped, "reserved")["tpu"] = "v6e-8"
    d.change("change a group's TPU type", retyped)
    [probe] = cluster.get("jobsets.jobset.x-k8s.io", "-n", "pathways")["items"]
    selector = probe["spec"]["replicatedJobs"][-1]["template"]["spec"]["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/gke-tpu-topology"] == "2x4"


def test_removing_a_team_with_runs_in_flight_deletes_the_runs_first(cluster, day_two):
    d = day_two
    d.teams.submit("evals", "shared", ["evals-a", "evals-b"])
    namespace = next(t.team_namespace for t in d.teams.model.teams if t.name == "evals")
    cluster.wait_for("the evals runs' workloads", lambda: len(cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"]) == 2,
                     timeout=120, interval=1)
    without = copy.deepcopy(d.config)
    without["pathways:teams"] = [t for t in without["pathways:teams"] if t["name"] != "evals"]
    without["pathways:workloads"] = []  # and the workload retired
    t0 = time.monotonic()
    d.change("remove a team whose runs are there, retire a workload", without)
    assert not any(n["metadata"]["name"] == namespace for n in cluster.get("namespaces")["items"])
    assert not [q for q in cluster.get("clusterqueues.kueue.x-k8s.io")["items"] if q["metadata"]["name"] == "team-evals"]
    print(f"team removed with 2 runs in flight in {time.monotonic() - t0:.0f} s")


def test_destroy_with_runs_in_flight_finishes_and_leaves_nothing(cluster, day_two, stacks):
    d = day_two
    d.teams.submit("pretraining", "reserved", ["pre-a"])
    d.teams.submit("posttraining", "shared", ["post-a"])
    t0 = time.monotonic()
    stacks.close()  # pulumi destroy; fails on an error or anything left behind (tools/cluster/deploy.py take_down)
    assert leftovers(cluster) == []
    print(f"pulumi destroy with runs in flight: {time.monotonic() - t0:.0f} s")
