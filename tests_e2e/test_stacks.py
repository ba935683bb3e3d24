"""Every committed stack deployed as its users deploy it, through the real `pulumi up` (its Kubernetes layer:
existing-cluster mode), the JobSet, Kueue and LeaderWorkerSet charts included, and judged by what the
controllers, the scheduler and Kueue did:

- the charts' controllers run: the API server admitted each chart pod under its namespace's Pod Security
  level, the real controller behind it became ready (its /readyz), so the Deployment became available and
  Pulumi's await finished; so did each serve.gateway's endpoint picker (the real picker, ready once it read its
  InferencePool), and nothing else runs;
- Kueue admitted exactly the workloads the slice groups hold, by priority, and held the others for
  insufficient quota, their JobSets suspended and podless; on a pool set (dynamic slicing), released one at a time
  in the plan's order, each admitted on the very hosts the plan names and formed into its Slices, or refused with
  the plan's reason (tests_e2e/pool_sets.py);
- every pod of an admitted workload was scheduled onto GKE-shaped nodes (GKE's allocatable: its requests fit),
  and JobSet's exclusive placement put each slice on a node pool of its own, one pool per slice;
- the second preview proposes nothing (tests_e2e/conftest.py), and `pulumi destroy` leaves nothing behind."""

from __future__ import annotations

import copy
from collections import defaultdict

import pytest
import yaml

from components.model.config import load, resolve
from components.model.workloads.inference_gateway import picker_name
from infra.offline.stackfile import load_config, raw_values, stack_path
from tests.conftest import EXISTING_CLUSTER_STACKS, STACKS, every_stack, example_config, example_path
from tests_e2e.helpers import (
    controller_pods,
    is_true,
    kueue_judged,
    nodes,
    over_the_ceiling_is_never_admitted,
    pods,
    wait_running,
    workload,
)
from tests_e2e.pool_sets import held, pool_set_workloads, release_in_order
from tools.cluster.local import ClusterError, log

PRIORITY = {"serving": 2_000_000, "training": 1_000_000, "interactive": 500_000, "experiment": 100_000}
POOL = "cloud.google.com/gke-nodepool"

GROUP = "pathways/slice-group"


def model(name: str):
    config, secrets = load_config(stack_path(name))
    return resolve(load(raw_values(config), name, frozenset(secrets)))


def stack_config(name: str) -> dict:
    """A stack's config as its file in stacks/ has it: for the scenario over every stack."""
    return yaml.safe_load(stack_path(name).read_text())["config"]


def example_stack_config(name: str) -> dict:
    """An example stack's config as written (its copy in tests/fixtures/examples): for scenarios about that example,
    which stay as they are when a team edits or removes its stacks/ file."""
    return copy.deepcopy(example_config(name))


def example_model(name: str):
    config, secrets = load_config(example_path(name))
    return resolve(load(raw_values(config), name, frozenset(secrets)))


def expected_admission(m) -> tuple[list, list, dict[str, str]]:
    """(admitted, waiting, rung of each admitted): Kueue admits by priority, each workload on the first rung of its
    group's capacity ladder (the group itself when it has none) whose slices last."""
    admitted, waiting, rungs = [], [], {}
    free = {g.name: g.count for g in m.slices}
    # serve workloads (LeaderWorkerSets) have their own scenario: tests_e2e/test_serving.py; a pool set's are placed
    # one at a time (tests_e2e/pool_sets.py)
    for w in sorted((w for w in m.jobset_workloads if w.state == "running" and not w.group.dynamic), key=lambda w: -PRIORITY[w.priority]):
        rung = next((g.name for g in w.rungs if w.slices <= free[g.name]), None)
        if rung is not None:
            free[rung] -= w.slices
            admitted.append(w)
            rungs[w.name] = rung
        else:
            waiting.append(w)
    return admitted, waiting, rungs


# the fleet's stacks deploy together, a manager reading its workers' outputs (the example fleet: tests_e2e/test_fleet.py);
# a stack on a cluster made elsewhere deploys onto one made as xpk makes it (the example: tests_e2e/test_xpk.py)
ALONE = [name for name in STACKS if name not in EXISTING_CLUSTER_STACKS and not stack_config(name).get("pathways:fleet")]


