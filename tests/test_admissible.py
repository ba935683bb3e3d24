"""Admissible by construction (#76.1): a workload, run or serve endpoint that asks more of a group than its Kueue
ClusterQueue can ever hold (nominal quota plus what the cohort lends, within the borrowing limit) is refused in one
line; one at the ceiling passes. The ceilings come from the quota model the ClusterQueues are rendered from, and the
check is held to the rendered ClusterQueues themselves (tests_e2e/test_teams.py holds it to the real Kueue)."""

from __future__ import annotations

import pytest

from components.manifests import kueue as kueue_manifest
from components.model.capacity import queue_shares
from components.model.config import ConfigError, load_run, resolve
from components.model.resolved import QUEUE
from tests.test_teams import SLICES, TEAMS, model, refused

# a owns all 4 of reserved and lends 2; b owns 2 of shared and borrows at most 3; c owns nothing (parent research)
# shared: 12, the stack keeps 10; reserved: 4, the stack keeps 0


def _workload(name="w", group="shared", slices=1, team=None, **more):
    w = {"name": name, "sliceGroup": group, "slices": slices, "mode": "batch", "image": "us-docker.pkg.dev/p/r/i:1",
         "command": ["python3", "train.py"], **more}
    return {**w, "team": team} if team else w


def _ceilings(stack) -> dict[tuple[str, str], int]:
    """(queue, group) -> slices, derived from the rendered ClusterQueues and Cohorts alone, as Kueue reads them."""
    one = {kueue_manifest.flavor_name(g): kueue_manifest.slice_quota(g)["google.com/tpu"] for g in stack.slices}
    objs = kueue_manifest.objects(stack)
    parent = {o["metadata"]["name"]: o["spec"].get("parentName") for o in objs if o["kind"] == "Cohort"}

    def root(c):
        while parent.get(c):
            c = parent[c]
        return c
    queues = {}
    for o in objs:
        if o["kind"] != "ClusterQueue":
            continue
        flavors = {}
        for f in o["spec"]["resourceGroups"][0]["flavors"]:
            if f["name"] not in one:
                continue
            (tpu,) = [r for r in f["resources"] if r["name"] == "google.com/tpu"]
            flavors[f["name"]] = tuple(None if k not in tpu else int(tpu[k]) // one[f["name"]]
                                       for k in ("nominalQuota", "borrowingLimit", "lendingLimit"))
        queues[o["metadata"]["name"]] = (o["spec"].get("cohortName"), flavors)
    out = {}
    for name, (cohort, flavors) in queues.items():
        for flavor, (nominal, borrow, _) in flavors.items():
            lent = sum((fl[flavor][2] if fl[flavor][2] is not None else fl[flavor][0])
                       for other, (c, fl) in queues.items()
                       if other != name and c and cohort and root(c) == root(cohort) and flavor in fl)
            out[(name, flavor)] = nominal + (lent if borrow is None else min(borrow, lent))
    return out


def test_the_ceilings_are_what_the_rendered_cluster_queues_give_kueue():
    stack = resolve(model())
    shares = kueue_manifest.slice_shares(stack)
    root_of = {t.cohort: QUEUE for t in stack.teams if t.cohort}
    by_model = {(q, kueue_manifest.flavor_name(g)): queue_shares.ceiling(list(shares.values()), q, g.name, root_of).slices
                for q in shares for g in stack.slices}
    assert by_model == _ceilings(stack)
    # the figures themselves: b owns 2 of shared and borrows at most 3; c owns none and borrows all the others lend
    assert by_model[("team-b", "tpu-shared")] == 5
    assert by_model[("team-c", "tpu-shared")] == 12
    assert by_model[("team-c", "tpu-reserved")] == 2  # a lends 2 of its 4
    assert by_model[("pathways", "tpu-reserved")] == 2


@pytest.mark.parametrize(("workload", "key", "words"), [
    (_workload(team="b", slices=6), "workloads[0].slices",
     "workload w needs 6 slices of shared, but team b's ClusterQueue team-b can hold at most 5 even with nothing else "
     "running (owns 2 of shared, may borrow at most 3, and the cohort lends at most 10): Kueue would never admit it; "
     "ask for at most 5, or raise teams[1].slices.shared (slices or borrow) or the other teams' lend"),
    (_workload(team="c", group="reserved", slices=3), "workloads[0].slices",
     "team c's ClusterQueue team-c can hold at most 2"),
    (_workload(group="reserved", slices=3), "workloads[0].slices",
     "the stack's ClusterQueue pathways can hold at most 2 even with nothing else running (keeps 0 of reserved (4 less "
     "the teams' shares) and the cohort lends at most 2)"),
])
def test_a_workload_over_its_queues_ceiling_is_refused_in_one_line(workload, key, words):
    (problem,) = refused(workloads=[workload])
    assert problem.startswith(f"pathways:{key}: ") and words in problem


def test_at_the_ceiling_it_plans():
    model(workloads=[_workload(team="b", slices=5)])
    model(workloads=[_workload(team="c", group="reserved", slices=2)])
    model(workloads=[_workload(slices=12)])  # the stack's queue keeps 10 of shared and b lends its 2


def test_a_serve_endpoint_is_judged_at_its_autoscalers_maximum():
    serve = {"name": "chat", "mode": "serve", "sliceGroup": "reserved", "team": "c",
             "serve": {"model": "meta-llama/Llama-3.1-8B", "autoscale": {"minReplicas": 1, "maxReplicas": 3, "metric": "queue", "target": 4}}}
    (problem,) = refused(workloads=[serve], pathwaysVersion="jax-0.11.2")  # the vLLM engine's Pathways
    assert problem.startswith("pathways:workloads[0].serve.autoscale.maxReplicas: ")
    assert "needs 3 slices of reserved (3 replicas x 1)" in problem and "ask for at most 2" in problem
    serve["serve"]["autoscale"]["maxReplicas"] = 2
    model(workloads=[serve], pathwaysVersion="jax-0.11.2")


def test_a_run_over_its_teams_ceiling_is_refused_before_it_is_submitted():
    cfg = model()
    with pytest.raises(ConfigError) as e:
        load_run(cfg, _workload(team="b", slices=7))
    assert "can hold at most 5" in str(e.value)


def test_without_teams_a_workload_fits_its_group_as_before():
    model(teams=[], runs={}, workloads=[_workload(slices=12)])
    assert SLICES[0]["count"] == 12 and TEAMS[1]["slices"]["shared"]["borrow"] == 3
