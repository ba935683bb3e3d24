"""A cluster made by xpk, taken as it is (docs/from-xpk.md): the example stack `xpk-cluster` deployed by the real
`pulumi up` onto a control plane set up as `xpk cluster create-pathways --cluster team-v6e --tpu-type v6e-16
--num-slices 2` leaves a GKE cluster, with xpk's own workload beside the stack's. Asserted: what Kueue, the scheduler
and the API server's admission did, never what the stack wrote.

The xpk side, as xpk v1.13.0+1 (commit 367c838) makes it, read from its sources (shapes only; nothing copied):
- node pools (src/xpk/core/nodepool.py): one per slice, `<cluster>-np-<i>`, with no label or taint of xpk's (GKE's
  own: the node-pool name, the TPU accelerator and topology, the google.com/tpu taint); `cpu-np`, n2-standard-64, for
  the Pathways heads (autoscaled from 1; two nodes here, one head each); `default-pool`, e2-standard-16;
- JobSet and Kueue installed from their release manifests (src/xpk/core/kueue_manager.py; xpk pins Kueue v0.17.1
  and JobSet v0.10.1). Here the pinned charts of the versions this project builds (Kueue 0.19.2, JobSet 0.12.0) are
  rendered with their defaults and applied with kubectl: the tier runs only controllers it builds. Their pods are
  pinned to default-pool, where xpk's would land wherever the scheduler put them (cpu-np included);
- its Kueue objects (src/xpk/templates/kueue_config.yaml.j2, kueue.x-k8s.io/v1beta1): ResourceFlavors `2xv6e-16`
  (the TPU accelerator and topology) and `cpu-user` (cloud.google.com/gke-nodepool: cpu-np), ClusterQueue
  `cluster-queue` (two resource groups: the chips; cpu 480 and memory 2000G on cpu-user), LocalQueue
  `multislice-queue` in default, PriorityClasses very-low to very-high. Its dws-config ProvisioningRequestConfig
  (flex-start only) is left out;
- its Pathways workload (src/xpk/templates/pathways_workload_create.yaml.j2 and recipes/Workload_create_pathways.md):
  a JobSet in default, hostNetwork, hostPath /tmp, a privileged user container, the head on cpu-np by pool name.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from components.manifests.controller_charts import JOBSET, KUEUE
from components.model.cluster.kubernetes import KubernetesConfig
from infra.offline.charts import render_chart
from tests.conftest import example_path
from tests_e2e.helpers import condition, is_true, kueue_judged, running, workload
from tools.cluster.deploy import controllers_available, create_nodes, pulumi_up, wait_guards_active
from tools.cluster.gke_nodes import pool_nodes
from tools.cluster.local import ROOT, ClusterError, LocalCluster, chart_dir
from tools.pulumi_real.run import PulumiRun

CLUSTER = "team-v6e"
POOL = "cloud.google.com/gke-nodepool"
TPU_POOLS = [f"{CLUSTER}-np-{i}" for i in range(2)]
NS = "pathways"
XPK_WORKLOAD = "xpk-run"
REGION, ZONE = "us-east5", "us-east5-b"
ROOT_DOCS = ROOT / "docs"

# The pools as xpk's gcloud commands create them (the node-pool API's fields).
XPK_POOLS = [
    *({"name": name, "nodeConfig": {"machineType": "ct6e-standard-4t"}, "placementPolicy": {"tpuTopology": "4x4"}, "nodeCount": 4}
      for name in TPU_POOLS),
    {"name": "cpu-np", "nodeConfig": {"machineType": "n2-standard-64"}, "nodeCount": 2},
    {"name": "default-pool", "nodeConfig": {"machineType": "e2-standard-16"}, "nodeCount": 1},
]

V1BETA1 = "kueue.x-k8s.io/v1beta1"
XPK_KUEUE: list[dict[str, Any]] = [
    {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": "2xv6e-16"},
     "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}}},
    {"apiVersion": V1BETA1, "kind": "ResourceFlavor", "metadata": {"name": "cpu-user"}, "spec": {"nodeLabels": {POOL: "cpu-np"}}},
    {"apiVersion": V1BETA1, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"}, "spec": {
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "LowerPriority"},
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["google.com/tpu"],
             "flavors": [{"name": "2xv6e-16", "resources": [{"name": "google.com/tpu", "nominalQuota": 32}]}]},
            {"coveredResources": ["cpu", "memory"],
             "flavors": [{"name": "cpu-user", "resources": [{"name": "cpu", "nominalQuota": 480}, {"name": "memory", "nominalQuota": "2000G"}]}]},
        ]}},
    {"apiVersion": V1BETA1, "kind": "LocalQueue", "metadata": {"name": "multislice-queue", "namespace": "default"},
     "spec": {"clusterQueue": "cluster-queue"}},
    *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
       "globalDefault": False, "description": name.replace("-", " ").title()}
      for name, value in (("very-low", 100), ("low", 250), ("medium", 500), ("high", 750), ("very-high", 1000))),
]


def xpk_pathways_jobset(name: str, slices: int) -> dict[str, Any]:
    """`xpk workload create-pathways --tpu-type v6e-16 --num-slices <slices>`'s JobSet (its template's shape)."""
    head_env = [{"name": "PATHWAYS_HEAD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/coordinator']"}}}]
    tmp = {"name": "shared-tmp", "hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}}
    mount = [{"mountPath": "/tmp", "name": "shared-tmp"}]
    sidecar = {"restartPolicy": "Always", "imagePullPolicy": "Always", "env": head_env}
    head = {
        "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "nodeSelector": {POOL: "cpu-np"}, "restartPolicy": "Never",
        "initContainers": [
            {**sidecar, "name": "pathways-proxy", "image": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:latest",
             "args": ["--server_port=29000", "--resource_manager_address=$(PATHWAYS_HEAD):29001"],
             "ports": [{"containerPort": 29000, "protocol": "TCP"}], "resources": {"limits": {"cpu": "16", "memory": "100G"}}},
            {**sidecar, "name": "pathways-rm", "image": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest",
             "args": ["--server_port=29001", "--node_type=resource_manager", f"--instance_count={slices}", "--instance_type=tpuv6e:4x4"],
             "ports": [{"containerPort": 29001, "protocol": "TCP"}, {"containerPort": 29002, "protocol": "TCP"}],
             "resources": {"limits": {"cpu": "8", "memory": "32G"}}},
        ],
        "containers": [{"name": "jax-tpu", "image": "gcr.io/team-project-123/runner:1", "env": head_env,
                        "securityContext": {"privileged": True}, "command": ["bash", "-c", "python3 train.py"],
                        "resources": {"limits": {"cpu": "24", "memory": "100G"}}, "volumeMounts": mount}],
        "volumes": [tmp],
    }
    worker = {
        "hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet", "terminationGracePeriodSeconds": 30, "priorityClassName": "medium",
        "nodeSelector": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"},
        "containers": [{"name": "pathways-worker", "image": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest",
                        "args": ["--server_port=29005", "--resource_manager_address=$(PATHWAYS_HEAD):29001"], "env": head_env,
                        "ports": [{"containerPort": 29005, "protocol": "TCP"}], "resources": {"limits": {"google.com/tpu": "4"}},
                        "volumeMounts": mount}],
        "restartPolicy": "OnFailure", "tolerations": [{"operator": "Exists", "key": "google.com/tpu"}], "volumes": [tmp],
    }

    def job(pod: dict[str, Any], replicas: int, hosts: int, backoff: int, topology: str) -> dict[str, Any]:
        return {"replicas": replicas, "template": {
            "metadata": {"annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": topology}},
            "spec": {"backoffLimit": backoff, "completionMode": "Indexed", "completions": hosts, "parallelism": hosts,
                     "template": {"metadata": {"labels": {"xpk.google.com/workload": name}}, "spec": pod}}}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "multislice-queue", "xpk.google.com/workload": name}},
        "spec": {
            "coordinator": {"replicatedJob": "pathways-head"},
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "failurePolicy": {"restartStrategy": "Recreate"},
            "startupPolicy": {"startupPolicyOrder": "InOrder"},
            "replicatedJobs": [
                {"name": "pathways-head", **job(head, 1, 1, 0, "kubernetes.io/hostname")},
                {"name": "worker", **job(worker, slices, 4, 16, POOL)},
            ],
        },
    }


def install_controllers_as_xpk(cluster: LocalCluster) -> None:
    """JobSet and Kueue from their pinned charts with the charts' own defaults (xpk applies the release manifests, no
    configuration of its own), their controllers on default-pool."""
    kube = KubernetesConfig()
    on_default_pool = {POOL: "default-pool"}
    charts = [
        (JOBSET, kube.jobset_version, {"image": JOBSET.image(kube.jobset_version), "controller": {"nodeSelector": on_default_pool},
                                       "prometheus": {"enable": False}}),
        (KUEUE, kube.kueue.version, {"controllerManager": {"nodeSelector": on_default_pool, "manager": {"image": KUEUE.image(kube.kueue.version)}}}),
    ]
    for chart, _, values in charts:
        cluster.kubectl("create", "namespace", chart.namespace)
        objects = render_chart(chart_dir(chart.release), chart.release, chart.namespace, values)
        crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        cluster.apply(crds)
        names = {c["metadata"]["name"] for c in crds}
        cluster.wait_for(f"{chart.release}'s CRDs established", lambda names=names: names <= {
            c["metadata"]["name"] for c in cluster.get("crds")["items"] if is_true(c, "Established")}, timeout=120, interval=1)
        cluster.apply([o for o in objects if o["kind"] != "CustomResourceDefinition"])
    cluster.wait_for("JobSet and Kueue controllers available", lambda: controllers_available(cluster) and all(
        cluster.get("deployments", "-n", ns)["items"] for ns in ("jobset-system", "kueue-system")), timeout=300, interval=1)


def apply_when_webhooks_answer(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    """Kueue's webhooks answer a little after its Deployment is available (its certificates are written first)."""
    def applied() -> bool:
        try:
            cluster.apply(objects)
            return True
        except ClusterError:
            return False
    cluster.wait_for("xpk's Kueue objects applied", applied, timeout=120, interval=2)


