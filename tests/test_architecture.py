"""Data flows one way: stack config -> model -> components -> resources. These keep it so, over the whole import
graph of the product (components/, infra/, policies/, bootstrap/): every import, at the top of a module or inside a
function, absolute or relative, `from package import module` included. The layout they keep is docs/design.md's."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("components", "infra", "policies", "bootstrap")
MAX_LINES = 500
LONG_MODULE_REASON = "Over 500 lines:"


def module_names(root: Path, folders: tuple[str, ...] = PRODUCT) -> dict[str, Path]:
    """Dotted name -> file, for every module under `folders` (a package by its __init__)."""
    out = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts or "venv" in rel.parts:
                continue
            parts = rel.with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` an import statement loads (the longest known prefix of each name it names)."""
    if isinstance(node, ast.Import):
        candidates = [a.name for a in node.names]
    else:
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        candidates = [f"{base}.{a.name}" for a in node.names] + [base]
    out = set()
    for candidate in candidates:
        while candidate and candidate not in modules:
            candidate = candidate.rpartition(".")[0]
        if candidate and candidate != name:
            out.add(candidate)
    return out


def import_graph(root: Path = ROOT, folders: tuple[str, ...] = PRODUCT) -> dict[str, set[str]]:
    modules = module_names(root, folders)
    graph = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found |= _targets(name, path, node, modules)
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted: the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


GRAPH = import_graph()


def test_no_import_circle_among_product_modules():
    assert circles(GRAPH) == []


def test_the_circle_check_sees_every_form(tmp_path):
    pkg = tmp_path / "components" / "manifests"
    pkg.mkdir(parents=True)
    for f in ("components/__init__.py", "components/manifests/__init__.py"):
        (tmp_path / f).write_text("")
    (pkg / "a.py").write_text("from components.manifests.b import X\n")
    (pkg / "b.py").write_text("def f():\n    from . import c\n")  # inside a function, relative, a module by name
    (pkg / "c.py").write_text("import components.manifests.a as a\n")
    (pkg / "d.py").write_text("from components.manifests import a\n")  # into the circle, not part of it
    assert circles(import_graph(tmp_path, ("components",))) == [
        ["components.manifests.a", "components.manifests.b", "components.manifests.c"]]
    (pkg / "c.py").write_text("X = 1\n")
    assert circles(import_graph(tmp_path, ("components",))) == []


def _external(name: str) -> set[str]:
    """Top-level names of what a module imports outside the product (pulumi, pulumi_gcp, pydantic, ...)."""
    out = set()
    for node in ast.walk(ast.parse(module_names(ROOT)[name].read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.split(".")[0])
    return out - set(PRODUCT)


def _under(prefix: str) -> list[str]:
    return [m for m in GRAPH if m == prefix or m.startswith(prefix + ".")]


# What each folder may import from the product (docs/design.md, "What a folder may import").
MAY_IMPORT = {
    "components.model": ("components.model", "components.constants"),
    "components.manifests": ("components.model", "components.manifests", "components.constants"),
    "components.constants": (),
    "components.dependencies": (),
    "components.gcp": ("components.model", "components.manifests", "components.constants", "components.dependencies", "components.gcp"),
    "components.kubernetes": ("components.model", "components.manifests", "components.constants", "components.dependencies",
                              "components.kubernetes"),
    "policies": ("components.model", "components.manifests", "components.constants", "policies"),
}


@pytest.mark.parametrize("folder", sorted(MAY_IMPORT))
def test_each_folder_imports_only_the_layers_below_it(folder):
    allowed = MAY_IMPORT[folder]
    for name in _under(folder):
        beyond = {t for t in GRAPH[name] if not any(t == a or t.startswith(a + ".") for a in allowed)}
        assert not beyond, f"{name} imports {sorted(beyond)}; {folder} may import only {allowed} (docs/design.md)"


def test_every_components_module_sits_in_a_layer():
    assert sorted(m for m in _under("components") if m.count(".") == 1) == [
        "components.constants", "components.dependencies", "components.gcp", "components.kubernetes", "components.manifests",
        "components.model"]


def test_domain_logic_is_pulumi_free():
    for name in [*_under("components.model"), *_under("components.manifests"), "components.constants"]:
        assert not {m for m in _external(name) if m.startswith("pulumi")}, name


def test_each_platform_talks_to_its_own_provider():
    for name in _under("components.gcp"):
        assert "pulumi_kubernetes" not in _external(name), name
    for name in _under("components.kubernetes"):
        assert "pulumi_gcp" not in _external(name), name


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
    paths = module_names(ROOT, ("infra", "components", "policies"))
    readers = [p.relative_to(ROOT).as_posix() for p in paths.values() if reads_config(p)]
    assert readers == ["infra/config.py"]


def test_the_config_reader_check_sees_every_form(tmp_path):
    for text in ("import pulumi\npulumi.Config('x')", "from pulumi import Config", "from pulumi.runtime import config",
                 "import pulumi.runtime.config", "from pulumi.runtime.config import get_config"):
        (tmp_path / "m.py").write_text(text)
        assert reads_config(tmp_path / "m.py"), text
    (tmp_path / "m.py").write_text("import pulumi\npulumi.export('a', 1)\nargs.get_config()")
    assert not reads_config(tmp_path / "m.py")


def test_builders_render_resolved_values_and_never_read_the_stack_config():
    # resolve once (components/model/resolved.py), then render: no builder goes back to StackConfig
    for name in _under("components.manifests"):
        assert "components.model.config" not in GRAPH[name], name


def test_feature_rules_sit_between_the_schema_and_the_loader():
    # schema (stack.py and its sections) <- <feature>_checks.py <- checks.py (the ordered list) <- config.py (load)
    model = _under("components.model")
    rules = {m for m in model if m.endswith("_checks")}
    assert {f"components.model.{m}" for m in ("cluster.cluster_checks", "capacity.pools_checks", "workloads.workload_checks",
                                              "workloads.serving_checks", "workloads.service_checks")} <= rules
    loader, ordered = "components.model.config", "components.model.checks"
    for name in model:
        found = GRAPH[name]
        if name == loader:
            assert not found & rules, f"{name}: the loader runs the rules through checks.py, in its order"
        elif name == ordered:
            assert loader not in found, name
        elif name in rules:
            assert not found & (rules | {ordered, loader}), f"{name}: a feature's rules use the schema, not another feature's rules"
            # Rules are plain Python over the model: the standard library only (no Pulumi, no provider SDK).
            assert _external(name) <= set(sys.stdlib_module_names) | {"__future__"}, name
        else:
            assert not found & (rules | {ordered, loader}), f"{name}: the schema never reads the rules or the loader"


def test_each_concern_keeps_its_rules_beside_it():
    # <concern>.py beside <concern>_checks.py, where the concern has its own module
    model = set(_under("components.model"))
    for name in model:
        concern = name.removesuffix("_checks")
        if name.endswith("_checks") and any(m.rpartition(".")[2] == concern.rpartition(".")[2] for m in model - {name}):
            assert concern in model, f"{name} is not beside {concern.rpartition('.')[2]}.py"


def test_modules_a_reader_can_hold():
    long = []
    for path in module_names(ROOT).values():
        lines = path.read_text().count("\n")
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and LONG_MODULE_REASON not in doc:
            long.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not long, f"over {MAX_LINES} lines without '{LONG_MODULE_REASON} <why>' in the docstring: {long}"
