"""The record of the last measured cold CI run (tools/ci-measured.json), read from that run's log.

    python -m tools.ci_record LOG --commit SHA [--machine TEXT]

LOG is the whole output of `time bash .ci/run` on a fresh clone with every cache empty (HOME empty: Go's
caches, the engines' cache, uv's and pip's); build/ci-times.json of that clone sits beside it or is given with
--times. The record holds what the README and docs/real-engines.md quote (tests/test_ci_run.py checks that
they match it, and that it fits CI's limit): the total, when the fast tier and the engines were done, each
engine's wall and CPU seconds, and the real-engine tier's scenarios, time and slowest scenarios.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tools" / "ci-measured.json"

_ENGINE = re.compile(r"\[engines [0-9:]+\] (?P<name>[\w-]+): \d+ binar(?:y|ies) built in (?P<wall>\d+) s \((?P<cpu>\d+) CPU-seconds\)")
_PASSED = re.compile(r"^(?P<n>\d+) passed(?:, [^\n]*?)? in (?P<s>[0-9.]+)s", re.M)
_SLOW = re.compile(r"^(?P<s>[0-9.]+)s (?P<when>call|setup|teardown)\s+(?P<test>tests_e2e/\S+)", re.M)


class RecordError(ValueError):
    pass


def parse(log: str, times: dict[str, int]) -> dict[str, Any]:
    """The figures of one `.ci/run` log and its build/ci-times.json."""
    engines = {m["name"]: {"wallSeconds": int(m["wall"]), "cpuSeconds": int(m["cpu"])} for m in _ENGINE.finditer(log)}
    if not engines:
        raise RecordError("the log shows no engine built: not a cold run (every cache empty)")
    passed = list(_PASSED.finditer(log))
    if len(passed) != 2:
        raise RecordError(f"the log shows {len(passed)} pytest summaries of all-passed runs, not the two tiers' (a red run is no record)")
    fast, e2e = passed
    slowest = [{"seconds": round(float(m["s"])), "phase": m["when"], "scenario": m["test"]} for m in _SLOW.finditer(log)][:10]
    return {
        "totalSeconds": times["totalSeconds"],
        "fastTier": {"tests": int(fast["n"]), "testSeconds": round(float(fast["s"])), "doneAtSeconds": times["fastTierDoneSeconds"]},
        "enginesReadySeconds": times["enginesReadySeconds"],
        "engines": engines,
        "e2e": {"scenarios": int(e2e["n"]), "testSeconds": round(float(e2e["s"])), "phaseSeconds": times["e2eSeconds"],
                "slowest": slowest},
    }


def per_stack_scenarios() -> int:
    """The scenarios over every stack (marked every_stack) the tier has with this checkout's stacks: the count of the
    rest is what tests/test_ci_run.py holds the record to, as a team's own stacks add scenarios of their own."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "every_stack",
                           "tests_e2e"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = re.search(r"^(\d+)(/\d+)? tests? collected", proc.stdout, re.M)
    if found is None:
        raise RecordError(f"no collection count in: {proc.stdout[-500:]}")
    return int(found.group(1))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--times", type=Path, default=None, help="build/ci-times.json of the run (default: beside LOG, main/build/)")
    parser.add_argument("--commit", required=True, help="the commit the run was of")
    parser.add_argument("--machine", default="2 cores, 24 GiB", help="what it ran on")
    parser.add_argument("--how", default="time CI=true bash .ci/run, fresh clone, HOME empty (every cache empty), nothing else running",
                        help="how it was run, when not as the default says (other work beside it, caches emptied another way)")
    args = parser.parse_args(argv)
    times_path = args.times or args.log.parent / "main" / "build" / "ci-times.json"
    try:
        record = parse(args.log.read_text(), json.loads(times_path.read_text()))
    except (OSError, RecordError, KeyError) as e:
        print(f"ci_record: {e}", file=sys.stderr)
        return 2
    record = {"commit": args.commit, "measured": time.strftime("%Y-%m-%d"), "machine": args.machine,
              "how": args.how, **record}
    record["e2e"] = {**record["e2e"], "perStackScenarios": per_stack_scenarios()}
    RECORD.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {RECORD.relative_to(ROOT)}: {record['totalSeconds']} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
