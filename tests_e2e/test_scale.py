"""Scale: a 256-slice stack on the real control plane, deployed by the real `pulumi up`. 256 v6e-16 slices (1,024 TPU hosts, one node pool each)
and one batch workload on all of them: 1,024 worker pods and the head, through JobSet's and Kueue's webhooks,
admitted by Kueue and placed by the real scheduler, one worker per TPU host and each slice on its own pool.

The figures (time from apply to every pod Running, the API server's memory) are written to
build/e2e/scale.json and printed; the test asserts the behaviour, with a generous bound on the time so a
slow machine fails loudly rather than hanging."""

from __future__ import annotations

import json
import subprocess
import time

from tests.conftest import config_with
from tests_e2e.helpers import is_true, placement, wait_running, workload
from tools.cluster.local import ROOT, LocalCluster, log

SLICES = 256
HOSTS = 4  # v6e-16
RUNNING_WITHIN_SECONDS = 1200


def apiserver_rss_mib(cluster: LocalCluster) -> float:
    """Resident memory of this control plane's kube-apiserver process (kwokctl's binary runtime)."""
    proc = subprocess.run(["pgrep", "-f", f"{cluster.kwok_workdir}.*kube-apiserver"], capture_output=True, text=True)
    pids = [int(p) for p in proc.stdout.split()]
    rss = 0
    for pid in pids:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                rss = max(rss, int(line.split()[1]))
    assert rss, f"no kube-apiserver process under {cluster.kwok_workdir}"
    return rss / 1024


def test_256_slices_run_where_they_belong(cluster, stacks):
    config = config_with(slices=[{"name": "big", "tpu": "v6e-16", "count": SLICES}], pathwaysVersion="jax-0.9.0",
                         workloads=[{"name": "pretrain", "image": "example.com/trainer:1", "command": ["python3", "train.py"]}])
    rss_before = apiserver_rss_mib(cluster)
    t0 = time.monotonic()
    deployed = stacks.use("scale", config)
    applied = deployed.up.seconds
    cluster.wait_for("Kueue admits the 256-slice JobSet", lambda: is_true(workload(cluster, "pathways", "pretrain"), "Admitted"),
                     timeout=300, interval=2)
    ps = wait_running(cluster, "pathways", "pretrain", 1 + SLICES * HOSTS, timeout=RUNNING_WITHIN_SECONDS)
    running = time.monotonic() - t0
    rss_after = apiserver_rss_mib(cluster)

    jobs = placement(cluster, ps)
    workers = {k: v for k, v in jobs.items() if k[0] == "worker"}
    assert sorted(i for _, i in workers) == list(range(SLICES))  # the JobSet controller made every slice's Job
    for pools in workers.values():
        assert len(pools) == HOSTS and len(set(pools)) == 1  # JobSet's exclusive placement: a slice's hosts on one pool
    assert len({p[0] for p in workers.values()}) == SLICES  # each slice on its own pool

    figures = {"slices": SLICES, "tpuNodes": SLICES * HOSTS, "pods": len(ps), "applySeconds": round(applied, 1),
               "allRunningSeconds": round(running, 1), "apiserverRssMiBBefore": round(rss_before),
               "apiserverRssMiBAfter": round(rss_after)}
    out = ROOT / "build" / "e2e" / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    log(f"scale: {json.dumps(figures)}")
    stacks.leave_to_the_cluster()  # the last scenario (tests_e2e/conftest.py ORDER): its 1,024 nodes go with the cluster
