"""The CI workflows a team adopts: schema-valid, keyless, previews with the policy pack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def load(name):
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps(job):
    return job["steps"]


def pulumi_step(job):
    return next(s for s in steps(job) if str(s.get("uses", "")).startswith("pulumi/actions@"))


def test_workflows_pass_the_github_workflow_schema():
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "pull-request.yml"]
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pull_request_runs_tests_offline_plan_and_previews_with_policies():
    wf = load("pull-request.yml")
    assert "pull_request" in wf["on"]
    test = wf["jobs"]["test"]
    runs = " ".join(s.get("run", "") for s in steps(test))
    assert "make test" in runs and "python -m infra.offline plan" in runs
    assert not any("secrets." in str(s) for s in steps(test))  # works for forks
    preview = wf["jobs"]["preview"]
    assert preview["permissions"]["id-token"] == "write"
    assert preview["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod"]
    p = pulumi_step(preview)["with"]
    assert (p["command"], p["policyPacks"], p["comment-on-pr"], p["edit-pr-comment"]) == ("preview", "policies", True, True)


def test_deploy_is_per_environment_with_wif_and_no_keys():
    wf = load("deploy.yml")
    assert wf["on"]["push"]["branches"] == ["main"]
    up = wf["jobs"]["up"]
    assert up["environment"] == "${{ matrix.stack }}" and up["strategy"]["max-parallel"] == 1
    assert pulumi_step(up)["with"]["command"] == "up"
    for name in ("deploy.yml", "pull-request.yml"):
        text = (ROOT / ".github" / "workflows" / name).read_text()
        assert "credentials_json" not in text  # Workload Identity Federation only
        assert "workload_identity_provider" in text
