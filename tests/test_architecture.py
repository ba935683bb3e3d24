"""Data flows one way: stack config -> model -> components -> resources. These keep it so."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def files(*parts: str) -> list[Path]:
    return sorted((ROOT.joinpath(*parts)).rglob("*.py"))


def test_domain_logic_is_pulumi_free():
    for path in files("components", "model") + files("components", "manifests"):
        assert not {m for m in imports(path) if m.split(".")[0].startswith("pulumi")}, path


def test_components_never_reach_back_into_the_program():
    for path in files("components") + files("policies"):
        assert not {m for m in imports(path) if m.split(".")[0] == "infra"}, path


def test_only_infra_config_reads_pulumi_config():
    readers = [p.relative_to(ROOT).as_posix() for p in files("infra") + files("components") + files("policies")
               if "pulumi.Config(" in p.read_text()]
    assert readers == ["infra/config.py"]
