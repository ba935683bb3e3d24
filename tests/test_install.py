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
import sys
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def language_host_requirements() -> Path:
    """The requirements file Pulumi's Python host installs for this project."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    runtime = project["runtime"]
    assert runtime["name"] == "python"
    toolchain = runtime.get("options", {}).get("toolchain", "pip")
    assert toolchain == "pip", "this test mirrors the pip toolchain; uv/poetry look elsewhere"
    return ROOT / project.get("main", ".") / "requirements.txt"


def requirement_names(path: Path, seen: frozenset[Path] = frozenset()) -> set[str]:
    """Distribution names a requirements file installs, following -r / --requirement like pip."""
    names: set[str] = set()
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
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
    ours = {"infra", "components", "policies", "tests"}
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


def test_it_installs_what_make_installs():
    # One list of dependencies: the language host's file and the root file (make, CI) agree.
    assert requirement_names(language_host_requirements()) == requirement_names(ROOT / "requirements.txt")
