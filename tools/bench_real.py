"""The real `pulumi preview`'s time and memory beside the offline plan's (issue #24 item 7), on the Kubernetes
layer in existing-cluster mode against the local control plane (tools/cluster): the CLI v3.274.1 and the
pulumi-kubernetes provider built by tools/engines, the policy pack as the workflows pass it, a file backend
in a throwaway directory. Not part of `make test`; `make bench-real` (needs `make toolchain`).

Per configuration, `--repeat` fresh previews (each a fresh language host, CLI and plugins, as in CI):
wall time from starting the language host to the CLI's exit; the engine's own duration (the preview JSON's
`duration`: the engine's run of the program and its steps, without the CLI's start, the stack and backend
loading, plugin and policy-pack start); and the peak of the summed resident memory of the processes the
preview starts (CLI, provider, language host, policy pack; not the controllers already running), sampled
every 50 ms (a sum of RSS counts shared pages once per process). Then where the time goes: the CLI's start
(`pulumi version`) and the language host's start (Python, the SDK, the program's imports).
Written to build/bench-real.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tools import output
from tools.cluster.local import LocalCluster
from tools.pulumi_real.run import BIN, POLICIES, PulumiRun

ROOT = Path(__file__).resolve().parents[1]

XPK_DRY_RUN_S = 1.8  # xpk's dry-run of one cluster and one workload (issue #17)


def config(kubeconfig: Path, slices: int, workloads: int) -> dict[str, Any]:
    return {
        "gcp:project": "bench-proj-123", "gcp:region": "us-east5", "gcp:zone": "us-east5-b",
        "pathways:slices": [{"name": "main", "tpu": "v6e-16", "count": slices}],
        "pathways:pathwaysVersion": "jax-0.9.0",
        "pathways:cluster": {"existing": {"kubeconfig": str(kubeconfig)}},
        "pathways:bucket": {"name": "bench-proj-123-pathways"},
        "pathways:kubernetes": {"installControllers": False},
        "pathways:workloads": [{"name": f"train-{i}", "image": "example.com/trainer:1", "slices": 1} for i in range(workloads)],
    }


def _descendants(root: int) -> dict[int, int]:
    """VmRSS in KiB of each of `root`'s descendants (not root itself), by pid."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        pid, ppid = int(entry), int(fields.get("PPid", "0").strip() or 0)
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0]) if "VmRSS" in fields else 0
    out, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return out


class PeakMemory:
    """The peak of the summed RSS of the processes this process starts while the block runs (those already
    running when it begins, the local cluster's controllers, are left out)."""

    def __enter__(self) -> "PeakMemory":
        self._before = set(_descendants(os.getpid()))
        self.peak_kib, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            now = _descendants(os.getpid())
            self.peak_kib = max(self.peak_kib, sum(kib for pid, kib in now.items() if pid not in self._before))
            self._stop.wait(0.05)

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def host_start_seconds() -> float:
    t0 = time.monotonic()
    host = subprocess.Popen([sys.executable, "-m", "tools.pulumi_real.host"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert host.stdout is not None
    host.stdout.readline()
    seconds = time.monotonic() - t0
    host.kill()
    host.wait()
    return seconds


def offline_plan_seconds(cfg: dict[str, Any], tmp: Path) -> float:
    path = tmp / "Pulumi.bench.yaml"
    path.write_text(yaml.safe_dump({"config": cfg}))
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "infra.offline", "plan", "--config", str(path), "--json"], cwd=ROOT,
                   check=True, capture_output=True)
    return time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench_real", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="previews per configuration")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "bench-real.json")
    args = parser.parse_args(argv)
    sizes = [(2, 1), (16, 8)]  # (v6e-16 slices, batch workloads): the reference stack of issue #17, and a bigger one
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name, LocalCluster.start(ROOT / "build" / "bench-real" / time.strftime("%Y%m%d-%H%M%S")) as cluster:
        tmp = Path(tmp_name)
        for slices, workloads in sizes:
            cfg = config(cluster.kubeconfig, slices, workloads)
            run = PulumiRun(tmp / f"pulumi-{slices}", "bench", cfg)
            walls, engine, peaks, resources = [], [], [], 0
            for _ in range(args.repeat):
                t0 = time.monotonic()
                with PeakMemory() as memory:
                    result = run.cli("preview", "--json", "--policy-pack", str(POLICIES))
                wall = time.monotonic() - t0  # result.seconds leaves out the language host's start
                if result.returncode != 0:
                    print(result.output[-3000:], file=sys.stderr)
                    return 1
                doc = json.loads(result.stdout)
                walls.append(wall)
                engine.append(doc.get("duration", 0) / 1e9)
                peaks.append(memory.peak_kib / 1024)
                resources = sum(doc.get("changeSummary", {}).values())
            cli_start = statistics.median(run.cli_raw("version").seconds for _ in range(args.repeat))
            host_start = statistics.median(host_start_seconds() for _ in range(args.repeat))
            offline = statistics.median(offline_plan_seconds(cfg, tmp) for _ in range(args.repeat))
            row = {"slices": slices, "workloads": workloads, "resources": resources,
                   "preview_wall_median_s": round(statistics.median(walls), 2), "preview_wall_min_s": round(min(walls), 2),
                   "engine_duration_median_s": round(statistics.median(engine), 2), "peak_rss_mib": round(max(peaks)),
                   "cli_start_s": round(cli_start, 2), "language_host_start_s": round(host_start, 2),
                   "offline_plan_median_s": round(offline, 2)}
            rows.append(row)
            print(f"{slices:>3} slices {workloads:>2} workloads {resources:>3} resources: real preview {row['preview_wall_median_s']:.2f} s "
                  f"median (min {row['preview_wall_min_s']:.2f}; engine {row['engine_duration_median_s']:.2f}), peak RSS of all its "
                  f"processes {row['peak_rss_mib']} MiB; CLI start {row['cli_start_s']:.2f} s, language host start "
                  f"{row['language_host_start_s']:.2f} s; offline plan {row['offline_plan_median_s']:.2f} s; xpk dry-run {XPK_DRY_RUN_S} s",
                  flush=True)
    output.write_text(args.out, json.dumps({"machine": {"cpus": os.cpu_count(), "pulumi": str(BIN / "pulumi")}, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
