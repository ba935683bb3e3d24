"""A team makes the stack its own on day one (issues #56, #75.1), by docs/adopting.md's commands, in a scratch copy
of this repository: a stack of the team's and a protected one are added with `new-stack --wire-workflows` (the
protected one with `--protected`), `dev` is re-pointed at another project, region and zone, a stack the workflows
deploy (staging) and an example no workflow names are removed with `remove-stack`; the checks over every stack
(marked every_stack) and the tests that read the workflows, bootstrap files and policy configs then pass there.

Those checks derive what they expect from each stack's own file; the tests about a particular example read its frozen
copy in tests/fixtures/examples, which a team's edits never touch. This test runs, in the copy, the every_stack
tests of the stacks it changed and the checks across all stacks (`--only-stacks`): the others are byte for byte the
ones this suite has just checked. `python -m tests.test_own_stacks DIR` leaves such a copy in DIR to run `make test` in.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from components.model.capacity.tpu_zones import TPU_ZONES
from tests.test_workflows import ci_stacks

ROOT = Path(__file__).resolve().parents[1]


def _free(taken: set[str], base: str) -> str:
    """base, or base-2, base-3, ... when a team's repository has that name already."""
    return next(name for name in (base, *(f"{base}-{i}" for i in range(2, 100))) if name not in taken)


