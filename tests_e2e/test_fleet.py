"""A fleet (docs/fleet.md): two worker control planes and a manager, each deployed by the real `pulumi up` of its
example stack (fleet-east, fleet-central, fleet-manager) into one Pulumi backend; the manager's program reads the
workers' `fleet` outputs through real stack references. The real Kueue with MultiKueue on the manager dispatches the
runs a researcher submits there (`python -m infra.run submit`) to the workers, whose real Kueue, JobSet controller and
scheduler run them on their kwok TPU nodes. Asserted: what Kueue did (the MultiKueueClusters' Active condition, the
Workloads' status.clusterName, the mirrored JobSets) and where the scheduler put the pods, not what the stacks wrote.

What this tier cannot show: GKE's DNS endpoint taking the token (the workers here are reached at their API servers'
address on this machine, given as fleet.endpoint, as a cluster made elsewhere would be)."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.conftest import example_path
from tests_e2e.helpers import condition, is_true, user_stack_file, workload
from tools.cluster.deploy import deploy_stack, take_down
from tools.cluster.local import ROOT, ClusterError, LocalCluster
from tools.cluster.offline import ADDRESS

NS = "pathways"
IMAGE = "example.com/trainer:1"
RESEARCHERS = "pathways-researchers@example.com"
WORKERS = {"east": "fleet-east", "central": "fleet-central"}
GROUP = "pathways/slice-group"


def stack_config(name: str) -> dict[str, Any]:
    """The example fleet's stacks as written (tests/fixtures/examples): a team's own stacks/ files may differ."""
    return yaml.safe_load(example_path(name).read_text())["config"]


@pytest.fixture(scope="module")
def fleet(cluster: LocalCluster) -> Iterator[dict[str, LocalCluster]]:
    """Three more control planes beside the session's, each with its own pod addresses; the three stacks deployed
    into one backend (a stack reference reads another stack of its backend), workers first."""
    base = cluster.workdir / "fleet"
    clusters: dict[str, LocalCluster] = {}
    with ExitStack() as stack:
        for i, role in enumerate(("east", "central", "manager")):
            c = LocalCluster(base / role, name=f"fleet-{role}", pod_cidr=f"10.0.{i + 1}.0/24")
            stack.callback(c.stop)
            c.create()
            c.start_kubelet()
            clusters[role] = c
        deployed = []
        t0 = time.monotonic()
        for role, name in WORKERS.items():
            config = stack_config(name)
            # the manager's Kueue reaches this API server at the address its sandbox routes to (tools/cluster/offline.py)
            endpoint = {"pathways:fleet": {**config["pathways:fleet"], "endpoint": f"https://{ADDRESS.split('/')[0]}:{clusters[role].apiserver_port}"}}
            deployed.append((clusters[role], deploy_stack(clusters[role], name, config, base / name, on_this_cluster=endpoint,
                                                             state=base / "state")))
        deployed.append((clusters["manager"], deploy_stack(clusters["manager"], "fleet-manager", stack_config("fleet-manager"), base / "fleet-manager",
                                                                 state=base / "state")))
        print(f"fleet deployed in {time.monotonic() - t0:.0f} s")
        yield clusters
        for c, d in reversed(deployed):
            take_down(c, d)


def active(obj: dict[str, Any]) -> dict[str, Any]:
    if not is_true(obj, "Active"):  # what Kueue says instead, for the timeout's message
        raise ClusterError(f"{obj['metadata']['name']}: {(obj.get('status') or {}).get('conditions')}")
    return obj


def judged(obj: dict[str, Any]) -> dict[str, Any] | None:
    return obj if condition(obj, "Active") else None


def submit(manager: LocalCluster, name: str, slices: int, team: str = "") -> subprocess.CompletedProcess[str]:
    """A researcher's run, submitted to the manager as docs/runs.md shows (a team's member's with --team, docs/teams.md)."""
    directory = manager.workdir / "user"
    directory.mkdir(exist_ok=True)
    stack_file = user_stack_file(manager, stack_config("fleet-manager"), directory, "fleet-manager")
    groups = (f"{team}-researchers@example.com",) if team else (RESEARCHERS,)
    kubeconfig = manager.user_kubeconfig(f"{team or 'rita'}@example.com", groups)
    return subprocess.run([sys.executable, "-m", "infra.run", "submit", "--config", str(stack_file), "--kubeconfig", str(kubeconfig),
                           "--name", name, "--image", IMAGE, "--slices", str(slices), *(["--team", team] if team else []),
                           "--", "python3", "train.py"],
                          cwd=ROOT, env=manager.env, capture_output=True, text=True, timeout=300)


