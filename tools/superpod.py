"""A whole Ironwood superpod on the real engines (issue #79.3), a benchmark (`make superpod`), not a tier scenario: the
cold CI run has no room for it (README, "CI").

    python -m tools.cluster.offline -- python -m tools.superpod [--cubes 4 16 48 144] [--out build/superpod.json]

One control plane (the real kube-apiserver, etcd, scheduler and controller-manager, kwok's nodes with GKE's block,
sub-block and partition labels, the real JobSet and Kueue controllers and the tier's stand-in slice controllers:
tools/cluster/) takes the same pool-set stack at each size, by the real `pulumi up` of its Kubernetes layer: a tpu7x
pool set of N sub-blocks (a 4x4x4 cube, 16 hosts, each) and its workloads, held, then released one at a time in the
plan's order (tests_e2e/pool_sets.py): the real Kueue's topology-aware scheduling must admit each on exactly the hosts
the plan predicts. At every size the same three workloads (a cube, two cubes, a pair of 2x2x2 sub-slices) are timed,
so the growth of Kueue's and the API server's time per admission is measured on equal work; at the largest size the
super-slices of 8 and 32 cubes run beside them, every pod must run within 5 minutes of `pulumi up` returning, and a
reshape of one workload must replace its JobSet alone.

Figures: deploy (`pulumi up`, nodes included), each admission (from its queue's release to Kueue's Admitted), all pods
Running after `pulumi up`, the API server's mean time per request on Kueue's Workloads (its own metrics), and the
placements compared with the plan's. Exit 1 when a placement differs or a target is missed."""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from components.model.capacity import dynamic_slicing as ds
from components.model.config import load, resolve
from components.model.cost.summary import stack_summary
from infra.offline import stackfile
from tools import output
from tools.bench import SUPERPOD_CUBES, superpod_config
from tools.cluster.local import ROOT, LocalCluster, log

SIZES = (4, 16, 48, SUPERPOD_CUBES)
MAX_RUNNING_AFTER_UP_S = 300.0  # issue #79.3: every pod Running within 5 minutes of `pulumi up` returning
TIMED = ("cube", "two-cubes", "notebook")  # the workloads every size runs: equal work, so the growth is the cluster's


def config_of(cubes: int) -> dict[str, Any]:
    """The superpod stack with `cubes` sub-blocks: at the largest size all its workloads, below it the TIMED three."""
    config = superpod_config()["config"]
    config["pathways:slices"][0]["subBlocks"] = [f"sub-{i}" for i in range(cubes)]
    if cubes < SUPERPOD_CUBES:
        config["pathways:workloads"] = [w for w in config["pathways:workloads"] if w["name"] in TIMED]
    return config


def model_of(config: dict[str, Any], name: str):
    flat, secrets = stackfile.flatten(config)
    return resolve(load(stackfile.raw_values(flat), name, frozenset(secrets)))


@contextlib.contextmanager
def timed_waits(cluster: LocalCluster, stretch: float) -> Iterator[dict[str, float]]:
    """Inside, cluster.wait_for is timed by what it waits for (the seconds yielded) and given `stretch` times its
    timeout: a super-slice's 512 pods outlast the tier's."""
    seconds: dict[str, float] = {}
    wait = cluster.wait_for

    def timed(what: str, predicate, timeout: float = 60, interval: float = 0.5) -> Any:
        t0 = time.monotonic()
        try:
            return wait(what, predicate, timeout=timeout * stretch, interval=min(interval, 0.5))
        finally:
            seconds[what] = time.monotonic() - t0

    cluster.wait_for = timed  # type: ignore[method-assign]
    try:
        yield seconds
    finally:
        cluster.wait_for = wait  # type: ignore[method-assign]


def workload_requests(cluster: LocalCluster) -> dict[str, tuple[float, float]]:
    """The API server's own histogram of requests on Kueue's Workloads so far: verb -> (seconds, requests); watches,
    which last as long as their client, left out."""
    text = cluster.kubectl("get", "--raw", "/metrics", timeout=120).stdout
    sums: dict[str, list[float]] = {}
    for line in text.splitlines():
        m = re.match(r'apiserver_request_duration_seconds_(sum|count)\{(.*)\} (\S+)$', line)
        if not m or 'resource="workloads"' not in m.group(2) or 'verb="WATCH"' in m.group(2):
            continue
        verb = re.search(r'verb="([A-Z]+)"', m.group(2))
        entry = sums.setdefault(verb.group(1) if verb else "?", [0.0, 0.0])
        entry[0 if m.group(1) == "sum" else 1] += float(m.group(3))
    return {verb: (s, c) for verb, (s, c) in sums.items()}


