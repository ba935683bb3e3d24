"""Developer tooling lives in tools/ (mutation testing, the benchmark, engine builds), out of the product:
components/, infra/ and policies/ never import it, and infra/offline/ holds only the offline tools users
run (plan, diff, render, policies, critical path). Tests may import tools."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("components", "infra", "policies")
TOOLING = {"mutation.py", "mutation_runner.py", "mutation_coverage.py", "bench.py"}  # what infra/offline/ held until issue #30
DEV_ONLY = {"pytest", "_pytest", "coverage", "mutmut", "tools"}  # packages the product must not need at run time
_BARE = re.compile(r"\s*(tools(?:\.[A-Za-z_]\w*)+)\s*")  # a module name handed to importlib, or as one argument
_FLAGGED = re.compile(r"-[mp]\s+(tools(?:\.[A-Za-z_]\w*)*)(?![\w.-])")  # python -m tools..., pytest -p tools... in a command line


def reaches(path: Path, root: Path = ROOT) -> set[str]:
    """The modules `path` imports (absolute names; relative imports resolved against its package, which
    cannot climb out of the product's top package), and dotted names under `tools` that it hands on as
    strings (importlib, `python -m`, `pytest -p`)."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            else:
                module = node.module or ""
            out.add(module)
            out |= {f"{module}.{a.name}" for a in node.names}  # `from . import x` may name a module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            bare = _BARE.fullmatch(node.value)
            out |= ({bare.group(1)} if bare else set()) | set(_FLAGGED.findall(node.value))
    return out


def product_files() -> list[Path]:
    return sorted(p for part in PRODUCT for p in (ROOT / part).rglob("*.py") if "venv" not in p.relative_to(ROOT).parts)


def test_the_product_never_imports_developer_tooling():
    files = product_files()
    assert len(files) > 50 and any(p.name == "critical_path.py" for p in files)
    offenders = {p.relative_to(ROOT).as_posix(): sorted(m for m in reaches(p) if m.split(".")[0] in DEV_ONLY) for p in files}
    assert {p: m for p, m in offenders.items() if m} == {}


def test_infra_offline_holds_no_developer_tooling():
    offline = {p.name for p in (ROOT / "infra" / "offline").glob("*.py")}
    assert "critical_path.py" in offline and "engine.py" in offline  # the user-facing tools stay
    assert offline & TOOLING == set()
    assert {p.name for p in (ROOT / "tools" / "mutation").glob("*.py")} >= {"__init__.py", "__main__.py", "harness.py", "runner.py",
                                                                             "coverage_contexts.py"}
    assert (ROOT / "tools" / "bench.py").is_file()


def test_the_import_check_sees_every_form(tmp_path):
    cases = {
        "import tools.mutation": "tools.mutation",
        "from tools import bench": "tools.bench",
        "from tools.mutation.harness import main": "tools.mutation.harness",
        "import importlib\nimportlib.import_module('tools.bench')": "tools.bench",
        "cmd = ['python', '-m', 'tools.mutation']": "tools.mutation",
        "cmd = 'python -m tools.bench --repeat 1'.split()": "tools.bench",
        "args = ['-p', 'tools.mutation.coverage_contexts']": "tools.mutation.coverage_contexts",
        "import pytest": "pytest",
        "from .engine import PROJECT_ROOT": "infra.offline.engine",
        "from .. import config": "infra.config",
    }
    probe = tmp_path / "infra" / "offline" / "probe.py"  # as if in infra/offline/, for the relative imports
    probe.parent.mkdir(parents=True)
    for text, name in cases.items():
        probe.write_text(text + "\n")
        assert name in reaches(probe, tmp_path), text
    probe.write_text("TOOLS = 'tools'\nhelp = 'see the offline tools. And -m tools-free'\nimport functools\n")
    assert not {m.split(".")[0] for m in reaches(probe, tmp_path)} & DEV_ONLY


def test_the_tools_run_from_the_repository_root_with_their_options():
    for module, options in {"tools.mutation": ("--module", "--sample", "--seed", "--first", "--rerun", "--combine", "--out", "--jobs",
                                               "--timeout", "--list"),
                            "tools.bench": ("--repeat", "--sizes", "--no-largest", "--out"),
                            "tools.bench_real": ("--repeat", "--out")}.items():
        run = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert f"python -m {module}" in run.stdout and all(o in run.stdout for o in options), (module, run.stdout)


def test_developer_tools_refuse_an_out_path_they_could_be_tricked_by(tmp_path):
    from tools import output
    from tools.bench import main as bench_main
    from tools.mutation.harness import main as mutation_main

    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "bench.json"
    link.symlink_to(target)
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "file").write_text("keep me too")
    linked_dir = tmp_path / "via-link"
    linked_dir.symlink_to(directory)
    for bad in (link, directory, linked_dir / "file" / "out.json", linked_dir / "."):
        with pytest.raises(output.OutputError):
            output.checked(bad)
        for tool in (bench_main, mutation_main):
            with pytest.raises(SystemExit) as exit_:  # argparse's usage error, before any run starts
                tool(["--out", str(bad)])
            assert exit_.value.code == 2
    assert target.read_text() == "keep me" and (directory / "file").read_text() == "keep me too"
    # a plain path is written whole, replacing an earlier result
    plain = tmp_path / "new" / "result.json"
    output.write_text(plain, "1")
    output.write_text(plain, "2")
    assert plain.read_text() == "2" and [p.name for p in plain.parent.iterdir()] == ["result.json"]


def test_finding_5_an_out_path_under_a_linked_directory_is_written_there(tmp_path):
    # issue #36.5: /tmp is a symbolic link on macOS (to /private/tmp); a directory the user names through a link is
    # still the directory they named. Only the file itself may not be a link.
    from tools import output

    real = tmp_path / "private" / "tmp"
    real.mkdir(parents=True)
    linked = tmp_path / "tmp"
    linked.symlink_to(real)
    out = linked / "bench.json"
    assert output.checked(out) == out
    output.write_text(out, "result")
    assert (real / "bench.json").read_text() == "result" and not (real / "bench.json").is_symlink()
    output.write_text(linked / "new-dir" / "r.json", "x")  # a missing directory below the link is created
    assert (real / "new-dir" / "r.json").read_text() == "x"
    (real / "planted.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(output.OutputError, match="symbolic link"):
        output.write_text(linked / "planted.json", "x")
    assert not (tmp_path / "elsewhere.json").exists()