def dispatched_to(manager: LocalCluster, run: str, timeout: float = 240) -> str:
    """The worker Kueue on the manager says the run's Workload was admitted on (status.clusterName)."""
    def cluster_name() -> str:
        w = workload(manager, NS, run)
        return str(((w or {}).get("status") or {}).get("clusterName") or "")
    return manager.wait_for(f"run {run} dispatched", cluster_name, timeout=timeout)


def running_on(worker: LocalCluster, run: str, pods: int, timeout: float = 180) -> list[dict[str, Any]]:
    def placed() -> list[dict[str, Any]]:
        ps = [p for p in worker.get("pods", "-n", NS, "-l", f"jobset.sigs.k8s.io/jobset-name={run}")["items"]
              if (p.get("spec") or {}).get("nodeName")]
        return ps if len(ps) >= pods else []
    return worker.wait_for(f"run {run}'s {pods} pods placed", placed, timeout=timeout)


def test_the_manager_connects_to_each_worker_with_the_token_its_stack_published(fleet):
    manager = fleet["manager"]
    for name in WORKERS:
        mkc = manager.wait_for(f"MultiKueueCluster {name} active", lambda n=name: active(manager.get("multikueuecluster.kueue.x-k8s.io", n)),
                               timeout=120)
        assert condition(mkc, "Active")["reason"] == "Active", mkc["status"]
    check = manager.get("admissioncheck.kueue.x-k8s.io", "pathways-fleet")
    assert is_true(check, "Active"), check["status"]
    # the manager's queue admits against the workers' summed quota: 2 + 4 slices of v6e-16
    cq = manager.get("clusterqueue.kueue.x-k8s.io", "pathways")
    tpu = next(r for f in cq["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "tpu-train" for r in f["resources"] if r["name"] == "google.com/tpu")
    assert tpu["nominalQuota"] == "96"
    assert is_true(cq, "Active"), cq["status"]


def test_runs_go_to_the_worker_with_room_and_their_status_comes_back(fleet):
    manager, east, central = fleet["manager"], fleet["east"], fleet["central"]
    t0 = time.monotonic()
    # four slices: only central has four
    assert (proc := submit(manager, "wide", 4)).returncode == 0, proc.stderr
    assert dispatched_to(manager, "wide") == "central"
    dispatch = time.monotonic() - t0
    pods = running_on(central, "wide", 4 * 4 + 1)  # sixteen TPU hosts and the head
    workers = [p for p in pods if "workers" in p["metadata"]["name"] or p["spec"].get("nodeSelector", {}).get(GROUP)]
    assert workers and all(p["spec"]["nodeSelector"].get(GROUP) == "train" for p in workers)
    # Kueue on the manager holds the JobSet (managedBy MultiKueue): no pod of it runs there
    assert manager.get("jobset.jobset.x-k8s.io", "wide", "-n", NS)["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
    assert manager.get("pods", "-n", NS)["items"] == []
    # central is full: the next run goes to east
    assert (proc := submit(manager, "narrow", 2)).returncode == 0, proc.stderr
    assert dispatched_to(manager, "narrow") == "east"
    running_on(east, "narrow", 2 * 4 + 1)
    # the worker's JobSet status reaches the manager's copy
    manager.wait_for("the worker's JobSet status on the manager", lambda: (manager.get("jobset.jobset.x-k8s.io", "narrow", "-n", NS).get("status") or {})
                     .get("replicatedJobsStatus"), timeout=120)
    print(f"time to dispatch: {dispatch:.0f} s")
    # deleting a run on the manager removes it from its worker
    manager.kubectl("delete", "jobset.jobset.x-k8s.io", "wide", "-n", NS, "--wait=true", timeout=180)
    central.wait_for("run wide gone from central", lambda: central.kubectl("get", "jobset.jobset.x-k8s.io", "wide", "-n", NS, check=False).returncode != 0,
                     timeout=180)
    manager.kubectl("delete", "jobset.jobset.x-k8s.io", "narrow", "-n", NS, "--wait=true", timeout=180)
    east.wait_for("run narrow gone from east", lambda: east.kubectl("get", "jobset.jobset.x-k8s.io", "narrow", "-n", NS, check=False).returncode != 0,
                  timeout=180)


def token_kubeconfig(worker: LocalCluster) -> Path:
    """A kubeconfig holding the worker's real MultiKueue token (what its manager holds), nothing else."""
    secret = worker.get("secret", "-n", "kueue-system", "pathways-multikueue-token-1")
    token = base64.b64decode(secret["data"]["token"]).decode()
    ca = yaml.safe_load(worker.kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
    path = worker.workdir / "multikueue-token.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "m",
        "clusters": [{"name": "m", "cluster": {"server": f"https://{ADDRESS.split('/')[0]}:{worker.apiserver_port}", "certificate-authority-data": ca}}],
        "users": [{"name": "m", "user": {"token": token}}], "contexts": [{"name": "m", "context": {"cluster": "m", "user": "m"}}]}))
    return path


def test_the_managers_token_writes_runs_in_the_fleet_namespace_and_nothing_else(fleet):
    """Security #58.1: the token a worker publishes reads cluster-wide but writes only runs, only in its run namespace:
    a JobSet in kube-system (past the guards, which judge the stack's namespaces) is refused by RBAC, one that is not
    a run in the fleet namespace by the dispatch policy."""
    east = fleet["east"]
    kubeconfig = token_kubeconfig(east)

    def can(verb: str, resource: str, namespace: str) -> bool:
        proc = east.kubectl("auth", "can-i", verb, resource, "-n", namespace, kubeconfig=kubeconfig, check=False)
        return proc.stdout.strip() == "yes"

    assert can("list", "jobsets.jobset.x-k8s.io", "kube-system") and can("watch", "workloads.kueue.x-k8s.io", "kube-system")
    assert can("create", "jobsets.jobset.x-k8s.io", NS) and can("create", "workloads.kueue.x-k8s.io", NS)
    assert not can("create", "jobsets.jobset.x-k8s.io", "kube-system") and not can("create", "workloads.kueue.x-k8s.io", "default")
    assert not can("create", "leaderworkersets.leaderworkerset.x-k8s.io", NS) and not can("get", "secrets", "kueue-system")
    root = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "root", "namespace": "kube-system"},
            "spec": {"replicatedJobs": [{"name": "r", "replicas": 1, "template": {"spec": {"template": {"spec": {
                "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
                "containers": [{"name": "c", "image": IMAGE, "securityContext": {"privileged": True},
                                "volumeMounts": [{"name": "host", "mountPath": "/host"}]}]}}}}}]}}
    refused = east.kubectl("create", "-f", "-", stdin=yaml.safe_dump(root), kubeconfig=kubeconfig, check=False)
    assert refused.returncode != 0 and "forbidden" in refused.stderr.lower() and "kube-system" in refused.stderr, refused.stderr
    in_fleet = {**root, "metadata": {"name": "root", "namespace": NS}}
    refused = east.kubectl("create", "-f", "-", stdin=yaml.safe_dump(in_fleet), kubeconfig=kubeconfig, check=False)
    assert refused.returncode != 0 and "pathways-fleet-dispatch-only" in refused.stderr and "ad-hoc runs only" in refused.stderr, refused.stderr
    assert east.kubectl("get", "jobset.jobset.x-k8s.io", "root", "-n", NS, check=False).returncode != 0


