"""Security #58.5: the bootstrap grants a stack's workloads and runs roles on the buckets they mount; on a bucket the
stack does not make, only what the bootstrap's own config allows (pathways-bootstrap:externalBuckets), checked by
the program (offline and under `pulumi up`) and again by the bootstrap; the runs' account is named after the stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bootstrap import main_stack
from bootstrap import program as bootstrap
from components.model.errors import ConfigError
from infra.offline import engine, stackfile
from tests.conftest import config_with

PROJECT = "team-proj-123"
WORKLOADS = [{"name": "train", "image": "example.com/t:1",
              "mounts": [{"path": "/data", "bucket": "other-proj-datasets"},
                         {"path": "/ckpt", "bucket": "prod-proj-checkpoints", "readOnly": False}]}]


def _stack_config(**changes) -> dict:
    return {**config_with(pathwaysVersion="jax-0.9.0", workloads=WORKLOADS, **changes), "gcp:project": PROJECT}


def _bootstrap_config(stacks: list[str], external=None) -> dict:
    config = {"gcp:project": PROJECT, "pathways-bootstrap:repository": "example-org/pathways-gke",
              "pathways-bootstrap:repositoryId": "812345678", "pathways-bootstrap:repositoryOwnerId": "91234567",
              "pathways-bootstrap:projectNumber": "123456789012", "pathways-bootstrap:stacks": stacks}
    if external is not None:
        config["pathways-bootstrap:externalBuckets"] = external
    return config


def _repo(tmp_path, stack_config: dict, external=None, stack: str = "team"):
    (tmp_path / "stacks").mkdir(exist_ok=True)
    (tmp_path / "bootstrap").mkdir(exist_ok=True)
    (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": stack_config}))
    (tmp_path / "bootstrap" / f"Pulumi.{PROJECT}.yaml").write_text(yaml.safe_dump({"config": _bootstrap_config([stack], external)}))
    return tmp_path


def _plan(root, stack: str = "team"):
    flat, secrets = stackfile.load_config(root / "stacks" / f"Pulumi.{stack}.yaml")
    return engine.run(flat, stack, secrets, stacks_dir=root / "stacks")


def _refusal(root, stack: str = "team") -> list[str]:
    with pytest.raises(Exception) as e:
        _plan(root, stack)
    return str(e.value).splitlines()


def test_a_bucket_the_stack_does_not_make_is_refused_unless_the_projects_bootstrap_allows_it(tmp_path):
    lines = _refusal(_repo(tmp_path, _stack_config()))
    assert lines == [
        "pathways:workloads[0].mounts[0].bucket: 'other-proj-datasets' is not a bucket this stack makes, and "
        f"bootstrap/Pulumi.{PROJECT}.yaml does not list it for stack team; the bootstrap would grant read on it: add it "
        "under pathways-bootstrap:externalBuckets.team (other-proj-datasets: read) there if this project's workloads may read it",
        "pathways:workloads[0].mounts[1].bucket: 'prod-proj-checkpoints' is not a bucket this stack makes, and "
        f"bootstrap/Pulumi.{PROJECT}.yaml does not list it for stack team; the bootstrap would grant write on it: add it "
        "under pathways-bootstrap:externalBuckets.team (prod-proj-checkpoints: write) there if this project's workloads may write it"]


def test_a_read_allowance_does_not_cover_a_write_mount_and_runs_buckets_are_judged_too(tmp_path):
    root = _repo(tmp_path, _stack_config(runs={"buckets": [{"name": "shared-scratch", "readOnly": False}]}),
                 {"team": {"other-proj-datasets": "read", "prod-proj-checkpoints": "read"}})
    lines = _refusal(root)
    assert lines[0].startswith("pathways:workloads[0].mounts[1].bucket: 'prod-proj-checkpoints' is mounted read-write, but "
                               f"bootstrap/Pulumi.{PROJECT}.yaml allows stack team only read on it")
    assert lines[1].startswith("pathways:runs.buckets[0].name: 'shared-scratch' is not a bucket this stack makes")
    assert len(lines) == 2


def test_allowed_grants_plan_and_the_plan_lists_every_grant_on_a_bucket_the_stack_does_not_make(tmp_path):
    from components.model.cost.summary import notices

    root = _repo(tmp_path, _stack_config(), {"team": {"other-proj-datasets": "read", "prod-proj-checkpoints": "write"}})
    plan = _plan(root)
    assert plan.resources
    from components.model.config import load, resolve

    cfg = _stack_config()
    stack = resolve(load({**{k.split(":", 1)[1]: v for k, v in cfg.items() if k.startswith("pathways:")},
                          "project": PROJECT, "region": "us-east5", "zone": "us-east5-b"}, "team"))
    (line,) = [n for n in notices(stack) if n.startswith("bucket grants on buckets the stack does not make")]
    assert "other-proj-datasets storage.objectViewer to pathways/train-storage" in line
    assert "prod-proj-checkpoints storage.objectUser to pathways/train-storage" in line


def test_the_stacks_own_buckets_need_no_allowance(tmp_path):
    own = [{"name": "train", "image": "example.com/t:1", "mounts": [{"path": "/s", "bucket": f"{PROJECT}-team-pathways", "readOnly": False}]}]
    root = _repo(tmp_path, {**_stack_config(), "pathways:workloads": own})
    assert _plan(root).resources


def test_without_a_bootstrap_config_for_the_project_nothing_is_refused_but_the_plan_says_so(tmp_path):
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.team.yaml").write_text(yaml.safe_dump({"config": _stack_config()}))
    assert _plan(tmp_path).resources


def test_the_bootstrap_refuses_what_its_config_does_not_allow_and_lists_what_it_does(tmp_path, monkeypatch):
    root = _repo(tmp_path, _stack_config())
    monkeypatch.setattr(main_stack, "STACKS_DIR", root / "stacks")
    flat = {k: (json.dumps(v) if not isinstance(v, str) else v) for k, v in _bootstrap_config(["team"]).items()}
    with pytest.raises(ConfigError) as e:
        bootstrap.read_config(flat)
    assert [p.key for p in e.value.problems] == ["pathways:workloads[0].mounts[0].bucket", "pathways:workloads[0].mounts[1].bucket"]
    assert "this bootstrap (pathways-bootstrap:externalBuckets)" in str(e.value)
    allowed = {**flat, "pathways-bootstrap:externalBuckets": json.dumps({"team": {"other-proj-datasets": "read", "prod-proj-checkpoints": "write"}})}
    plan = engine.run(allowed, "b", program_dir=Path(bootstrap.__file__).parent)
    assert plan.outputs["externalBucketGrants"] == {"team": [
        "other-proj-datasets storage.objectViewer -> pathways/train-storage", "prod-proj-checkpoints storage.objectUser -> pathways/train-storage"]}
    bad = {**flat, "pathways-bootstrap:externalBuckets": json.dumps({"qa": {"x-bucket": "read"}, "team": {"other-proj-datasets": "admin"}})}
    with pytest.raises(ConfigError) as e:
        bootstrap.read_config(bad)
    text = str(e.value)
    assert "pathways-bootstrap:externalBuckets.qa: not a stack this bootstrap sets up (team)" in text
    assert "pathways-bootstrap:externalBuckets.team.other-proj-datasets: 'admin'; give read or write" in text


def test_two_stacks_of_one_project_never_share_a_bucket_principal(tmp_path, monkeypatch):
    root = _repo(tmp_path, _stack_config(runs={"buckets": [{"name": "other-proj-datasets"}]}), stack="a")
    (root / "stacks" / "Pulumi.b.yaml").write_text(yaml.safe_dump({"config": {
        **_stack_config(runs={"buckets": [{"name": "other-proj-datasets"}]}), "pathways:cluster": {"name": "second"}}}))
    monkeypatch.setattr(main_stack, "STACKS_DIR", root / "stacks")
    allow = {"other-proj-datasets": "read", "prod-proj-checkpoints": "write"}
    flat = {k: (json.dumps(v) if not isinstance(v, str) else v) for k, v in
            _bootstrap_config(["a", "b"], {"a": allow, "b": allow}).items()}
    with pytest.raises(ConfigError) as e:
        bootstrap.read_config(flat)
    # the runs' accounts are the stacks' own (pathways-runs-a, pathways-runs-b); the workloads' train-storage is shared
    assert [p.message.split(":")[0] for p in e.value.problems] == [
        "stacks 'a' and 'b' both grant buckets to Kubernetes service account pathways/train-storage, one principal in this project's Workload Identity pool"]
