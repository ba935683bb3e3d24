"""The mutation harness makes the mutants it says it makes, and never touches the working tree."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

from tools.mutation import harness as mutation

ROOT = Path(__file__).resolve().parents[1]


def test_mutants_of_a_small_module():
    path = ROOT / "components/model/capacity/rollout.py"
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
    path = ROOT / "components/model/cost/summary.py"
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
    assert "components/model/capacity/tpu.py" in files and "policies/rules/tpu_pool_catalog.py" in files
    assert not any(f.endswith("__init__.py") for f in files)


def test_mutant_lines_cover_the_statement_that_runs_the_node(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("""TABLE = {
    "a": 1,
    "b": 2,
}


def f(x):
    if (x
            > 3):
        return [x,
                x]
    g(x)
""")
    sites = {m.operator + "@" + str(m.line): m for m in mutation.mutants(path)}
    # a constant inside a multi-line literal: the whole statement (coverage records its first line)
    assert mutation.mutant_lines(path, sites["int:2->3@3"]) == {1, 2, 3, 4}
    # a comparison in an `if` header: the header's lines, not the body
    assert mutation.mutant_lines(path, sites["compare0:Gt->GtE@8"]) == {8, 9}
    assert mutation.mutant_lines(path, sites["return:None@10"]) == {10, 11}
    assert mutation.mutant_lines(path, sites["statement:deleted@12"]) == {12}


def test_code_run_at_import_is_told_from_code_run_by_calls(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("""LIMIT = 40


def f(x, y=3):
    return x > 5


class C:
    size = 7

    def g(self):
        return sorted([2], key=lambda v: v > 9)