def request_ms(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Mean milliseconds per request by verb between two readings of workload_requests."""
    out = {}
    for verb, (s, c) in sorted(after.items()):
        s0, c0 = before.get(verb, (0.0, 0.0))
        if c > c0:
            out[verb] = round(1000 * (s - s0) / (c - c0), 2)
    return out


def reshape(cluster: LocalCluster, stacks: Any, config: dict[str, Any], name: str) -> dict[str, Any]:
    """Another topology for workload `name`: its JobSet alone is replaced, no node comes or goes."""
    m = model_of(config, "superpod")
    w = next(x for x in m.workloads if x.name == name)
    before_nodes = {n["metadata"]["name"]: n["metadata"]["uid"] for n in cluster.get("nodes")["items"]}
    jobsets = {j["metadata"]["name"]: j["metadata"]["uid"] for j in cluster.get("jobsets", "-n", w.namespace)["items"]}
    old_workload = _workload_uid(cluster, w.namespace, name)
    changed = json.loads(json.dumps(config))
    for entry in changed["pathways:workloads"]:
        if entry["name"] == name:
            entry["topology"] = "4x4x8"
    t0 = time.monotonic()
    result = stacks.update(changed)
    replaced = re.search(r"\b(\d+) replaced\b", result.output)
    after = {j["metadata"]["name"]: j["metadata"]["uid"] for j in cluster.get("jobsets", "-n", w.namespace)["items"]}
    kept = sorted(n for n in jobsets if n != name and after.get(n) == jobsets[n])
    ok = (replaced is not None and replaced.group(1) == "1" and after.get(name) not in (None, jobsets[name])
          and len(kept) == len(jobsets) - 1
          and {n["metadata"]["name"]: n["metadata"]["uid"] for n in cluster.get("nodes")["items"]} == before_nodes)
    cluster.wait_for(f"Kueue admits the reshaped {name}", lambda: _admitted(cluster, w.namespace, name, besides=old_workload), timeout=300)
    return {"workload": name, "to": "4x4x8", "replacedOnlyItsJobSet": ok, "seconds": round(time.monotonic() - t0, 1)}


def _workload_uid(cluster: LocalCluster, namespace: str, jobset: str) -> Optional[str]:
    from tests_e2e.helpers import workload

    found = workload(cluster, namespace, jobset)
    return found["metadata"]["uid"] if found else None


def _admitted(cluster: LocalCluster, namespace: str, jobset: str, besides: Optional[str]) -> bool:
    """The JobSet's Workload is admitted, and it is not the one of uid `besides` (the replaced JobSet's)."""
    from tests_e2e.helpers import is_true, workload

    found = workload(cluster, namespace, jobset)
    return found is not None and found["metadata"]["uid"] != besides and is_true(found, "Admitted")


def run_size(cluster: LocalCluster, stacks: Any, cubes: int) -> dict[str, Any]:
    from tests_e2e.pool_sets import held, release_in_order

    config = config_of(cubes)
    m = model_of(config, "superpod")
    (ps,) = stack_summary(m)["poolSets"]
    stacks.close()  # each size from an empty cluster: its deploy time and its placements from an empty pool set
    t0 = time.monotonic()
    deployed = stacks.use(f"superpod-{cubes}", held(config, m))
    deploy_s = time.monotonic() - t0
    stacks.changed()
    requests = workload_requests(cluster)
    t_up = time.monotonic()
    with timed_waits(cluster, stretch=5) as waited:
        equal, compared = release_in_order(cluster, m)  # asserts each placement against the plan's
    running_s = time.monotonic() - t_up
    row = {
        "cubes": cubes, "hosts": cubes * ds.CUBE_HOSTS, "nodes": len(cluster.get("nodes")["items"]),
        "deploySeconds": round(deploy_s, 1), "pulumiUpSeconds": round(deployed.up.seconds, 1),
        "admissionSeconds": {p["workload"]: round(waited[f"Kueue admits {p['workload']}"], 2) for p in ps["placements"] if not p["waits"]},
        "allRunningAfterUpSeconds": round(running_s, 1), "placementsAsPlanned": equal, "placementsCompared": compared,
        # while the workloads were released and admitted
        "apiserverWorkloadRequestMs": request_ms(requests, workload_requests(cluster)),
    }
    log(f"superpod {cubes} cubes: {json.dumps(row)}")
    return row


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.superpod", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--cubes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "superpod.json")
    args = parser.parse_args(argv)
    from tests_e2e.conftest import Stacks

    rows: list[dict[str, Any]] = []
    reshaped: dict[str, Any] = {}
    workdir = ROOT / "build" / "superpod" / time.strftime("%Y%m%d-%H%M%S")
    with LocalCluster.start(workdir) as cluster:
        stacks = Stacks(cluster, workdir / "stacks")
        try:
            for cubes in sorted(args.cubes):
                rows.append(run_size(cluster, stacks, cubes))
            reshaped = reshape(cluster, stacks, config_of(max(args.cubes)), "cube")
        finally:
            stacks.leave_to_the_cluster()  # the control plane takes 2,304 nodes along faster than a destroy
    largest = rows[-1]
    print(f"{'cubes':>5} {'nodes':>6} {'deploy s':>8} {'up s':>6} {'running s':>9}  admission s (release -> Admitted)   API server ms/request on Workloads")
    for r in rows:
        print(f"{r['cubes']:>5} {r['nodes']:>6} {r['deploySeconds']:>8} {r['pulumiUpSeconds']:>6} {r['allRunningAfterUpSeconds']:>9}  "
              f"{json.dumps(r['admissionSeconds'])}  {json.dumps(r['apiserverWorkloadRequestMs'])}")
    print(f"reshape at {largest['cubes']} cubes: {json.dumps(reshaped)}")
    ok = (all(r["placementsAsPlanned"] == r["placementsCompared"] for r in rows)
          and largest["allRunningAfterUpSeconds"] <= MAX_RUNNING_AFTER_UP_S and reshaped.get("replacedOnlyItsJobSet") is True)
    print(f"targets: every placement as the plan predicts, every pod Running within {MAX_RUNNING_AFTER_UP_S:.0f} s of `pulumi up` "
          f"({largest['allRunningAfterUpSeconds']} s), a reshape replaces its JobSet alone: {'met' if ok else 'NOT met'}")
    output.write_text(args.out, json.dumps({"rows": rows, "reshape": reshaped, "targetsMet": ok}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
