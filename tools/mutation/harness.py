"""Mutation testing (`make mutation`): change the code under test one small way at a time and see
whether the suite notices. A mutant the suite lets through is behaviour no test pins.

    python -m tools.mutation [--module PATH ...] [--sample N] [--jobs J] [--rerun JSON]

Operators: flipped comparisons (< <=, > >=, == !=, in / not in, is / is not), `and` <-> `or`, integer
constants +1, string constants changed ("x" -> "XXxXX"; not docstrings, not the text of f-strings), one
element dropped from a list, tuple or set display, one entry dropped from a dict display, `not x` -> `x`,
a returned value -> None, a call statement or `raise` deleted.

First the whole suite runs once under coverage (coverage_contexts.py), with a context per test (per
file where module-scoped fixtures make the file one unit, and in the Python subprocesses tests start);
a red suite stops here. Then each mutant runs, in a scratch copy made from one snapshot of the tree
(never the working tree; --jobs copies at once, each with a warm runner, runner.py), only the
tests that execute its lines: those that killed earlier mutants of the file first, then the fastest,
stopping at the first failure. Code run at import (a constant, a default, a class attribute) selects
the tests that run any of its module's code; a module of constants only, the whole suite. A mutant no
test executes is "uncovered" and counts as a survivor; one over its time limit counts as killed.
`--rerun` runs the survivors of an earlier result against the whole suite and writes the earlier
results with their new status; `--combine` merges result files of runs per module (a later file's
results for a source file replace earlier ones: a newer run of that file). Mutants listed in
tests/mutation-equivalent.txt behave exactly like the original and are left out of the score; an
entry names its mutant without a line number, `path:scope:column:operator  code  # why` (the column
counted in the line's code, indentation and comment left out), so code moved elsewhere keeps its entry
and a changed line drops it (EQUIVALENT_FORMAT). Results: --out (build/mutation.json) and tables per
file and per target (killed / scored, score). Each result is also appended to <out>.jsonl the moment
its mutant is done, so a run that stops early keeps what it measured: `--combine build/mutation.jsonl`
scores it.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import functools
import io
import json
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

from tools import output

PROJECT_ROOT = Path(__file__).resolve().parents[2]

FETCHED_INPUTS = ("crds", "charts", "serving-sources")  # under build/, read by the suite, never written by a mutant
TARGETS = ("components/model", "components/manifests", "infra/offline/critical_path.py", "policies/rules")
EQUIVALENT_FILE = PROJECT_ROOT / "tests" / "mutation-equivalent.txt"
_FLIP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the project
    line: int
    col: int  # ast's: UTF-8 bytes from the start of the line
    operator: str
    index: int  # which site, in walk order
    offset: int = 0  # characters from the start of `code`
    code: str = ""  # its (first) line's code: no indentation, no comment
    scope: str = ""  # the innermost def or class holding it (decorators, defaults and annotations included)

    @property
    def key(self) -> str:
        """Where it is in this tree (a result file written before results carried their code is matched on it)."""
        return f"{self.path}:{self.line}:{self.col}:{self.operator}"

    @property
    def anchor(self) -> str:
        """How tests/mutation-equivalent.txt names it: no line number, so moving code keeps the name."""
        return anchor(self.path, self.scope, self.offset, self.operator, self.code)


def anchor(path: str, scope: str, offset: int, operator: str, code: str) -> str:
    return f"{path}:{scope or '<module>'}:{offset}:{operator}  {code}"


def _collections(node: ast.AST) -> tuple[str, list[ast.expr]]:
    """('list' | 'tuple' | 'set' | 'dict', the nodes that stand for its elements) of a collection display whose
    elements a mutant may drop: a dict's entry by its key (by its value for `**other`); nothing for a target
    (`a, b = ...`) or a subscript's index (`dict[str, int]`, `x[i, j]`)."""
    if isinstance(node, (ast.List, ast.Tuple)) and isinstance(node.ctx, ast.Load):
        return type(node).__name__.lower(), list(node.elts)
    if isinstance(node, ast.Set):
        return "set", list(node.elts)
    if isinstance(node, ast.Dict):
        return "dict", [k if k is not None else v for k, v in zip(node.keys, node.values, strict=True)]
    return "", []


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(node, operator) for every mutation the tree allows, in a stable order. A dropped element's site is
    the element itself (a dict entry's, its key), so that it is named by its own line."""
    skipped: set[int] = set()  # annotations, the text of f-strings, docstrings, subscript indexes
    for node in ast.walk(tree):
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                skipped.update(id(n) for n in ast.walk(ann))
        if isinstance(node, ast.JoinedStr):  # its literal text (a format spec is one too); its {expressions} are code
            skipped.update(id(v) for v in node.values if isinstance(v, ast.Constant))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            skipped.add(id(node.value))  # a docstring (or any bare string statement): no behaviour
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
            skipped.add(id(node.slice))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        kind, elements = _collections(node)
        for element in elements:
            yield element, f"{kind}:drop"
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _FLIP:
                    yield node, f"compare{i}:{type(op).__name__}->{_FLIP[type(op)].__name__}"
        elif isinstance(node, ast.BoolOp):
            yield node, "boolop:" + ("and->or" if isinstance(node.op, ast.And) else "or->and")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield node, f"int:{node.value}->{node.value + 1}"
        elif isinstance(node, ast.Constant) and type(node.value) is str:
            yield node, "str:changed"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not:removed"
        elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield node, "return:None"
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # a docstring is no call: never deleted
            yield node, "statement:deleted"
        elif isinstance(node, ast.Raise):
            yield node, "raise:deleted"


def _code_lines(source: str) -> list[str]:
    """Each line of `source` (ast's numbering, from 1 at index 0) without its comment."""
    lines = [line.rstrip("\r") for line in source.split("\n")]
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):  # lines split at \n only, as above
        if tok.type == tokenize.COMMENT and tok.start[0] <= len(lines):
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return lines


