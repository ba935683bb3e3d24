"""Storage mounts on the stack the real `pulumi up` deployed: the file systems' claims bound by the real
PersistentVolume controller, the workload's pods (a Cloud Storage FUSE inline volume and two claims) admitted by the
API server, its ServiceAccount admission and the stack's guards, and placed by the real scheduler; an ad-hoc run that
mounts a bucket runs as the runs' account, and one that takes a workload's account is refused by the policy.

What this tier cannot show: GKE's CSI drivers themselves (their node plugins and the FUSE webhook run on GKE only,
and their Go modules are not served by the module proxy here, so no CSIDriver object of theirs is installed). The API
server and the scheduler need none to admit and place these pods; kwok's nodes mount nothing."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import GROUPS_RBAC, config_with
from tests_e2e.helpers import is_true, pods, user_stack_file, wait_running, workload
from tests_e2e.test_runs import RESEARCHERS, run, session

VERSION = "jax-0.9.0"
IMAGE = "example.com/trainer:1"
SHARED = {"name": "shared", "filestore": "fs-1", "share": "vol1", "ip": "10.20.0.2", "capacity": "1Ti"}
LUSTRE = {"name": "lfs", "lustre": "lustre-1", "filesystem": "lfs", "ip": "10.20.0.3", "capacity": "18000Gi"}
CONFIG = config_with(
    pathwaysVersion=VERSION, storage={"fileSystems": [SHARED, LUSTRE]}, cluster=GROUPS_RBAC,
    runs={"submitters": [{"name": RESEARCHERS}], "headNodes": 2, "buckets": [{"name": "e2e-datasets"}],
          "fileSystems": [{"name": "shared"}]},
    workloads=[{"name": "train", "image": IMAGE, "slices": 1, "mounts": [
        {"path": "/data", "bucket": "e2e-datasets"},
        {"path": "/checkpoints", "bucket": "e2e-checkpoints", "readOnly": False},
        {"path": "/shared", "fileSystem": "shared", "onWorkers": True},
        {"path": "/lustre", "fileSystem": "lfs", "readOnly": False},
    ]}])
NS = "pathways"


def spec_of(pod: dict) -> dict:
    return pod["spec"]


@pytest.fixture(scope="module")
def deployed(cluster, stacks, tmp_path_factory):
    stacks.use("storage", CONFIG)
    stack_file = user_stack_file(cluster, CONFIG, tmp_path_factory.mktemp("storage"), "storage")
    rita = cluster.user_kubeconfig("rita@example.com", (RESEARCHERS,))
    yield stack_file, rita
    cleared = run(cluster, stack_file, rita, "delete", "--all")
    assert cleared.returncode == 0, cleared.stderr


def test_mounts_are_bound_admitted_and_placed_by_the_real_control_plane(cluster, deployed):
    # the PersistentVolume controller bound each claim to the stack's volume (static provisioning, no class)
    claims = {}
    for name in ("shared", "lfs"):
        claim = cluster.wait_for(f"claim {name} bound", lambda n=name: (lambda items: items[0] if len(items) == 1 and (
            items[0]["status"].get("phase") == "Bound") else None)(cluster.get("pvc", "-n", NS, "-l", f"pathways/file-system={n}")["items"]))
        claims[name] = claim["metadata"]["name"]
        assert claims[name].startswith(f"{name}-") and claim["spec"]["volumeName"] == f"{NS}.{claims[name]}"
        volume = cluster.get("pv", f"{NS}.{claims[name]}")
        assert volume["status"]["phase"] == "Bound" and volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    # the Job controller made the pods (so the ServiceAccount admission found train-storage and the guards admitted
    # them) and the scheduler placed them, claims and all: the head on a head node, the workers on one slice
    running = wait_running(cluster, NS, "train", 1 + 4)
    head = next(p for p in running if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head")
    workers = [p for p in running if p is not head]
    assert spec_of(head)["serviceAccountName"] == "train-storage"
    assert head["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    volumes = {v["name"]: v for v in spec_of(head)["volumes"]}
    # no token volume: automountServiceAccountToken false held through the ServiceAccount admission
    assert not [n for n in volumes if n.startswith("kube-api-access")], sorted(volumes)
    fuse = volumes["mount-0"]["csi"]
    assert fuse["driver"] == "gcsfuse.csi.storage.gke.io" and fuse["volumeAttributes"]["hostNetworkPodKSA"] == "true"
    assert volumes["mount-1"]["csi"]["readOnly"] is False
    assert volumes["mount-2"]["persistentVolumeClaim"]["claimName"] == claims["shared"]
    for w in workers:
        assert [v.get("persistentVolumeClaim", {}).get("claimName") for v in spec_of(w)["volumes"]] == [claims["shared"]]
        assert spec_of(w).get("serviceAccountName") == "default"  # no bucket on the workers: no identity of its own
    account = cluster.get("serviceaccount", "-n", NS, "train-storage")
    assert account["automountServiceAccountToken"] is False


def test_a_run_mounts_a_granted_bucket_as_the_runs_account_and_may_not_borrow_a_workloads(cluster, deployed):
    stack_file, rita = deployed
    submitted = run(cluster, stack_file, rita, "submit", "--name", "exp-data", "--image", IMAGE, "--slices", "1",
                    "--mount", "/data=gs://e2e-datasets", "--mount", "/shared=shared", "--", "python3", "train.py")
    assert submitted.returncode == 0, submitted.stderr
    session(cluster, "submit --stack storage --name exp-data --image example.com/trainer:1 --slices 1 --mount /data=gs://e2e-datasets "
            "--mount /shared=shared -- python3 train.py", submitted)
    # both slices of the group are taken by train and exp-data once Kueue admits it
    cluster.wait_for("exp-data admitted", lambda: is_true(workload(cluster, NS, "exp-data"), "Admitted"))
    running = wait_running(cluster, NS, "exp-data", 1 + 4)
    head = next(p for p in running if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head")
    assert spec_of(head)["serviceAccountName"] == "pathways-runs-storage"  # named after the stack (security #58.5)
    assert {v["name"]: v for v in spec_of(head)["volumes"]}["mount-0"]["csi"]["volumeAttributes"]["bucketName"] == "e2e-datasets"

    # the command refuses a bucket the stack does not grant runs, before anything reaches the cluster
    refused = run(cluster, stack_file, rita, "submit", "--name", "exp-x", "--image", IMAGE, "--mount", "/c=gs://e2e-checkpoints:rw")
    assert refused.returncode == 2 and "run.mounts[0].bucket: 'e2e-checkpoints' is not in pathways:runs.buckets" in refused.stderr
    session(cluster, "submit --stack storage --name exp-x --image example.com/trainer:1 --mount /c=gs://e2e-checkpoints:rw", refused)
    # a run made by hand may not act as the workload's account (its checkpoint bucket's grant): the policy refuses it
    printed = run(cluster, stack_file, rita, "submit", "--name", "borrow", "--image", IMAGE, "--slices", "1", "--dry-run")
    borrowed = yaml.safe_load(printed.stdout)
    for rj in borrowed["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["spec"]["serviceAccountName"] = "train-storage"
    denied = cluster.apply([borrowed], server_side=False, kubeconfig=rita, check=False)
    assert denied.returncode != 0 and "pathways-runs-only" in denied.stderr and "run as default or pathways-runs" in denied.stderr, denied.stderr
    # and not through the deprecated alias, which the API server would copy into serviceAccountName
    for rj in borrowed["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        pod["serviceAccount"] = pod.pop("serviceAccountName")
    denied = cluster.apply([borrowed], server_side=False, kubeconfig=rita, check=False)
    assert denied.returncode != 0 and "run as default or pathways-runs" in denied.stderr, denied.stderr
    assert not pods(cluster, NS, "borrow")
    assert run(cluster, stack_file, rita, "delete", "exp-data").returncode == 0