def stack_config(cluster: LocalCluster) -> dict[str, Any]:
    """The committed stack as its user runs it, with this control plane's kubeconfig for the team's."""
    config = copy.deepcopy(yaml.safe_load(example_path("xpk-cluster").read_text())["config"])
    config["pathways:cluster"] = {**config["pathways:cluster"], "existing": {"kubeconfig": str(cluster.kubeconfig)}}
    return config


@pytest.fixture(scope="module")
def xpk(cluster: LocalCluster) -> Iterator[tuple[LocalCluster, PulumiRun, dict[str, Any]]]:
    base: Path = cluster.workdir / "xpk"
    c = LocalCluster(base / "cluster", name=CLUSTER, pod_cidr="10.0.4.0/24")
    try:
        c.create()
        c.start_kubelet()
        t0 = time.monotonic()
        create_nodes(c, [n for pool in XPK_POOLS for n in pool_nodes(pool, REGION, ZONE)])
        install_controllers_as_xpk(c)
        apply_when_webhooks_answer(c, XPK_KUEUE)
        print(f"xpk's cluster set up in {time.monotonic() - t0:.0f} s")
        config = stack_config(c)
        # deployed with its workload held (state: suspended), as a team brings it up before its first run
        held = copy.deepcopy(config)
        held["pathways:workloads"][0]["state"] = "suspended"
        run = PulumiRun(base / "stack", "xpk-cluster", held)
        up = pulumi_up(c, run)
        assert up.returncode == 0, up.output[-4000:]
        wait_guards_active(c)
        print(f"stack xpk-cluster: pulumi up in {up.seconds:.0f} s")
        yield c, run, config
    finally:
        c.stop()


