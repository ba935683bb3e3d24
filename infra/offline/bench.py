"""Benchmark: what an offline plan costs as the stack grows (`make bench`).

Generates stacks of 1, 8, 64 and 256 slices (v6e-256 and v5p-128 groups, a batch and an interactive
workload), runs `python -m infra.offline plan --config FILE --json` on each in a fresh process,
several times, and reports wall time (min / median) and peak RSS per size. Figures go to
build/bench.json; targets: 256 slices within 3x the 1-slice wall time, peak RSS <= 400 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from .engine import PROJECT_ROOT

SIZES = (1, 8, 64, 256)
MAX_RATIO = 3.0
MAX_RSS_MB = 400


def stack_config(slices: int) -> dict:
    """A generated stack with `slices` TPU slices split over a v6e-256 and a v5p-128 group."""
    if slices == 1:
        groups = [{"name": "v6e", "tpu": "v6e-256", "count": 1}]
    else:
        groups = [{"name": "v6e", "tpu": "v6e-256", "count": slices // 2}, {"name": "v5p", "tpu": "v5p-128", "count": slices - slices // 2}]
    return {"config": {
        "gcp:project": "bench-project-123",
        "gcp:region": "us-east5",
        "gcp:zone": "us-east5-b",
        "pathways:slices": groups,
        "pathways:pathwaysVersion": "jax-0.7.2",
        "pathways:workloads": [
            {"name": "train", "mode": "batch", "sliceGroup": "v6e", "image": "example.com/trainer:1", "command": ["python3", "train.py"]},
            {"name": "notebook", "mode": "interactive", "sliceGroup": groups[-1]["name"], "slices": 1},
        ],
    }}


def largest_config() -> dict:
    """The largest stack the config model's bounds allow, in resources: MAX_TPU_POOLS slices
    (v6e-16, 4 hosts each, so GKE's node limit holds) in ten groups and MAX_WORKLOADS workloads."""
    from components.model.config import MAX_TPU_POOLS, MAX_WORKLOADS

    groups = [{"name": f"g{i}", "tpu": "v6e-16", "count": MAX_TPU_POOLS // 10} for i in range(10)]
    workloads = [{"name": f"w{i}", "mode": "interactive", "sliceGroup": f"g{i % 10}", "slices": 1} for i in range(MAX_WORKLOADS)]
    cfg = stack_config(1)
    cfg["config"].update({"pathways:slices": groups, "pathways:workloads": workloads})
    return cfg


def _run_once(config_path: Path, scratch: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, resources) of one plan in a fresh process."""
    out_path, err_path = scratch / "out.json", scratch / "err.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "infra.offline", "plan", "--config", str(config_path), "--json"],
            cwd=PROJECT_ROOT, stdout=out, stderr=err,
        )
        # wait4 reaps this child and returns its own rusage (ru_maxrss in KiB on Linux).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"plan failed for {config_path}:\n{err_path.read_text()}")
    resources = len(json.loads(out_path.read_text())["resources"])
    return wall, usage.ru_maxrss / 1024, resources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.offline.bench", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (fresh process each)")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--no-largest", action="store_true", help="skip the largest configuration the bounds allow")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "build" / "bench.json")
    args = parser.parse_args(argv)
    rows = []
    cases = [(slices, stack_config(slices)) for slices in sorted(args.sizes)]
    if not args.no_largest:
        cases.append(("largest", largest_config()))
    with tempfile.TemporaryDirectory() as tmp:
        for slices, config in cases:
            path = Path(tmp) / f"Pulumi.bench-{slices}.yaml"
            path.write_text(yaml.safe_dump(config))
            runs = [_run_once(path, Path(tmp)) for _ in range(args.repeat)]
            walls = [w for w, _, _ in runs]
            rows.append({
                "slices": slices, "resources": runs[0][2], "wall_min_s": round(min(walls), 3),
                "wall_median_s": round(statistics.median(walls), 3), "peak_rss_mb": round(max(r for _, r, _ in runs), 1),
                "runs": args.repeat,
            })
    base = rows[0]["wall_median_s"]
    print(f"{'slices':>7} {'resources':>9} {'wall min s':>10} {'wall med s':>10} {'x 1-slice':>9} {'peak RSS MB':>11}")
    for r in rows:
        r["ratio_to_smallest"] = round(r["wall_median_s"] / base, 2)
        print(f"{r['slices']:>7} {r['resources']:>9} {r['wall_min_s']:>10.2f} {r['wall_median_s']:>10.2f} {r['ratio_to_smallest']:>9.2f} {r['peak_rss_mb']:>11.1f}")
    if not args.no_largest:
        print("largest = 1000 v6e-16 slices in 10 groups + 100 interactive workloads (the config model's bounds)")
    worst = next(r for r in reversed(rows) if r["slices"] != "largest")
    ok = worst["ratio_to_smallest"] <= MAX_RATIO and all(r["peak_rss_mb"] <= MAX_RSS_MB for r in rows)
    print(f"targets: largest within {MAX_RATIO}x of smallest ({worst['ratio_to_smallest']}x), peak RSS <= {MAX_RSS_MB} MB: {'met' if ok else 'NOT met'}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "rows": rows, "targets_met": ok}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
