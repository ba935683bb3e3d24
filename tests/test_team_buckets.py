"""#74.1: a team's runs read the team's data: teams[].buckets are granted to the runs' account in the team's
namespace only (another Workload Identity principal than the stack's or another team's), the team's runs policy lets
its runs run as that account, and the plan says who reads what."""

from __future__ import annotations

import pytest

from components.manifests import runs as runs_manifest
from components.manifests import storage as storage_manifest
from components.manifests import teams as teams_manifest
from components.model.config import ConfigError, as_run, load_run, resolve
from components.model.cost.teams_summary import teams_summary
from tests.test_runs import _policy_admits
from tests.test_storage import SHARED
from tests.test_teams import TEAMS, model

IMAGE = "busybox@sha256:" + "b" * 64
DATA = [{"name": "team-a-data"}, {"name": "team-a-ckpt", "readOnly": False}]


def _with_buckets(**runs):
    return model(teams=[{**TEAMS[0], "buckets": DATA}, TEAMS[1], TEAMS[2]], **({"runs": runs} if runs else {}))


def _run(cfg, team: str, mounts: list[dict]):
    return load_run(cfg, {"name": "exp", "team": team, "sliceGroup": "reserved" if team == "a" else "shared", "image": IMAGE,
                          "mounts": mounts})


def test_the_grants_go_to_the_runs_account_in_the_teams_namespace_only():
    stack = resolve(_with_buckets())
    a = next(t for t in stack.teams if t.name == "a")
    grants = [g for g in stack.bucket_grants if g[0].startswith("team-a-")]
    assert grants == [("team-a-data", "roles/storage.objectViewer", a.team_namespace, stack.run_service_account),
                      ("team-a-ckpt", "roles/storage.objectUser", a.team_namespace, stack.run_service_account)]
    # the account exists there (no token mounted), and only there among the teams
    accounts = [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in storage_manifest.service_accounts(stack)]
    assert (a.team_namespace, stack.run_service_account) in accounts
    assert not [ns for ns, _ in accounts if ns in {t.team_namespace for t in stack.teams if t.name != "a"}]


def test_a_teams_run_mounts_its_teams_buckets_and_no_other():
    cfg = _with_buckets()
    ok = resolve(_run(cfg, "a", [{"bucket": "team-a-data", "path": "/data"}, {"bucket": "team-a-ckpt", "path": "/ckpt", "readOnly": False}]))
    run = as_run(ok, ok.workloads[-1])
    assert run.service_account == ok.run_service_account and run.namespace == "team-a"
    with pytest.raises(ConfigError) as e:
        _run(cfg, "b", [{"bucket": "team-a-data", "path": "/data"}])  # another team's
    assert "'team-a-data' is not in pathways:teams[1].buckets (listed: none)" in str(e.value)
    with pytest.raises(ConfigError) as e:
        _run(cfg, "a", [{"bucket": "team-a-data", "path": "/data", "readOnly": False}])  # read-only for the team
    assert "false, but pathways:teams[0].buckets grants 'team-a-data' read-only" in str(e.value)
    with pytest.raises(ConfigError) as e:  # a file system's claim is in the stack's namespace
        _run(model(teams=TEAMS, storage={"fileSystems": [SHARED]}, runs={"submitters": [], "fileSystems": [{"name": "shared"}]}),
             "a", [{"fileSystem": "shared", "path": "/fs"}])
    assert "team a's runs mount no file system" in str(e.value)


def test_the_teams_runs_policy_lets_its_runs_run_as_that_account_and_the_others_not():
    stack = resolve(_with_buckets())
    resolved = resolve(_run(_with_buckets(), "a", [{"bucket": "team-a-data", "path": "/data"}]))
    jobset = runs_manifest.run_jobset(resolved, as_run(resolved, resolved.workloads[-1]), "al@example.com")
    policies = {o["metadata"]["name"]: o for o in teams_manifest.access(stack) if o["kind"] == "ValidatingAdmissionPolicy"}
    assert _policy_admits(policies["pathways-runs-only-a"], "al@example.com", [], "CREATE", jobset, None)
    # team b has no buckets: its runs run as the namespace's default account only
    elsewhere = {**jobset, "metadata": {**jobset["metadata"], "namespace": "team-b",
                                        "labels": {**jobset["metadata"]["labels"], "kueue.x-k8s.io/queue-name": "runs-team-b"}}}
    assert not _policy_admits(policies["pathways-runs-only-b"], "bo@example.com", [], "CREATE", elsewhere, None)


def test_the_plan_says_who_reads_what():
    summary = teams_summary(resolve(_with_buckets()))
    assert summary is not None
    assert summary["teams"][0]["buckets"] == [{"name": "team-a-data", "readOnly": True}, {"name": "team-a-ckpt", "readOnly": False}]
    from components.model.cost.teams_summary import teams_text

    lines = teams_text(summary, lambda rows: ["|".join(r) for r in rows], lambda v: f"${v}")
    assert "  a's runs mount: gs://team-a-data (read), gs://team-a-ckpt (read-write); no other team's runs can" in lines


def test_a_bucket_listed_twice_for_a_team_is_refused():
    with pytest.raises(ConfigError) as e:
        model(teams=[{**TEAMS[0], "buckets": [{"name": "x-bkt"}, {"name": "x-bkt"}]}])
    assert "pathways:teams[0].buckets: bucket 'x-bkt' is listed twice; list each once" in str(e.value)
