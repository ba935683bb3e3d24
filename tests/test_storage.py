"""Storage mounts (workloads[].mounts, pathways:storage, runs.buckets) as the stack renders them: the inline Cloud
Storage FUSE volumes with Google's options, the file systems' volumes and claims, the service accounts and the
bootstrap's bucket grants, the cluster's CSI add-ons, and the one-line refusals (components/model/workloads/storage.py has the
sources)."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pytest
import yaml

from components.manifests import runs as runs_manifest
from components.manifests import storage as storage_manifest
from components.model.config import ConfigError, as_run, load, load_run, resolve
from components.model.workloads.storage import CHECKPOINT_OPTIONS, DATA_OPTIONS, GCSFUSE_HOST_NETWORK_MIN_GKE
from infra.offline.render import manifests
from tests.conftest import GROUPS_RBAC, config_with, plan_of, write_stack_file
from tests.test_bootstrap import example_bootstrap_plan
from tests.test_runs import RUNS
from tests.test_security import _evaluate
from tests.test_workload_contract import raw
from tools.cluster.local import ROOT

VERSION = "jax-0.9.0"
SIDECAR = {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}
SHARED = {"name": "shared", "filestore": "fs-1", "share": "vol1", "ip": "10.20.0.2", "capacity": "1Ti"}
LUSTRE = {"name": "lfs", "lustre": "lustre-1", "filesystem": "lfs", "ip": "10.20.0.3", "capacity": "18000Gi"}
STORAGE = {"fileSystems": [SHARED, LUSTRE]}
MOUNTS = [
    {"path": "/data", "bucket": "my-data"},
    {"path": "/ckpt", "bucket": "my-ckpts", "readOnly": False},
    {"path": "/shared", "fileSystem": "shared", "onWorkers": True},
]
CLUSTER = "gcp:container/cluster:Cluster"
# <file system>-<digest of the volume's source and size>: a changed instance is a new volume and claim
SHARED_CLAIM, LFS_CLAIM = "shared-61c0e671", "lfs-07b459c3"


def config(mounts=MOUNTS, storage=STORAGE, cluster=None, **extra):
    return config_with(pathwaysVersion=VERSION, storage=storage, cluster=cluster,
                       workloads=[{"name": "train", "image": "example.com/t:1", "mounts": mounts, **extra}])


def jobset(cfg):
    return next(o for o in manifests(plan_of(cfg)) if o["kind"] == "JobSet" and o["metadata"]["name"] == "train")


def refusal(cfg, key) -> str | None:
    """The one line of the stack's refusal that names `key`, or None."""
    values, secrets = raw(cfg)
    try:
        load(values, "test", secrets)
    except ConfigError as e:
        return next((line for line in str(e).splitlines() if line.startswith(f"{key}: ")), None)
    return None