def pods_of(cluster: LocalCluster, namespace: str, jobset: str) -> list[dict[str, Any]]:
    return cluster.get("pods", "-n", namespace, "-l", f"jobset.sigs.k8s.io/jobset-name={jobset}")["items"]


def pools_of(cluster: LocalCluster, pods: list[dict[str, Any]]) -> dict[str, str]:
    """Pod name -> the node pool (GKE's label) of the node the scheduler bound it to."""
    pool = {n["metadata"]["name"]: n["metadata"]["labels"].get(POOL) for n in cluster.get("nodes")["items"]}
    return {p["metadata"]["name"]: pool[p["spec"]["nodeName"]] for p in pods}


def running_pods(cluster: LocalCluster, namespace: str, jobset: str, count: int, timeout: float = 180) -> list[dict[str, Any]]:
    def done() -> list[dict[str, Any]]:
        ps = [p for p in pods_of(cluster, namespace, jobset) if running(p)]
        return ps if len(ps) == count else []
    return cluster.wait_for(f"{count} pods of {namespace}/{jobset} running", done, timeout=timeout)


def admitted(cluster: LocalCluster, namespace: str, jobset: str, timeout: float) -> dict[str, Any]:
    """The JobSet's Workload once Kueue admits it; on a timeout, what Kueue says of every Workload."""
    try:
        return cluster.wait_for(f"{namespace}/{jobset} admitted", lambda: (x := workload(cluster, namespace, jobset)) and is_true(x, "Admitted") and x,
                                timeout=timeout)
    except ClusterError as e:
        said = [f"{w['metadata']['namespace']}/{w['metadata']['name']}: {[(c['type'], c['status'], c.get('message')) for c in (w.get('status') or {}).get('conditions') or []]}"
                for w in cluster.get("workloads.kueue.x-k8s.io", "-A")["items"]]
        raise ClusterError(f"{e}\n" + "\n".join(said)) from None


