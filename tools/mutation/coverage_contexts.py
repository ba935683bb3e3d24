"""pytest plugin for `make mutation`'s coverage run: record which test runs which line.

Loaded with `-p tools.mutation.coverage_contexts` under `coverage run` (harness.py). It switches
coverage's dynamic context to the test's node id before each test (and to the file's path while
pytest imports a test module, whose import-time code then belongs to the whole file). A file with module-, class- or
session-scoped fixtures is one context as a whole: such a fixture runs once, for whichever test comes
first. Python subprocesses started by a test get the same name as their static context (coverage's
`patch = subprocess` hands its config to children in COVERAGE_PROCESS_CONFIG). Before each test the
project's lru_caches are cleared (conftest's cached plans, admission's schemas) and the engine's shared plans
forgotten, so a test that would reuse a plan built for another is still seen running the code that builds it. Each context's wall
time is written to $MUTATION_DURATIONS at the end.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

import coverage
import pytest
from coverage.config import CoverageConfig

_ROOT = Path.cwd().resolve()
_SHARED_FIXTURE = re.compile(r"scope\s*=\s*[\"'](module|class|session|package)[\"']")
_state: dict = {"context": None, "start": 0.0, "durations": {}, "whole_file": {}}


def _clear_project_caches() -> None:
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if not path.startswith(str(_ROOT)) or path.startswith(sys.prefix) or "site-packages" in path:
            continue
        for value in list(vars(module).values()):
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()
    # the suite's shared plans (infra/offline/engine.py share_plans) too: a plan another test made would hide that
    # this one runs the program, and a mutant of it would then be run against the first test only
    engine = sys.modules.get("infra.offline.engine")
    if engine is not None:
        engine.share_plans(None)


def _whole_file(test_file: str) -> bool:
    if test_file not in _state["whole_file"]:
        _state["whole_file"][test_file] = bool(_SHARED_FIXTURE.search((_ROOT / test_file).read_text()))
    return _state["whole_file"][test_file]


def _switch(context: str) -> None:
    if context == _state["context"]:
        return
    now = time.perf_counter()
    if _state["context"] is not None:
        _state["durations"][_state["context"]] = round(_state["durations"].get(_state["context"], 0.0) + now - _state["start"], 3)
    _state["context"], _state["start"] = context, now
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(context)
    inherited = os.environ.get("COVERAGE_PROCESS_CONFIG")
    if inherited:
        config = CoverageConfig.deserialize(inherited)
        config.context = context
        os.environ["COVERAGE_PROCESS_CONFIG"] = config.serialize()


def _relative(path) -> str:
    return Path(str(path)).resolve().relative_to(_ROOT).as_posix()


def pytest_collectstart(collector) -> None:
    if isinstance(collector, pytest.Module):
        _clear_project_caches()
        _switch(_relative(collector.path))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    test_file = _relative(item.path)
    if _whole_file(test_file):
        if _state["context"] != test_file:
            _clear_project_caches()
        _switch(test_file)
        return
    _clear_project_caches()
    _switch(item.nodeid)


def pytest_sessionfinish(session, exitstatus) -> None:
    _switch("")
    out = os.environ.get("MUTATION_DURATIONS")
    if out:
        Path(out).write_text(json.dumps(_state["durations"], indent=1))
