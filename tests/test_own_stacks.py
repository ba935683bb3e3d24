"""A team makes the stack its own on day one (issue #56): in a scratch copy of this repository a stack of the team's
is added with `new-stack` (and its bootstrap entry), `dev` is re-pointed at another project, region and zone, and
an example is removed with its bootstrap file; the checks over every stack (marked every_stack) then pass there.

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

from components.model.tpu_zones import TPU_ZONES
from tests.test_workflows import ci_stacks

ROOT = Path(__file__).resolve().parents[1]
TEAM_STACK, TEAM_PROJECT = "team-a", "team-a-ml"
NEW_DEV_PROJECT = "acme-ml-dev"


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


def _bootstrap_of(repo: Path, stack: str) -> Path:
    (path,) = [p for p in (repo / "bootstrap").glob("Pulumi.*.yaml") if p.name != "Pulumi.yaml"
               and stack in (yaml.safe_load(p.read_text())["config"].get("pathways-bootstrap:stacks") or [])]
    return path


def repoint_dev(repo: Path) -> str:
    """dev in another project and a zone of another region that offers its TPU families (Google's zone table); its
    bootstrap file moves to the new project. Returns the new zone."""
    path = repo / "stacks" / "Pulumi.dev.yaml"
    text = path.read_text()
    config = yaml.safe_load(text)["config"]
    old_project, old_region, old_zone = config["gcp:project"], config["gcp:region"], config["gcp:zone"]
    zone = next(z for z in sorted(set.intersection(*(set(TPU_ZONES[f]) for f in _families(config))))
                if not z.startswith(old_region + "-") and not TPU_ZONES[next(iter(_families(config)))][z])
    region = zone.rsplit("-", 1)[0]
    text = re.sub(rf"\b{re.escape(old_zone)}\b", zone, text)
    text = re.sub(rf"\b{re.escape(old_region)}\b", region, text)
    path.write_text(text.replace(old_project, NEW_DEV_PROJECT))
    boot = _bootstrap_of(repo, "dev")
    (repo / "bootstrap" / f"Pulumi.{NEW_DEV_PROJECT}.yaml").write_text(boot.read_text().replace(old_project, NEW_DEV_PROJECT))
    boot.unlink()
    return zone


def removable_example(repo: Path) -> str:
    """An example no workflow, fleet or other stack needs, whose bootstrap file sets up only it."""
    for path in sorted((repo / "stacks").glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi."):-len(".yaml")]
        config = yaml.safe_load(path.read_text())["config"]
        if name in ci_stacks() or name == "dev" or config.get("pathways:fleet"):
            continue
        boot = _bootstrap_of(repo, name)
        if yaml.safe_load(boot.read_text())["config"]["pathways-bootstrap:stacks"] == [name]:
            return name
    raise AssertionError("every example is needed by another: nothing to remove")


def adopt(repo: Path) -> dict[str, str]:
    """A team's first day in the copy: its own stack, dev moved, an example gone. What changed, for the run."""
    proc = subprocess.run([sys.executable, "-m", "infra.offline", "new-stack", TEAM_STACK, "--project", TEAM_PROJECT,
                           "--zone", "us-central1-a", "--tpu", "v5p-8", "--slices", "2", "--spot",
                           "--repository", "team-a/pathways", "--repository-id", "712345678", "--repository-owner-id", "81234567",
                           "--project-number", "223456789012"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    zone = repoint_dev(repo)
    removed = removable_example(repo)
    (repo / "stacks" / f"Pulumi.{removed}.yaml").unlink()
    _bootstrap_of(repo, removed).unlink()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=team", "-c", "user.email=team@example.com", "commit", "-q", "-m", "our stacks"],
                   cwd=repo, check=True)
    return {"zone": zone, "removed": removed}


def test_the_checks_over_every_stack_pass_on_a_teams_own_stacks(tmp_path):
    repo = scratch_copy(tmp_path / "repo")
    changed = adopt(repo)
    assert (repo / "stacks" / f"Pulumi.{TEAM_STACK}.yaml").exists()
    assert f"gcp:zone: {changed['zone']}" in (repo / "stacks" / "Pulumi.dev.yaml").read_text()
    only = ",".join([TEAM_STACK, "dev", TEAM_PROJECT, NEW_DEV_PROJECT])
    report = tmp_path / "report.xml"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "0",
                           "-m", "every_stack", "--only-stacks", only, "--basetemp", str(tmp_path / "inner"),
                           "--junitxml", str(report), "tests"],
                          cwd=repo, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo)}, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    ran = report.read_text()
    # the team's stack, the moved dev and its bootstrap were checked; the removed example was not looked for
    for name in (f"[{TEAM_STACK}]", "[dev]", f"[{TEAM_PROJECT}]", f"[{NEW_DEV_PROJECT}]"):
        assert name in ran, name
    assert f"[{changed['removed']}]" not in ran
    assert int(re.search(r'tests="(\d+)"', ran).group(1)) >= 100  # type: ignore[union-attr]


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    target.mkdir(parents=True)
    print(adopt(scratch_copy(target)), "in", target)