def admitted_flavors(w: dict[str, Any]) -> dict[str, set[str]]:
    """PodSet -> the flavors Kueue assigned it (status.admission)."""
    return {a["name"]: set((a.get("flavors") or {}).values()) for a in w["status"]["admission"]["podSetAssignments"]}


def test_the_stack_adds_its_queues_to_xpks_and_no_queue_of_its_own(xpk):
    c, _, _ = xpk
    # Kueue's objects on the cluster: xpk's, and the stack's LocalQueues, not a second ClusterQueue
    assert [q["metadata"]["name"] for q in c.get("clusterqueues.kueue.x-k8s.io")["items"]] == ["cluster-queue"]
    assert sorted(f["metadata"]["name"] for f in c.get("resourceflavors.kueue.x-k8s.io")["items"]) == ["2xv6e-16", "cpu-user"]
    lq = c.get("localqueue.kueue.x-k8s.io", "-n", NS, "runs-cluster-queue")
    assert is_true(lq, "Active"), lq.get("status")  # Kueue: its ClusterQueue, xpk's, exists and is active
    held = c.get("localqueue.kueue.x-k8s.io", "-n", NS, "train")
    assert condition(held, "Active")["reason"] == "Stopped", held.get("status")  # the held workload's queue


def test_xpks_workload_runs_in_default_on_the_host_network_past_the_guards(xpk):
    c, _, _ = xpk
    c.apply([xpk_pathways_jobset(XPK_WORKLOAD, 1)])
    w = admitted(c, "default", XPK_WORKLOAD, timeout=120)
    assert w["status"]["admission"]["clusterQueue"] == "cluster-queue"
    assert admitted_flavors(w) == {"pathways-head": {"cpu-user"}, "worker": {"2xv6e-16"}}
    pods = running_pods(c, "default", XPK_WORKLOAD, 1 + 4)
    # created in default with hostNetwork, a privileged container and hostPath: the guards let xpk's namespace be
    assert all(p["spec"].get("hostNetwork") for p in pods)
    placed = pools_of(c, pods)
    assert {pool for name, pool in placed.items() if "pathways-head" in name} == {"cpu-np"}
    workers = {pool for name, pool in placed.items() if "-worker-" in name}
    assert len(workers) == 1 and workers <= set(TPU_POOLS), placed  # its one slice: one of xpk's pools


