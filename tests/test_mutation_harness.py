"""The mutation harness makes the mutants it says it makes, and never touches the working tree."""

from __future__ import annotations

import ast
from pathlib import Path

from infra.offline import mutation

ROOT = Path(__file__).resolve().parents[1]


def test_mutants_of_a_small_module():
    path = ROOT / "components/model/rollout.py"
    before = path.read_text()
    found = mutation.mutants(path)
    ops = {m.operator for m in found}
    assert {"compare0:Lt->LtE", "compare0:GtE->Gt", "int:5->6", "return:None", "raise:deleted"} <= ops
    for m in found:
        src = mutation.mutated_source(path, m)
        ast.parse(src)
        assert src != ast.unparse(ast.parse(before)), m.key
    assert path.read_text() == before


def test_docstrings_and_annotations_are_not_mutated():
    path = ROOT / "components/model/summary.py"
    for m in mutation.mutants(path):
        assert m.line > 5 or m.operator != "statement:deleted"
    assert all("Literal" not in m.operator for m in mutation.mutants(path))
    # and on a source where both would otherwise be mutated:
    source = '''"""Module docstring."""
from typing import Literal


def f(x: Literal[7]) -> Literal[8]:
    """Docstring."""
    print(x)
    return x < 3
'''
    ops = [op for _, op in mutation._sites(ast.parse(source))]
    assert sorted(ops) == ["compare0:Lt->LtE", "int:3->4", "return:None", "statement:deleted"]  # print(x); no 7, no 8


def test_targets_are_the_four_listed_places():
    files = {f.relative_to(ROOT).as_posix() for f in mutation.target_files(list(mutation.TARGETS))}
    assert "infra/offline/critical_path.py" in files and "components/manifests/jobset.py" in files
    assert "components/model/tpu.py" in files and "policies/rules/tpu_pool_catalog.py" in files
    assert not any(f.endswith("__init__.py") for f in files)
