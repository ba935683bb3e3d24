"""`python -m infra.run why` on a labelled suite (issue #60): the scenarios of tests_e2e/why_labels.yaml, each seeded
on one stack the real `pulumi up` deployed, as a researcher would meet them: runs submitted with `infra.run submit`,
JobSets made by hand, workloads the stack declares, and what GKE, the kubelet and an operator do to them (nodes GKE
could not make or made with another topology, no capacity for queued provisioning, an image no registry has, a bucket
Cloud Storage refuses, programs that exit, run out of memory or cannot start, a node that goes away, a held queue).
Each is asked once it has settled (an independent predicate on the objects, never `why` itself); the suite prints the
figure and every miss, and holds `why` to 90 %."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from components.manifests.jobset import HEAD_JOB
from tests.conftest import GROUPS_RBAC, config_with
from tests_e2e.helpers import is_true, pods, running, user_stack_file, workload
from tools.cluster.deploy import create_nodes
from tools.cluster.local import ROOT, ClusterError, LocalCluster

LABELS: list[dict[str, str]] = yaml.safe_load((Path(__file__).parent / "why_labels.yaml").read_text())
ACCURACY = 0.9
NS = "pathways"
VERSION = "jax-0.9.0"
IMAGE = "example.com/trainer:1"
UNPULLABLE = "registry.invalid/e2e/unpullable:1"  # tools/cluster/stages.yaml: the kubelet cannot pull it
REFUSED_BUCKET = "e2e-refused-bucket"  # tools/cluster/stages.yaml: Cloud Storage refuses its mount
RESEARCHERS = "researchers@example.com"
GROUP = "pathways/slice-group"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
SLICES = [
    {"name": "main", "tpu": "v6e-4", "count": 20},
    {"name": "tight", "tpu": "v6e-4", "count": 1},
    {"name": "pre", "tpu": "v6e-4", "count": 1},
    {"name": "flex", "tpu": "v6e-4", "count": 1, "flexStart": True, "queuedProvisioning": True},
    {"name": "res", "tpu": "v6e-4", "count": 1, "reservation": "e2e-reservation"},
    {"name": "big", "tpu": "v6e-16", "count": 1},
]
DECLARED = [
    {"name": "w-decl-running", "image": IMAGE, "sliceGroup": "main", "slices": 1},
    {"name": "w-decl-done", "image": IMAGE, "sliceGroup": "main", "slices": 1},
    {"name": "w-fail-fast", "image": IMAGE, "sliceGroup": "main", "slices": 1, "onFailure": {}},
    {"name": "w-no-start", "image": IMAGE, "sliceGroup": "main", "slices": 1, "onFailure": {}},
    {"name": "w-decl-suspended", "image": IMAGE, "sliceGroup": "main", "slices": 1, "state": "suspended"},
]
LATER = {"name": "w-decl-wait", "image": IMAGE, "sliceGroup": "tight", "slices": 1}  # declared once w-hold has the slice
CONFIG = config_with(pathwaysVersion=VERSION, slices=SLICES, cluster=GROUPS_RBAC, headPool={"nodeCount": 30}, workloads=DECLARED,
                     runs={"submitters": [{"name": RESEARCHERS}], "buckets": [{"name": REFUSED_BUCKET}]})


class Suite:
    def __init__(self, cluster: LocalCluster, stack_file: Path, kubeconfig: Path, workdir: Path):
        self.cluster, self.stack_file, self.kubeconfig, self.workdir = cluster, stack_file, kubeconfig, workdir
        self.config: dict[str, Any] = CONFIG

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        command, rest = args[0], args[1:]
        return subprocess.run([sys.executable, "-m", "infra.run", command, "--config", str(self.stack_file), "--kubeconfig", str(self.kubeconfig),
                               *rest], cwd=ROOT, env=self.cluster.env, capture_output=True, text=True, timeout=300)

    def submit(self, name: str, *flags: str, group: str = "main", image: str = IMAGE) -> None:
        proc = self.cli("submit", "--name", name, "--image", image, "--slice-group", group, "--slices", "1", *flags, "--", "python3", "train.py")
        assert proc.returncode == 0, (name, proc.stderr)

    def by_hand(self, name: str, change: Callable[[dict[str, Any]], None], group: str = "main") -> dict[str, Any]:
        """A run's JobSet as `submit --dry-run` prints it, changed as someone writing YAML would."""
        proc = self.cli("submit", "--name", name, "--image", IMAGE, "--slice-group", group, "--slices", "1", "--dry-run", "--", "python3", "x.py")
        assert proc.returncode == 0, proc.stderr
        obj = yaml.safe_load(proc.stdout)
        change(obj)
        return obj

    def why(self, *args: str) -> dict[str, Any]:
        # the team's own stack file, as it makes its cluster (its slice groups' reservations included): the tier's
        # user_stack_file is the Kubernetes layer on a cluster made elsewhere, which has no reservation key
        team = self.workdir / "team" / "Pulumi.why.yaml"
        team.parent.mkdir(exist_ok=True)
        team.write_text(yaml.safe_dump({"config": self.config}))
        proc = subprocess.run([sys.executable, "-m", "infra.run", "why", "--config", str(team), "--kubeconfig", str(self.kubeconfig), *args, "--json"],
                              cwd=ROOT, env=self.cluster.env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            return {"reason": f"(exit {proc.returncode})", "summary": proc.stderr.strip()[-300:], "fix": ""}
        return json.loads(proc.stdout.splitlines()[-1])

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.cluster.kubectl(*args)

    def role_pods(self, name: str, role: str) -> list[dict[str, Any]]:
        return [p for p in pods(self.cluster, NS, name) if running(p) and
                (p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == HEAD_JOB) == (role == "head")]

    def running_pod(self, name: str, role: str) -> dict[str, Any]:
        return self.cluster.wait_for(f"a running {role} of {name}", lambda: (self.role_pods(name, role) or [None])[0], timeout=180)

    def end(self, name: str, role: str, code: int, reason: str = "") -> str:
        pod = self.running_pod(name, role)["metadata"]["name"]
        self.kubectl("annotate", "pod", "-n", NS, pod, "e2e.pathways/fail=true", f"e2e.pathways/exit-code={code}",
                     *([f"e2e.pathways/exit-reason={reason}"] if reason else []))
        return pod

    def jobset(self, name: str) -> dict[str, Any]:
        return self.cluster.get("jobset", "-n", NS, name)

    def wait(self, what: str, predicate: Callable[[], Any], timeout: float = 240) -> Any:
        return self.cluster.wait_for(what, predicate, timeout=timeout, interval=1)


def _privileged(obj: dict[str, Any]) -> None:
    head = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    next(c for c in head["containers"] if c["name"] == "jax-program")["securityContext"] = {"privileged": True}


def _host_path(obj: dict[str, Any]) -> None:
    head = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    head.setdefault("volumes", []).append({"name": "host", "hostPath": {"path": "/var/lib"}})


def _too_big(obj: dict[str, Any]) -> None:
    worker = next(rj for rj in obj["spec"]["replicatedJobs"] if rj["name"] != HEAD_JOB)
    worker["replicas"] = 2  # two slices of group flex, which has one


def _no_queue(obj: dict[str, Any]) -> None:
    obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "runs-nowhere"


def _unqueued(obj: dict[str, Any]) -> None:
    del obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]