def test_in_the_one_queue_the_stacks_workload_outranks_xpks_and_takes_its_slice(xpk):
    c, run, config = xpk
    run.set_config(config)  # state: running
    up = pulumi_up(c, run)
    assert up.returncode == 0, up.output[-4000:]
    # one queue, so no double admission: the stack's two-slice workload (WorkloadPriorityClass pathways-experiment,
    # 100,000) outranks xpk's run (PriorityClass medium, 500) and Kueue preempts it for the slices
    w = admitted(c, NS, "train", timeout=180)
    assert w["status"]["admission"]["clusterQueue"] == "cluster-queue"
    assert admitted_flavors(w) == {"pathways-head": {"cpu-user"}, "worker": {"2xv6e-16"}}
    theirs = workload(c, "default", XPK_WORKLOAD)
    evicted = condition(theirs, "Evicted")
    assert evicted and evicted["status"] == "True" and evicted["reason"] == "Preempted", (theirs or {}).get("status")
    placed = pools_of(c, running_pods(c, NS, "train", 1 + 2 * 4))
    assert {pool for name, pool in placed.items() if "pathways-head" in name} == {"cpu-np"}
    assert {pool for name, pool in placed.items() if "-worker-" in name} == set(TPU_POOLS), placed
    # each slice on its own pool (JobSet's exclusive placement by GKE's pool label)
    by_job: dict[str, set[str]] = {}
    for name, pool in placed.items():
        if "-worker-" in name:
            by_job.setdefault(name.rsplit("-", 2)[0], set()).add(pool)
    assert sorted(len(p) for p in by_job.values()) == [1, 1], by_job
    # xpk's run waits in the same queue for a slice
    _, verdict = kueue_judged(c, "default", lambda: workload(c, "default", XPK_WORKLOAD), "xpk's run",
                              "insufficient unused quota for google.com/tpu in flavor 2xv6e-16", timeout=120)
    assert "insufficient unused quota for google.com/tpu in flavor 2xv6e-16" in verdict.message, verdict
    assert not [p for p in pods_of(c, "default", XPK_WORKLOAD) if running(p)]


def test_the_guards_still_judge_every_other_namespace(xpk):
    c, _, _ = xpk
    c.kubectl("create", "namespace", "team-a")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky", "namespace": "team-a"},
           "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "example.com/tool:1"}],
                    "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}]}}
    refused = c.kubectl("create", "-f", "-", stdin=yaml.safe_dump(pod), check=False)
    assert refused.returncode != 0 and "pathways-nodes-reserved" in refused.stderr, refused.stderr
    # the stack's own namespace keeps its rules: a bare pod there is not a Pathways Job's
    bare = {**pod, "metadata": {"name": "bare", "namespace": NS}}
    refused = c.kubectl("create", "-f", "-", stdin=yaml.safe_dump(bare), check=False)
    assert refused.returncode != 0 and "come from Pathways Jobs only" in refused.stderr, refused.stderr


def test_destroying_the_stack_leaves_xpks_setup(xpk):
    c, run, _ = xpk
    result = run.cli("destroy", "--yes")
    assert result.returncode == 0, result.output[-4000:]
    assert [q["metadata"]["name"] for q in c.get("clusterqueues.kueue.x-k8s.io")["items"]] == ["cluster-queue"]
    assert sorted(f["metadata"]["name"] for f in c.get("resourceflavors.kueue.x-k8s.io")["items"]) == ["2xv6e-16", "cpu-user"]
    assert c.get("localqueue.kueue.x-k8s.io", "-n", "default", "multislice-queue")["spec"]["clusterQueue"] == "cluster-queue"
    assert not c.get("validatingadmissionpolicies")["items"]
    assert not c.get("localqueues.kueue.x-k8s.io", "-n", NS)["items"]


# --- a cluster a Cluster Toolkit blueprint made (docs/from-cluster-toolkit.md), on this control plane -------------------

BLUEPRINT_POOLS = [f"gke-tpu-v6e-pool-{i}" for i in range(2)]  # gke-node-pool: <name>-<i> when num_slices > 1
V1BETA2 = "kueue.x-k8s.io/v1beta2"
# modules/management/kubectl-apply/kueue/kueue-configuration-pathways.yaml.tftpl as the gke-tpu-v6e example renders it
# (accelerator_type tpu-v6e-slice; tpu_quota num_slices x 4 nodes x 4 chips; pathways_cpu_quota 480, memory 2000G)
BLUEPRINT_KUEUE: list[dict[str, Any]] = [
    {"apiVersion": V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": "tpu-flavor"},
     "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"},
              "tolerations": [{"effect": "NoSchedule", "key": "google.com/tpu", "value": "present"}]}},
    {"apiVersion": V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": "pathways-flavor"}, "spec": {"nodeLabels": {POOL: "cpu-np"}}},
    {"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": "cluster-queue"}, "spec": {
        "preemption": {"reclaimWithinCohort": "Never", "withinClusterQueue": "LowerPriority"},
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["google.com/tpu"],
             "flavors": [{"name": "tpu-flavor", "resources": [{"name": "google.com/tpu", "nominalQuota": 32}]}]},
            {"coveredResources": ["cpu", "memory"],
             "flavors": [{"name": "pathways-flavor", "resources": [{"name": "cpu", "nominalQuota": 480}, {"name": "memory", "nominalQuota": "2000G"}]}]},
        ]}},
    {"apiVersion": V1BETA2, "kind": "LocalQueue", "metadata": {"name": "user-queue", "namespace": "default"},
     "spec": {"clusterQueue": "cluster-queue"}},
]