def _scopes(tree: ast.AST) -> dict[int, str]:
    """id(node) -> dotted name of the innermost def or class whose subtree holds it ("" at module level)."""
    scopes: dict[int, str] = {}
    todo: list[tuple[ast.AST, str]] = [(tree, "")]
    while todo:
        node, scope = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = f"{scope}.{node.name}" if scope else node.name
        scopes[id(node)] = scope
        todo += [(child, scope) for child in ast.iter_child_nodes(node)]
    return scopes


def operator_class(operator: str) -> str:
    """'compare0:Lt->LtE' -> 'compare', 'int:5->6' -> 'int', 'str:changed' -> 'str:changed', 'dict:drop' -> 'dict:drop'."""
    head, _, tail = operator.partition(":")
    head = head.rstrip("0123456789")
    return f"{head}:{tail}" if head in ("str", "list", "tuple", "set", "dict", "return", "statement", "raise", "not", "boolop") else head


def mutants(path: Path, root: Path = PROJECT_ROOT) -> list[Mutant]:
    full = path.resolve()
    rel = full.relative_to(root.resolve()).as_posix() if full.is_relative_to(root.resolve()) else full.as_posix()
    source = path.read_text()
    tree = ast.parse(source, filename=rel)
    lines = _code_lines(source)
    scopes = _scopes(tree)
    found = []
    for i, (node, op) in enumerate(_sites(tree)):
        line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", 0)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        offset = len(text.encode()[:col].decode(errors="replace")) - (len(text) - len(text.lstrip()))
        found.append(Mutant(rel, line, col, op, i, offset, text.strip(), scopes[id(node)]))
    return found


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, operator: str):
        self.target, self.operator = target, operator

    def visit(self, node: ast.AST):  # type: ignore[override]
        op = self.operator
        if op.endswith(":drop") and any(e is self.target for e in _collections(node)[1]):
            if isinstance(node, ast.Dict):
                keep = [(k, v) for k, v in zip(node.keys, node.values, strict=True) if self.target not in (k, v)]
                node.keys, node.values = [k for k, _ in keep], [v for _, v in keep]
            else:
                assert isinstance(node, (ast.List, ast.Tuple, ast.Set))
                node.elts = [e for e in node.elts if e is not self.target]
            return node
        if node is not self.target:
            return self.generic_visit(node)
        if op.startswith("compare"):
            i = int(op[len("compare"):].split(":")[0])
            assert isinstance(node, ast.Compare)
            node.ops[i] = _FLIP[type(node.ops[i])]()
            return node
        if op.startswith("boolop"):
            assert isinstance(node, ast.BoolOp)
            node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            return node
        if op.startswith("int"):
            assert isinstance(node, ast.Constant) and type(node.value) is int
            value: int = node.value
            return ast.copy_location(ast.Constant(value + 1), node)
        if op == "str:changed":
            assert isinstance(node, ast.Constant) and type(node.value) is str
            return ast.copy_location(ast.Constant(f"XX{node.value}XX"), node)
        if op == "not:removed":
            assert isinstance(node, ast.UnaryOp)
            return node.operand
        if op == "return:None":
            return ast.copy_location(ast.Return(ast.Constant(None)), node)
        return ast.copy_location(ast.Pass(), node)  # statement or raise deleted