def test_kueue_refuses_a_kubeconfig_with_an_exec_plugin_as_the_stack_says(fleet):
    manager, east = fleet["manager"], fleet["east"]
    ca = yaml.safe_load(east.kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority-data"]
    gcloud = {"apiVersion": "v1", "kind": "Config", "current-context": "x",
              "clusters": [{"name": "x", "cluster": {"server": f"https://{ADDRESS.split('/')[0]}:{east.apiserver_port}", "certificate-authority-data": ca}}],
              "users": [{"name": "x", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "gke-gcloud-auth-plugin"}}}],
              "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}
    manager.apply([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "by-hand", "namespace": "kueue-system"},
         "data": {"kubeconfig": base64.b64encode(yaml.safe_dump(gcloud).encode()).decode()}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster", "metadata": {"name": "by-hand"},
         "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "by-hand"}}}},
    ])
    try:
        mkc = manager.wait_for("the by-hand cluster judged", lambda: judged(manager.get("multikueuecluster.kueue.x-k8s.io", "by-hand")),
                               timeout=60)
        assert condition(mkc, "Active")["status"] == "False" and condition(mkc, "Active")["reason"] == "InsecureKubeConfig", mkc["status"]
    finally:
        manager.kubectl("delete", "multikueuecluster.kueue.x-k8s.io", "by-hand", "--wait=true")
        manager.kubectl("delete", "secret", "by-hand", "-n", "kueue-system")