def scratch_copy(dest: Path) -> Path:
    """This checkout's files (tracked and new, not ignored) under dest, with build/ (the charts and CRDs `make crds`
    fetched) shared, committed so that git-reading checks see a repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / "build").symlink_to(ROOT / "build", target_is_directory=True)
    return dest


def _families(config: dict) -> set[str]:
    found = set()
    for s in config.get("pathways:slices") or []:
        tpu = s["tpu"]
        name = tpu["family"] if isinstance(tpu, dict) else str(tpu).rsplit("-", 1)[0]
        found.add("v5e" if name == "v5litepod" else name)
    return found


def _bootstrap_of(repo: Path, stack: str) -> Path | None:
    """The bootstrap file that sets the stack up; none for a stack on a cluster made elsewhere that has none."""
    found = [p for p in (repo / "bootstrap").glob("Pulumi.*.yaml") if p.name != "Pulumi.yaml"
             and stack in (yaml.safe_load(p.read_text())["config"].get("pathways-bootstrap:stacks") or [])]
    assert len(found) <= 1, found
    return found[0] if found else None


def _stacks(repo: Path) -> dict[str, dict]:
    return {p.name[len("Pulumi."):-len(".yaml")]: yaml.safe_load(p.read_text())["config"] for p in (repo / "stacks").glob("Pulumi.*.yaml")}


def _projects(repo: Path) -> set[str]:
    return {p.name[len("Pulumi."):-len(".yaml")] for p in (repo / "bootstrap").glob("Pulumi.*.yaml")}


def movable(repo: Path) -> str:
    """dev, or the first stack that makes its cluster on no reservation and outside a fleet (a team's own)."""
    stacks = _stacks(repo)
    candidates = ["dev"] + sorted(stacks)
    return next(name for name in candidates if name in stacks and not stacks[name].get("pathways:fleet")
                and not (stacks[name].get("pathways:cluster") or {}).get("existing")
                and not any(s.get("reservation") for s in stacks[name].get("pathways:slices") or []))


def repoint(repo: Path, name: str, project: str) -> str:
    """The stack in another project and a zone of another region that offers its TPU families (Google's zone
    table); its bootstrap file moves to the new project. Returns the new zone."""
    path = repo / "stacks" / f"Pulumi.{name}.yaml"
    text = path.read_text()
    config = yaml.safe_load(text)["config"]
    old_project, old_region, old_zone = config["gcp:project"], config["gcp:region"], config["gcp:zone"]
    zone = next(z for z in sorted(set.intersection(*(set(TPU_ZONES[f]) for f in _families(config))))
                if not z.startswith(old_region + "-") and not TPU_ZONES[next(iter(_families(config)))][z])
    region = zone.rsplit("-", 1)[0]
    text = re.sub(rf"\b{re.escape(old_zone)}\b", zone, text)
    text = re.sub(rf"\b{re.escape(old_region)}\b", region, text)
    path.write_text(text.replace(old_project, project))
    boot = _bootstrap_of(repo, name)
    assert boot is not None, f"stack {name} has no bootstrap file"
    moved = yaml.safe_load(boot.read_text())["config"]["pathways-bootstrap:stacks"] == [name]
    (repo / "bootstrap" / f"Pulumi.{project}.yaml").write_text(
        boot.read_text().replace(old_project, project) if moved else
        boot.read_text().replace(old_project, project).split("pathways-bootstrap:stacks:")[0] + f"pathways-bootstrap:stacks:\n    - {name}\n")
    if moved:
        boot.unlink()
    else:  # the others stay in the old project's file
        boot.write_text(re.sub(rf"\n\s+- {re.escape(name)}\n", "\n", boot.read_text()))
    return zone


def workflow_example(repo: Path, keep: set[str]) -> str | None:
    """A stack the workflows deploy that docs/adopting.md's path removes (staging in the examples): not kept, not
    protected, no fleet's."""
    from infra.offline import workflows

    stacks = _stacks(repo)
    return next((name for name in workflows.read(repo).deploys if name not in keep and name in stacks
                 and not stacks[name].get("pathways:protected") and not stacks[name].get("pathways:fleet")), None)


def removable_example(repo: Path) -> str | None:
    """An example no workflow, fleet or other stack needs, whose bootstrap file sets up only it."""
    for path in sorted((repo / "stacks").glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        config = yaml.safe_load(path.read_text())["config"]
        if name in ci_stacks() or name == "dev" or config.get("pathways:fleet") or name.startswith("team-"):
            continue
        boot = _bootstrap_of(repo, name)
        if boot is None or yaml.safe_load(boot.read_text())["config"]["pathways-bootstrap:stacks"] == [name]:
            return name
    return None  # a team's repository may hold only stacks its workflows name


def _offline(repo: Path, *argv: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "infra.offline", *argv], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def adopt(repo: Path) -> dict[str, str]:
    """A team's first day in the copy, by docs/adopting.md's commands: its own stack and a protected one, both wired
    into the workflows (new-stack --wire-workflows), dev moved, a stack the workflows deploy removed (remove-stack),
    and an example no workflow names removed too. What changed, for the run."""
    stack, project = _free(set(_stacks(repo)), "team-a"), _free(_projects(repo), "team-a-ml")
    ids = ["--repository", "team-a/pathways", "--repository-id", "712345678", "--repository-owner-id", "81234567",
           "--project-number", "223456789012"]
    _offline(repo, "new-stack", stack, "--project", project, "--zone", "us-central1-a", "--tpu", "v5p-8", "--slices", "2", "--spot",
             "--wire-workflows", *ids)
    prod, prod_project = _free(set(_stacks(repo)), "team-prod"), _free(_projects(repo), "team-prod-ml")
    _offline(repo, "new-stack", prod, "--project", prod_project, "--zone", "us-central1-a", "--tpu", "v5p-8", "--protected",
             "--wire-workflows", *ids)
    moved, moved_to = movable(repo), _free(_projects(repo), "acme-ml-dev")
    zone = repoint(repo, moved, moved_to)
    unwired = workflow_example(repo, {moved, stack, prod})
    if unwired is not None:
        _offline(repo, "remove-stack", unwired)
    removed = removable_example(repo)
    if removed is not None:
        _offline(repo, "remove-stack", removed)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=team", "-c", "user.email=team@example.com", "commit", "-q", "-m", "our stacks"],
                   cwd=repo, check=True)
    return {"stack": stack, "project": project, "protected": prod, "protectedProject": prod_project, "moved": moved,
            "movedTo": moved_to, "zone": zone, "unwired": unwired or "", "removed": removed or ""}


# The tests that read the repository's own files beyond the stack files (the workflows, the bootstrap files, the
# policy configs, the README's tables): run whole in the copy, beside the every_stack tests.
WHOLE = ("tests/test_workflows.py", "tests/test_bootstrap.py", "tests/test_ci_preview.py", "tests/test_policies.py",
         "tests/test_identities.py", "tests/test_preflight.py", "tests/test_remove_stack.py", "tests/test_new_stack.py")


# a test file with checks over every stack names one of these (tests/conftest.py every_stack, committed_stack,
# made_stack): the run collects those files only, not the whole suite
EVERY_STACK = re.compile(r"\b(every_stack|committed_stack|made_stack)\b")


def every_stack_files(repo: Path) -> list[str]:
    return sorted(f"tests/{p.name}" for p in (repo / "tests").glob("test_*.py")
                  if p.name != Path(__file__).name and EVERY_STACK.search(p.read_text(encoding="utf-8")))


def test_the_checks_over_every_stack_pass_on_a_teams_own_stacks(tmp_path):
    repo = scratch_copy(tmp_path / "repo")
    changed = adopt(repo)
    assert (repo / "stacks" / f"Pulumi.{changed['stack']}.yaml").exists()
    assert f"gcp:zone: {changed['zone']}" in (repo / "stacks" / f"Pulumi.{changed['moved']}.yaml").read_text()
    only = ",".join([changed["stack"], changed["protected"], changed["moved"], changed["project"], changed["protectedProject"],
                     changed["movedTo"]])
    report = tmp_path / "report.xml"
    # one run: the every_stack tests of the changed stacks and the checks across all, and the WHOLE files entire
    files = sorted({*every_stack_files(repo), *WHOLE})
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0",
                           "-m", "every_stack", "--only-stacks", only, "--whole-files", ",".join(WHOLE),
                           "--basetemp", str(tmp_path / "inner"), "--junitxml", str(report), *files],
                          cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    ran = report.read_text()
    # the team's stack, the moved dev and its bootstrap were checked; the removed example was not looked for
    for key in ("stack", "moved", "project", "movedTo"):
        assert f"[{changed[key]}]" in ran, changed[key]
    if changed["removed"]:
        assert f"[{changed['removed']}]" not in ran
    assert int(re.search(r'tests="(\d+)"', ran).group(1)) >= 100  # type: ignore[union-attr]
    # the tests that read the workflows, bootstrap files and policy configs, whole (#75.1): the documented path left
    # them red before remove-stack and --wire-workflows
    from infra.offline import workflows

    wired = workflows.read(repo)
    for name in (changed["stack"], changed["protected"]):
        assert name in wired.previews and name in wired.deploys and name in wired.verifies, (name, wired)
    for name in (changed["unwired"], changed["removed"]):
        assert not name or (name not in wired.deploys and not (repo / "stacks" / f"Pulumi.{name}.yaml").exists())
    assert (repo / "policies" / f"config.{changed['protected']}.json").exists()
    # the WHOLE files' tests ran, beside the every_stack ones
    for path in WHOLE:
        assert f'classname="{path.removesuffix(".py").replace("/", ".")}"' in ran, path


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    target.mkdir(parents=True)
    print(adopt(scratch_copy(target)), "in", target)