def mutated_source(path: Path, mutant: Mutant) -> str:
    """The file with the mutant applied, changed only where the mutant is: the mutated node's text spliced over its
    span, so the rest keeps its lines and comments (a test that reads the source, such as the ~500-line rule, sees
    the file as written). Checked against the mutated tree; where the splice would differ, the whole tree unparsed."""
    source = path.read_text()
    tree = ast.parse(source)
    node, op = list(_sites(tree))[mutant.index]
    assert op == mutant.operator
    if op.endswith(":drop"):  # the collection loses the element: its own text is replaced
        span = next(n for n in ast.walk(tree) if any(e is node for e in _collections(n)[1]))
        new = _Apply(node, op).visit(span)
    else:
        span, new = node, _Apply(node, op).visit(node)
    text = ast.unparse(ast.fix_missing_locations(new))
    if not isinstance(new, (ast.stmt, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict)):
        text = f"({text})"  # an operator's result: as an operand it keeps its own precedence
    spliced = _splice(source, span, text)
    whole_tree = ast.parse(source)
    whole = _Apply(*list(_sites(whole_tree))[mutant.index]).visit(whole_tree)
    try:
        # compared as source reads back (an emptied set display is written {*()} either way)
        if spliced is not None and ast.dump(ast.parse(spliced)) == ast.dump(ast.parse(ast.unparse(ast.fix_missing_locations(whole)))):
            return spliced
    except SyntaxError:
        pass
    return ast.unparse(ast.fix_missing_locations(whole))


def _splice(source: str, node: ast.AST, text: str) -> Optional[str]:
    """`source` with `node`'s span (ast offsets count UTF-8 bytes) replaced by `text`."""
    start_line, end_line = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    start_col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if None in (start_line, end_line, start_col, end_col):
        return None
    lines = source.encode().splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    raw = source.encode()
    start, end = offsets[start_line - 1] + start_col, offsets[end_line - 1] + end_col  # type: ignore[operator]
    return (raw[:start] + text.encode() + raw[end:]).decode()


EQUIVALENT_FORMAT = """\
One mutant a line: `path:scope:column:operator  code  # why it is equivalent`, e.g.
    components/model/capacity/tpu.py:_canonical_3d:31:int:1->2  for b in range(a, chips // a + 1, 4):  # range end exclusive: ...
`code` is the mutated node's (first) line as it reads in the source, without indentation or comment;
`column` counts characters from the start of that code; `scope` is the innermost def or class holding
the node (Class.method; its decorators, defaults and annotations count as inside it), <module> if
none. No line number: moving the code keeps the entry; changing the line, or renaming its function,
leaves the entry naming no mutant, which the suite refuses (tests/test_mutation_harness.py). A line
that occurs twice in one scope with the same mutant at the same column is listed twice, once for each:
a third copy is then not taken for equivalent unseen."""


@dataclass(frozen=True)
class Equivalent:
    """One entry of tests/mutation-equivalent.txt."""
    anchor: str
    reason: str
    lineno: int  # in the list


def read_equivalents(path: Optional[Path] = None) -> list[Equivalent]:
    """The entries (EQUIVALENT_FORMAT) of the list; lines starting with # are comments. The reason is
    what follows the last `  # ` (a comment of the code is not part of it; a string in it may hold one)."""
    path = path or EQUIVALENT_FILE
    if not path.exists():
        return []
    entries = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, _, reason = line.rpartition("  # ") if "  # " in line else (line, "", "")  # the code may hold "  # " in a string
        head, _, code = body.partition(" ")
        entries.append(Equivalent(f"{head}  {code.strip()}", reason.strip(), n))
    return entries


def equivalent_problems(entries: list[Equivalent], found: Iterable[Mutant]) -> list[str]:
    """What is wrong with the list against the mutants `found` (every mutant of the targets): an entry
    without a reason, one naming no mutant (stale: its line changed or went; it would hide nothing, or
    the wrong mutant once the line came back elsewhere), or a code line listed a different number of
    times than it has such mutants."""
    problems = [f"line {e.lineno}: {e.anchor}: no reason (`  # why`)" for e in entries if not e.reason]
    present = Counter(m.anchor for m in found)
    for name, listed in Counter(e.anchor for e in entries).items():
        lineno = next(e.lineno for e in entries if e.anchor == name)
        if not present[name]:
            problems.append(f"line {lineno}: {name}: no such mutant (the line changed or is gone)")
        elif present[name] != listed:
            problems.append(f"line {lineno}: {name}: listed {listed} times, {present[name]} such mutants (list each once)")
    return problems


