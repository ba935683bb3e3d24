"""The CI workflows a team adopts: schema-valid, keyless, pinned, per-environment identities, tests
before any update, and `pulumi up` applies the plan that was previewed for the commit."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def ci_stacks() -> list[str]:
    """The stacks the workflows preview and deploy: those the pull request's test job hands infra.ci_previews (a team
    lists its own), which picks the ones a pull request previews for real."""
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yml").read_text())
    run = next(st["run"] for st in doc["jobs"]["test"]["steps"] if "infra.ci_previews" in st.get("run", ""))
    return run.split("infra.ci_previews", 1)[1].split(">>", 1)[0].split()


STACKS = ci_stacks()
# Current majors, checked against each action's tags when pinned (README, "CI workflows").
CURRENT = {
    "actions/checkout": "v7", "actions/setup-python": "v7", "google-github-actions/auth": "v3",
    "google-github-actions/setup-gcloud": "v3", "pulumi/actions": "v7", "actions/upload-artifact": "v7",
    "actions/download-artifact": "v8", "actions/setup-go": "v6",
}


def load(name):
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def pulumi_step(job):
    return next(s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@"))


def test_workflows_and_dependabot_pass_their_schemas():
    assert [p.name for p in WORKFLOWS] == ["deploy.yml", "pull-request.yml", "pulumi-stack.yml", "verify.yml"]
    for schema, files in (("vendor.github-workflows", WORKFLOWS), ("vendor.dependabot", [ROOT / ".github" / "dependabot.yml"])):
        proc = subprocess.run(
            [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
            capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_action_is_pinned_by_commit_sha_on_its_current_major():
    seen = set()
    for wf in WORKFLOWS:
        for line in wf.read_text().splitlines():
            m = re.search(r"uses:\s*(\S+)", line)
            if not m or m.group(1).startswith("./"):
                continue
            action, _, ref = m.group(1).partition("@")
            assert re.fullmatch(r"[0-9a-f]{40}", ref), f"{wf.name}: {m.group(1)} is not pinned by commit SHA"
            version = re.search(r"#\s*(v[0-9]+)\.[0-9]+\.[0-9]+", line)
            assert version and version.group(1) == CURRENT[action], f"{wf.name}: {line.strip()}"
            seen.add(action)
    assert seen == set(CURRENT)
    dependabot = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert {u["package-ecosystem"] for u in dependabot["updates"]} == {"github-actions", "pip"}


def test_pull_request_runs_tests_offline_plan_and_previews_with_policies():
    wf = load("pull-request.yml")
    assert "pull_request" in wf["on"]
    test = wf["jobs"]["test"]
    runs = " ".join(s.get("run", "") for s in test["steps"])
    assert "make test" in runs and "python -m infra.offline plan" in runs
    assert "secrets." not in yaml.safe_dump(test)  # works for forks
    diff_step = next(st for st in test["steps"] if "infra.offline diff" in st.get("run", ""))
    assert '--against "origin/$BASE_REF"' in diff_step["run"] and "GITHUB_STEP_SUMMARY" in diff_step["run"]
    assert diff_step["env"] == {"BASE_REF": "${{ github.base_ref }}"}  # never interpolated into the script
    comment = wf["jobs"]["diff-comment"]
    assert comment["permissions"] == {"pull-requests": "write"} and "head.repo.full_name == github.repository" in comment["if"]
    preview = wf["jobs"]["preview"]
    assert preview["needs"] == "test" and preview["uses"] == "./.github/workflows/pulumi-stack.yml"
    assert preview["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.test.outputs.preview-stacks) }}" and "apply" not in preview["with"]
    assert test["outputs"] == {"preview-stacks": "${{ steps.previews.outputs.stacks }}"}
    assert "needs.test.outputs.preview-stacks != '[]'" in preview["if"]  # GitHub refuses an empty matrix
    assert "secrets" not in preview  # no repository secret is handed down; environments hold them


def test_deploy_runs_tests_then_each_stack_in_order():
    wf = load("deploy.yml")
    assert wf["on"]["push"]["branches"] == ["main"] and wf["concurrency"]["cancel-in-progress"] is False
    jobs = wf["jobs"]
    # one stack after another, in the preview matrix's order: test, then the first stack, then the next
    assert [jobs[s]["needs"] for s in STACKS] == ["test", *STACKS[:-1]]
    assert {n for n, j in jobs.items() if j.get("uses") == "./.github/workflows/pulumi-stack.yml"} == set(STACKS)
    assert "make test" in " ".join(s.get("run", "") for s in jobs["test"]["steps"])
    for s in STACKS:
        assert jobs[s]["uses"] == "./.github/workflows/pulumi-stack.yml" and jobs[s]["with"] == {"stack": s, "apply": True}


def test_identities_only_inside_their_stacks_environment():
    wf = load("pulumi-stack.yml")
    jobs = wf["jobs"]
    # every job that can mint a cloud token runs in an environment named after its stack
    for name, job in jobs.items():
        if job.get("permissions", {}).get("id-token") == "write":
            assert job["environment"] in (PREVIEW_ENVIRONMENT, "${{ inputs.stack }}"), name
            auth = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("google-github-actions/auth@"))
            # the service account comes from the environment's own vars, never a repo-wide name
            assert auth["with"]["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}"
            assert "credentials_json" not in auth["with"]
    assert wf["permissions"] == {"contents": "read"}
    for other in ("deploy.yml", "pull-request.yml"):
        for name, job in load(other)["jobs"].items():
            if "steps" in job:  # only reusable-workflow calls get cloud identities
                assert job.get("permissions", {}).get("id-token") != "write", (other, name)
                assert "google-github-actions/auth" not in yaml.safe_dump(job), (other, name)


def test_the_daily_verify_is_read_only_in_each_stacks_preview_environment():
    wf = load("verify.yml")
    assert set(wf["on"]) == {"schedule", "workflow_dispatch"} and wf["permissions"] == {"contents": "read"}
    (job,) = wf["jobs"].values()
    assert job["strategy"]["matrix"]["stack"] == STACKS  # the stacks CI previews and deploys
    assert job["environment"] == "${{ format('{0}-preview', matrix.stack) }}"  # the preview identity, main only
    auth = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("google-github-actions/auth@"))
    assert auth["with"]["service_account"] == "${{ vars.GCP_SERVICE_ACCOUNT }}"
    run = "\n".join(s.get("run", "") for s in job["steps"])
    # Pulumi's refresh preview only: no up, no refresh that writes, no apply
    assert "infra.offline verify --stack \"$STACK\" --live" in run
    assert not re.search(r"pulumi (up|refresh|destroy|import)\b", run)
    cli = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@"))
    assert "command" not in cli["with"] and cli["with"]["pulumi-version"] == "${{ env.PULUMI_VERSION }}"
    assert wf["env"]["PULUMI_VERSION"] == load("pulumi-stack.yml")["env"]["PULUMI_VERSION"]


def test_the_daily_verify_keeps_drift_off_public_pages_and_edits_only_its_own_issue(tmp_path: Path):
    """#73.10: a public repository's logs, step summaries and issues are public, so the report stays on the runner
    there; and the tracking issue is found by the bot's authorship and label, never by a title anyone can type."""
    from infra.verify.findings import Finding, text

    (job,) = load("verify.yml")["jobs"].values()
    verify = next(s for s in job["steps"] if s.get("name", "").startswith("Verify the live stack"))
    script = verify["run"]
    branch = re.search(r"^else$(.*?)^fi$", script, re.S | re.M)
    assert branch, script
    public_branch = branch[1]
    assert 'gh repo view "$GH_REPO" --json visibility' in script
    assert '[ "$visibility" = PRIVATE ] || [ "$visibility" = INTERNAL ]' in script
    assert "withheld" in public_branch and "| tee report.txt" in public_branch  # the issue body gets the counts too
    # run the public branch on a report: what reaches the log and the issue is the counts, no subject, no change
    (tmp_path / "report.txt").write_text(text([Finding("high", "drift", "gcp:container:NodePool tpu", "old -> new by x", "f"),
                                               Finding("low", "audit", "kubernetes:Role r", "w", "f")], "prod", ["drift"]))
    printed = subprocess.run(["bash", "-ec", public_branch], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert printed.startswith("findings: 1 high 0 medium 1 low 0 info ") and "NodePool" not in printed
    assert (tmp_path / "report.txt").read_text() == printed
    assert "GITHUB_STEP_SUMMARY" not in public_branch and "cat report.txt" not in public_branch
    issue = next(s for s in job["steps"] if "gh issue" in s.get("run", ""))["run"]
    listing = next(line for line in issue.splitlines() if "gh issue list" in line)
    assert "--app github-actions" in listing and "--label pathways-verify" in listing and "--search" not in listing
    assert "gh issue create --title \"$title\" --label pathways-verify" in issue
    assert job["permissions"]["issues"] == "write" and "contents" in job["permissions"]  # label create needs issues


# A pull request previews in `<stack>-pull-request`, the preview before a deploy runs in `<stack>-preview`
# (bootstrap/program.py environments(); the pool's condition accepts the latter, and the deploy environment, from
# refs/heads/main only).
PREVIEW_ENVIRONMENT = ("${{ github.event_name == 'pull_request' && format('{0}-pull-request', inputs.stack) || "
                       "format('{0}-preview', inputs.stack) }}")


def test_finding_2_pull_requests_preview_in_their_own_environment_and_never_deploy():
    from bootstrap import program as bootstrap

    jobs = load("pulumi-stack.yml")["jobs"]
    assert jobs["preview"]["environment"] == PREVIEW_ENVIRONMENT
    assert bootstrap.environments("prod", "preview") == ("prod-preview", "prod-pull-request")
    assert bootstrap.environments("prod", "deploy") == ("prod",)
    # `up` runs on main's pushes only; a branch that edits this still gets no deploy token (the pool's condition)
    assert jobs["up"]["if"] == "inputs.apply && github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert load("deploy.yml")["on"] == {"push": {"branches": ["main"]}}
    assert all("apply" not in job.get("with", {}) for job in load("pull-request.yml")["jobs"].values())


def test_finding_6_a_stacks_first_preview_needs_no_state_write():
    jobs = load("pulumi-stack.yml")["jobs"]
    steps = jobs["preview"]["steps"]
    state = next(s for s in steps if s.get("id") == "state")
    assert state["run"] == '.venv/bin/python -m infra.ci_state "$BACKEND" "$STACK" >> "$GITHUB_OUTPUT"'
    assert state["env"] == {"BACKEND": "${{ vars.PULUMI_BACKEND_URL }}", "STACK": "${{ inputs.stack }}"}  # never interpolated
    preview = pulumi_step(jobs["preview"])["with"]
    assert preview["cloud-url"] == "${{ steps.state.outputs.url }}"  # an empty throwaway backend until the stack exists
    assert preview["upsert"] == "${{ steps.state.outputs.exists != 'true' }}"
    assert steps.index(state) < steps.index(pulumi_step(jobs["preview"]))
    up = pulumi_step(jobs["up"])["with"]
    assert up["upsert"] is True and up["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"  # the deploy creates the stack
    assert preview["secrets-provider"] == up["secrets-provider"] == "${{ steps.state.outputs.secrets-provider }}"


def test_up_applies_the_previewed_plan_with_a_pinned_cli():
    jobs = load("pulumi-stack.yml")["jobs"]
    preview, up = pulumi_step(jobs["preview"])["with"], pulumi_step(jobs["up"])["with"]
    assert preview["command"] == "preview" and up["command"] == "up"
    assert preview["plan"] == up["plan"] == "plan-${{ inputs.stack }}.json"
    assert jobs["up"]["needs"] == "preview" and jobs["up"]["if"].startswith("inputs.apply && ")
    assert "refresh" not in up  # a refresh would re-create finished or hand-deleted JobSets
    assert preview["policyPacks"] == up["policyPacks"] == "policies"
    assert preview["pulumi-version"] == up["pulumi-version"] == "${{ env.PULUMI_VERSION }}"
    # the workflows run the CLI the real-engine tier builds and tests, no older than the SDK in the lock
    cli = load("pulumi-stack.yml")["env"]["PULUMI_VERSION"]
    tested = re.search(r"github.com/pulumi/pulumi/pkg/v3 v(\S+)", (ROOT / "tools/engines/pulumi/go.mod").read_text())
    sdk = re.search(r"^pulumi==(\S+) ", (ROOT / "requirements.lock").read_text(), re.M)
    assert tested and sdk and cli == tested.group(1)
    assert tuple(map(int, cli.split("."))) >= tuple(map(int, sdk.group(1).split(".")))


@pytest.mark.every_stack
def test_secrets_providers_per_stack():
    # a protected stack keeps its secrets under a Cloud KMS key of its own project (the bootstrap makes the key the
    # URL names); others may use a passphrase
    for stack in STACKS:
        doc = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())
        provider = doc.get("secretsprovider", "passphrase")
        config = doc["config"]
        if config.get("pathways:protected"):
            assert provider.startswith(f"gcpkms://projects/{config['gcp:project']}/"), (stack, provider)
        else:
            assert provider == "passphrase" or provider.startswith(f"gcpkms://projects/{config['gcp:project']}/"), (stack, provider)


def test_make_test_gets_its_crds_without_shared_reference_data():
    # GitHub Actions has no ../shared: the workflows set up Go, and make test fetches the upstream CRDs from
    # the pinned modules (make crds). Nothing a user runs reads ../shared.
    for name in ("pull-request.yml", "deploy.yml"):
        steps = load(name)["jobs"]["test"]["steps"]
        uses = [s.get("uses", "").split("@")[0] for s in steps]
        runs = [s.get("run", "") for s in steps]
        assert uses.index("actions/setup-go") < next(i for i, r in enumerate(runs) if "make test" in r), name
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\$\(CRDS\)", makefile, re.M) and "tools/engines/crds.py" in makefile
    for path in [*WORKFLOWS, ROOT / "Makefile", *(ROOT / "tests").glob("*.py")]:
        if path.name != "test_workflows.py":
            assert "../shared" not in path.read_text(), path


@pytest.mark.every_stack
def test_the_offline_plan_and_diff_cover_every_stack_file():
    # the loops run over stacks/Pulumi.*.yaml, so a new stack file (a team's own) is planned and diffed too
    wf = load("pull-request.yml")
    steps = {st.get("name", ""): st.get("run", "") for st in wf["jobs"]["test"]["steps"]}
    loop = next(run for name, run in steps.items() if name.startswith("Offline plan"))
    script = loop.replace(".venv/bin/python -m infra.offline plan --stack", "echo")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    from infra.offline.stackfile import stack_names

    assert sorted(out) == sorted(stack_names()) and out


@pytest.mark.every_stack
def test_security_58_15_a_pull_request_previews_for_real_only_stacks_neither_protected_nor_fleet_managers(capsys):
    """Derived from each listed stack's own file: a protected stack's or a fleet manager's preview identity decrypts
    secrets a pull request must not reach, so the pull request's matrix leaves it out and says why."""
    from infra import ci_previews

    assert ci_previews.main(STACKS) == 0
    out, err = capsys.readouterr()
    chosen = json.loads(out.strip().removeprefix("stacks="))
    for stack in STACKS:
        config = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
        excluded = config.get("pathways:protected") is True or (config.get("pathways:fleet") or {}).get("role") == "manager"
        assert (stack in chosen) is not excluded, (stack, chosen)
        assert (f"{stack}: no pull-request preview" in err) is excluded, err


def test_security_58_15_a_protected_or_manager_stack_file_is_left_out(tmp_path, capsys):
    from infra import ci_previews

    (tmp_path / "Pulumi.a.yaml").write_text("config:\n  pathways:protected: true\n")
    (tmp_path / "Pulumi.b.yaml").write_text("config:\n  pathways:fleet: {role: manager, workers: []}\n")
    (tmp_path / "Pulumi.c.yaml").write_text("config:\n  pathways:protected: false\n")
    assert ci_previews.main(["a", "b", "c"], stacks_dir=tmp_path) == 0
    out, err = capsys.readouterr()
    assert out == 'stacks=["c"]\n'
    assert "a: no pull-request preview (protected: its preview identity decrypts its secrets" in err
    assert "b: no pull-request preview (a fleet manager: its preview identity reads its workers' state and tokens" in err



def test_protection_is_read_as_the_model_reads_it(tmp_path, capsys):
    # #75.8: a quoted "true" (or yes, on, 1) is protected to the program's model, so no pull-request preview either
    from components.model.config import load
    from infra import ci_previews

    for i, value in enumerate(['"true"', "yes", '"on"', "1", '"maybe"']):
        (tmp_path / f"Pulumi.s{i}.yaml").write_text(f"config:\n  pathways:protected: {value}\n")
    (tmp_path / "Pulumi.off.yaml").write_text('config:\n  pathways:protected: "false"\n')
    assert ci_previews.main([*(f"s{i}" for i in range(5)), "off"], stacks_dir=tmp_path) == 0
    assert capsys.readouterr().out == 'stacks=["off"]\n'
    base = {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b", "slices": [{"name": "m", "tpu": "v6e-4"}]}
    assert load({**base, "protected": "true"}, "t").protected is True and load({**base, "protected": "false"}, "t").protected is False


def test_security_73_18_the_pools_condition_names_the_workflows_and_events_that_authenticate():
    # bootstrap/program.py pool_condition pins job_workflow_ref and event_name: every workflow that asks Google for a
    # token is one it names, and main's runs of them come on the events it names
    from bootstrap.program import MAIN_EVENTS, MAIN_WORKFLOWS, PREVIEW_WORKFLOW

    authenticating = {p.name for p in WORKFLOWS if "google-github-actions/auth@" in p.read_text()}
    assert authenticating == set(MAIN_WORKFLOWS)
    callers = {p.name: load(p.name) for p in WORKFLOWS if f"./.github/workflows/{PREVIEW_WORKFLOW}" in p.read_text()}
    for name, wf in {**callers, "verify.yml": load("verify.yml")}.items():
        events = set(wf["on"] or {})
        assert events <= {*MAIN_EVENTS, "pull_request"}, (name, events)


def test_security_73_20_no_package_is_installed_after_a_cloud_credential_exists_and_gcloud_is_pinned():
    """#73.20: pip runs every package's build code; before google-github-actions/auth writes the credential file, none
    of it can read the token. And the gcloud CLI (and its GKE auth plugin) is a pinned version, never `latest`."""
    for name in ("pulumi-stack.yml", "verify.yml"):
        wf = load(name)
        assert re.fullmatch(r"\d+\.\d+\.\d+", str(wf["env"]["GCLOUD_VERSION"])), name
        for job_name, job in wf["jobs"].items():
            steps = job.get("steps", [])
            auth = [i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("google-github-actions/auth@")]
            if not auth:
                continue
            installs = [i for i, s in enumerate(steps) if "pip install" in s.get("run", "")]
            assert installs and max(installs) < auth[0], (name, job_name)
            gcloud = next(s for s in steps if str(s.get("uses", "")).startswith("google-github-actions/setup-gcloud@"))
            assert gcloud["with"]["version"] == "${{ env.GCLOUD_VERSION }}", (name, job_name)
