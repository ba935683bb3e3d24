"""Benchmark: what an offline plan costs as the stack grows, and how long its deploy would take (`make bench`).

    python -m tools.bench [--repeat N] [--sizes N ...] [--no-largest] [--out JSON]

Generates stacks of 1, 8, 64 and 256 slices (v6e-256 and v5p-128 groups, a batch and an interactive
workload), the largest the config model allows, and a whole Ironwood superpod (a tpu7x pool set of 144 cubes), runs `python -m infra.offline plan --config FILE --json` on each in a fresh process,
several times, and reports wall time (min / median), peak RSS and the plan's deploy-time estimate
(expected and worst case, node pools in lanes of GKE's 5 concurrent operations) per size. Then the
reference stack (2 x v6e-16, one batch workload): its plan time, the part of it that is importing
the provider SDKs, and the ratio to xpk's dry run of the same cluster and workload, measured here in one
interleaved run (plan, `xpk cluster create-pathways --dry-run`, `xpk workload create-pathways --dry-run`, each in
a fresh process, repeated): xpk pinned in tools/xpk/requirements.lock, in its own virtual environment
(build/xpk-venv, `make bench` builds it), run with no network (a network namespace of its own) and its telemetry
off (TELEMETRY_ENABLED=false, a scratch HOME for its config). Figures go to build/bench.json;
targets: 256 slices within 3x the 1-slice wall time, peak RSS <= 400 MB. Last, hostile stack files
(an alias bomb, a file over the size limit, deep nesting, 1 MiB of short nested lists or of values,
a 5,000-digit number, absurd counts): each must end in exit 2 with error lines only (no traceback)
within 2 s, fresh process included.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from tools import output

PROJECT_ROOT = Path(__file__).resolve().parents[1]

SIZES = (1, 8, 64, 256)
XPK_VENV = PROJECT_ROOT / "build" / "xpk-venv"
XPK_VERSION = "1.16.0"  # tools/xpk/requirements.in


def xpk_commands(cfg: dict) -> list[list[str]]:
    """xpk's dry runs of what the reference stack makes: the cluster with its slices, then the Pathways workload."""
    c = cfg["config"]
    group = c["pathways:slices"][0]
    common = ["--cluster", "bench", "--tpu-type", group["tpu"], "--num-slices", str(group["count"]),
              "--zone", c["gcp:zone"], "--project", c["gcp:project"], "--dry-run"]
    workload = c["pathways:workloads"][0]
    return [[str(XPK_VENV / "bin" / "xpk"), "cluster", "create-pathways", *common, "--on-demand"],
            [str(XPK_VENV / "bin" / "xpk"), "workload", "create-pathways", "--workload", workload["name"], *common,
             "--docker-image", workload["image"], "--command", " ".join(workload["command"])]]


def sandboxed(cmd: list[str]) -> list[str]:
    """`cmd` in a network namespace of its own: no route off the machine (as root, or mapped to root in a user
    namespace otherwise)."""
    if shutil.which("unshare") is None:
        raise RuntimeError("unshare (util-linux) is needed to run xpk without network")
    return ["unshare", "--net", *([] if os.geteuid() == 0 else ["--map-root-user"]), *cmd]
# What the program imports from the provider SDKs (their packages load every module on first use).
SDK_IMPORT = (
    # collected as the plan's own process collects (infra/offline/__main__.py: no full passes)
    "import gc; y, m, _ = gc.get_threshold(); gc.set_threshold(y, m, 1_000_000);"
    "import pulumi, pulumi_gcp as gcp, pulumi_kubernetes as k8s, pulumi_random;"
    "[getattr(m, n) for m, n in ((gcp.compute, 'Network'), (gcp.container, 'Cluster'), (gcp.storage, 'Bucket'),"
    " (gcp.projects, 'IAMMember'), (gcp.serviceaccount, 'Account'), (gcp.monitoring, 'Dashboard'),"
    " (k8s.core.v1, 'Namespace'), (k8s.meta.v1, 'ObjectMetaArgs'), (k8s.helm.v4, 'Chart'),"
    " (k8s.admissionregistration.v1, 'ValidatingAdmissionPolicy'), (k8s.scheduling.v1, 'PriorityClass'),"
    " (k8s.rbac.v1, 'Role'), (k8s.apiextensions, 'CustomResource'))];"
    "import os; os._exit(0)"  # and ends as the plan ends: no interpreter teardown
)