def equivalent_anchors(entries: list[Equivalent], found: Iterable[str]) -> set[str]:
    """The anchors left out of the score among `found` (the anchors of every mutant of the files at
    hand): those listed at least as many times as they occur. A line listed once that now occurs twice
    is scored: the list cannot say which copy it meant."""
    listed = Counter(e.anchor for e in entries)
    present = Counter(found)
    ambiguous = sorted(a for a in present if 0 < listed[a] < present[a])
    if ambiguous:
        print(f"listed as equivalent but found more often than listed, so scored: {ambiguous}", file=sys.stderr)
    return {a for a in present if listed[a] >= present[a]}


def target_files(modules: list[str]) -> list[Path]:
    files: list[Path] = []
    for m in modules:
        p = (PROJECT_ROOT / m).resolve()
        files += sorted(f for f in p.rglob("*.py") if f.name != "__init__.py") if p.is_dir() else [p]
    return files


_FAILED = re.compile(r"^(?:FAILED|ERROR) (tests/[^\s:]+\.py(?:::.*?)?)(?: - .*)?$", re.M)


class WarmRunner:
    """A runner.py process in one scratch copy: pytest with the SDKs already imported."""

    def __init__(self, workdir: Path):
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("COVERAGE_PROCESS_CONFIG", None)
        self.process = subprocess.Popen([sys.executable, "-m", "tools.mutation.runner"], cwd=workdir, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self._answer()  # ready

    def _answer(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the mutation runner stopped")
        return json.loads(line)

    def run(self, tests: list[str], timeout: float) -> tuple[Optional[bool], str, str]:
        """(True green / False red / None over time, the test that failed first, its first `E` line: what a reader
        checks a kill against, e.g. that it is the mutant's doing and not the environment's)."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"tests": tests, "timeout": timeout}) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        if answer["code"] is None:
            return None, "", ""
        # Nothing collected, or a test id pytest does not know: the harness is wrong, not the mutant. (A
        # conftest the mutant breaks is a usage error too, exit 4: that is a kill.)
        if answer["code"] == 5 or (answer["code"] == 4 and "not found:" in answer["output"]):
            raise RuntimeError(f"pytest could not run {tests[:3]}...:\n{answer['output']}")
        failed = _FAILED.search(answer["output"])
        why = next((line[1:].strip()[:200] for line in answer["output"].splitlines() if line.startswith("E ")), "")
        return answer["code"] == 0, failed.group(1) if failed else "", why

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=30)


# The harness's own tests read the target sources (to list mutants), so any mutant "fails" them.
HARNESS_TESTS = ("tests/test_mutation_harness.py",)


def test_files(workdir: Path) -> list[str]:
    return sorted(t for p in (workdir / "tests").glob("test_*.py") if (t := p.relative_to(workdir).as_posix()) not in HARNESS_TESTS)


@dataclass
class CoverageMap:
    """Which tests run which line of each target file, from one coverage run of the whole suite. A
    context is a test's node id, or a test file's path (the file's import-time code, or a file whose
    shared fixtures make it one unit): run the whole file. "" is the suite's own import time: run all."""
    lines: dict[str, dict[int, set[str]]]  # project-relative path -> line -> contexts
    durations: dict[str, float]  # context -> seconds under coverage
    all_tests: list[str]  # test files

    def file_seconds(self, test_file: str) -> float:
        return sum(s for c, s in self.durations.items() if c == test_file or c.startswith(test_file + "::"))


@dataclass
class KillHistory:
    """Which tests (and test files) killed earlier mutants of each source file: they run first for its
    next ones."""
    kills: dict[str, dict[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def credit(self, source: str, test: str) -> None:
        """`test`: the node id (or file) that failed first."""
        with self.lock:
            counts = self.kills.setdefault(source, {})
            for key in {test, test.split("::", 1)[0]}:
                counts[key] = counts.get(key, 0) + 1

    def count(self, source: str, test: str) -> int:
        with self.lock:
            return self.kills.get(source, {}).get(test, 0)


_COVERAGE_RC = """\
[run]
source = {sources}
parallel = true
patch = subprocess
data_file = {data}
"""


def coverage_map(workdir: Path, files: list[str], scratch: Path) -> Optional[CoverageMap]:
    """Run the whole suite once under coverage, a context per test (see coverage_contexts); None if red."""
    import coverage  # only `make mutation` needs it

    rc = scratch / "coveragerc"
    rc.write_text(_COVERAGE_RC.format(sources=",".join(sorted({(workdir / rel).parent.as_posix() for rel in files})),
                                      data=(scratch / ".coverage").as_posix()))
    durations_file = scratch / "durations.json"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "MUTATION_DURATIONS": str(durations_file)}
    cmd = [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "-n", "0", "-p", "tools.mutation.coverage_contexts", *(f"--ignore={t}" for t in HARNESS_TESTS), "tests"]
    run = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        print("\n".join((run.stdout + run.stderr).splitlines()[-30:]), file=sys.stderr)
        return None
    cov = coverage.Coverage(config_file=str(rc), data_file=str(scratch / ".coverage"))
    cov.combine(data_paths=[str(scratch)], keep=False)
    data = cov.get_data()
    lines: dict[str, dict[int, set[str]]] = {}
    for rel in files:
        by_line = data.contexts_by_lineno(str(workdir / rel))
        lines[rel] = {n: set(contexts) for n, contexts in by_line.items()}
    return CoverageMap(lines, json.loads(durations_file.read_text()), test_files(workdir))


@functools.lru_cache(maxsize=8)
def _parsed(source: str) -> tuple[ast.Module, list[tuple[ast.AST, str]], dict[int, ast.AST]]:
    """One parse of a source (its mutation sites, each node's parent) for the read-only questions
    asked of every mutant of a file; never handed to _Apply, which changes the tree it is given."""
    tree = ast.parse(source)
    parents = {id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    return tree, list(_sites(tree)), parents


def mutant_lines(path: Path, mutant: Mutant) -> set[int]:
    """The lines whose execution would run the mutated node: its own lines, and those of the simple
    statement holding it (or the first line of the compound statement whose header holds it)."""
    tree, sites, _ = _parsed(path.read_text())
    node, _ = sites[mutant.index]
    stmt: Optional[ast.stmt] = None
    for candidate in ast.walk(tree):
        if isinstance(candidate, ast.stmt) and any(n is node for n in ast.walk(candidate)):
            if stmt is None or candidate.lineno >= stmt.lineno and (candidate.end_lineno or 0) <= (stmt.end_lineno or 0):
                stmt = candidate
    lines = set(range(getattr(node, "lineno", 0), (getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)) + 1))
    if stmt is not None:
        compound = any(isinstance(getattr(stmt, f, None), list) and getattr(stmt, f) and isinstance(getattr(stmt, f)[0], ast.stmt)
                       for f in ("body", "orelse", "finalbody", "handlers", "cases"))
        lines |= {stmt.lineno} if compound else set(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def runs_at_import(path: Path, mutant: Mutant) -> bool:
    """Whether the mutated node runs when its module is imported (a module constant, a default value,
    a class attribute), not when a function is called. Coverage credits such a line to whichever test
    imported the module first, so its own contexts say little about which tests depend on it."""
    _, sites, parents = _parsed(path.read_text())
    node, _ = sites[mutant.index]
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if isinstance(parent, ast.Lambda) or (isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef))
                                              and any(child is stmt for stmt in parent.body)):
            return False
        child, parent = parent, parents.get(id(parent))
    return True


def constants_only(path: Path) -> bool:
    """A module that runs nothing after import (no function or lambda): every line of it is credited
    to the tests that happened to import it first, so no test of the module's own says who reads it."""
    return not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) for n in ast.walk(_parsed(path.read_text())[0]))