""")
    assert not mutation.constants_only(path)
    constants = tmp_path / "ports.py"
    constants.write_text("A = 1\nB = (A, 2)\n")
    assert mutation.constants_only(constants)  # its mutants run against the whole suite
    at_import = {m.operator + "@" + str(m.line): mutation.runs_at_import(path, m) for m in mutation.mutants(path)}
    assert at_import == {
        "int:40->41@1": True, "int:3->4@4": True, "int:7->8@9": True,  # a constant, a default value, a class attribute
        "return:None@5": False, "compare0:Gt->GtE@5": False, "int:5->6@5": False,  # a function's body
        "return:None@12": False, "int:2->3@12": False, "compare0:Gt->GtE@12": False, "int:9->10@12": False,  # and a lambda's
        "list:drop@12": False,
    }


STRINGS_AND_COLLECTIONS = '''"""Module docstring."""
UNITS = {"chip": 1, **EXTRA}
KINDS = ["User", "Group"]
PAIR = ("a", 2)
SEEN = {"x"}
a, b = PAIR


def f(x: dict[str, int]) -> str:
    """Docstring."""
    return f"{x:>5} VMs {x.split(':')}" + x[1, 2]
'''


def test_string_constants_change_and_collection_elements_drop(tmp_path):
    # the classes the issue #33 sample's survivors came from: a unit "VM", a key "health", a rule's "project" entry
    path = tmp_path / "m.py"
    path.write_text(STRINGS_AND_COLLECTIONS)
    made = {}
    for m in mutation.mutants(path, tmp_path):
        changed = [line for line in mutation.mutated_source(path, m).splitlines() if line not in STRINGS_AND_COLLECTIONS.splitlines()]
        made.setdefault(f"{m.operator}@{m.line}", []).append(changed)
    assert made["str:changed@2"] == [["UNITS = {'XXchipXX': 1, **EXTRA}"]]
    assert made["dict:drop@2"] == [["UNITS = {**EXTRA}"], ["UNITS = {'chip': 1}"]]  # each entry, `**other` too
    assert made["str:changed@3"] == [["KINDS = ['XXUserXX', \"Group\"]"], ["KINDS = [\"User\", 'XXGroupXX']"]]  # the rest as written
    assert made["list:drop@3"] == [["KINDS = ['Group']"], ["KINDS = ['User']"]]
    assert made["tuple:drop@4"] == [["PAIR = (2,)"], ["PAIR = ('a',)"]]
    assert made["set:drop@5"] == [["SEEN = {*()}"]]  # the empty set display
    # an f-string's {expressions} are code; never its text or format spec, a docstring, an annotation, a subscript's
    # index or an assignment's target
    assert made["str:changed@11"] == [["    return f\"{x:>5} VMs {x.split('XX:XX')}\" + x[1, 2]"]]
    assert sorted(made) == ["dict:drop@2", "int:1->2@11", "int:1->2@2", "int:2->3@11", "int:2->3@4", "list:drop@3",
                            "return:None@11", "set:drop@5", "str:changed@11", "str:changed@2", "str:changed@3", "str:changed@4",
                            "str:changed@5", "tuple:drop@4"]
    # a dropped element is named by its own line, so an entry of a long table has its own anchor
    table = tmp_path / "t.py"
    table.write_text('RULES = {\n    "a": ("project", "name"),\n    "b": ("name",),\n}\n')
    drops = [(m.operator, m.line, m.offset, m.code) for m in mutation.mutants(table, tmp_path) if m.operator.endswith(":drop")]
    assert drops == [("dict:drop", 2, 0, '"a": ("project", "name"),'), ("dict:drop", 3, 0, '"b": ("name",),'),
                     ("tuple:drop", 2, 6, '"a": ("project", "name"),'), ("tuple:drop", 2, 17, '"a": ("project", "name"),'),
                     ("tuple:drop", 3, 6, '"b": ("name",),')]


def test_the_mutant_list_counts_each_operator_class(capsys):
    path = ROOT / "components/model/quantity.py"
    assert mutation.main(["--list", "--module", "components/model/quantity.py"]) == 0
    per_file, total = capsys.readouterr().out.splitlines()
    found = mutation.mutants(path)
    assert per_file == f"{len(found):5d}  components/model/quantity.py"
    listed = {c: int(n) for n, c in (part.split(" ", 1) for part in total.split("in all: ", 1)[1].split(", "))}
    assert listed == Counter(mutation.operator_class(m.operator) for m in found) and total.startswith(f"{len(found):5d}  in all: ")
    # the _SUFFIX table alone: 16 entries, each with a string key (one of them "")
    assert listed["dict:drop"] >= 16 and listed["str:changed"] >= 16 and listed["tuple:drop"] > 0


def test_select_tests_runs_only_what_covers_the_line_and_killers_first():
    cmap = mutation.CoverageMap(
        lines={"m.py": {1: {""}, 5: {"tests/test_a.py::t1", "tests/test_b.py::t2", "tests/test_b.py"}, 7: {"tests/test_a.py::t1"}}},
        durations={"tests/test_a.py::t1": 0.5, "tests/test_b.py::t2": 0.1, "tests/test_b.py": 2.0, "tests/test_c.py::t3": 0.01},
        all_tests=["tests/test_a.py", "tests/test_b.py", "tests/test_c.py"],
    )
    assert mutation.select_tests(cmap, "m.py", {9}) == []  # no test runs line 9: uncovered
    assert mutation.select_tests(cmap, "m.py", {7}) == ["tests/test_a.py::t1"]
    # a whole file (shared fixtures, import-time code) absorbs its own node ids; cheapest first
    assert mutation.select_tests(cmap, "m.py", {5}) == ["tests/test_a.py::t1", "tests/test_b.py"]
    history = mutation.KillHistory()
    history.credit("m.py", "tests/test_b.py")
    assert mutation.select_tests(cmap, "m.py", {5}, history) == ["tests/test_b.py", "tests/test_a.py::t1"]
    assert mutation.select_tests(cmap, "other.py", {5}, history) == []
    # import time (a module constant): the tests that run any of the module's code
    assert mutation.select_tests(cmap, "m.py", {1}) == ["tests/test_a.py::t1", "tests/test_b.py"]
    # a constant whose import coverage credited to the one test that imported the module first
    assert mutation.select_tests(cmap, "m.py", {7}, at_import=True) == ["tests/test_a.py::t1", "tests/test_b.py"]
    imported_only = mutation.CoverageMap({"k.py": {1: {""}}}, cmap.durations, cmap.all_tests)
    assert mutation.select_tests(imported_only, "k.py", {1}) == ["tests/test_c.py", "tests/test_a.py", "tests/test_b.py"]
    assert mutation.select_tests(cmap, "m.py", set(), everything=True) == ["tests/test_c.py", "tests/test_a.py", "tests/test_b.py"]
    # the whole suite (a rerun) starts with the files whose tests run the lines, then the rest, cheapest first
    assert mutation.select_tests(cmap, "m.py", {7}, everything=True) == ["tests/test_a.py", "tests/test_c.py", "tests/test_b.py"]
    # a test that killed before runs before the rest of its file's tests
    cmap.lines["m.py"][6] = {"tests/test_a.py::t1", "tests/test_a.py::t0"}
    cmap.durations["tests/test_a.py::t0"] = 0.01
    assert mutation.select_tests(cmap, "m.py", {6}) == ["tests/test_a.py::t0", "tests/test_a.py::t1"]
    history.credit("m.py", "tests/test_a.py::t1")
    assert mutation.select_tests(cmap, "m.py", {6}, history) == ["tests/test_a.py::t1", "tests/test_a.py::t0"]

def test_the_first_failure_is_read_from_pytest_output():
    out = "....F\n=== short test summary info ===\nFAILED tests/test_x.py::test_y[a b-1] - AssertionError: no\n1 failed\n"
    assert mutation._FAILED.search(out).group(1) == "tests/test_x.py::test_y[a b-1]"
    assert mutation._FAILED.search("ERROR tests/test_x.py - KeyError: 'k'\n").group(1) == "tests/test_x.py"
    assert mutation._FAILED.search("ERROR tests/test_x.py\n").group(1) == "tests/test_x.py"


def test_files_with_shared_fixtures_are_one_coverage_context():
    from tools.mutation import coverage_contexts as mutation_coverage

    assert mutation_coverage._SHARED_FIXTURE.search('@pytest.fixture(scope="module")')
    assert mutation_coverage._SHARED_FIXTURE.search("@pytest.fixture(scope='session')")
    assert not mutation_coverage._SHARED_FIXTURE.search("@pytest.fixture\ndef plan(): ...")


def test_the_coverage_run_sees_every_test_that_plans_not_only_the_first(monkeypatch):
    """The suite shares plans of equal inputs (infra/offline/engine.py); under the coverage run a test whose plan
    another test made would not be seen running the program, and a mutant there would run against the first test only."""
    from contextvars import ContextVar
    from datetime import datetime, timezone

    from infra.offline import engine
    from infra.offline.stackfile import flatten
    from tests.conftest import config_with
    from tools.mutation import coverage_contexts as mutation_coverage

    monkeypatch.setattr(engine, "_SHARED", ContextVar("test_shared_plans", default=None))
    engine.share_plans(None)
    inputs = engine.PlanInputs.of(flatten(config_with())[0], "test", now=datetime(2026, 12, 1, tzinfo=timezone.utc))
    first = engine.plan(inputs)
    assert engine.plan(inputs) is first  # shared
    mutation_coverage._clear_project_caches()
    assert engine.plan(inputs) is not first  # made again: the program runs under this test's context


def test_the_runner_keeps_itself_and_drops_project_modules():
    import sys
    import types

    from tools.mutation import runner as mutation_runner

    assert mutation_runner._is_project(sys.modules["tools.mutation.harness"])
    assert not mutation_runner._is_project(sys.modules["pytest"])
    fake_main = types.ModuleType("__main__")
    fake_main.__file__ = str(ROOT / "tools/mutation/runner.py")
    assert not mutation_runner._is_project(fake_main)


def test_a_rerun_updates_the_earlier_results_and_scores_per_target():
    def r(path, line, status):
        return {"path": path, "line": line, "col": 0, "operator": "int:1->2", "status": status,
                "offset": 4, "code": f"x = {line}", "scope": "f"}

    earlier = [r("policies/rules/a.py", 1, "killed"), r("policies/rules/a.py", 2, "survived"),
               r("components/model/b.py", 3, "uncovered"), r("components/model/b.py", 4, "survived")]
    merged = mutation.merge(earlier, [r("policies/rules/a.py", 2, "killed")], {"components/model/b.py:f:4:int:1->2  x = 4"})
    assert [m["status"] for m in merged] == ["killed", "killed", "uncovered", "equivalent"]
    per_file = mutation.tally(merged)
    assert mutation._score({"a": per_file["policies/rules/a.py"]}) == (2, 2)
    assert mutation._score({"b": per_file["components/model/b.py"]}) == (0, 1)  # uncovered counts against, equivalent not
    gone = mutation.merge(earlier, [{**r("policies/rules/a.py", 2, "x"), "status": "gone"}], set())
    assert mutation._score(mutation.tally(gone)) == (1, 3)  # a survivor whose code is gone is not scored
    assert mutation.rerun_keys(earlier, {"components/model/b.py"}) == {"components/model/b.py:f:4:int:1->2  x = 3",
                                                                       "components/model/b.py:f:4:int:1->2  x = 4"}
    # the tree moved on: a survivor is matched by its code wherever it is now, never by the line it had
    moved = mutation.merge(earlier, [{**r("policies/rules/a.py", 2, "killed"), "line": 40}, r("policies/rules/a.py", 1, "survived")
                                     | {"code": "y = 1"}], set())
    assert [(m["status"], m["line"]) for m in moved][:2] == [("killed", 1), ("killed", 40)]
    legacy = [{k: v for k, v in m.items() if k not in ("code", "offset", "scope")} for m in earlier]
    assert mutation.rerun_keys(legacy, {"components/model/b.py"}) == {"components/model/b.py:3:0:int:1->2", "components/model/b.py:4:0:int:1->2"}
    assert mutation.module_of("policies/rules/a.py") == "policies/rules"
    assert mutation.module_of("infra/offline/critical_path.py") == "infra/offline/critical_path.py"


def test_results_of_runs_per_module_combine_into_one_score(tmp_path, capsys):
    import json

    def r(path, line, status):
        return {"path": path, "line": line, "col": 0, "operator": "int:1->2", "status": status}

    (tmp_path / "a.json").write_text(json.dumps({"results": [r("policies/rules/a.py", 1, "killed"), r("policies/rules/a.py", 2, "survived")]}))
    (tmp_path / "b.json").write_text(json.dumps({"results": [r("components/model/b.py", 1, "killed")]}))
    out = tmp_path / "all.json"
    assert mutation.main(["--combine", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["perModule"]["policies/rules"]["survived"] == 1 and written["perModule"]["components/model"]["killed"] == 1
    assert "all                                                       2      3  66.7%" in capsys.readouterr().out


def test_a_newer_run_of_a_file_replaces_its_earlier_results_when_combined(tmp_path):
    import json

    def r(path, line, status):
        return {"path": path, "line": line, "col": 0, "operator": "int:1->2", "status": status}

    (tmp_path / "old.json").write_text(json.dumps({"results": [r("policies/rules/a.py", 1, "survived"), r("policies/rules/a.py", 2, "killed"),
                                                              r("policies/rules/b.py", 1, "survived")]}))
    (tmp_path / "new.json").write_text(json.dumps({"results": [r("policies/rules/a.py", 1, "killed")]}))  # a.py since changed: one mutant
    out = tmp_path / "all.json"
    assert mutation.main(["--combine", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["perFile"] == {
        "policies/rules/b.py": {**dict.fromkeys(mutation.STATUSES, 0), "survived": 1},
        "policies/rules/a.py": {**dict.fromkeys(mutation.STATUSES, 0), "killed": 1},
    }


def test_a_stopped_run_is_scored_from_its_progress_file(tmp_path, capsys):
    import json

    def r(line, status):
        return json.dumps({"path": "policies/rules/a.py", "line": line, "col": 0, "operator": "int:1->2", "status": status})

    progress = tmp_path / "mutation.jsonl"  # what a run appends as each mutant finishes; the stop cut the last line
    progress.write_text(r(1, "killed") + "\n" + r(2, "survived") + "\n" + r(3, "killed")[:30])
    assert [x["line"] for x in mutation.read_results(progress)] == [1, 2]
    out = tmp_path / "all.json"
    assert mutation.main(["--combine", str(progress), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["perFile"]["policies/rules/a.py"]["survived"] == 1
    assert "all                                                       1      2  50.0%" in capsys.readouterr().out


def test_every_listed_equivalent_mutant_exists_and_gives_a_reason():
    entries = mutation.read_equivalents()
    listed = [line for line in mutation.EQUIVALENT_FILE.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert len(entries) == len(listed) > 0
    # the four targets, and any other file an entry names (a sampled run of e.g. infra/run may list one)
    named = {e.anchor.split(":", 1)[0] for e in entries}
    assert not [p for p in named if not (mutation.PROJECT_ROOT / p).is_file()], named
    files = {*mutation.target_files(list(mutation.TARGETS)), *(mutation.PROJECT_ROOT / p for p in named)}
    existing = [m for f in sorted(files) for m in mutation.mutants(f)]
    # a stale entry would hide nothing, or the wrong mutant; a reason-less one, no one knows why
    assert mutation.equivalent_problems(entries, existing) == []


_SOURCE = """def f(x, y):
    if x > 3:  # a comment is not part of the code
        return y.split(":", 1)[0]
    return 2