def test_the_three_control_planes_memory(fleet):
    """The cost of a fleet on one machine: each control plane's processes' resident memory."""
    rss = {}
    for role, c in fleet.items():
        pids = subprocess.run(["pgrep", "-f", str(c.kwok_workdir)], capture_output=True, text=True).stdout.split()
        total = 0
        for pid in pids:
            try:
                total += int(next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("VmRSS:")))
            except (OSError, StopIteration):
                continue
        rss[role] = total // 1024
        assert pids, role
    print(f"control planes' RSS (MiB): {rss}")
    assert all(v > 0 for v in rss.values())


def test_a_teams_runs_reach_only_the_workers_its_queue_names(fleet):
    # fleet-manager's teams: vision's runs go to east alone (teams[].workers), language's to either worker
    manager, east, central = fleet["manager"], fleet["east"], fleet["central"]
    check = manager.get("admissioncheck.kueue.x-k8s.io", "pathways-fleet-vision")
    assert is_true(check, "Active"), check["status"]
    # four slices: only central has four; vision may not go there, so its run waits, dispatched nowhere
    assert (proc := submit(manager, "vis-wide", 4, team="vision")).returncode == 0, proc.stderr
    assert "submitted to team-vision on queue runs-team-vision" in proc.stdout, proc.stdout
    east.wait_for("vision's run mirrored on east", lambda: east.kubectl("get", "workloads.kueue.x-k8s.io", "-n", "team-vision", "-o", "name").stdout.strip(),
                  timeout=120)
    time.sleep(10)  # Kueue had time to try every worker its check names
    w = workload(manager, "team-vision", "vis-wide")
    assert not ((w or {}).get("status") or {}).get("clusterName"), w
    # central takes no vision run (it does not even have the team's namespace), though it had room
    assert central.kubectl("get", "namespace", "team-vision", check=False).returncode != 0
    assert not [j for j in central.get("jobset.jobset.x-k8s.io", "-A")["items"] if j["metadata"]["name"] == "vis-wide"]
    # language's run of the same size goes to central, the worker with room
    assert (proc := submit(manager, "lang-wide", 4, team="language")).returncode == 0, proc.stderr
    lang = manager.wait_for("run lang-wide dispatched", lambda: str((((workload(manager, "team-language", "lang-wide") or {})
                                                                     .get("status") or {}).get("clusterName")) or ""), timeout=240)
    assert lang == "central"
    for team, run in (("vision", "vis-wide"), ("language", "lang-wide")):
        manager.kubectl("delete", "jobset.jobset.x-k8s.io", run, "-n", f"team-{team}", "--wait=true", timeout=180)