def select_tests(cmap: CoverageMap, rel: str, lines: set[int], history: Optional[KillHistory] = None,
                 first: tuple[str, ...] = (), everything: bool = False, at_import: bool = False) -> list[str]:
    """pytest arguments for the tests that run any of `lines`: node ids, or whole files. Files that
    killed earlier mutants of `rel` come first (then `first`, then the fastest). Code run at import
    (`at_import`, or a line run at the suite's own import time) selects the tests that run any line of
    its module, which may miss a test that reads a constant directly: `--rerun` checks each survivor
    against the whole suite (`everything`). [] if no test runs the lines."""
    contexts: set[str] = set()
    for n in lines:
        contexts |= cmap.lines.get(rel, {}).get(n, set())
    if at_import or "" in contexts:  # import time (a module constant): the tests that run any of the module's code
        contexts = set().union(*cmap.lines.get(rel, {}).values()) - {""}
    covering = {c.split("::", 1)[0] for c in contexts}  # a whole-suite run still starts with the tests that run the lines
    if everything or not contexts and any(cmap.lines.get(rel, {}).get(n) for n in lines):
        contexts = set(cmap.all_tests)
    files = {c for c in contexts if c in cmap.all_tests}
    chosen = files | {c for c in contexts if "::" in c and c.split("::", 1)[0] in cmap.all_tests and c.split("::", 1)[0] not in files}

    def order(arg: str) -> tuple:
        test_file = arg.split("::", 1)[0]
        own = history.count(rel, arg) if history and arg not in files else 0
        kills = history.count(rel, test_file) if history else 0
        seconds = cmap.file_seconds(arg) if arg in files else cmap.durations.get(arg, 1e9)
        return (-own, -kills, test_file not in first, test_file not in covering, seconds, arg)

    return sorted(chosen, key=order)


