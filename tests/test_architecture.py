"""Data flows one way: stack config -> model -> components -> resources. These keep it so."""

from __future__ import annotations

import ast
import sys
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


def reads_config(path: Path) -> bool:
    """pulumi.Config(...), `from pulumi import Config`, or the runtime's config module / get_config."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr == "Config" and isinstance(node.value, ast.Name) and node.value.id == "pulumi":
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulumi"):
            if any(a.name in ("Config", "config", "get_config") for a in node.names):
                return True
        if isinstance(node, ast.Import) and any(a.name == "pulumi.runtime.config" for a in node.names):
            return True
    return False


def test_only_infra_config_reads_pulumi_config():
    readers = [p.relative_to(ROOT).as_posix() for p in files("infra") + files("components") + files("policies") if reads_config(p)]
    assert readers == ["infra/config.py"]


def test_the_config_reader_check_sees_every_form(tmp_path):
    for text in ("import pulumi\npulumi.Config('x')", "from pulumi import Config", "from pulumi.runtime import config",
                 "import pulumi.runtime.config", "from pulumi.runtime.config import get_config"):
        (tmp_path / "m.py").write_text(text)
        assert reads_config(tmp_path / "m.py"), text
    (tmp_path / "m.py").write_text("import pulumi\npulumi.export('a', 1)\nargs.get_config()")
    assert not reads_config(tmp_path / "m.py")


def _relative_imports(path: Path) -> set[str]:
    """Absolute names of a module's relative imports (from ..model.config import X -> components.model.config)."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            out.add(".".join([*base, *(node.module.split(".") if node.module else [])]))
    return out


def test_builders_render_resolved_values_and_never_read_the_stack_config():
    # resolve once (components/model/resolved.py), then render: no builder goes back to StackConfig
    for path in files("components", "manifests"):
        assert "components.model.config" not in imports(path) | _relative_imports(path), path


def _model_imports(path: Path) -> set[str]:
    """The components/model modules a model module imports, by stem, `from . import x` included."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("components.model."):
            out.add(node.module.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module == "components.model":
            out |= {a.name for a in node.names}
    return out


def test_no_import_circle_in_the_model():
    graph = {p.stem: _model_imports(p) for p in files("components", "model")}
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            node = todo.pop()
            assert node != start, f"components/model/{start}.py imports itself back through {sorted(seen)}"
            if node not in seen:
                seen.add(node)
                todo += graph.get(node, ())


def test_feature_rules_sit_between_the_schema_and_the_loader():
    # schema (stack.py and its sections) <- <feature>_checks.py <- checks.py (the ordered list) <- config.py (load)
    model = {p.stem: p for p in files("components", "model")}
    rules = {stem for stem in model if stem.endswith("_checks")}
    assert {"cluster_checks", "pools_checks", "workload_checks", "serving_checks", "service_checks"} <= rules
    for stem, path in model.items():
        found = _model_imports(path)
        if stem == "config":
            assert not found & rules, f"{path}: the loader runs the rules through checks.py, in its order"
        elif stem == "checks":
            assert "config" not in found, path
        elif stem in rules:
            assert not found & (rules | {"checks", "config"}), f"{path}: a feature's rules use the schema, not another feature's rules"
            # Rules are plain Python over the model: the standard library only (no Pulumi, no provider SDK).
            assert {m.split(".")[0] for m in imports(path)} <= set(sys.stdlib_module_names) | {"__future__"}, path
        else:
            assert not found & (rules | {"checks", "config"}), f"{path}: the schema never reads the rules or the loader"


def test_the_import_walk_sees_every_form(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from . import a, b\nfrom .c import x\nfrom components.model.d import y\nfrom components.model import e\n")
    assert _model_imports(path) == {"a", "b", "c", "d", "e"}