@pytest.fixture(scope="module")
def suite(cluster, stacks, tmp_path_factory):
    stacks.use("why", CONFIG)
    workdir = tmp_path_factory.mktemp("why")
    s = Suite(cluster, user_stack_file(cluster, CONFIG, workdir, "why"), cluster.user_kubeconfig("rita@example.com", (RESEARCHERS,)), workdir)
    yield s
    # what docs/runs.md says to do before `pulumi destroy`: the runs go, and the hand-made JobSets with them
    s.kubectl("patch", "localqueue", "-n", NS, "runs-pathways", "--type", "merge", "-p", '{"spec":{"stopPolicy":"None"}}')
    assert s.cli("delete", "--all").returncode == 0
    s.kubectl("delete", "jobsets", "-n", NS, "w-privileged", "w-host-path", "w-too-big", "w-no-queue", "--ignore-not-found", "--wait=false")
    s.kubectl("label", "nodes", "-l", f"{GROUP}=big", f"{TOPOLOGY}=4x4", "--overwrite")
    stacks.changed()  # the scenario changed the stack's objects (nodes, a queue): the next use runs `pulumi up` again


def seed(s: Suite, stacks) -> dict[str, Callable[[], Any]]:
    """Seed every scenario; returns, per scenario, the predicate that says it has settled."""
    c = s.cluster
    # what GKE did to the groups: no host in the reservation, the big group's nodes made with another topology, no
    # capacity for queued provisioning
    c.kubectl("delete", "nodes", "-l", f"{GROUP}=res", "--wait=true", timeout=120)
    c.kubectl("label", "nodes", "-l", f"{GROUP}=big", f"{TOPOLOGY}=2x4", "--overwrite")
    c.offer_queued_pools({})

    # (name, slice group, flags); a run that should not retry its worker gets a spec with workerRestartsPerHost 1
    submits = [
        ("w-running", "main", ()), ("w-finished", "main", ()), ("w-bad-image", "main", ()), ("w-oom", "main", ("--max-restarts", "0")),
        ("w-head-exit", "main", ("--max-restarts", "0")), ("w-worker-exit", "main", ("--max-restarts", "0")),
        ("w-spent", "main", ("--max-restarts", "1")), ("w-crash-restart", "main", ("--max-restarts", "2")),
        ("w-node-lost", "main", ("--max-restarts", "2")), ("w-pod-deleted", "main", ("--max-restarts", "2")), ("w-deactivated", "main", ()),
        ("w-no-capacity", "flex", ()), ("w-no-hosts", "res", ()), ("w-topology", "big", ()), ("w-victim", "pre", ()),
        ("w-no-grant", "main", ("--mount", f"/data=gs://{REFUSED_BUCKET}")), ("w-hold", "tight", ("--priority", "training")),
    ]

    def submit(item: tuple[str, str, tuple[str, ...]]) -> None:
        name, group, flags = item
        once = ("--spec", str(_worker_once(s, name))) if name in ("w-oom", "w-worker-exit", "w-spent") else ()
        s.submit(name, *flags, *once, group=group, image=UNPULLABLE if name == "w-bad-image" else IMAGE)

    with ThreadPoolExecutor(3) as pool:
        list(pool.map(submit, submits))
    for obj in (s.by_hand("w-privileged", _privileged), s.by_hand("w-host-path", _host_path), s.by_hand("w-too-big", _too_big, group="flex"),
                s.by_hand("w-no-queue", _no_queue)):
        c.apply([obj], server_side=False)  # as the cluster's admin: the runs policy binds researchers only
    # in line for group tight behind w-hold, in this order; then the stack declares one more there
    s.wait("w-hold admitted", lambda: is_true(workload(c, NS, "w-hold"), "Admitted"))
    s.submit("w-wait-1", group="tight")
    s.wait("w-wait-1 queued", lambda: (workload(c, NS, "w-wait-1") or {}).get("status", {}).get("conditions"))
    s.submit("w-wait-2", group="tight")
    config = copy.deepcopy(CONFIG)
    config["pathways:workloads"] = [*DECLARED, LATER]
    stacks.update(config)
    s.stack_file = user_stack_file(c, config, s.workdir, "why")  # the team's file declares it now
    s.config = config
    # the preemptor: training priority on group pre, where w-victim (experiment) runs
    s.wait("w-victim admitted", lambda: is_true(workload(c, NS, "w-victim"), "Admitted"))
    s.submit("w-preemptor", "--priority", "training", group="pre")
    wl = s.wait("w-deactivated's workload", lambda: workload(c, NS, "w-deactivated"))
    s.kubectl("patch", "workloads.kueue.x-k8s.io", "-n", NS, wl["metadata"]["name"], "--type", "merge", "-p", '{"spec":{"active":false}}')

    # what the programs, the kubelet and GKE do, each in its own thread
    actions: dict[str, Callable[[], Any]] = {
        "w-finished": lambda: s.end("w-finished", "head", 0),
        "w-decl-done": lambda: s.end("w-decl-done", "head", 0),
        "w-fail-fast": lambda: s.end("w-fail-fast", "head", 2),
        "w-no-start": lambda: s.end("w-no-start", "head", 128, "StartError"),
        "w-head-exit": lambda: s.end("w-head-exit", "head", 3),
        "w-oom": lambda: _twice(s, "w-oom", 137, "OOMKilled"),
        "w-worker-exit": lambda: _twice(s, "w-worker-exit", 1),
        "w-spent": lambda: (_twice(s, "w-spent", 1), s.wait("w-spent restarted", lambda: (s.jobset("w-spent").get("status") or {}).get("restarts") == 1),
                            _twice(s, "w-spent", 1)),
        "w-crash-restart": lambda: s.end("w-crash-restart", "worker", 1),
        "w-pod-deleted": lambda: s.kubectl("delete", "pod", "-n", NS, s.running_pod("w-pod-deleted", "worker")["metadata"]["name"], "--wait=false"),
        "w-node-lost": lambda: _node_lost(s, "w-node-lost"),
    }
    with ThreadPoolExecutor(4) as pool:
        for future in [pool.submit(a) for a in actions.values()]:
            future.result()

    def failed(name: str) -> Callable[[], bool]:
        return lambda: is_true(s.jobset(name), "Failed")

    def all_running(name: str, count: int = 2) -> Callable[[], bool]:
        return lambda: len([p for p in pods(c, NS, name) if running(p)]) == count

    def waiting(name: str) -> Callable[[], bool]:
        return lambda: any(cd.get("type") == "QuotaReserved" and cd.get("status") == "False"
                           for cd in ((workload(c, NS, name) or {}).get("status") or {}).get("conditions") or [])

    def unscheduled(name: str) -> Callable[[], bool]:
        return lambda: any(cd.get("type") == "PodScheduled" and cd.get("status") == "False"
                           for p in pods(c, NS, name) for cd in p.get("status", {}).get("conditions") or [])

    def replaced(name: str) -> Callable[[], bool]:
        return lambda: all_running(name)() and any(int((j.get("status") or {}).get("failed") or 0)
                                                   for j in c.get("jobs", "-n", NS, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"])

    def events(name: str, reason: str) -> Callable[[], bool]:
        return lambda: any(e.get("reason") == reason for e in c.get("events", "-n", NS, "--field-selector", f"involvedObject.name={name}")["items"])

    def pod_event(name: str, reason: str) -> Callable[[], bool]:
        return lambda: any(events(p["metadata"]["name"], reason)() for p in pods(c, NS, name))

    return {
        "w-running": all_running("w-running"), "w-decl-running": all_running("w-decl-running"), "w-hold": all_running("w-hold"),
        "w-finished": lambda: is_true(s.jobset("w-finished"), "Completed"), "w-decl-done": lambda: is_true(s.jobset("w-decl-done"), "Completed"),
        "w-wait-1": waiting("w-wait-1"), "w-wait-2": waiting("w-wait-2"), "w-decl-wait": waiting("w-decl-wait"), "w-too-big": waiting("w-too-big"),
        "w-no-queue": lambda: s.cluster.kubectl("get", "jobset", "-n", NS, "w-no-queue", check=False).returncode == 0,
        "w-no-capacity": lambda: any(x.get("state") == "Pending" for x in ((workload(c, NS, "w-no-capacity") or {}).get("status") or {})
                                     .get("admissionChecks") or []) and is_true(workload(c, NS, "w-no-capacity"), "QuotaReserved"),
        "w-no-hosts": unscheduled("w-no-hosts"), "w-topology": unscheduled("w-topology"),
        "w-bad-image": pod_event("w-bad-image", "Failed"), "w-no-grant": pod_event("w-no-grant", "FailedMount"),
        "w-privileged": events("w-privileged", "JobCreationFailed"), "w-host-path": events("w-host-path", "JobCreationFailed"),
        "w-oom": failed("w-oom"), "w-fail-fast": failed("w-fail-fast"), "w-no-start": failed("w-no-start"), "w-head-exit": failed("w-head-exit"),
        "w-worker-exit": failed("w-worker-exit"), "w-spent": failed("w-spent"),
        "w-crash-restart": replaced("w-crash-restart"), "w-node-lost": replaced("w-node-lost"), "w-pod-deleted": replaced("w-pod-deleted"),
        "w-victim": lambda: any(cd.get("type") in ("Preempted", "Evicted") and cd.get("status") == "True"
                                for cd in ((workload(c, NS, "w-victim") or {}).get("status") or {}).get("conditions") or [])
        and not [p for p in pods(c, NS, "w-victim") if running(p)],
        "w-decl-suspended": lambda: s.cluster.kubectl("get", "jobset", "-n", NS, "w-decl-suspended", check=False).returncode == 0,
        "w-deactivated": lambda: (workload(c, NS, "w-deactivated") or {}).get("spec", {}).get("active") is False
        and not [p for p in pods(c, NS, "w-deactivated") if running(p)],
        "w-missing": lambda: True,
    }


def _worker_once(s: Suite, name: str) -> Path:
    """A spec with workerRestartsPerHost 1: the worker's Job fails on its second failure."""
    path = s.workdir / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"workerRestartsPerHost": 1}))
    return path


