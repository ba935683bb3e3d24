"""Multi-tier checkpointing (resilience.mtc) as the stack renders it: the add-ons, the backups' bucket and its one
grant, the CheckpointConfigurations, the workers' RAM-disk volume, the JobSet controller's size, the refusals.

Sources: GKE's multi-tier checkpointing how-to; xpk src/xpk/core/mtc.py; the high-scale-checkpointing controller's
apis/checkpointing.gke.io/v1/types.go; MaxText's and Orbax's MTC code (components/model/workloads/resilience.py names them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.model.workloads.resilience import DEFAULT_GCSFUSE_OPTIONS, MTC_CSI_DRIVER, MTC_MIN_GKE_VERSION
from infra.offline.__main__ import main as offline_main
from infra.offline.render import manifests
from tests.conftest import config_with, example_config, example_path, example_plan, plan_of
from tests.test_bootstrap import example_bootstrap_plan
from tests.test_workload_contract import problem

VERSION = "jax-0.9.0"
SIDECAR = {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}
SLICES = [{"name": "main", "tpu": "v6e-16", "count": 2}, {"name": "small", "tpu": "v5p-8", "count": 1}]
MTC = {"mtc": {"inMemoryVolumeSize": "64Gi"}}
CLUSTER = "gcp:container/cluster:Cluster"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
CPC = "kubernetes:checkpointing.gke.io/v1:CheckpointConfiguration"


def train(**extra):
    return {"name": "train", "image": "example.com/t:1", "sliceGroup": "main", "colocatedPython": SIDECAR, **extra}


def notebook():
    return {"name": "notebook", "mode": "interactive", "sliceGroup": "small"}


def config(resilience=MTC, workloads=None, **extra):
    return config_with(slices=SLICES, pathwaysVersion=VERSION, resilience=resilience,
                       workloads=workloads if workloads is not None else [train(), notebook()], **extra)


def worker_pod(js):
    return js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]


def test_the_cluster_gets_the_checkpointing_add_on_and_the_gcsfuse_driver_it_requires():
    addons = plan_of(config()).one(CLUSTER).input("addonsConfig")
    assert addons == {"highScaleCheckpointingConfig": {"enabled": True}, "gcsFuseCsiDriverConfig": {"enabled": True}}
    assert plan_of(config(resilience={})).one(CLUSTER).input("addonsConfig") is None


def test_backups_go_to_a_hierarchical_bucket_only_gkes_checkpointing_driver_may_write():
    plan = plan_of(config())
    bucket = plan.one(BUCKET, "checkpoint-backups")
    assert bucket.input("name") == "test-proj-123-test-pathways-checkpoints"
    assert bucket.input("hierarchicalNamespace") == {"enabled": True}
    assert bucket.input("uniformBucketLevelAccess") is True and bucket.input("publicAccessPrevention") == "enforced"
    assert not bucket.input("lifecycleRules")  # Orbax keeps and deletes its own checkpoints
    # the stack grants nothing on it: the node service accounts never write it, the driver's grant is the bootstrap's
    assert [m for m in plan.by_type(BUCKET_MEMBER) if m.input("bucket") == bucket.input("name")] == []


def test_the_bootstrap_grants_the_checkpointing_driver_the_backups_bucket_alone():
    plan = example_bootstrap_plan("pathways-prod-123")
    (grant,) = [m for m in plan.by_type("gcp:projects/iAMMember:IAMMember") if m.name == "prod-checkpointing-driver"]
    assert grant.input("role") == "roles/storage.objectUser"
    assert grant.input("member") == (
        "principal://iam.googleapis.com/projects/123456789012/locations/global/workloadIdentityPools/pathways-prod-123.svc.id.goog"
        "/subject/ns/gke-managed-checkpointing/sa/gke-checkpointing-multitier-node")
    bucket = "pathways-prod-123-prod-pathways-checkpoints"
    assert grant.input("condition.expression") == (
        f"resource.name == 'projects/_/buckets/{bucket}' || resource.name.startsWith('projects/_/buckets/{bucket}/')")
    # and the deploy identity's storage roles reach the bucket it creates
    deploy = [m for m in plan.by_type("gcp:projects/iAMMember:IAMMember")
              if m.input("role") == "roles/storage.admin" and "prod-deploy" in m.input("member")]
    assert deploy and all(f"'projects/_/buckets/{bucket}'" in m.input("condition.expression") for m in deploy)


def test_one_checkpoint_configuration_per_slice_group_of_the_workloads_that_mount_it():
    plan = plan_of(config(workloads=[train(), notebook(), train(name="eval", sliceGroup="small")]))
    objs = {o["metadata"]["name"]: o for o in manifests(plan) if o["kind"] == "CheckpointConfiguration"}
    assert sorted(objs) == ["pathways-mtc-main", "pathways-mtc-small"]
    spec = objs["pathways-mtc-main"]["spec"]
    assert spec == {
        "cloudStorageBucketName": "test-proj-123-test-pathways-checkpoints",
        # the group's nodes by the stack's label: another group of the same machine type gets no driver
        "nodeSelector": {"pathways/slice-group": "main"},
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "inMemoryVolumeSize": "64Gi",
        "gcsFuseMountOptions": list(DEFAULT_GCSFUSE_OPTIONS),
    }
    assert "namespace" not in objs["pathways-mtc-main"]["metadata"]  # cluster-scoped
    # an interactive workload alone does not bring its group
    only = plan_of(config(workloads=[train(), notebook()]))
    assert [o["metadata"]["name"] for o in manifests(only) if o["kind"] == "CheckpointConfiguration"] == ["pathways-mtc-main"]


def test_batch_workers_and_their_sidecar_mount_the_ram_disk_and_nothing_else_does():
    plan = plan_of(config())
    jobsets = {o["metadata"]["name"]: o for o in manifests(plan) if o["kind"] == "JobSet"}
    pod = worker_pod(jobsets["train"])
    assert {"name": "mtc-local-checkpoints", "csi": {"driver": MTC_CSI_DRIVER}} in pod["volumes"]
    mount = {"name": "mtc-local-checkpoints", "mountPath": "/tmp/mtc_checkpoints"}
    assert mount in pod["containers"][0]["volumeMounts"] and mount in pod["initContainers"][0]["volumeMounts"]
    head = jobsets["train"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert "mtc-local-checkpoints" not in str(head)
    assert "mtc-local-checkpoints" not in str(jobsets["notebook"])


def test_the_workloads_wait_for_their_checkpoint_configuration():
    plan = plan_of(config())
    cpc = plan.one(CPC)
    (workload,) = [r for r in plan.resources if r.type == "pathways:k8s:PathwaysWorkload" and r.name == "workload-train"]
    jobset = next(r for r in plan.resources if r.type.endswith(":JobSet") and r.parent == workload.urn)
    assert cpc.urn in jobset.dependencies
    notebook_ws = next(r for r in plan.resources if r.type == "pathways:k8s:PathwaysWorkload" and r.name == "workload-notebook")
    notebook_js = next(r for r in plan.resources if r.type.endswith(":JobSet") and r.parent == notebook_ws.urn)
    assert cpc.urn not in notebook_js.dependencies


def test_the_jobset_controller_is_sized_as_xpk_sizes_it_for_checkpointing():
    chart = next(r for r in plan_of(config()).by_type("kubernetes:helm.sh/v4:Chart") if r.name == "jobset")
    assert chart.input("values.controller.resources") == {"requests": {"cpu": "1", "memory": "1Gi"}}
    plain = next(r for r in plan_of(config(resilience={})).by_type("kubernetes:helm.sh/v4:Chart") if r.name == "jobset")
    assert plain.input("values.controller.resources") is None


def test_without_mtc_nothing_of_it_is_made():
    plan = plan_of(config(resilience={}))
    assert not plan.by_type(CPC)
    assert [b.name for b in plan.by_type(BUCKET)] == ["scratch", "scratch-artifacts"]
    assert "mtc-local-checkpoints" not in str([o for o in manifests(plan) if o["kind"] == "JobSet"])
    assert plan.outputs.get("multiTierCheckpointing") is None


def test_the_stack_outputs_say_where_the_ram_disk_is_and_where_it_is_backed_up():
    plan = plan_of(config())
    assert plan.outputs["multiTierCheckpointing"] == {
        "localCheckpointDirectory": "/tmp/mtc_checkpoints", "bucket": "test-proj-123-test-pathways-checkpoints"}


def test_the_prod_example_turns_it_on():
    plan = example_plan("prod")
    assert plan.one(CLUSTER).input("addonsConfig.highScaleCheckpointingConfig.enabled") is True
    assert [o["metadata"]["name"] for o in manifests(plan) if o["kind"] == "CheckpointConfiguration"] == ["pathways-mtc-train"]


@pytest.mark.parametrize("cfg,key,text", [
    (config(workloads=[train(colocatedPython=None)]), "pathways:workloads[0].colocatedPython",
     "required with resilience.mtc: on Pathways the multi-tier checkpoints are written from the colocated-Python sidecar"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "500Gi"}}), "pathways:resilience.mtc.inMemoryVolumeSize",
     "500Gi with workload train's sidecar (16Gi + shmSize 8Gi) leaves its Pathways worker less than half of a ct6e-standard-4t"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "512Mi"}}), "pathways:resilience.mtc.inMemoryVolumeSize", "is less than 1Gi"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "64GB"}}), "pathways:resilience.mtc.inMemoryVolumeSize", "is not a Kubernetes quantity"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "64Gi", "mountPath": "/tmp/shared-memory"}}), "pathways:resilience.mtc.mountPath",
     "would shadow a directory the pods need"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "64Gi", "mountPath": "relative/dir"}}), "pathways:resilience.mtc.mountPath",
     "is not an absolute path"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "64Gi", "bucket": "test-proj-123-test-pathways"}}), "pathways:resilience.mtc.bucket",
     "is the stack's scratch or artifacts bucket"),
    (config(resilience={"mtc": {"inMemoryVolumeSize": "64Gi", "bucket": "test-proj-123-test-pathways-artifacts"}}),
     "pathways:resilience.mtc.bucket", "'test-proj-123-test-pathways-artifacts' is the stack's scratch or artifacts bucket"),
    (config(cluster={"minMasterVersion": "1.32.2-gke.100"}), "pathways:cluster.minMasterVersion",
     f"multi-tier checkpointing needs {MTC_MIN_GKE_VERSION}"),
])
def test_what_cannot_work_is_refused_with_its_key(cfg, key, text):
    message = problem(cfg)
    assert f"{key}: " in message and text in message, message


def test_the_backups_bucket_is_required_on_an_existing_cluster():
    message = problem(config(cluster={"existing": {"kubeconfig": "~/.kube/config"}}, bucket={"name": "team-scratch"}))
    assert "pathways:resilience.mtc.bucket: required with cluster.existing" in message, message


def test_docs_resilience_quotes_the_prod_plan_as_it_is(capsys):
    # the plan excerpts docs/resilience.md shows (failure rules, multi-tier checkpointing) are what `plan` prints
    assert offline_main(["plan", "--config", str(example_path("prod"))]) == 0
    printed = capsys.readouterr().out
    doc = (Path(__file__).resolve().parents[1] / "docs" / "resilience.md").read_text()
    fenced = re.findall(r"^```[a-z]*\n(.*?)^```$", doc, flags=re.S | re.M)
    blocks = [b for b in fenced if "on failure:" in b or b.startswith("Multi-tier")]
    assert len(blocks) == 2
    missing = [line for b in blocks for line in b.splitlines() if line.strip() and line not in printed]
    assert missing == []


def test_the_sidecar_refusal_is_one_whole_line():
    lines = problem(config(workloads=[train(colocatedPython=None)])).splitlines()
    assert ("pathways:workloads[0].colocatedPython: required with resilience.mtc: on Pathways the multi-tier checkpoints are "
            "written from the colocated-Python sidecar (Orbax, use_colocated_python); give colocatedPython.image, built for the "
            "program's JAX") in lines


def test_a_sidecar_that_already_takes_half_the_vm_leaves_the_ram_disk_nothing():
    # the bound the message gives is never negative: 0Gi when the sidecar and its shared memory take half already
    sidecar = {**SIDECAR, "memory": "300Gi", "shmSize": "100Gi"}
    lines = problem(config(workloads=[train(colocatedPython=sidecar)])).splitlines()
    ram = [line for line in lines if line.startswith("pathways:resilience.mtc.inMemoryVolumeSize: ")]
    assert len(ram) == 1 and ram[0].endswith("; use at most 0Gi"), lines


def test_security_58_8_the_bootstrap_refuses_two_mtc_stacks_in_one_project(tmp_path, monkeypatch):
    """GKE's checkpointing driver is one principal per project: two MTC stacks would reach each other's backups."""
    import json

    import yaml

    from bootstrap import main_stack
    from bootstrap import program as bootstrap
    from components.model.errors import ConfigError

    for name, cluster in (("a", "first"), ("b", "second")):
        (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {
            **config(), "gcp:project": "mtc-proj-123", "pathways:cluster": {"name": cluster}}}))
    monkeypatch.setattr(main_stack, "STACKS_DIR", tmp_path)
    flat = {"gcp:project": "mtc-proj-123", "pathways-bootstrap:repository": "example-org/pathways-gke",
            "pathways-bootstrap:repositoryId": "812345678", "pathways-bootstrap:repositoryOwnerId": "91234567",
            "pathways-bootstrap:projectNumber": "123456789012"}
    with pytest.raises(ConfigError) as e:
        bootstrap.read_config({**flat, "pathways-bootstrap:stacks": json.dumps(["a", "b"])})
    assert [p.message.split(":")[0] for p in e.value.problems] == [
        "stacks 'a', 'b' all use multi-tier checkpointing (resilience.mtc)"]
    assert bootstrap.read_config({**flat, "pathways-bootstrap:stacks": json.dumps(["a"])}).stacks


def test_another_group_of_the_same_machine_type_gets_no_driver():
    # #59/#60 follow-up: selecting by machine type (xpk's way) would run the driver on a second v6e group's nodes
    # too, whose pods mount no RAM disk
    slices = [{"name": "main", "tpu": "v6e-16", "count": 2}, {"name": "other", "tpu": "v6e-16", "count": 1}]
    plan = plan_of(config_with(slices=slices, pathwaysVersion=VERSION, resilience=MTC,
                               workloads=[train(), {"name": "notebook", "mode": "interactive", "sliceGroup": "other"}]))
    (cpc,) = [o for o in manifests(plan) if o["kind"] == "CheckpointConfiguration"]
    assert cpc["metadata"]["name"] == "pathways-mtc-main" and cpc["spec"]["nodeSelector"] == {"pathways/slice-group": "main"}
    pools = {r.input("nodeConfig.labels", {}).get("pathways/slice-group") for r in plan.by_type("gcp:container/nodePool:NodePool")}
    assert {"main", "other"} <= pools  # the label the selector names is on the group's pools


def test_a_group_on_pools_made_elsewhere_gets_one_configuration_per_pool_by_gkes_label():
    # xpk's pools carry no label of this project: the driver must select them by GKE's pool label
    cfg = example_config("xpk-cluster")
    cfg["pathways:resilience"] = {"mtc": {"inMemoryVolumeSize": "64Gi", "bucket": "team-project-123-mtc"}}
    cfg["pathways:workloads"][0]["colocatedPython"] = {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}
    objs = [o for o in manifests(plan_of(cfg, stack="xpk-cluster")) if o["kind"] == "CheckpointConfiguration"]
    assert [(o["metadata"]["name"], o["spec"]["nodeSelector"]) for o in objs] == [
        ("pathways-mtc-main-team-v6e-np-0", {"cloud.google.com/gke-nodepool": "team-v6e-np-0"}),
        ("pathways-mtc-main-team-v6e-np-1", {"cloud.google.com/gke-nodepool": "team-v6e-np-1"})]