def blueprint_stack_config(cluster: LocalCluster) -> dict[str, Any]:
    """The adoption stack file as docs/from-cluster-toolkit.md writes it (its one YAML block), with this control
    plane's kubeconfig for the team's."""
    text = (ROOT_DOCS / "from-cluster-toolkit.md").read_text()
    (block,) = [b for b in text.split("```yaml\n")[1:]]
    config = yaml.safe_load(block.split("```", 1)[0])["config"]
    config["pathways:cluster"] = {**config["pathways:cluster"], "existing": {"kubeconfig": str(cluster.kubeconfig)}}
    return config


def test_a_cluster_a_blueprint_made_runs_the_stacks_workload_through_its_queue_on_its_pools(xpk):
    """#75.4: the xpk cluster reshaped as gke-tpu-v6e.yaml leaves one (its TPU pools by the module's names, its Kueue
    objects as kubectl-apply's Pathways template renders them; xpk's run and queue gone), and the adoption stack of
    docs/from-cluster-toolkit.md deployed by the real `pulumi up`: Kueue admits its workload through the blueprint's
    cluster-queue (pathways-flavor for the head, tpu-flavor for the slices), and each slice lands on its own pool.
    cpu-np keeps xpk's n2-standard-64 nodes (the tier's node facts have no n4-standard-64; Kueue and the scheduler
    select the pool by name)."""
    c, _, _ = xpk
    c.kubectl("delete", "jobset", XPK_WORKLOAD, "-n", "default", "--ignore-not-found", "--wait=true", timeout=180)
    c.kubectl("delete", "localqueue.kueue.x-k8s.io", "multislice-queue", "-n", "default", "--wait=true", timeout=120)
    c.kubectl("delete", "clusterqueue.kueue.x-k8s.io", "cluster-queue", "--wait=true", timeout=120)
    c.kubectl("delete", "resourceflavor.kueue.x-k8s.io", "2xv6e-16", "cpu-user", "--wait=true", timeout=120)
    c.kubectl("delete", "nodes", *[n["metadata"]["name"] for n in c.get("nodes")["items"]
                                   if n["metadata"]["labels"].get(POOL) in TPU_POOLS], "--wait=true", timeout=300)
    pools = [{"name": name, "nodeConfig": {"machineType": "ct6e-standard-4t"}, "placementPolicy": {"tpuTopology": "4x4"}, "nodeCount": 4}
             for name in BLUEPRINT_POOLS]
    create_nodes(c, [n for pool in pools for n in pool_nodes(pool, REGION, ZONE)])
    apply_when_webhooks_answer(c, BLUEPRINT_KUEUE)
    run = PulumiRun(c.workdir.parent / "blueprint-stack", "gcluster-cluster", blueprint_stack_config(c))
    up = pulumi_up(c, run)
    assert up.returncode == 0, up.output[-4000:]
    try:
        w = admitted(c, NS, "train", timeout=180)
        assert w["status"]["admission"]["clusterQueue"] == "cluster-queue"
        assert admitted_flavors(w) == {"pathways-head": {"pathways-flavor"}, "worker": {"tpu-flavor"}}
        placed = pools_of(c, running_pods(c, NS, "train", 1 + 2 * 4))
        assert {pool for name, pool in placed.items() if "pathways-head" in name} == {"cpu-np"}
        by_job: dict[str, set[str]] = {}
        for name, pool in placed.items():
            if "-worker-" in name:
                by_job.setdefault(name.rsplit("-", 2)[0], set()).add(pool)
        assert sorted(sorted(p) for p in by_job.values()) == [[p] for p in BLUEPRINT_POOLS], by_job  # a slice a pool
        assert [q["metadata"]["name"] for q in c.get("clusterqueues.kueue.x-k8s.io")["items"]] == ["cluster-queue"]
    finally:
        destroyed = run.cli("destroy", "--yes")
    assert destroyed.returncode == 0, destroyed.output[-4000:]
    assert c.get("localqueue.kueue.x-k8s.io", "-n", "default", "user-queue")["spec"]["clusterQueue"] == "cluster-queue"