def _twice(s: Suite, name: str, code: int, reason: str = "") -> None:
    """The worker fails, its Job replaces it, it fails again: the Job (backoffLimit 1) fails."""
    first = s.end(name, "worker", code, reason)
    s.wait(f"{name}'s worker replaced", lambda: any(p["metadata"]["name"] != first for p in s.role_pods(name, "worker"))
           or is_true(s.jobset(name), "Failed"))
    if not is_true(s.jobset(name), "Failed"):
        s.end(name, "worker", code, reason)


def _node_lost(s: Suite, name: str) -> None:
    """GKE takes the worker's node away (repair, upgrade, spot): drained, deleted, then made again in its pool."""
    pod = s.running_pod(name, "worker")
    node = s.cluster.get("node", pod["spec"]["nodeName"])
    s.kubectl("cordon", node["metadata"]["name"])
    s.kubectl("delete", "pod", "-n", NS, pod["metadata"]["name"], "--wait=true")
    s.kubectl("delete", "node", node["metadata"]["name"], "--wait=true")
    fresh = {"apiVersion": "v1", "kind": "Node", "metadata": {k: v for k, v in node["metadata"].items() if k in ("name", "labels", "annotations")},
             "spec": {k: v for k, v in node["spec"].items() if k not in ("unschedulable", "podCIDR", "podCIDRs")},
             "status": {k: v for k, v in node["status"].items() if k in ("capacity", "allocatable", "nodeInfo")}}
    create_nodes(s.cluster, [fresh])


