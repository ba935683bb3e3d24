"""A fresh clone's `pulumi install` / first `pulumi preview` installs every dependency the program imports.

Pulumi's Python language host with `toolchain: pip` creates the virtualenv at <root>/<virtualenv> and runs
`python -m pip install -r requirements.txt` with the *program directory* (`main:`) as its working
directory: pulumi/pulumi sdk/python/toolchain/pip.go, InstallDependencies (`requirementsPath :=
filepath.Join(cwd, "requirements.txt")`, `pipCmd.Dir = cwd`), and it silently installs nothing when that
file is absent. The `uv` and `poetry` toolchains search upward instead (PLATFORM-FACTS §6). This test
follows that rule and pip's own for nested files (`-r` paths are relative to the file that names them).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from tests.conftest import example_path

ROOT = Path(__file__).resolve().parents[1]


def language_host_requirements() -> Path:
    """The requirements file Pulumi's Python host installs for this project."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    runtime = project["runtime"]
    assert runtime["name"] == "python"
    toolchain = runtime.get("options", {}).get("toolchain", "pip")
    assert toolchain == "pip", "this test mirrors the pip toolchain; uv/poetry look elsewhere"
    return ROOT / project.get("main", ".") / "requirements.txt"


def requirement_lines(path: Path) -> list[str]:
    """Logical lines of a requirements file: comments dropped, backslash continuations joined."""
    lines, current = [], ""
    for raw in path.read_text().splitlines():
        text = raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if text.endswith("\\"):
            current += text[:-1] + " "
            continue
        current += text
        if current.strip():
            lines.append(current.strip())
        current = ""
    return lines


