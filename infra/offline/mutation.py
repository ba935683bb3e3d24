"""Mutation testing (`make mutation`): change the code under test one small way at a time and see
whether the suite notices. A mutant the suite lets through is behaviour no test pins.

    python -m infra.offline.mutation [--module PATH ...] [--sample N] [--seed S] [--timeout SEC]

Operators: flipped comparisons (< <=, > >=, == !=, in / not in, is / is not), `and` <-> `or`, integer
constants +1, `not x` -> `x`, a returned value -> None, a call statement or `raise` deleted. Each mutant
runs the test suite (fast pure tests first, stop at the first failure) in a scratch copy of the project,
never in the working tree; a run over the time limit counts as killed. Mutants listed in
tests/mutation-equivalent.txt (`path:line:col:operator  # why`) behave exactly like the original and are
left out of the score. The sample is reproducible (--seed). Results: build/mutation.json and a per-module
table (killed / scored, score).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from .engine import PROJECT_ROOT

TARGETS = ("components/model", "components/manifests", "infra/offline/critical_path.py", "policies/rules")
# Fast, pure tests first: most mutants die there in a second.
FAST_TESTS = ("tests/test_pinned_behaviour.py", "tests/test_tpu_catalog.py", "tests/test_config_errors.py",
              "tests/test_admission.py", "tests/test_plan_summary.py", "tests/test_critical_path.py")
EQUIVALENT_FILE = PROJECT_ROOT / "tests" / "mutation-equivalent.txt"
_FLIP: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the project
    line: int
    col: int
    operator: str
    index: int  # which site, in walk order

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.col}:{self.operator}"


def _sites(tree: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """(node, operator) for every mutation the tree allows, in a stable order."""
    annotations: set[int] = set()
    for node in ast.walk(tree):
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                annotations.update(id(n) for n in ast.walk(ann))
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _FLIP:
                    yield node, f"compare{i}:{type(op).__name__}->{_FLIP[type(op)].__name__}"
        elif isinstance(node, ast.BoolOp):
            yield node, "boolop:" + ("and->or" if isinstance(node.op, ast.And) else "or->and")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield node, f"int:{node.value}->{node.value + 1}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield node, "not:removed"
        elif isinstance(node, ast.Return) and node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield node, "return:None"
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # a docstring is no call: never deleted
            yield node, "statement:deleted"
        elif isinstance(node, ast.Raise):
            yield node, "raise:deleted"


def mutants(path: Path) -> list[Mutant]:
    rel = path.resolve().relative_to(PROJECT_ROOT).as_posix()
    tree = ast.parse(path.read_text(), filename=rel)
    return [Mutant(rel, getattr(node, "lineno", 0), getattr(node, "col_offset", 0), op, i)
            for i, (node, op) in enumerate(_sites(tree))]


class _Apply(ast.NodeTransformer):
    def __init__(self, target: ast.AST, operator: str):
        self.target, self.operator = target, operator

    def visit(self, node: ast.AST):  # type: ignore[override]
        if node is not self.target:
            return self.generic_visit(node)
        op = self.operator
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
        if op == "not:removed":
            assert isinstance(node, ast.UnaryOp)
            return node.operand
        if op == "return:None":
            return ast.copy_location(ast.Return(ast.Constant(None)), node)
        return ast.copy_location(ast.Pass(), node)  # statement or raise deleted


def mutated_source(path: Path, mutant: Mutant) -> str:
    tree = ast.parse(path.read_text())
    node, op = list(_sites(tree))[mutant.index]
    assert op == mutant.operator
    tree = _Apply(node, op).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def equivalent_keys() -> set[str]:
    if not EQUIVALENT_FILE.exists():
        return set()
    return {line.split("#", 1)[0].strip() for line in EQUIVALENT_FILE.read_text().splitlines() if line.split("#", 1)[0].strip()}


def target_files(modules: list[str]) -> list[Path]:
    files: list[Path] = []
    for m in modules:
        p = (PROJECT_ROOT / m).resolve()
        files += sorted(f for f in p.rglob("*.py") if f.name != "__init__.py") if p.is_dir() else [p]
    return files


def _pytest(workdir: Path, tests: list[str], timeout: float, workers: int) -> Optional[bool]:
    """True green, False red, None over time."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-n", str(workers), *tests]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        return subprocess.run(cmd, cwd=workdir, capture_output=True, timeout=timeout, env=env).returncode == 0
    except subprocess.TimeoutExpired:
        return None