def _run_one(runner: WarmRunner, workdir: Path, source: Path, rel: str, mutant: Mutant, tests: list[str], timeout: float) -> tuple[str, str, str]:
    """('killed' / 'survived' / 'timeout', the test that failed first, its first `E` line)."""
    original = (workdir / rel).read_text()
    (workdir / rel).write_text(mutated_source(source, mutant))
    try:
        result, failed, why = runner.run(tests, timeout)
    finally:
        (workdir / rel).write_text(original)
    return {True: "survived", False: "killed", None: "timeout"}[result], failed, why


STATUSES = ("killed", "timeout", "survived", "uncovered", "equivalent", "gone")


def module_of(path: str) -> str:
    """The target (TARGETS) a file belongs to, or the file itself."""
    return next((t for t in TARGETS if path == t or path.startswith(t + "/")), path)


def tally(results: list[dict]) -> dict[str, dict[str, int]]:
    per_file: dict[str, dict[str, int]] = {}
    for r in results:
        c = per_file.setdefault(r["path"], dict.fromkeys(STATUSES, 0))
        c[r["status"]] += 1
    return per_file


def _key(r: dict) -> str:
    return f"{r['path']}:{r['line']}:{r['col']}:{r['operator']}"


def _anchor(r: dict) -> str:
    """A result's Mutant.anchor; "" for a result written before results carried their code."""
    if not (isinstance(r.get("code"), str) and isinstance(r.get("offset"), int) and isinstance(r.get("scope"), str)):
        return ""
    return anchor(r["path"], r["scope"], r["offset"], r["operator"], r["code"])


def _match(r: dict) -> str:
    """What a rerun matches an earlier result on: its anchor (the code, not the line: the tree may have moved since,
    and the mutant now at that line is another one), or its line key for a result without code."""
    return _anchor(r) or _key(r)


def merge(earlier: list[dict], again: list[dict], equivalent: set[str]) -> list[dict]:
    """The earlier results with the re-run mutants' new status, and any mutant listed as equivalent
    (`equivalent`: anchors) since marked so."""
    newer = {_match(r): r for r in again}
    return [{**r, "status": "equivalent"} if _anchor(r) in equivalent else newer.get(_match(r), r) for r in earlier]


class ResultFileError(ValueError):
    """A --combine or --rerun file that is not a mutation result file."""


def read_results(path: Path) -> list[dict]:
    """The results of a --out file (JSON) or of a run's progress file (JSON lines, one mutant a line;
    a line cut short by a stop is skipped)."""
    try:
        text = path.read_text()
        if path.suffix != ".jsonl":
            results = json.loads(text)["results"]
            if not isinstance(results, list) or not all(_is_result(r) for r in results):
                raise TypeError("'results' is not a list of mutant results")
            return results
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
        raise ResultFileError(f"{path}: not a mutation result file ({e.__class__.__name__}: {e})"[:300]) from None
    results = []
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if _is_result(r):
            results.append(r)
    return results


def _is_result(r: object) -> bool:
    return (isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("path", "operator", "status"))
            and all(isinstance(r.get(k), int) for k in ("line", "col")) and r["status"] in STATUSES)


def rerun_keys(earlier: list[dict], paths: set[str]) -> set[str]:
    """The survivors of an earlier run that a rerun of `paths` runs again (another file's survivors are
    not this run's: they keep their status, and are not reported gone)."""
    return {_match(r) for r in earlier if r["status"] in ("survived", "uncovered") and r["path"] in paths}