def g(v):
    return 2
"""


def _entries(tmp_path, text):
    listed = tmp_path / "equivalent.txt"
    listed.write_text(text)
    return mutation.read_equivalents(listed)


def test_an_equivalent_entry_names_its_mutant_by_code_not_by_line(tmp_path):
    (tmp_path / "m.py").write_text(_SOURCE)
    found = {m.anchor: m for m in mutation.mutants(tmp_path / "m.py", tmp_path)}
    assert "m.py:f:20:int:1->2  return y.split(\":\", 1)[0]" in found
    assert "m.py:f:3:compare0:Gt->GtE  if x > 3:" in found  # the column in the code, without the comment
    assert "m.py:g:0:return:None  return 2" in found and "m.py:f:0:return:None  return 2" in found  # told apart by scope
    entries = _entries(tmp_path, "# a comment\n\nm.py:f:20:int:1->2  return y.split(\":\", 1)[0]  # the first part either way\n")
    assert [(e.anchor, e.reason, e.lineno) for e in entries] == [("m.py:f:20:int:1->2  return y.split(\":\", 1)[0]", "the first part either way", 3)]
    assert _entries(tmp_path, 'm.py:f:0:return:None  return "a  # b"  # why\n')[0].anchor == 'm.py:f:0:return:None  return "a  # b"'
    assert mutation.equivalent_problems(entries, found.values()) == []
    # code moved down, re-indented, its function grown and commented: the entry still names it
    moved = "import os\n\n\ndef f(x, y):\n    os.sep\n    for _ in [1]:\n        if x > 3:\n            return y.split(\":\", 1)[0]  # why\n    return 2\n"
    (tmp_path / "m.py").write_text(moved)
    again = mutation.mutants(tmp_path / "m.py", tmp_path)
    assert mutation.equivalent_problems(entries, again) == []
    assert [m.line for m in again if m.anchor == entries[0].anchor] == [8]
    assert mutation.equivalent_anchors(entries, [m.anchor for m in again]) == {entries[0].anchor}


def test_a_stale_equivalent_entry_fails_the_check(tmp_path):
    (tmp_path / "m.py").write_text(_SOURCE)
    listed = "m.py:f:20:int:1->2  return y.split(\":\", 1)[0]  # the first part either way\n"
    entries = _entries(tmp_path, listed)
    # the mutated line changed (maxsplit 2): the entry names no mutant any more
    (tmp_path / "m.py").write_text(_SOURCE.replace('split(":", 1)', 'split(":", 2)'))
    problems = mutation.equivalent_problems(entries, mutation.mutants(tmp_path / "m.py", tmp_path))
    assert problems == ['line 1: m.py:f:20:int:1->2  return y.split(":", 1)[0]: no such mutant (the line changed or is gone)']
    # ... as when it moved into another function, or its code went
    for changed in (_SOURCE.replace("def f(", "def h("), _SOURCE.replace('        return y.split(":", 1)[0]\n', "        pass\n")):
        (tmp_path / "m.py").write_text(changed)
        assert "no such mutant" in mutation.equivalent_problems(entries, mutation.mutants(tmp_path / "m.py", tmp_path))[0]
    # the old form (a line number) names nothing; an entry without a reason is refused
    (tmp_path / "m.py").write_text(_SOURCE)
    now = mutation.mutants(tmp_path / "m.py", tmp_path)
    assert "no such mutant" in mutation.equivalent_problems(_entries(tmp_path, "m.py:3:25:int:1->2  # old form\n"), now)[0]
    assert "no reason" in mutation.equivalent_problems(_entries(tmp_path, listed.split("  # ")[0] + "\n"), now)[0]


def test_the_same_line_twice_is_listed_once_for_each_copy(tmp_path):
    source = "def f(x):\n    if x:\n        return 2\n    return 2\n"
    (tmp_path / "m.py").write_text(source)
    once = _entries(tmp_path, "m.py:f:0:return:None  return 2  # both paths agree\n")
    twice = _entries(tmp_path, "m.py:f:0:return:None  return 2  # both paths agree\nm.py:f:0:return:None  return 2  # the same\n")
    found = mutation.mutants(tmp_path / "m.py", tmp_path)
    assert "listed 1 times, 2 such mutants" in mutation.equivalent_problems(once, found)[0]
    assert mutation.equivalent_problems(twice, found) == []
    # a third copy appears: the list no longer says which two it meant, so none is left out of the score
    (tmp_path / "m.py").write_text(source.replace("    if x:\n", "    if x:\n        return 2\n    if x:\n"))
    found = mutation.mutants(tmp_path / "m.py", tmp_path)
    assert "listed 2 times, 3 such mutants" in mutation.equivalent_problems(twice, found)[0]
    assert mutation.equivalent_anchors(twice, [m.anchor for m in found]) == set()


def test_combined_results_leave_listed_equivalents_out_of_the_score(tmp_path, monkeypatch):
    import json

    (tmp_path / "m.py").write_text(_SOURCE)
    results = [{**vars(m), "status": "survived"} for m in mutation.mutants(tmp_path / "m.py", tmp_path)]
    (tmp_path / "run.json").write_text(json.dumps({"results": results}))
    listed = tmp_path / "equivalent.txt"
    listed.write_text("m.py:g:0:return:None  return 2  # g's value is never read\n")
    monkeypatch.setattr(mutation, "EQUIVALENT_FILE", listed)
    assert mutation.main(["--combine", str(tmp_path / "run.json"), "--out", str(tmp_path / "all.json")]) == 0
    per_file = json.loads((tmp_path / "all.json").read_text())["perFile"]["m.py"]
    assert per_file["equivalent"] == 1 and per_file["survived"] == len(results) - 1


def test_a_file_that_is_not_a_result_file_is_a_one_line_error(tmp_path, capsys):
    import json

    cases = {"missing.json": None, "text.json": "not json", "list.json": json.dumps({"results": [{"path": 1}]}),
             "no-results.json": json.dumps({"perFile": {}})}
    for name, text in cases.items():
        if text is not None:
            (tmp_path / name).write_text(text)
        for flag in ("--combine", "--rerun"):
            with pytest.raises(SystemExit) as e:
                mutation.main([flag, str(tmp_path / name)])
            err = capsys.readouterr().err
            assert e.value.code == 2 and f"{tmp_path / name}: not a mutation result file" in err and "Traceback" not in err, (name, err)


@pytest.mark.parametrize("argv", [["--sample", "-1"], ["--jobs", "0"], ["--timeout", "0"]])
def test_bad_arguments_are_one_line_errors(argv, capsys):
    with pytest.raises(SystemExit) as e:
        mutation.main(argv)
    assert e.value.code == 2 and "--sample at least 0" in capsys.readouterr().err


def test_a_mutant_changes_only_its_own_text(tmp_path):
    # a test that reads the source (the ~500-line rule, the architecture checks) sees the file as written, but for the
    # mutant: its comments, its other lines, its length; an operator's result keeps its precedence as an operand
    source = ('# a comment the file keeps\nLIMIT = 3  # and this one\n\n\ndef f(a, b):\n    if not (a or b):  # why\n'
              '        return [\n            a,\n            b,\n        ]\n    print("x")\n    return a > LIMIT and b\n')
    path = tmp_path / "m.py"
    path.write_text(source)
    for m in mutation.mutants(path, tmp_path):
        out = mutation.mutated_source(path, m)
        assert "# a comment the file keeps\n" in out and "# why\n" in out and len(out.splitlines()) <= len(source.splitlines()), m
        whole_tree = ast.parse(source)
        whole = mutation._Apply(*list(mutation._sites(whole_tree))[m.index]).visit(whole_tree)
        assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(ast.unparse(ast.fix_missing_locations(whole)))), m
    (removed,) = [m for m in mutation.mutants(path, tmp_path) if m.operator == "not:removed"]
    assert "    if (a or b):  # why\n" in mutation.mutated_source(path, removed)
    (deleted,) = [m for m in mutation.mutants(path, tmp_path) if m.operator == "statement:deleted"]
    assert "    pass\n" in mutation.mutated_source(path, deleted)
