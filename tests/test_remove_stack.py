"""`remove-stack` and `new-stack --wire-workflows` do what docs/adopting.md's checklist says (#75.1): the stack file,
its policy config, its bootstrap entry and its three workflow entries go or come, the deploy chain stays one chain,
the workflows' comments stay, and a fleet worker is not removed from under its manager. The whole path, and
`make test`'s checks after it, run in tests/test_own_stacks.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from infra.offline import workflows
from infra.offline.__main__ import main as offline_main
from tests.conftest import EXAMPLE_STACKS, ROOT


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for folder in ("stacks", "bootstrap", ".github/workflows", "policies"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.py", "README.md"))
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_remove_stack_takes_out_the_file_bootstrap_policy_config_and_workflow_entries(tmp_path, capsys):
    root = _root(tmp_path)
    victim = workflows.read(root).deploys[1]  # a stack in the middle of the deploy chain (staging in the examples)
    before = workflows.read(root)
    (root / "policies" / f"config.{victim}.json").write_text("{}")
    assert offline_main(["remove-stack", victim, "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert not (root / "stacks" / f"Pulumi.{victim}.yaml").exists() and not (root / "policies" / f"config.{victim}.json").exists()
    assert f"deleted stacks/Pulumi.{victim}.yaml" in out and f"took {victim} out of .github/workflows/deploy.yml" in out
    assert f"delete the GitHub environments {victim}, {victim}-preview and {victim}-pull-request" in out
    after = workflows.read(root)
    assert after == workflows.WorkflowStacks(*[[s for s in lst if s != victim] for lst in (before.previews, before.deploys, before.verifies)])
    jobs = yaml.safe_load((root / ".github/workflows/deploy.yml").read_text())["jobs"]
    assert [jobs[s]["needs"] for s in after.deploys] == ["test", *after.deploys[:-1]]  # closed over the gap
    assert not any(victim in (yaml.safe_load(p.read_text()).get("config") or {}).get("pathways-bootstrap:stacks", [])
                   for p in (root / "bootstrap").glob("Pulumi.*.yaml") if p.name != "Pulumi.yaml")
    assert "# On push to main" in (root / ".github/workflows/deploy.yml").read_text()  # comments kept


def test_a_shared_bootstrap_file_loses_one_line_and_stays(tmp_path, capsys):
    root = _root(tmp_path)
    victim = workflows.read(root).deploys[-1]
    (boot,) = [p for p in (root / "bootstrap").glob("Pulumi.*.yaml")
               if victim in (yaml.safe_load(p.read_text())["config"].get("pathways-bootstrap:stacks") or [])]
    boot.write_text(boot.read_text().rstrip("\n") + "\n    - other\n")
    assert offline_main(["remove-stack", victim, "--root", str(root)]) == 0
    assert yaml.safe_load(boot.read_text())["config"]["pathways-bootstrap:stacks"] == ["other"]


def test_a_fleet_worker_is_not_removed_from_under_its_manager_and_nothing_changes(tmp_path, capsys):
    root = _root(tmp_path)
    shutil.rmtree(root / "stacks")
    shutil.copytree(EXAMPLE_STACKS, root / "stacks")  # the examples' fleet: fleet-manager dispatches to fleet-east
    before = _snapshot(root)
    assert offline_main(["remove-stack", "fleet-east", "--root", str(root)]) == 2
    assert capsys.readouterr().err == ("error: stack fleet-east is a worker of fleet manager fleet-manager (pathways:fleet.workers); "
                                       "remove it there first; nothing removed\n")
    assert _snapshot(root) == before


def test_dry_run_and_unknown_stacks_change_nothing(tmp_path, capsys):
    root = _root(tmp_path)
    before = _snapshot(root)
    victim = workflows.read(root).deploys[0]
    assert offline_main(["remove-stack", victim, "--root", str(root), "--dry-run"]) == 0
    assert f"would delete stacks/Pulumi.{victim}.yaml" in capsys.readouterr().out
    assert offline_main(["remove-stack", "no-such-stack", "--root", str(root)]) == 2
    assert "is not a stack file of this repository; nothing removed" in capsys.readouterr().err
    assert _snapshot(root) == before


def test_add_appends_to_the_chain_and_the_lists_and_remove_undoes_it(tmp_path):
    root = _root(tmp_path)
    before = _snapshot(root)
    wired = workflows.read(root)
    name = next(n for n in (f"added-{i}" for i in range(100)) if n not in {*wired.previews, *wired.deploys, *wired.verifies})
    assert workflows.add(root, name) == [workflows.PULL_REQUEST, workflows.VERIFY, workflows.DEPLOY]
    after = workflows.read(root)
    assert after.previews == [*wired.previews, name] and after.verifies == [*wired.verifies, name]
    job = yaml.safe_load((root / ".github/workflows/deploy.yml").read_text())["jobs"][name]
    assert job["needs"] == wired.deploys[-1] and job["with"] == {"stack": name, "apply": True}
    assert workflows.add(root, name) == []  # already wired
    workflows.remove(root, name)
    assert _snapshot(root) == before  # byte for byte


def test_new_stack_wires_the_workflows_when_asked(tmp_path, capsys):
    root = _root(tmp_path)
    argv = ["new-stack", "wired-new", "--project", "wired-new-ml", "--zone", "us-central1-a", "--tpu", "v5p-8",
            "--repository", "team-b/pathways", "--repository-id", "712345678", "--repository-owner-id", "81234567",
            "--project-number", "223456789012", "--stacks-dir", str(root / "stacks"), "--bootstrap-dir", str(root / "bootstrap"),
            "--root", str(root)]
    assert offline_main([*argv, "--wire-workflows"]) == 0
    assert "wrote .github/workflows/deploy.yml (stack wired-new added)" in capsys.readouterr().out
    assert workflows.read(root).deploys[-1] == "wired-new"
    # a job ID cannot hold a '.': refused before anything is written
    assert offline_main([*[a if a != "wired-new" else "wired.new" for a in argv], "--wire-workflows"]) == 2
    assert "job IDs are letters, digits" in capsys.readouterr().err
    assert not (root / "stacks" / "Pulumi.wired.new.yaml").exists()