def _run_tests(workdir: Path, timeout: float, first: tuple[str, ...] = ()) -> str:
    """'killed' (a test failed or the run timed out) or 'survived'. The fast pure tests (and `first`) run
    first, in one process; only a mutant they miss pays for the whole suite (two workers)."""
    fast = [t for t in (*first, *FAST_TESTS) if (workdir / t).exists()]
    if _pytest(workdir, fast, timeout, 0) is not True:
        return "killed"
    rest = sorted(p.relative_to(workdir).as_posix() for p in (workdir / "tests").glob("test_*.py"))
    rest = [t for t in rest if t not in fast]
    return "survived" if _pytest(workdir, rest, timeout, 2) is True else "killed"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.offline.mutation", description=(__doc__ or "").split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="exit status: 0 the run finished (whatever the score); 2 bad arguments or a red suite")
    parser.add_argument("--module", action="append", help="file or directory to mutate (repeatable); default: the four targets")
    parser.add_argument("--sample", type=int, default=20, help="mutants per file, drawn with --seed (0: all)")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--timeout", type=float, default=300, help="seconds per mutant before it counts as killed")
    parser.add_argument("--first", action="append", default=[], metavar="TEST_FILE",
                        help="test file to run with the fast ones (e.g. tests/test_policies.py for policies/rules)")
    parser.add_argument("--rerun", type=Path, metavar="JSON",
                        help="run only the mutants that survived in this earlier result file (after adding tests)")
    parser.add_argument("--list", action="store_true", help="only count the mutants per file")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "build" / "mutation.json")
    args = parser.parse_args(argv)
    files = target_files(args.module or list(TARGETS))
    if not files:
        parser.error("no Python files under --module")
    equivalent = equivalent_keys()
    if args.list:
        for f in files:
            print(f"{len(mutants(f)):5d}  {f.relative_to(PROJECT_ROOT)}")
        return 0
    results: list[dict] = []
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "project"
        shutil.copytree(PROJECT_ROOT, work, symlinks=True, ignore=shutil.ignore_patterns(".venv", "build", "__pycache__", ".pytest_cache", "node_modules"))
        shared = PROJECT_ROOT.parent / "shared"
        if shared.exists() and not (Path(tmp) / "shared").exists():
            os.symlink(shared, Path(tmp) / "shared")  # ../shared, as the schema tests expect
        start = time.perf_counter()
        if _run_tests(work, args.timeout, tuple(args.first)) != "survived":
            print("error: the suite fails without any mutant; fix it first (make test)", file=sys.stderr)
            return 2
        print(f"baseline: suite green in {time.perf_counter() - start:.0f} s", flush=True)
        rerun = None
        if args.rerun:
            rerun = {f"{r['path']}:{r['line']}:{r['col']}:{r['operator']}" for r in json.loads(args.rerun.read_text())["results"] if r["status"] == "survived"}
        for f in files:
            all_mutants = mutants(f)
            if rerun is not None:
                chosen = [m for m in all_mutants if m.key in rerun]
            elif args.sample == 0 or args.sample >= len(all_mutants):
                chosen = all_mutants
            else:
                chosen = sorted(rng.sample(all_mutants, args.sample), key=lambda m: m.index)
            rel = f.relative_to(PROJECT_ROOT).as_posix()
            original = (work / rel).read_text()
            for m in chosen:
                if m.key in equivalent:
                    results.append({**asdict(m), "status": "equivalent", "seconds": 0.0})
                    continue
                start = time.perf_counter()
                (work / rel).write_text(mutated_source(f, m))
                try:
                    status = _run_tests(work, args.timeout, tuple(args.first))
                finally:
                    (work / rel).write_text(original)
                results.append({**asdict(m), "status": status, "seconds": round(time.perf_counter() - start, 1)})
                print(f"{status:9s} {m.key}", flush=True)
    per_file: dict[str, dict[str, int]] = {}
    for r in results:
        c = per_file.setdefault(r["path"], {"killed": 0, "survived": 0, "equivalent": 0})
        c[r["status"]] += 1
    print(f"\n{'file':60s} {'killed':>6s} {'scored':>6s} {'score':>6s}")
    for path, c in per_file.items():
        scored = c["killed"] + c["survived"]
        print(f"{path:60s} {c['killed']:6d} {scored:6d} {(100 * c['killed'] / scored if scored else 100):5.0f}%")
    killed = sum(c["killed"] for c in per_file.values())
    scored = killed + sum(c["survived"] for c in per_file.values())
    print(f"{'all':60s} {killed:6d} {scored:6d} {(100 * killed / scored if scored else 100):5.0f}%")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"seed": args.seed, "sample": args.sample, "perFile": per_file, "results": results}, indent=2))
    print(f"wrote {args.out}; survivors: {[r['path'] + ':' + str(r['line']) + ' ' + r['operator'] for r in results if r['status'] == 'survived']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