@every_stack("name", ALONE)
def test_committed_stack_deploys_and_runs(cluster, stacks, name):
    m = model(name)
    # a pool set's workloads deployed held, then released one at a time in the plan's order (tests_e2e/pool_sets.py)
    stacks.use(name, held(stack_config(name), m) if pool_set_workloads(m) else stack_config(name))

    # the controllers the charts installed: running behind ready pods the API server admitted
    controllers = controller_pods(cluster)
    expected = {"jobset-system", "kueue-system"} | ({"lws-system"} if m.serve_workloads else set())
    if not m.kueue:
        expected.discard("kueue-system")
    assert set(controllers) == expected, controllers
    for ns, ps in controllers.items():
        assert ps and all(is_true(p, "Ready") for p in ps), (ns, [p["status"].get("conditions") for p in ps])
    # and each serve.gateway's endpoint picker (the inferencepool chart's Deployment), ready once it read its pool
    pickers = [p for w in m.serve_workloads if w.spec.serve is not None and w.spec.serve.gateway.enabled
               for p in cluster.get("pods", "-n", w.namespace, "-l", f"inferencepool={picker_name(w.name)}")["items"]
               if not p["metadata"].get("deletionTimestamp")]
    assert len(pickers) == sum(1 for w in m.serve_workloads if w.spec.serve is not None and w.spec.serve.gateway.enabled)
    assert all(is_true(p, "Ready") for p in pickers), [p["status"].get("conditions") for p in pickers]
    assert sorted(cluster.kubelet.running()) == sorted(
        [f"{ns}/{p['metadata']['name']}" for ns, ps in controllers.items() for p in ps]
        + [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pickers])

    admitted, waiting, rungs = expected_admission(m)
    for w in admitted:
        cluster.wait_for(f"Kueue admits {w.name}", lambda w=w: is_true(workload(cluster, w.namespace, w.name), "Admitted"), timeout=180)
        ps = wait_running(cluster, w.namespace, w.name, 1 + w.slices * w.group.tpu.hosts)
        labels = nodes(cluster)  # a queued-provisioning group's nodes come with the workload's request
        # on the rung Kueue was to pick: its capacity ladder's first with room
        assert {labels[p["spec"]["nodeName"]].get(GROUP) for p in ps if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == w.worker_job} == {rungs[w.name]}
        # JobSet's exclusive placement: each worker Job (a slice) on one node pool, no two slices on one pool
        pools_of_job: dict[int, set[str]] = defaultdict(set)
        for p in ps:
            meta = p["metadata"]["labels"]
            if meta["jobset.sigs.k8s.io/replicatedjob-name"] == w.worker_job:
                pools_of_job[int(meta["jobset.sigs.k8s.io/job-index"])].add(labels[p["spec"]["nodeName"]][POOL])
        assert sorted(pools_of_job) == list(range(w.slices))
        assert all(len(pools) == 1 for pools in pools_of_job.values()), pools_of_job
        assert len({next(iter(pools)) for pools in pools_of_job.values()}) == w.slices, pools_of_job
        if w.mtc_mount_path:
            # multi-tier checkpointing: GKE's driver serves the RAM disk on the nodes its CheckpointConfiguration
            # selects; every node the scheduler put a worker on is one of them (the API server evaluates the selector)
            assert m.mtc is not None
            (cpc,) = [c for c in cluster.get("checkpointconfigurations")["items"]
                      if c["spec"]["nodeSelector"] == {"pathways/slice-group": w.group.name}]
            selector = ",".join(f"{k}={v}" for k, v in cpc["spec"]["nodeSelector"].items())
            served = {n["metadata"]["name"] for n in cluster.get("nodes", "-l", selector)["items"]}
            workers = {p["spec"]["nodeName"] for p in ps if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == w.worker_job}
            assert workers and workers <= served, (workers, served)
            assert cpc["spec"]["inMemoryVolumeSize"] == m.mtc.in_memory_volume_size

    if m.mtc is not None:
        # the API server holds one CheckpointConfiguration per slice group, as it admitted them (the CRD is the
        # project's stand-in for GKE's: tools/engines/gke-crds)
        names = sorted(c["metadata"]["name"] for c in cluster.get("checkpointconfigurations")["items"])
        assert names == [f"pathways-mtc-{g}" for g in m.mtc.slice_groups]

    for w in waiting:
        # more slices wanted than the group has: Kueue holds the lower priority, its JobSet stays suspended
        wl, verdict = kueue_judged(cluster, w.namespace, lambda w=w: workload(cluster, w.namespace, w.name), w.name, "insufficient")
        assert "insufficient" in verdict.message, (wl["status"], verdict)
        assert cluster.get("jobset", "-n", w.namespace, w.name)["spec"]["suspend"] is True
        assert pods(cluster, w.namespace, w.name) == []

    w = next((w for w in admitted if w.cluster_queue and not w.group.dynamic and not w.group.ladder), None)
    if w is not None:  # (a pool set's admission is judged by topology, pool_sets.py; a ladder's by its rungs)
        over_the_ceiling_is_never_admitted(cluster, m, w)

    if pool_set_workloads(m):
        equal, compared = release_in_order(cluster, m)
        log(f"pool sets of {name}: {equal} of {compared} placements as the plan predicted")
        stacks.changed()  # their LocalQueues were released by hand

    # nothing the stack runs is left unscheduled: every request fits a GKE node's allocatable (a serve workload's
    # pods may still be on their way: `pulumi up` does not wait for its Service's endpoints)
    def pending() -> list[str]:
        return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in cluster.get("pods", "-A")["items"]
                if p["status"].get("phase") == "Pending"]
    try:
        cluster.wait_for("every pod scheduled", lambda: not pending(), timeout=120, interval=2)
    except ClusterError:
        pytest.fail(f"pods left unscheduled: {pending()}")