def reference_config() -> dict:
    """The reference stack: 2 x v6e-16 and one batch workload."""
    cfg = stack_config(1)
    cfg["config"].update({
        "pathways:slices": [{"name": "v6e", "tpu": "v6e-16", "count": 2}],
        "pathways:workloads": [{"name": "train", "mode": "batch", "image": "example.com/trainer:1", "command": ["python3", "train.py"]}],
    })
    return cfg
MAX_RATIO = 3.0
MAX_RSS_MB = 400
MAX_RATIO_TO_XPK = 1.0  # issue #57: the plan no slower than xpk's dry runs of the same cluster and workload
MAX_HOSTILE_S = 2.0  # a hostile file is refused before the SDKs load: Python start plus parsing


def _fill(head: str, line: str, size: int) -> str:
    return head + line * ((size - len(head)) // len(line))


def hostile_files() -> dict[str, str]:
    """Stack files built to be slow or large to read; each must be refused fast (tests/test_hostile_input.py
    checks the messages; this measures the time)."""
    from infra.offline.stackfile import MAX_STACK_FILE_BYTES

    bomb = ['config:', '  a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    huge = reference_config()
    huge["config"]["pathways:slices"] = [{"name": "v6e", "tpu": "v6e-16", "count": 10**18}]
    return {
        "alias bomb (9^10 values)": "\n".join(bomb) + "\n",
        "over the size limit": "config:\n" + "#" * MAX_STACK_FILE_BYTES,
        "nested 5,000 deep": "config:\n  a: " + "[" * 5000 + "\n",
        "1 MiB of 29-deep lists": _fill("config:\n  a:\n", "    - " + "[" * 29 + "]" * 29 + "\n", MAX_STACK_FILE_BYTES),
        "1 MiB of values": _fill("config:\n  a:\n", "    - 1\n", MAX_STACK_FILE_BYTES),
        "a 5,000-digit number": "config:\n  a: " + "9" * 5000 + "\n",
        "10^18 slices": yaml.safe_dump(huge),
    }


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
        # ranges for the largest of these (the plan checks every pool's nodes and pod blocks against them)
        "pathways:network": {"nodesCidr": "10.0.0.0/16", "podsCidr": "10.64.0.0/11", "servicesCidr": "10.128.0.0/20"},
        "pathways:pathwaysVersion": "jax-0.9.0",
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


SUPERPOD_CUBES = 144  # an Ironwood superpod: 9,216 chips, 144 cubes of 4x4x4 (16 hosts each), 2,304 hosts
MAX_SUPERPOD_S, MAX_SUPERPOD_RSS_MB = 10.0, 400  # issue #79.2


def superpod_config() -> dict:
    """A whole Ironwood superpod shared by dynamic slicing: one tpu7x pool set of SUPERPOD_CUBES sub-blocks of one
    reservation block (a 16-VM node pool each), and workloads from a sub-slice to a super-slice of 32 cubes."""
    image = "us-docker.pkg.dev/bench-project-123/train/trainer:1"

    def batch(name: str, topology: str) -> dict:
        return {"name": name, "mode": "batch", "topology": topology, "image": image, "command": ["python3", "-m", "trainer"]}

    cfg = stack_config(1)
    cfg["config"].update({
        "gcp:region": "us-central1", "gcp:zone": "us-central1-c",
        "pathways:cluster": {"releaseChannel": "RAPID"},  # dynamic slicing needs the Rapid channel
        "pathways:slices": [{"name": "superpod", "tpu": "tpu7x-128", "reservation": "superpod/reservationBlocks/block-a",
                             "subBlocks": [f"sub-{i}" for i in range(SUPERPOD_CUBES)]}],
        "pathways:workloads": [batch("cube", "4x4x4"), batch("two-cubes", "4x4x8"), batch("eight-cubes", "8x8x8"),
                               batch("super-32", "8x16x16"),
                               {"name": "notebook", "mode": "interactive", "topology": "2x2x2", "slices": 2}],
    })
    return cfg


def _timed(cmd: list[str], scratch: Path, expect: int = 0, env: dict[str, str] | None = None) -> tuple[float, float, Path]:
    """(wall seconds, peak RSS MB, stdout file) of one command in a fresh process that exits `expect`."""
    out_path, err_path = scratch / "out.json", scratch / "err.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, stdout=out, stderr=err, env=env)
        # wait4 reaps this child and returns its own rusage (ru_maxrss in KiB on Linux).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != expect:
        raise RuntimeError(f"{' '.join(cmd[1:4])} exited {proc.returncode}, not {expect}:\n{err_path.read_text()}")
    if expect and not all(line.startswith("error: ") for line in err_path.read_text().splitlines() or [""]):
        raise RuntimeError(f"{' '.join(cmd[1:4])}: not error lines:\n{err_path.read_text()[:2000]}")
    return wall, usage.ru_maxrss / 1024, out_path


def _run_once(config_path: Path, scratch: Path) -> tuple[float, float, int, dict]:
    """(wall seconds, peak RSS MB, resources, deploy-time estimate) of one plan in a fresh process."""
    wall, rss, out_path = _timed([sys.executable, "-m", "infra.offline", "plan", "--config", str(config_path), "--json"], scratch)
    doc = json.loads(out_path.read_text())
    return wall, rss, len(doc["resources"]), doc["deployTime"]


def _hours(minutes: float) -> str:
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size (fresh process each)")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--no-largest", action="store_true", help="skip the largest configuration the bounds allow")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "build" / "bench.json")
    args = parser.parse_args(argv)
    try:
        output.checked(args.out)  # before minutes of runs, not after
    except output.OutputError as e:
        parser.error(str(e))
    rows = []
    cases = [(slices, stack_config(slices)) for slices in sorted(args.sizes)]
    if not args.no_largest:
        cases.append(("largest", largest_config()))
    cases.append(("superpod", superpod_config()))
    with tempfile.TemporaryDirectory() as tmp:
        for slices, config in cases:
            path = Path(tmp) / f"Pulumi.bench-{slices}.yaml"
            path.write_text(yaml.safe_dump(config))
            runs = [_run_once(path, Path(tmp)) for _ in range(args.repeat)]
            walls = [w for w, _, _, _ in runs]
            deploy = runs[0][3]
            rows.append({
                "slices": slices, "resources": runs[0][2], "wall_min_s": round(min(walls), 3),
                "wall_median_s": round(statistics.median(walls), 3), "peak_rss_mb": round(max(r for _, r, _, _ in runs), 1),
                "runs": args.repeat, "deploy_expected_min": deploy["expectedMinutes"], "deploy_worst_case_min": deploy["worstCaseMinutes"],
                "node_pool_concurrency": deploy["nodePoolConcurrency"],
            })
        ref_path = Path(tmp) / "Pulumi.reference.yaml"
        ref_path.write_text(yaml.safe_dump(reference_config()))
        xpk_home = Path(tmp) / "xpk-home"
        xpk_home.mkdir()
        xpk_env = {**os.environ, "HOME": str(xpk_home), "TELEMETRY_ENABLED": "false"}
        ref_walls, xpk_walls = [], []
        for _ in range(max(args.repeat, 5)):  # interleaved: a busy moment slows both, not one
            ref_walls.append(_run_once(ref_path, Path(tmp))[0])
            xpk_walls.append(sum(_timed(sandboxed(c), Path(tmp), env=xpk_env)[0] for c in xpk_commands(reference_config())))
        sdk_walls = [_timed([sys.executable, "-c", SDK_IMPORT], Path(tmp))[0] for _ in range(args.repeat)]
        bare_walls = [_timed([sys.executable, "-c", "pass"], Path(tmp))[0] for _ in range(args.repeat)]
        hostile = {}
        for name, text in hostile_files().items():
            path = Path(tmp) / "Pulumi.hostile.yaml"
            path.write_text(text)
            cmd = [sys.executable, "-m", "infra.offline", "plan", "--config", str(path)]
            hostile[name] = round(max(_timed(cmd, Path(tmp), expect=2)[0] for _ in range(args.repeat)), 3)
    base = rows[0]["wall_median_s"]
    print(f"{'slices':>7} {'resources':>9} {'wall min s':>10} {'wall med s':>10} {'x 1-slice':>9} {'peak RSS MB':>11} "
          f"{'deploy expected':>15} {'deploy worst case':>17}")
    for r in rows:
        r["ratio_to_smallest"] = round(r["wall_median_s"] / base, 2)
        print(f"{r['slices']:>7} {r['resources']:>9} {r['wall_min_s']:>10.2f} {r['wall_median_s']:>10.2f} {r['ratio_to_smallest']:>9.2f} "
              f"{r['peak_rss_mb']:>11.1f} {_hours(r['deploy_expected_min']):>15} {_hours(r['deploy_worst_case_min']):>17}")
    lanes = sorted({r["node_pool_concurrency"] for r in rows})
    print(f"deploy: node pools in lanes of {'/'.join(map(str, lanes))} (cluster.nodePoolConcurrency, node-pool operations in "
          "flight at once); expected = typical create times (assumptions), worst case = create timeouts")
    reference = {
        "wall_median_s": round(statistics.median(ref_walls), 3), "sdk_import_median_s": round(statistics.median(sdk_walls), 3),
        "python_start_median_s": round(statistics.median(bare_walls), 3),
        "xpk_version": XPK_VERSION, "xpk_dry_run_median_s": round(statistics.median(xpk_walls), 3), "runs": len(ref_walls),
    }
    reference["ratio_to_xpk"] = round(reference["wall_median_s"] / reference["xpk_dry_run_median_s"], 2)
    print(f"reference stack (2 x v6e-16, 1 batch workload): plan {reference['wall_median_s']:.2f} s median; of it, "
          f"Python start {reference['python_start_median_s']:.2f} s and provider SDK import {reference['sdk_import_median_s']:.2f} s "
          f"(fresh process each); xpk {XPK_VERSION} dry runs of the same cluster and workload {reference['xpk_dry_run_median_s']:.2f} s "
          f"median of {reference['runs']}, interleaved: ratio {reference['ratio_to_xpk']}x (goal <= 1.0)")
    if not args.no_largest:
        print("largest = 1000 v6e-16 slices in 10 groups + 100 interactive workloads (the config model's bounds)")
    print(f"superpod = one tpu7x pool set of {SUPERPOD_CUBES} cubes (2,304 hosts) and 5 workloads, sub-slice to 32 cubes")
    worst = next(r for r in reversed(rows) if r["slices"] not in ("largest", "superpod"))
    superpod = next(r for r in rows if r["slices"] == "superpod")
    print("hostile stack files, refused (exit 2, error lines only), slowest of the runs: "
          + "; ".join(f"{name} {s:.2f} s" for name, s in hostile.items()))
    ok = (worst["ratio_to_smallest"] <= MAX_RATIO and all(r["peak_rss_mb"] <= MAX_RSS_MB for r in rows)
          and max(hostile.values()) <= MAX_HOSTILE_S and reference["ratio_to_xpk"] <= MAX_RATIO_TO_XPK
          and superpod["wall_median_s"] <= MAX_SUPERPOD_S and superpod["peak_rss_mb"] <= MAX_SUPERPOD_RSS_MB)
    print(f"targets: {worst['slices']} slices within {MAX_RATIO}x of {rows[0]['slices']} ({worst['ratio_to_smallest']}x), peak RSS <= {MAX_RSS_MB} MB, "
          f"hostile files refused within {MAX_HOSTILE_S} s ({max(hostile.values()):.2f} s), plan within {MAX_RATIO_TO_XPK}x of xpk's dry runs "
          f"({reference['ratio_to_xpk']}x), the superpod within {MAX_SUPERPOD_S:.0f} s and {MAX_SUPERPOD_RSS_MB} MB "
          f"({superpod['wall_median_s']:.2f} s, {superpod['peak_rss_mb']:.0f} MB): {'met' if ok else 'NOT met'}")
    output.write_text(args.out, json.dumps({"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "rows": rows,
                                            "reference": reference, "hostile_s": hostile, "targets_met": ok}, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