def stack_model(**changes):
    cfg = {k.split(":", 1)[1]: v for k, v in config_with(pathwaysVersion=VERSION, **{"cluster": GROUPS_RBAC, **changes}).items() if k.startswith("pathways:")}
    return load({**cfg, "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")


def pods(js):
    head, worker = (rj["template"]["spec"]["template"] for rj in js["spec"]["replicatedJobs"])
    return head, worker


def test_the_program_mounts_buckets_through_cloud_storage_fuse_with_googles_options():
    head, worker = pods(jobset(config()))
    spec = head["spec"]
    assert head["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"  # the driver's webhook adds its sidecar
    assert spec["serviceAccountName"] == "train-storage" and spec["automountServiceAccountToken"] is False
    volumes = {v["name"]: v for v in spec["volumes"]}
    data, ckpt = volumes["mount-0"]["csi"], volumes["mount-1"]["csi"]
    assert data == {"driver": "gcsfuse.csi.storage.gke.io", "readOnly": True, "volumeAttributes": {
        "bucketName": "my-data", "hostNetworkPodKSA": "true", "skipCSIBucketAccessCheck": "true",
        "gcsfuseMetadataPrefetchOnMount": "true",
        # gcsfuse samples/gke-csi-yaml/tpu/training-pv.yaml
        "mountOptions": "implicit-dirs,metadata-cache:negative-ttl-secs:0,metadata-cache:ttl-secs:-1,metadata-cache:stat-cache-max-size-mb:-1"}}
    assert ckpt["readOnly"] is False and ckpt["volumeAttributes"]["mountOptions"].split(",") == list(CHECKPOINT_OPTIONS)
    # checkpointing-pv.yaml, option for option
    assert set(CHECKPOINT_OPTIONS) == {*DATA_OPTIONS, "metadata-cache:type-cache-max-size-mb:-1", "file-cache:max-size-mb:-1",
                                       "file-cache:cache-file-for-range-read:true", "file-cache:enable-parallel-downloads:true",
                                       "read_ahead_kb=1024", "write:enable-streaming-writes:true"}
    assert volumes["mount-2"] == {"name": "mount-2", "persistentVolumeClaim": {"claimName": SHARED_CLAIM, "readOnly": True}}
    program = next(c for c in spec["containers"] if c["name"] == "jax-program")
    assert program["volumeMounts"][1:] == [{"name": "mount-0", "mountPath": "/data", "readOnly": True},
                                           {"name": "mount-1", "mountPath": "/ckpt", "readOnly": False},
                                           {"name": "mount-2", "mountPath": "/shared", "readOnly": True}]
    # Pathways' own containers mount nothing
    assert all("volumeMounts" not in c for c in spec["initContainers"])
    # the workers get the onWorkers mount only: no bucket there, so no FUSE sidecar and the default account
    assert [v["name"] for v in worker["spec"]["volumes"]] == ["mount-2"]
    assert "gke-gcsfuse/volumes" not in worker["metadata"]["annotations"] and "serviceAccountName" not in worker["spec"]


def test_a_worker_mount_reaches_the_colocated_python_sidecar_that_loads_data_on_the_tpu_host():
    mounts = [{"path": "/data", "bucket": "my-data", "onWorkers": True}]
    _, worker = pods(jobset(config(mounts=mounts, colocatedPython=SIDECAR)))
    spec = worker["spec"]
    assert worker["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true" and spec["serviceAccountName"] == "train-storage"
    sidecar, server = spec["initContainers"][0], spec["containers"][0]
    for c in (sidecar, server):
        assert {"name": "mount-0", "mountPath": "/data", "readOnly": True} in c["volumeMounts"], c["name"]


def test_file_systems_are_volumes_bound_to_claims_as_gke_documents_them():
    pv_fs, pvc_fs, pv_l, pvc_l = storage_manifest.file_system_objects(resolve(stack_model(storage=STORAGE, runs=RUNS)))
    assert pv_fs["metadata"]["name"] == f"pathways.{SHARED_CLAIM}"
    assert pvc_fs["metadata"] == {"name": SHARED_CLAIM, "namespace": "pathways", "labels": {"pathways/file-system": "shared"}}
    assert pv_fs["spec"] == {
        "storageClassName": "", "capacity": {"storage": "1Ti"}, "accessModes": ["ReadWriteMany"],
        "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem",
        "claimRef": {"namespace": "pathways", "name": SHARED_CLAIM},
        "csi": {"driver": "filestore.csi.storage.gke.io", "volumeHandle": "modeInstance/us-east5-b/fs-1/vol1",
                "volumeAttributes": {"ip": "10.20.0.2", "volume": "vol1"}}}
    assert pvc_fs["spec"] == {"storageClassName": "", "volumeName": f"pathways.{SHARED_CLAIM}", "accessModes": ["ReadWriteMany"],
                              "resources": {"requests": {"storage": "1Ti"}}}
    assert pv_l["spec"]["csi"] == {"driver": "lustre.csi.storage.gke.io", "volumeHandle": "test-proj-123/us-east5-b/lustre-1",
                                   "volumeAttributes": {"ip": "10.20.0.3", "filesystem": "lfs"}}
    assert pvc_l["spec"]["volumeName"] == f"pathways.{LFS_CLAIM}"


@pytest.mark.parametrize("change", [{"ip": "10.20.0.9"}, {"capacity": "2Ti"}, {"share": "vol2"}, {"location": "us-east5-c"}])
def test_a_changed_file_system_is_a_new_volume_and_claim_not_an_edit_of_a_bound_one(change):
    """A PersistentVolume's CSI source is immutable and a claim without a storage class cannot grow: the change makes
    a new pair under a new name, which the workload then mounts."""
    changed = {"fileSystems": [{**SHARED, **change}, LUSTRE]}
    pv, pvc, *_ = storage_manifest.file_system_objects(resolve(stack_model(storage=changed, runs=RUNS)))
    assert pvc["metadata"]["name"].startswith("shared-") and pvc["metadata"]["name"] != SHARED_CLAIM
    head, _ = pods(jobset(config(storage=changed)))
    assert {v["name"]: v for v in head["spec"]["volumes"]}["mount-2"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]


def test_the_cluster_gets_the_csi_drivers_its_mounts_need_and_no_others():
    assert plan_of(config()).one(CLUSTER).input("addonsConfig") == {
        "gcsFuseCsiDriverConfig": {"enabled": True}, "gcpFilestoreCsiDriverConfig": {"enabled": True},
        "lustreCsiDriverConfig": {"enabled": True}}
    only_filestore = config(mounts=[{"path": "/shared", "fileSystem": "shared"}], storage={"fileSystems": [SHARED]})
    assert plan_of(only_filestore).one(CLUSTER).input("addonsConfig") == {"gcpFilestoreCsiDriverConfig": {"enabled": True}}
    assert plan_of(config_with(pathwaysVersion=VERSION)).one(CLUSTER).input("addonsConfig") is None


def test_the_plan_makes_the_service_account_volumes_and_claims_before_the_workload():
    plan = plan_of(config())
    account = plan.one("kubernetes:core/v1:ServiceAccount", "storage-serviceaccount-pathways-train-storage")
    assert account.input("automountServiceAccountToken") is False
    claims = plan.by_type("kubernetes:core/v1:PersistentVolumeClaim")
    assert sorted(c.input("metadata")["name"] for c in claims) == [LFS_CLAIM, SHARED_CLAIM]
    assert plan.outputs["storage"] == {
        "fileSystems": {"shared": f"pathways/{SHARED_CLAIM}", "lfs": f"pathways/{LFS_CLAIM}"},
        "bucketGrants": ["gs://my-data: roles/storage.objectViewer to pathways/train-storage",
                         "gs://my-ckpts: roles/storage.objectUser to pathways/train-storage"]}


def test_the_bootstrap_grants_each_mounted_bucket_alone_to_the_pods_own_service_account():
    plan = example_bootstrap_plan("pathways-staging-123")
    grants = {m.input("bucket"): m for m in plan.by_type("gcp:storage/bucketIAMMember:BucketIAMMember")}
    principal = ("principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/"
                 "pathways-staging-123.svc.id.goog/subject/ns/pathways/sa/train-smoke-storage")
    assert grants["pathways-staging-123-datasets"].input("role") == "roles/storage.objectViewer"
    assert grants["pathways-staging-123-train-checkpoints"].input("role") == "roles/storage.objectUser"
    assert {grants[b].input("member") for b in ("pathways-staging-123-datasets", "pathways-staging-123-train-checkpoints")} == {principal}
    # nothing project-wide for mounts
    assert not [m for m in plan.by_type("gcp:projects/iAMMember:IAMMember") if "storage-" in (m.input("member") or "")]


@pytest.mark.parametrize(("mounts", "storage", "key", "message"), [
    ([{"path": "/data"}], STORAGE, "pathways:workloads[0].mounts[0]", "give exactly one of bucket (GCS FUSE) or fileSystem"),
    ([{"path": "/data", "bucket": "bk1", "fileSystem": "shared"}], STORAGE, "pathways:workloads[0].mounts[0]", "give exactly one of bucket"),
    ([{"path": "/dev/shm/x", "bucket": "bk1"}], STORAGE, "pathways:workloads[0].mounts[0].path", "is under /dev/shm"),
    ([{"path": "data", "bucket": "bk1"}], STORAGE, "pathways:workloads[0].mounts[0].path", "not an absolute, normalised path"),
    ([{"path": "/d/../etc", "bucket": "bk1"}], STORAGE, "pathways:workloads[0].mounts[0].path", "not an absolute, normalised path"),
    ([{"path": "//etc", "bucket": "bk1"}], STORAGE, "pathways:workloads[0].mounts[0].path", "not an absolute, normalised path"),
    ([{"path": "/data", "bucket": "gs://bk1"}], STORAGE, "pathways:workloads[0].mounts[0].bucket", "is not a bucket name"),
    ([{"path": "/data", "bucket": "bk1"}, {"path": "/data/x", "bucket": "bk2"}], STORAGE, "pathways:workloads[0].mounts",
     "mount /data/x is inside mount /data"),
    ([{"path": "/data", "bucket": "bk1", "extraOptions": ["key-file=/k"]}], STORAGE, "pathways:workloads[0].mounts[0].extraOptions",
     "is set by the driver or the stack"),
    ([{"path": "/s", "fileSystem": "nope"}], STORAGE, "pathways:workloads[0].mounts[0].fileSystem",
     "'nope' is not a file system of pathways:storage.fileSystems (declared: shared, lfs)"),
    ([{"path": "/s", "fileSystem": "shared", "use": "data"}], STORAGE, "pathways:workloads[0].mounts[0]", "a file system takes neither"),
    ([], {"fileSystems": [{**SHARED, "share": None}]}, "pathways:storage.fileSystems[0]", "a Filestore instance needs share"),
    ([], {"fileSystems": [{**SHARED, "ip": "8.8.8.8"}]}, "pathways:storage.fileSystems[0].ip", "is not a private address"),
    ([], {"fileSystems": [SHARED, SHARED]}, "pathways:storage.fileSystems", "'shared' is listed twice"),
    ([], {"fileSystems": [{**LUSTRE, "filesystem": None}]}, "pathways:storage.fileSystems[0]", "a Lustre instance needs filesystem"),
    ([], {"fileSystems": [{**LUSTRE, "filesystem": "lustre_fs1"}]}, "pathways:storage.fileSystems[0].filesystem", "not a Lustre file system name"),
    # #76.4: Managed Lustre's locations are zones (a Filestore instance may be regional)
    ([], {"fileSystems": [{**LUSTRE, "location": "us-east5"}]}, "pathways:storage.fileSystems[0]",
     "location us-east5 is a region, but a Managed Lustre instance lives in a zone (e.g. us-east5-a)"),
])
def test_bad_mounts_are_refused_with_one_line_naming_the_key(mounts, storage, key, message):
    line = refusal(config(mounts=mounts, storage=storage), key)
    assert line is not None and message in line, line


def test_a_regional_filestore_instance_and_a_zonal_lustre_one_plan():
    values, secrets = raw(config(storage={"fileSystems": [{**SHARED, "location": "us-east5"}, {**LUSTRE, "location": "us-east5-b"}]}))
    assert [f.location for f in load(values, "test", secrets).storage.file_systems] == ["us-east5", "us-east5-b"]


def test_only_a_batch_program_mounts_storage():
    cfg = config_with(pathwaysVersion=VERSION, workloads=[{"name": "nb", "mode": "interactive", "mounts": [{"path": "/d", "bucket": "bk1"}]}])
    assert "mode interactive has no program of the user's to mount storage into" in (refusal(cfg, "pathways:workloads[0].mounts") or "")


def test_bucket_mounts_need_the_gke_that_serves_host_network_pods():
    cfg = config(cluster={"minMasterVersion": "1.33.2-gke.1000000"})
    message = refusal(cfg, "pathways:cluster.minMasterVersion") or ""
    assert "GCS FUSE mounts in host-network pods needs " + GCSFUSE_HOST_NETWORK_MIN_GKE in message
    assert refusal(config(cluster={"minMasterVersion": "1.35"}), "pathways:cluster.minMasterVersion") is None


# --- ad-hoc runs ---------------------------------------------------------------------------


RUN_BUCKETS = {"buckets": [{"name": "my-data"}, {"name": "my-ckpts", "readOnly": False}]}


def run_object(spec, runs):
    stack = resolve(load_run(stack_model(runs=runs), spec))
    w = stack.workloads[-1]
    return runs_manifest.run_jobset(stack, as_run(stack, w), "rita@example.com")


def problems(spec, runs) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_run(stack_model(runs=runs), spec)
    return str(e.value).splitlines()


def runs_with_buckets():
    return {**RUNS, **RUN_BUCKETS}


def test_a_run_mounts_the_buckets_runs_buckets_grants_as_the_runs_own_service_account():
    spec = {"name": "exp", "image": "example.com/t:1", "mounts": [{"path": "/data", "bucket": "my-data"},
                                                                   {"path": "/ckpt", "bucket": "my-ckpts", "readOnly": False}]}
    obj = run_object(spec, runs_with_buckets())
    head = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert head["spec"]["serviceAccountName"] == "pathways-runs-test" and head["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    stack = resolve(stack_model(runs=runs_with_buckets()))
    assert storage_manifest.service_accounts(stack) == [{"apiVersion": "v1", "kind": "ServiceAccount", "automountServiceAccountToken": False,
                                                         "metadata": {"name": "pathways-runs-test", "namespace": "pathways"}}]
    assert stack.bucket_grants == [("my-data", "roles/storage.objectViewer", "pathways", "pathways-runs-test"),
                                   ("my-ckpts", "roles/storage.objectUser", "pathways", "pathways-runs-test")]


@pytest.mark.parametrize(("mount", "line"), [
    ({"path": "/d", "bucket": "other"}, "run.mounts[0].bucket: 'other' is not in pathways:runs.buckets (listed: my-data, my-ckpts)"),
    ({"path": "/d", "bucket": "my-data", "readOnly": False}, "run.mounts[0].readOnly: false, but pathways:runs.buckets grants 'my-data' read-only"),
    ({"path": "/d", "fileSystem": "nope"}, "run.mounts[0].fileSystem: 'nope' is not a file system of pathways:storage.fileSystems"),
])
def test_a_run_mounts_nothing_the_stack_does_not_grant(mount, line):
    (got,) = problems({"name": "exp", "image": "example.com/t:1", "mounts": [mount]}, runs_with_buckets())
    assert got.startswith(line), got


def _policy_admits(stack_runs, account, field="serviceAccountName"):
    stack = resolve(stack_model(runs=stack_runs))
    policy = runs_manifest.runs_only_policy(stack)[0]["spec"]
    obj = run_object({"name": "exp", "image": "example.com/t:1"}, stack_runs)
    for rj in obj["spec"]["replicatedJobs"]:
        rj["template"]["spec"]["template"]["spec"][field] = account
    request = {"operation": "CREATE", "userInfo": {"username": "rita@example.com", "groups": []}, "resource": {"group": "jobset.x-k8s.io", "resource": "jobsets"}}
    return all(_evaluate(v["expression"], {"object": obj, "oldObject": None, "request": request}) for v in policy["validations"])


def test_a_run_may_act_as_the_runs_account_only_when_it_has_buckets_and_never_as_a_workloads():
    assert _policy_admits(runs_with_buckets(), "pathways-runs-test")
    assert not _policy_admits(runs_with_buckets(), "train-storage")
    assert not _policy_admits(RUNS, "pathways-runs-test")
    # the deprecated alias, which the API server copies into serviceAccountName when that is empty
    assert not _policy_admits(runs_with_buckets(), "train-storage", field="serviceAccount")
    assert _policy_admits(runs_with_buckets(), "pathways-runs-test", field="serviceAccount")


def test_submit_mount_flags_become_the_specs_mounts(tmp_path):
    cfg = config_with(pathwaysVersion=VERSION, storage=STORAGE, runs={**runs_with_buckets(), "fileSystems": [{"name": "shared"}]},
                      cluster=GROUPS_RBAC)
    path = write_stack_file(tmp_path, cfg)
    proc = subprocess.run([sys.executable, "-m", "infra.run", "submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1",
                           "--mount", "/data=gs://my-data", "--mount", "/ckpt=gs://my-ckpts:rw", "--mount", "/s=shared", "--dry-run",
                           "--", "python3", "t.py"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    head = yaml.safe_load(proc.stdout)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    program = next(c for c in head["containers"] if c["name"] == "jax-program")
    assert program["volumeMounts"][1:] == [{"name": "mount-0", "mountPath": "/data", "readOnly": True},
                                           {"name": "mount-1", "mountPath": "/ckpt", "readOnly": False},
                                           {"name": "mount-2", "mountPath": "/s", "readOnly": True}]
    bad = subprocess.run([sys.executable, "-m", "infra.run", "submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1",
                          "--mount", "/data", "--dry-run"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == ["error: --mount '/data' is not PATH=SOURCE (e.g. /data=gs://my-data or /shared=shared:rw)"]


def test_an_extra_option_replaces_the_profiles_own_instead_of_joining_it():
    """The driver keeps one value per option, the one that sorts last (gcs-fuse-csi-driver sidecar_mounter_config.go):
    an extra file-cache:enable-parallel-downloads:false would otherwise be lost beside the profile's true."""
    mounts = [{"path": "/ckpt", "bucket": "my-ckpts", "readOnly": False,
               "extraOptions": ["file-cache:enable-parallel-downloads:false", "file-cache:max-size-mb:102400", "uid=1000"]}]
    head, _ = pods(jobset(config(mounts=mounts)))
    options = {v["name"]: v for v in head["spec"]["volumes"]}["mount-0"]["csi"]["volumeAttributes"]["mountOptions"].split(",")
    assert "file-cache:enable-parallel-downloads:true" not in options and "file-cache:max-size-mb:-1" not in options
    assert options[-3:] == ["file-cache:enable-parallel-downloads:false", "file-cache:max-size-mb:102400", "uid=1000"]
    assert "write:enable-streaming-writes:true" in options  # the rest of the profile stays


@pytest.mark.parametrize(("extra", "path", "what"), [
    ({"colocatedPython": SIDECAR}, "/tmp/shared-memory", "the colocated-Python sidecar's shared memory"),
    ({"colocatedPython": SIDECAR}, "/tmp", "the colocated-Python sidecar's shared memory"),
    ({"colocatedPython": SIDECAR}, "/tmp/shared-memory/cache", "the colocated-Python sidecar's shared memory"),
])
def test_a_worker_mount_keeps_clear_of_what_the_stack_mounts_on_the_workers(extra, path, what):
    cfg = config(mounts=[{"path": path, "bucket": "my-data", "onWorkers": True}], **extra)
    line = refusal(cfg, "pathways:workloads[0].mounts[0].path") or ""
    assert f"overlaps /tmp/shared-memory, {what} on the workers" in line, line
    # on the head only, the same path is the program's own
    assert refusal(config(mounts=[{"path": path, "bucket": "my-data"}], **extra), "pathways:workloads[0].mounts[0].path") is None


def test_the_fuse_sidecars_gke_adds_count_in_the_head_pods_demand():
    from components.model.workloads.workload import Workload, head_pod_demand
    plain = head_pod_demand(Workload(name="t", image="example.com/t:1"))
    mounted = head_pod_demand(Workload(name="t", image="example.com/t:1", mounts=[{"path": "/d", "bucket": "my-data"}]))
    assert mounted[0] - plain[0] == Decimal("0.26")
    assert "GCS FUSE sidecar 250m/256Mi + GCS FUSE metadata prefetch 10m/10Mi" in mounted[2]


@pytest.mark.parametrize("write_first", [True, False])
def test_a_bucket_one_account_mounts_both_ways_gets_the_write_role_only(write_first):
    # the bootstrap grants what bucket_grants lists: one role per bucket and account, the write role holding the read,
    # whichever mount comes first
    mounts = [{"path": "/a", "bucket": "shared", "readOnly": False}, {"path": "/b", "bucket": "shared"}]
    model = stack_model(workloads=[{"name": "train", "mode": "batch", "image": "example.com/t:1", "command": ["python3", "t.py"],
                                    "mounts": mounts if write_first else mounts[::-1]}])
    assert resolve(model).bucket_grants == [("shared", "roles/storage.objectUser", "pathways", "train-storage")]


@pytest.mark.parametrize("path", ["/tmp/mtc_checkpoints", "/tmp/mtc_checkpoints/mine", "/tmp"])
def test_a_worker_mount_keeps_clear_of_the_multi_tier_checkpointing_ram_disk(path):
    # resilience.mtc mounts its RAM disk on a batch workload's workers (resilience.py's default mount path)
    mounts = [{"path": path, "bucket": "my-data", "onWorkers": True}]
    cfg = config_with(pathwaysVersion=VERSION, storage=STORAGE, resilience={"mtc": {"inMemoryVolumeSize": "64Gi"}},
                      workloads=[{"name": "train", "image": "example.com/t:1", "mounts": mounts}])
    line = refusal(cfg, "pathways:workloads[0].mounts[0].path") or ""
    assert line.endswith(f"{path} overlaps /tmp/mtc_checkpoints, the multi-tier checkpointing RAM disk on the workers; use another path"), line
    # a sibling path is the program's own
    mounts[0]["path"] = "/tmp/mtc_checkpoints2"
    assert refusal(cfg, "pathways:workloads[0].mounts[0].path") is None


# --- security #58.10: runs.fileSystems, read-only by default, and the runs policy's volumes ---------------------------

def _fs_stack(file_systems):
    return resolve(stack_model(storage=STORAGE, runs={**RUNS, "fileSystems": file_systems}))


@pytest.mark.parametrize(("listed", "mount", "line"), [
    ([], {"path": "/s", "fileSystem": "shared"}, "run.mounts[0].fileSystem: 'shared' is not in pathways:runs.fileSystems (listed: none)"),
    ([{"name": "shared"}], {"path": "/s", "fileSystem": "shared", "readOnly": False},
     "run.mounts[0].readOnly: false, but pathways:runs.fileSystems lists 'shared' read-only"),
])
def test_a_run_mounts_only_the_listed_file_systems_and_writes_only_where_listed(listed, mount, line):
    with pytest.raises(ConfigError) as e:
        load_run(stack_model(storage=STORAGE, runs={**RUNS, "fileSystems": listed}), {"name": "exp", "image": "example.com/t:1", "mounts": [mount]})
    assert str(e.value).startswith(line), str(e.value)


def _run_volumes_admitted(stack, volumes) -> bool:
    policy = runs_manifest.runs_only_policy(stack)[0]["spec"]
    assert stack.runs is not None
    runs = {**RUNS, "fileSystems": [{"name": f.name, "readOnly": f.read_only} for f in stack.runs.file_systems]}
    with_run = resolve(load_run(stack_model(storage=STORAGE, runs=runs), {"name": "exp", "image": "example.com/t:1"}))
    obj = runs_manifest.run_jobset(with_run, as_run(with_run, with_run.workloads[-1]), "rita@example.com")
    for rj in obj["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        pod["volumes"] = [*pod.get("volumes", []), *volumes]
    request = {"operation": "CREATE", "userInfo": {"username": "rita@example.com", "groups": []}, "resource": {"group": "jobset.x-k8s.io", "resource": "jobsets"}}
    return all(_evaluate(v["expression"], {"object": obj, "oldObject": None, "request": request}) for v in policy["validations"])


def test_the_runs_policy_lets_a_run_claim_only_the_listed_file_systems_and_no_nfs_or_host_path():
    from components.manifests.storage import claim_name

    stack = _fs_stack([{"name": "shared"}])
    fs = next(f for f in stack.file_systems if f.name == "shared")
    claim = claim_name(stack, fs)
    assert _run_volumes_admitted(stack, [])
    assert _run_volumes_admitted(stack, [{"name": "s", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}])
    assert not _run_volumes_admitted(stack, [{"name": "s", "persistentVolumeClaim": {"claimName": claim}}])  # writable
    assert not _run_volumes_admitted(stack, [{"name": "s", "persistentVolumeClaim": {"claimName": "other-claim", "readOnly": True}}])
    assert not _run_volumes_admitted(stack, [{"name": "n", "nfs": {"server": "10.0.0.9", "path": "/"}}])
    assert not _run_volumes_admitted(stack, [{"name": "h", "hostPath": {"path": "/"}}])
    writable = _fs_stack([{"name": "shared", "readOnly": False}])
    assert _run_volumes_admitted(writable, [{"name": "s", "persistentVolumeClaim": {"claimName": claim_name(writable, fs)}}])
