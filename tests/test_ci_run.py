"""CI itself (`.ci/run`): it runs both tiers whole, a skipped scenario fails it, and the figures the README and
docs/real-engines.md give are those of the last measured cold run (tools/ci-measured.json, written by
`python -m tools.ci_record` from that run's log), which fits CI's limit with room to spare."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.ci_record import RECORD, RecordError, parse

ROOT = Path(__file__).resolve().parents[1]
CI_RUN = (ROOT / ".ci" / "run").read_text()
# CI refuses a run over 90 minutes; a cold run must leave a third of it (issue #33)
COLD_LIMIT_SECONDS = 60 * 60


def record() -> dict:
    return json.loads(RECORD.read_text())


def _commands(script: str) -> list[str]:
    return [line.strip() for line in script.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_ci_stops_at_the_first_failure_and_runs_both_tiers_unconditionally():
    lines = _commands(CI_RUN)
    assert "set -euo pipefail" in lines
    assert "make test" in lines and "make e2e" in lines  # whole lines: no `|| true`, no condition around them
    assert lines.index("make test") < lines.index("make e2e")
    assert not any(re.search(r"\|\|\s*(true|:)|PATHWAYS_SKIP|--deselect|-k ", line) for line in lines)


def test_the_e2e_target_runs_the_whole_tier_and_a_skip_fails_it():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\ne2e:", 1)[1].split("\n\n", 1)[0]
    (pytest_line,) = [line for line in recipe.splitlines() if "pytest" in line]
    assert pytest_line.rstrip().endswith(" tests_e2e")  # the folder, no selection
    assert not re.search(r"\s-(k|m)\s|--deselect|--ignore", pytest_line.split(" pytest ", 1)[1])
    conftest = (ROOT / "tests_e2e" / "conftest.py").read_text()
    assert 'counts.get("skipped") or counts.get("xfail")' in conftest and "TESTS_FAILED" in conftest


def test_the_record_is_of_a_green_cold_run_that_fits_ci_with_room_to_spare():
    r = record()
    assert r["totalSeconds"] <= COLD_LIMIT_SECONDS, f"the last cold run took {r['totalSeconds']} s: over {COLD_LIMIT_SECONDS} s"
    assert set(r["engines"]) == {p.parent.name for p in (ROOT / "tools" / "engines").glob("*/engine.json")}
    assert r["enginesReadySeconds"] + r["e2e"]["phaseSeconds"] <= r["totalSeconds"] + 1
    assert re.fullmatch(r"[0-9a-f]{7,40}", r["commit"])


def test_the_record_counts_every_scenario_the_tier_has_now():
    # collection imports the whole tier: on a cold CI run it shares the 2 cores with three engine builds (120 s ran out).
    # The scenarios over every stack (marked every_stack) grow with a team's own stacks: the record's count is of the
    # example stacks, so only the rest must match it
    # (--assert=plain: collection runs no assert, so rewriting the tier's asserts would only cost time)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "--assert=plain",
                           "-m", "not every_stack", "tests_e2e"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    collected = int(re.search(r"^(\d+)(/\d+)? tests? collected", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    e2e = record()["e2e"]
    assert e2e["scenarios"] - e2e["perStackScenarios"] == collected, (
        "tests_e2e has another number of scenarios than the last measured run: measure a cold run again "
        "(python -m tools.ci_record)")


def _minutes(seconds: int) -> str:
    return f"{round(seconds / 60)} minutes"


def test_the_readme_gives_the_last_measured_run():
    r = record()
    readme = (ROOT / "README.md").read_text()
    paragraph = readme.split("CI (`.ci/run`) runs both tiers", 1)[1].split("\n\n", 1)[0]
    for figure in (_minutes(r["totalSeconds"]), _minutes(r["enginesReadySeconds"]), _minutes(r["e2e"]["phaseSeconds"]),
                   f"{r['e2e']['scenarios']} scenarios", f"`{r['commit'][:7]}`"):
        assert figure in paragraph, (figure, paragraph)


def test_the_engine_table_gives_each_build_of_the_last_measured_run():
    r = record()
    doc = (ROOT / "docs" / "real-engines.md").read_text()
    for name, e in r["engines"].items():
        (row,) = [line for line in doc.splitlines() if line.startswith(f"| `{name}` |")]
        assert row.rstrip().endswith(f"| {e['wallSeconds']:,} s ({e['cpuSeconds']:,} CPU-s) |"), row
    assert f"`{r['commit'][:7]}`" in doc


LOG = """[engines 15:50:55] control-plane: 9 binaries built in 956 s (746 CPU-seconds)
[engines 15:52:53] etcd: 1 binary built in 48 s (41 CPU-seconds)
1470 passed in 441.61s (0:07:21)
============================= slowest 20 durations =============================
272.10s call     tests_e2e/test_scale.py::test_256_slices_run_where_they_belong
169.00s teardown tests_e2e/test_scale.py::test_256_slices_run_where_they_belong
99 passed, 2 warnings in 1510.20s (0:25:10)
"""
TIMES = {"totalSeconds": 3000, "fastTierDoneSeconds": 600, "enginesReadySeconds": 1300, "e2eSeconds": 1600}


def test_the_recorder_reads_the_engines_both_tiers_and_the_slowest_scenarios():
    r = parse(LOG, TIMES)
    assert r["engines"] == {"control-plane": {"wallSeconds": 956, "cpuSeconds": 746}, "etcd": {"wallSeconds": 48, "cpuSeconds": 41}}
    assert r["fastTier"] == {"tests": 1470, "testSeconds": 442, "doneAtSeconds": 600}
    assert r["e2e"]["scenarios"] == 99 and r["e2e"]["phaseSeconds"] == 1600
    assert r["e2e"]["slowest"][1] == {"seconds": 169, "phase": "teardown", "scenario": "tests_e2e/test_scale.py::test_256_slices_run_where_they_belong"}


@pytest.mark.parametrize("log, why", [
    (LOG.replace("99 passed, 2 warnings", "1 failed, 98 passed"), "pytest summaries"),
    ("\n".join(line for line in LOG.splitlines() if "[engines" not in line), "not a cold run"),
])
def test_the_recorder_refuses_a_red_or_warm_run(log, why):
    with pytest.raises(RecordError, match=why):
        parse(log, TIMES)


def test_ci_runs_the_readmes_first_command_first():
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    first = quickstart.splitlines()[0].split("#", 1)[0].strip()
    assert first == "make plan"
    lines = [line for line in _commands(CI_RUN) if line.startswith(("make ", "python3 tools/"))]
    assert lines[0] == first, f".ci/run's first command is {lines[0]!r}, not the README's {first!r}"
    assert lines.index(first) < lines.index("make test")