def test_why_names_the_reason_for_at_least_nine_in_ten_seeded_scenarios(suite, stacks):
    t0 = time.monotonic()
    settled = seed(suite, stacks)
    for label in LABELS:
        if label["name"] not in ("w-unqueued", "w-held-queue"):
            suite.wait(f"{label['name']} settled ({label['seed']})", settled[label["name"]])
    seeded = time.monotonic() - t0

    answers: dict[str, dict[str, Any]] = {}
    with ThreadPoolExecutor(3) as pool:
        asked = [label["name"] for label in LABELS if label["name"] not in ("w-unqueued", "w-held-queue")]
        for name, answer in zip(asked, pool.map(suite.why, asked), strict=True):
            answers[name] = answer
    # a JobSet made by hand that the runs policy refuses: asked about the file, as the researcher who wrote it
    hand = suite.workdir / "w-unqueued.yaml"
    hand.write_text(yaml.safe_dump(suite.by_hand("w-unqueued", _unqueued)))
    answers["w-unqueued"] = suite.why("--file", str(hand))
    # last, as it holds the runs' queue: an operator holds it, a run submitted then waits behind the hold
    suite.kubectl("patch", "localqueue", "-n", NS, "runs-pathways", "--type", "merge", "-p", '{"spec":{"stopPolicy":"Hold"}}')
    suite.submit("w-held-queue")
    suite.wait("w-held-queue's workload", lambda: (workload(suite.cluster, NS, "w-held-queue") or {}).get("status", {}).get("conditions"))
    answers["w-held-queue"] = suite.why("w-held-queue")

    right, misses = [], []
    for label in LABELS:
        got = answers[label["name"]]
        ok = got.get("reason") == label["reason"] and label["fix"] in got.get("fix", "")
        (right if ok else misses).append(label["name"])
        if not ok:
            misses[-1] = (f"{label['name']} ({label['seed']}): wanted {label['reason']} with a fix saying {label['fix']!r}; "
                          f"got {got.get('reason')}: {got.get('summary')} | fix: {got.get('fix')}")
    figure = len(right) / len(LABELS)
    report = (f"why: {len(right)} of {len(LABELS)} scenarios named right ({figure:.0%}); seeded in {seeded:.0f} s\n"
              + "".join(f"  miss: {m}\n" for m in misses))
    print(report)
    (suite.cluster.workdir / "why-suite.txt").write_text(report + "".join(
        f"{n}: {json.dumps(a, sort_keys=True)}\n" for n, a in sorted(answers.items())))
    assert len(LABELS) >= 30
    if figure < ACCURACY:
        raise ClusterError(report)
