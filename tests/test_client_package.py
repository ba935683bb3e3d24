"""#74.6: the researcher's client installs on its own (pyproject.toml: `pathways-run`) and runs from a code folder
with only its declared dependencies: no Pulumi, no provider, no Go, no infrastructure checkout. Emulated here as the
wheel lays it out (the packages pyproject.toml lists, their package data) on an interpreter without site-packages,
beside the installed distributions of the declared dependencies' closure; `make client` installs the real wheel
from PyPI (hash-locked) and prints its install time and size."""

from __future__ import annotations

import importlib.metadata as md
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

from tests.conftest import example_path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _layout(site: Path) -> None:
    """The wheel's files: each listed package's modules (not its subpackages, listed on their own) and package data."""
    setuptools = PYPROJECT["tool"]["setuptools"]
    for package in setuptools["packages"]:
        src = ROOT / package.replace(".", "/")
        dst = site / package.replace(".", "/")
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.glob("*.py"):
            shutil.copy2(f, dst / f.name)
    for package, patterns in setuptools["package-data"].items():
        for pattern in patterns:
            for f in (ROOT / package.replace(".", "/")).glob(pattern):
                target = site / package.replace(".", "/") / f.relative_to(ROOT / package.replace(".", "/"))
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target)


def _requirement_name(req: str) -> str | None:
    """The distribution a Requires-Dist line names, unless its marker excludes it here (an extra, another Python)."""
    from packaging.requirements import Requirement

    parsed = Requirement(req)
    if parsed.marker is not None and not parsed.marker.evaluate({"extra": ""}):
        return None
    return parsed.name


def _closure() -> list[md.Distribution]:
    todo = [n for n in (_requirement_name(r) for r in PYPROJECT["project"]["dependencies"]) if n]
    seen: dict[str, md.Distribution] = {}
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        dist = md.distribution(name)
        seen[name] = dist
        todo += [n for n in (_requirement_name(r) for r in dist.requires or []) if n]
    return list(seen.values())


def _deps(target: Path) -> list[str]:
    """The closure's installed files, linked into `target` by their top-level names; the distributions' names."""
    target.mkdir()
    for dist in _closure():
        tops = {str(f).split("/")[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops:
            src = Path(str(dist.locate_file(top)))
            if src.exists() and not (target / top).exists():
                (target / top).symlink_to(src)
    return sorted(d.metadata["Name"] for d in _closure())


def test_the_client_submits_from_a_code_folder_with_its_declared_dependencies_only(tmp_path):
    site, deps, code = tmp_path / "site", tmp_path / "deps", tmp_path / "my-experiment"
    _layout(site)
    names = _deps(deps)
    assert not [n for n in names if n.lower().startswith("pulumi")], names
    code.mkdir()
    (code / "train.py").write_text("import pathwaysutils\npathwaysutils.initialize()\nimport jax\nprint(jax.devices())\n")
    stack_file = tmp_path / "Pulumi.dev.yaml"
    shutil.copy2(example_path("dev"), stack_file)
    program = (f"import sys; sys.path[:0] = [{str(site)!r}, {str(deps)!r}]\n"
               "from infra.run.__main__ import main\n"
               "code = main(sys.argv[1:])\n"
               "leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'pulumi_gcp', 'pulumi_kubernetes', 'grpc'))\n"
               "print('LEAKED', leaked, file=sys.stderr)\n"
               "sys.exit(code)\n")
    # -I -S: no site-packages, no PYTHONPATH, no user site: only the layout and the dependencies above
    done = subprocess.run([sys.executable, "-I", "-S", "-c", program, "submit", "--name", "first-run", "--workdir", ".",
                           "--dry-run", "--", "python3", "train.py"],
                          cwd=code, env={"PATHWAYS_STACK_CONFIG": str(stack_file), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LEAKED []" in done.stderr, done.stderr
    docs = [d for d in yaml.safe_load_all(done.stdout.split("\n---\n", 1)[-1] if "\n---\n" in done.stdout else done.stdout) if d]
    jobset = next(d for d in docs if isinstance(d, dict) and d.get("kind") == "JobSet")
    assert jobset["metadata"]["name"] == "first-run"


def test_the_package_lists_every_module_the_cli_imports():
    # whatever the CLI imports of the project, on every command's path, is in a package pyproject.toml lists
    program = ("import sys, json, importlib\n"
               "from infra.run import __main__ as m\n"
               "for mod in ('why', 'teams', 'logs', 'profile', 'status', 'gather', 'workdir', 'notebook_auth', 'cloud_logs'):\n"
               "    importlib.import_module('infra.run.' + mod)\n"
               "import components.manifests.admission, components.manifests.runs, infra.notebook_image\n"
               "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in ('infra', 'components'))))\n")
    done = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    packages = set(PYPROJECT["tool"]["setuptools"]["packages"])
    missing = [m for m in json.loads(done.stdout) if m not in packages and m.rsplit(".", 1)[0] not in packages]
    assert missing == [], missing
    assert not [p for p in packages if p.startswith(("components.gcp", "components.kubernetes"))]
    assert PYPROJECT["project"]["scripts"] == {"pathways-run": "infra.run.__main__:main"}