def requirement_names(path: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """Distribution names a requirements file installs, following -r / --requirement like pip."""
    names: set[str] = set()
    for line in requirement_lines(path):
        nested = re.match(r"^(-r|--requirement)[ =]?\s*(\S+)$", line)
        if nested:
            target = (path.parent / nested.group(2)).resolve()
            assert target not in seen, f"{path} includes {target} in a loop"
            names |= requirement_names(target, seen | {path.resolve()})
            continue
        assert not line.startswith("-"), f"unexpected pip option in {path}: {line}"
        names.add(re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def third_party_imports() -> set[str]:
    """Top-level modules the program (infra/, components/) imports that are not ours or stdlib."""
    ours = {"infra", "components", "policies", "tests", "bootstrap"}
    found: set[str] = set()
    for path in [*ROOT.joinpath("infra").rglob("*.py"), *ROOT.joinpath("components").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return {m for m in found if m not in ours and m not in sys.stdlib_module_names}


def test_the_language_host_finds_a_requirements_file():
    assert language_host_requirements() == ROOT / "infra" / "requirements.txt"
    assert language_host_requirements().is_file(), "pulumi would create an empty .venv and fail on `import pulumi_gcp`"


def test_it_installs_everything_the_program_imports():
    installs = requirement_names(language_host_requirements())
    distributions = metadata.packages_distributions()
    for module in sorted(third_party_imports()):
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        assert dists & installs, f"{module} (from {sorted(dists)}) is not installed by {language_host_requirements()}"


def test_it_installs_the_lock_make_and_ci_install():
    # One lock: Pulumi's install, make (and so CI) and the workflows install requirements.lock.
    assert requirement_names(language_host_requirements()) == requirement_names(ROOT / "requirements.lock")
    make = (ROOT / "Makefile").read_text()
    assert "uv pip install --python $(PY) --require-hashes --compile-bytecode -r requirements.lock" in make
    # the installer itself comes pinned and hash-checked
    assert "pip install --quiet --disable-pip-version-check --require-hashes -r requirements-bootstrap.txt" in make
    bootstrap = requirement_lines(ROOT / "requirements-bootstrap.txt")
    assert len(bootstrap) == 1 and bootstrap[0].startswith("uv==") and " --hash=sha256:" in bootstrap[0]
    for wf in (ROOT / ".github" / "workflows").glob("*.yml"):
        text = wf.read_text()
        assert "pip install -r requirements.txt" not in text, wf.name


def test_the_lock_pins_every_requirement_with_hashes():
    from packaging.requirements import Requirement

    pins = {}
    for line in requirement_lines(ROOT / "requirements.lock"):
        req, *hashes = line.split(" --hash=")
        name, _, version = req.partition("==")
        assert version and hashes, f"unpinned or unhashed: {line[:80]}"
        assert all(h.startswith("sha256:") for h in hashes)
        pins[name.split("[")[0].lower().replace("_", "-")] = version.split(";")[0].strip()
    for line in requirement_lines(ROOT / "requirements.txt"):
        req = Requirement(line)
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} is in requirements.txt but not in the lock: run make lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is outside {req.specifier}: run make lock"


def test_python_version_is_pinned():
    assert (ROOT / ".python-version").read_text().strip() == "3.11"
    assert "python-version: \"3.11\"" in (ROOT / ".github" / "workflows" / "pull-request.yml").read_text() or \
        "python-version-file: .python-version" in (ROOT / ".github" / "workflows" / "pull-request.yml").read_text()


def test_an_unsupported_pulumi_sdk_fails_loudly_in_one_line(monkeypatch, capsys):
    from infra.offline import engine
    from infra.offline.__main__ import main

    engine.check_sdk()  # the installed one is supported
    monkeypatch.setattr(engine.metadata, "version", lambda name: "3.300.1")
    assert main(["plan", "--config", str(example_path("dev"))]) == 2
    err = capsys.readouterr().err
    assert err == ("error: pulumi 3.300.1 is installed; the offline engine is tested with pulumi >=3.272,<3.273 "
                   "(its SDK internals change between releases): run `make` to install requirements.lock\n")


def test_the_supported_range_is_the_requirement_range():
    from packaging.requirements import Requirement

    from infra.offline.engine import SUPPORTED_PULUMI

    (line,) = [ln for ln in requirement_lines(ROOT / "requirements.txt") if ln.startswith("pulumi>")]
    (low, high) = SUPPORTED_PULUMI
    assert str(Requirement(line).specifier) == f"<{high[0]}.{high[1]},>={low[0]}.{low[1]}"


def _makefile_rules() -> list[tuple[int, str]]:
    """(line number, text) of each rule line: a target and its prerequisites, not a recipe or an assignment."""
    rules = []
    for number, line in enumerate((ROOT / "Makefile").read_text().splitlines()):
        if line.startswith(("\t", "#", " ")) or ":" not in line or re.match(r"^\s*[A-Za-z_]+\s*(:=|\?=|\+=|=)", line):
            continue
        rules.append((number, line))
    return rules


def test_every_variable_a_rule_names_is_defined_above_it():
    # make expands a rule's targets and prerequisites when it reads the line: a variable defined further down is
    # empty there, and the prerequisite silently vanishes (a fresh clone's `make plan` fetched no charts, #56)
    lines = (ROOT / "Makefile").read_text().splitlines()
    defined_at = {}
    for number, line in enumerate(lines):
        assignment = re.match(r"^([A-Za-z_]+)\s*(:=|\?=|=)", line)
        if assignment:
            defined_at.setdefault(assignment.group(1), number)
    rules = _makefile_rules()
    assert len(rules) > 15
    for number, line in rules:
        for name in re.findall(r"\$\(([A-Za-z_]+)\)", line):
            assert name in defined_at, f"Makefile line {number + 1} names $({name}), which is never defined"
            assert defined_at[name] < number, f"Makefile line {number + 1} names $({name}), defined only on line {defined_at[name] + 1}"


@pytest.mark.parametrize("target", ["plan", "render", "test", "e2e"])
def test_the_readme_targets_fetch_the_charts_before_they_use_them(target):
    # `make -n -B`: what a fresh clone would run, in order, without running it
    dry = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), target], capture_output=True, text=True, check=True).stdout
    assert "tools/engines/crds.py" in dry, f"make {target} on a fresh clone never fetches the charts and CRDs"
    uses = {"plan": "infra.offline plan", "render": "infra.offline render", "test": "pytest", "e2e": "pytest"}[target]
    assert dry.index("tools/engines/crds.py") < dry.index(uses)
    assert dry.index("requirements.lock") < dry.index(uses)