def _score(per_file: dict[str, dict[str, int]]) -> tuple[int, int]:
    killed = sum(c["killed"] + c["timeout"] for c in per_file.values())
    return killed, killed + sum(c["survived"] + c["uncovered"] for c in per_file.values())


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation", description=(__doc__ or "").split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="exit status: 0 the run finished (whatever the score); 2 bad arguments or a red suite")
    parser.add_argument("--module", action="append", help="file or directory to mutate (repeatable); default: the four targets")
    parser.add_argument("--sample", type=int, default=0, help="mutants per file, drawn with --seed (default 0: all)")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--timeout", type=float, default=300, help="most seconds per mutant before it counts as killed")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants run at once, each in its own copy")
    parser.add_argument("--first", action="append", default=[], metavar="TEST_FILE",
                        help="test file to run before the others that cover a mutant")
    parser.add_argument("--rerun", type=Path, metavar="JSON",
                        help="run the survivors of this earlier result file against the whole suite; --out then holds "
                             "the earlier results with their new status")
    parser.add_argument("--combine", type=Path, nargs="+", metavar="JSON",
                        help="only merge result files (e.g. of runs per module) into --out, and print their scores; "
                             "a later file's results for a source file replace the earlier files' for it")
    parser.add_argument("--list", action="store_true", help="only count the mutants per file, then per operator in all")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "build" / "mutation.json")
    args = parser.parse_args(argv)
    try:  # the results and the progress file beside them, before any mutant runs
        output.checked(args.out)
        output.checked(args.out.with_suffix(".jsonl"))
    except output.OutputError as e:
        parser.error(str(e))
    files = target_files(args.module or list(TARGETS))
    if not files:
        parser.error("no Python files under --module")
    if args.jobs < 1 or args.sample < 0 or not 0 < args.timeout <= 86400:
        parser.error("--jobs must be at least 1, --sample at least 0, --timeout 0..86400 seconds")
    entries = read_equivalents()
    try:
        results_of = {f: read_results(f) for f in [*(args.combine or []), *([args.rerun] if args.rerun else [])]}
    except ResultFileError as e:
        parser.error(str(e))
    if args.combine:
        combined: list[dict] = []
        for f in args.combine:  # a later file's results for a source file replace the earlier ones (a newer run of it)
            later = results_of[f]
            paths = {r["path"] for r in later}
            combined = [r for r in combined if r["path"] not in paths] + later
        equivalent = equivalent_anchors(entries, (_anchor(r) for r in combined))
        return report(merge(combined, [], equivalent), args.out, {"combined": [str(f) for f in args.combine]})
    if args.list:
        classes: Counter[str] = Counter()
        for f in files:
            found = mutants(f)
            classes.update(operator_class(m.operator) for m in found)
            print(f"{len(found):5d}  {f.relative_to(PROJECT_ROOT)}")
        print(f"{sum(classes.values()):5d}  in all: " + ", ".join(f"{n} {c}" for c, n in sorted(classes.items())))
        return 0
    rng = random.Random(args.seed)
    rerun = None
    earlier: list[dict] = []
    if args.rerun:
        earlier = results_of[args.rerun]
        rerun = rerun_keys(earlier, {f.relative_to(PROJECT_ROOT).as_posix() for f in files})
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        # One snapshot of the tree: the copies, and the pristine sources the mutants are made from (the
        # working tree may change while the run goes on).
        copies: list[Path] = []
        for j in range(args.jobs):
            work = Path(tmp) / f"copy{j}" / "project"
            shutil.copytree(copies[0] if copies else PROJECT_ROOT, work, symlinks=True,
                            ignore=shutil.ignore_patterns(".venv", "build", "__pycache__", ".pytest_cache", "node_modules"))
            # what `make crds` and `make serving-sources` fetched (build/ is not copied): the upstream CRDs and
            # charts the schema, chart and policy tests read, the vLLM sources the serving tests read
            (work / "build").mkdir()
            for fetched in FETCHED_INPUTS:
                if (PROJECT_ROOT / "build" / fetched).exists():
                    os.symlink(PROJECT_ROOT / "build" / fetched, work / "build" / fetched)
            copies.append(work)
        pristine = Path(tmp) / "pristine"
        rels = [f.relative_to(PROJECT_ROOT).as_posix() for f in files]
        for rel in rels:
            (pristine / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(copies[0] / rel, pristine / rel)
        todo: list[tuple[Path, Mutant]] = []
        every = [_anchor(r) for r in earlier if r["path"] not in rels]  # every mutant at hand: equivalent_anchors counts them
        for rel in rels:
            f = pristine / rel
            all_mutants = mutants(f, pristine)
            every += [m.anchor for m in all_mutants]
            if rerun is not None:
                chosen = [m for m in all_mutants if m.anchor in rerun or m.key in rerun]
            elif args.sample == 0 or args.sample >= len(all_mutants):
                chosen = all_mutants
            else:
                chosen = sorted(rng.sample(all_mutants, args.sample), key=lambda m: m.index)
            todo += [(f, m) for m in chosen]
        equivalent = equivalent_anchors(entries, every)
        if rerun is not None:
            # a survivor whose code was since deleted or moved: no longer a mutant of this tree (listed)
            gone = rerun - {m.anchor for _, m in todo} - {m.key for _, m in todo}
            results += [{**r, "status": "gone", "seconds": 0.0} for r in earlier if _match(r) in gone]
        start = time.perf_counter()
        scratch = Path(tmp) / "coverage"
        scratch.mkdir()
        cmap = coverage_map(copies[0], rels, scratch)
        if cmap is None:
            print("error: the suite fails without any mutant; fix it first (make test)", file=sys.stderr)
            return 2
        baseline = time.perf_counter() - start
        print(f"baseline: suite green under coverage in {baseline:.0f} s; {len(todo)} mutants, {args.jobs} at a time", flush=True)
        free: queue.Queue[tuple[Path, WarmRunner]] = queue.Queue()
        runners = [WarmRunner(work) for work in copies]
        for work, runner in zip(copies, runners, strict=True):
            free.put((work, runner))

        history = KillHistory()
        progress = args.out.with_suffix(".jsonl")
        progress.parent.mkdir(parents=True, exist_ok=True)
        progress.write_text("")
        progress_lock = threading.Lock()

        def record(r: dict) -> dict:
            with progress_lock, progress.open("a") as f:
                f.write(json.dumps(r) + "\n")
            return r

        def run(item: tuple[Path, Mutant]) -> dict:
            f, m = item
            rel = m.path
            if m.anchor in equivalent:
                return record({**asdict(m), "status": "equivalent", "seconds": 0.0, "tests": 0, "killedBy": ""})
            if rerun is not None or constants_only(f):  # the whole suite, not the selection
                tests = select_tests(cmap, rel, mutant_lines(f, m), history, tuple(args.first), everything=True,
                                     at_import=runs_at_import(f, m))
            else:
                tests = select_tests(cmap, rel, mutant_lines(f, m), history, tuple(args.first), at_import=runs_at_import(f, m))
            if not tests:
                return record({**asdict(m), "status": "uncovered", "seconds": 0.0, "tests": 0, "killedBy": ""})
            seconds = sum(cmap.file_seconds(t) if "::" not in t else cmap.durations.get(t, 10.0) for t in tests)
            budget = min(args.timeout, max(60.0, 5 * seconds))
            if rerun is not None:  # the whole suite: a survivor runs all of it, which must not be cut short into a "kill"
                budget = max(args.timeout, 1.5 * baseline)
            work, runner = free.get()
            began = time.perf_counter()
            try:
                status, failed, why = _run_one(runner, work, f, rel, m, tests, budget)
            finally:
                free.put((work, runner))
            if failed:
                history.credit(rel, failed)
            return record({**asdict(m), "status": status, "seconds": round(time.perf_counter() - began, 1), "tests": len(tests),
                           "killedBy": failed, "why": why})

        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for done, r in enumerate(pool.map(run, todo), 1):
                results.append(r)
                print(f"[{done}/{len(todo)}] {r['status']:10s} {r['path']}:{r['line']}:{r['col']}:{r['operator']}  ({r['tests']} tests/files, {r['seconds']} s{', ' + r['killedBy'] if r['killedBy'] else ''})"
                      + (f"\n    {r['why']}" if r.get("why") else ""), flush=True)
        for runner in runners:
            runner.close()
        elapsed = time.perf_counter() - start
    results = merge(earlier, results, equivalent) if rerun is not None else merge(results, [], equivalent)
    return report(results, args.out, {"seed": args.seed, "sample": args.sample, "rerunOf": str(args.rerun or ""),
                                      "minutes": round(elapsed / 60, 1)})


def report(results: list[dict], out: Path, meta: dict) -> int:
    """Print the scores per file, per target and in all; write them with every mutant's status."""
    per_file = tally(results)
    print(f"\n{'file':52s} {'killed':>6s} {'scored':>6s} {'score':>6s}")
    for path, c in per_file.items():
        killed, scored = _score({path: c})
        print(f"{path:52s} {killed:6d} {scored:6d} {(100 * killed / scored if scored else 100):5.1f}%")
    per_module = {m: {k: sum(c[k] for p, c in per_file.items() if module_of(p) == m) for k in STATUSES}
                  for m in dict.fromkeys(module_of(p) for p in per_file)}
    print(f"\n{'module':52s} {'killed':>6s} {'scored':>6s} {'score':>6s}  equivalent")
    for m, c in per_module.items():
        killed, scored = _score({m: c})
        print(f"{m:52s} {killed:6d} {scored:6d} {(100 * killed / scored if scored else 100):5.1f}%  {c['equivalent']}")
    killed, scored = _score(per_file)
    print(f"{'all':52s} {killed:6d} {scored:6d} {(100 * killed / scored if scored else 100):5.1f}%")
    output.write_text(out, json.dumps({**meta, "perModule": per_module, "perFile": per_file, "results": results}, indent=2))
    survivors = [f"{r['path']}:{r['line']} {r['operator']}" + (" (no test runs it)" if r["status"] == "uncovered" else "")
                 for r in results if r["status"] in ("survived", "uncovered")]
    gone = [_key(r) for r in results if r["status"] == "gone"]
    if gone:
        print(f"not in the tree any more (code changed since the earlier run; not scored): {gone}")
    print(f"wrote {out}; survivors: {survivors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
