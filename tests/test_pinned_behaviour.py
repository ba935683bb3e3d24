"""Behaviour a user would notice that mutation testing found unpinned (issue #19), pinned with values
written out from the platform's documentation, not recomputed by the code under test.

Pure: the config model, the TPU catalog and the JobSet builder are called directly, so these tests are
fast enough to run for every mutant (make mutation).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.manifests import admission
from components.manifests.jobset import jobset
from components.model.capacity import tpu
from components.model.config import load, resolve
from components.model.errors import ConfigError

BASE: dict[str, Any] = {
    "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b",
    "slices": [{"name": "main", "tpu": "v6e-16", "count": 2}], "pathwaysVersion": "jax-0.9.0",
}


def model(**changes):
    raw = copy.deepcopy(BASE)
    raw.update(changes)
    return load(raw, "test")


def error(**changes) -> str:
    with pytest.raises(ConfigError) as e:
        model(**changes)
    return str(e.value)


def built(**workload):
    cfg = model(workloads=[{"name": "job", "mode": "batch", "image": "example.com/t:1", **workload}])
    stack = resolve(cfg)
    return cfg, jobset(stack, stack.workloads[0])


def containers(pod: dict) -> dict[str, dict]:
    return {c["name"]: c for c in pod.get("containers", []) + pod.get("initContainers", [])}


# --- 1. names ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["Bad_Name", "bad_name", "-lead", "trail-", "UPPER", "a.b", "x" * 41])
def test_workload_names_are_dns_labels(name):
    assert "pathways:workloads[0].name" in error(workloads=[{"name": name, "image": "example.com/t:1"}])


@pytest.mark.parametrize("name", ["Bad_Group", "g_1", "-g"])
def test_slice_group_names_are_dns_labels(name):
    assert "pathways:slices[0].name" in error(slices=[{"name": name, "tpu": "v6e-16"}])


@pytest.mark.parametrize("name", ["a", "train-1", "x" * 20])
def test_good_names_pass(name):
    assert model(workloads=[{"name": name, "image": "example.com/t:1"}]).workloads[0].name == name


# --- 2./3. the head job ------------------------------------------------------------------------

def test_proxy_env_defines_pathways_head_for_its_args():
    _, js = built()
    head = js["spec"]["replicatedJobs"][0]
    assert head["name"] == "pathways-head" and head["replicas"] == 1  # one head: RM + proxy + user program
    pod = head["template"]["spec"]["template"]["spec"]
    proxy = containers(pod)["pathways-proxy"]
    env = {e["name"]: e for e in proxy["env"]}
    # $(PATHWAYS_HEAD) in the args expands only if the container defines PATHWAYS_HEAD (Kubernetes
    # dependent environment variables): the coordinator label, as the anchors write it.
    assert "--resource_manager_address=$(PATHWAYS_HEAD):29001" in proxy["args"]
    assert env["PATHWAYS_HEAD"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/coordinator']"}}
    assert head["template"]["spec"]["backoffLimit"] == 0
    assert head["template"]["spec"]["completions"] == head["template"]["spec"]["parallelism"] == 1


def test_user_env_names_are_checked():
    assert "'1BAD' is not a valid environment variable name" in error(workloads=[{"name": "j", "image": "example.com/t:1", "env": {"1BAD": "x"}}])
    assert "'A B' is not a valid environment variable name" in error(workloads=[{"name": "j", "image": "example.com/t:1", "env": {"A B": "x"}}])


def test_admission_rejects_bad_and_duplicate_env_names():
    _, js = built()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [{"name": "1BAD", "value": "x"}, {"name": "OK", "value": "1"}, {"name": "OK", "value": "2"}]
    report = admission.check_jobset(js)
    rules = sorted(v.rule for v in report.violations)
    # the duplicate both by the JobSet CRD's env list (a map keyed by name) and by the semantic rule
    assert rules == ["env-name", "jobset-schema", "unique-names"], [str(v) for v in report.violations]


# --- 4./5./10. the TPU catalog against GKE's tables --------------------------------------------

# name -> (machine type, hosts, chips, topology), as GKE's "Plan TPUs in GKE" tables list them.
GKE_TPU_TABLE = {
    "v6e-1": ("ct6e-standard-1t", 1, 1, "1x1"),
    "v6e-4": ("ct6e-standard-4t", 1, 4, "2x2"),
    "v6e-8": ("ct6e-standard-8t", 1, 8, "2x4"),
    "v6e-16": ("ct6e-standard-4t", 4, 16, "4x4"),
    "v6e-256": ("ct6e-standard-4t", 64, 256, "16x16"),
    "v5e-4": ("ct5lp-hightpu-4t", 1, 4, "2x2"),
    "v5e-16": ("ct5lp-hightpu-4t", 4, 16, "4x4"),
    "v5p-8": ("ct5p-hightpu-4t", 1, 4, "2x2x1"),
    "v5p-16": ("ct5p-hightpu-4t", 2, 8, "2x2x2"),
    "v5p-128": ("ct5p-hightpu-4t", 16, 64, "4x4x4"),
    "v4-8": ("ct4p-hightpu-4t", 1, 4, "2x2x1"),
    "v4-32": ("ct4p-hightpu-4t", 4, 16, "2x2x4"),
    "tpu7x-8": ("tpu7x-standard-4t", 1, 4, "2x2x1"),
    "tpu7x-128": ("tpu7x-standard-4t", 16, 64, "4x4x4"),
}


@pytest.mark.parametrize("name", sorted(GKE_TPU_TABLE))
def test_catalog_matches_gke_tables(name):
    s = tpu.from_name(name)
    assert (s.machine_type, s.hosts, s.chips, s.topology) == GKE_TPU_TABLE[name]
    assert s.name == name


@pytest.mark.parametrize("name", ["v5p-9", "v5p-7", "v4-9", "tpu7x-3", "v6e-3", "v5p-0", "v6e-0"])
def test_odd_or_empty_sizes_are_refused(name):
    with pytest.raises(tpu.TpuError):
        tpu.from_name(name)


def test_an_explicit_machine_type_is_honoured():
    cfg = model(slices=[{"name": "main", "tpu": {"family": "v6e", "topology": "2x4", "machineType": "ct6e-standard-4t"}}])
    s = cfg.slices[0].tpu
    assert (s.machine_type, s.hosts, s.chips) == ("ct6e-standard-4t", 2, 8)  # the default for 2x4 is one -8t VM
    assert tpu.from_name("v6e-8").machine_type == "ct6e-standard-8t"


def test_slice_name_reaches_the_stack_outputs():
    cfg = model(slices=[{"name": "big", "tpu": "v5p-128", "count": 1}])
    assert cfg.slices[0].tpu.name == "v5p-128" and cfg.slices[0].tpu.hosts == 16


# --- 6. bucket names ---------------------------------------------------------------------------

def test_a_user_set_bucket_name_is_kept():
    cfg = model(bucket={"name": "my-team-scratch"})
    assert cfg.bucket_name == "my-team-scratch" and cfg.artifacts_bucket_name == "my-team-scratch-artifacts"
    assert cfg.cache_location == "gs://my-team-scratch/pathways-cache"


# --- the rest of their kind ----------------------------------------------------------------------

def test_a_sidecar_image_without_the_tag_is_a_config_error_not_a_traceback():
    msg = error(workloads=[{"name": "j", "image": "example.com/t:1", "colocatedPython": {"image": "example.com/sidecar:v1"}}])
    assert "has no <date>-python_<X>-jax_<Y> tag" in msg and len(msg.splitlines()) == 1


def test_negative_restart_limits_are_refused():
    assert "pathways:workloads[0].maxRestarts" in error(workloads=[{"name": "j", "image": "example.com/t:1", "maxRestarts": -1}])
    assert "pathways:workloads[0].workerRestartsPerHost" in error(workloads=[{"name": "j", "image": "example.com/t:1", "workerRestartsPerHost": 0}])


def test_worker_job_shape_from_the_table():
    cfg, js = built()
    workers = js["spec"]["replicatedJobs"][1]
    assert workers["replicas"] == 2  # the group's slices
    spec = workers["template"]["spec"]
    assert spec["parallelism"] == spec["completions"] == 4  # v6e-16: four VMs
    assert spec["backoffLimit"] == 4 * 4  # batch: hosts x 4 (PLATFORM-FACTS §2)
    res = containers(spec["template"]["spec"])["pathways-worker"]["resources"]
    assert res["limits"]["google.com/tpu"] == "4"


def test_size_errors_list_the_valid_sizes():
    with pytest.raises(tpu.TpuError) as e:
        tpu.from_name("v5p-9")
    msg = str(e.value)
    # v5p: 2 TensorCores a chip; the cube-like 3-D sizes up to 1024 chips, as GKE's v5p table names them
    assert "v5p-9 is not a v5p slice size; valid: v5p-8, v5p-16, v5p-32, v5p-64, v5p-128, v5p-256, v5p-512, v5p-1024, v5p-2048" in msg
    assert msg.endswith(", … (or give family and topology)")
    with pytest.raises(tpu.TpuError) as e:
        tpu.from_name("v6e-3")
    assert str(e.value) == "v6e-3 is not a v6e slice size; valid: v6e-1, v6e-4, v6e-8, v6e-16, v6e-32, v6e-64, v6e-128, v6e-256"
    with pytest.raises(tpu.TpuError) as e:
        tpu.from_name("v4-12")  # v4 is 3-D too (any dimension order for the large shapes)
    assert str(e.value) == ("v4-12 is not a v4 slice size; valid: v4-8, v4-16, v4-32, v4-64, v4-128, v4-256, v4-512, v4-1024, "
                            "v4-2048, … (or give family and topology)")
    with pytest.raises(tpu.TpuError) as e:
        tpu.from_name("tpu7x-3")  # Ironwood: 2 TensorCores a chip, from one chip (tpu7x-2) up
    assert str(e.value) == ("tpu7x-3 is not a tpu7x slice size; valid: tpu7x-2, tpu7x-8, tpu7x-16, tpu7x-32, tpu7x-64, tpu7x-128, "
                            "tpu7x-256, tpu7x-512, tpu7x-1024, tpu7x-2048, … (or give family and topology)")


def test_head_pod_tolerates_exactly_the_head_pool_taint():
    _, js = built()
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    # the head pool's taint, as the node pool sets it: pathways/role=head:NoSchedule
    assert pod["tolerations"] == [{"key": "pathways/role", "operator": "Equal", "value": "head", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"pathways/role": "head"}


def test_coordinator_label_defaults_to_the_first_job_and_pod():
    from components.manifests.jobset import coordinator_label_value

    js = {"metadata": {"name": "train"}, "spec": {"coordinator": {"replicatedJob": "pathways-head"}}}
    assert coordinator_label_value(js) == "train-pathways-head-0-0.train"
    js["spec"]["network"] = {"subdomain": "t"}
    js["spec"]["coordinator"].update(jobIndex=1, podIndex=2)
    assert coordinator_label_value(js) == "train-pathways-head-1-2.t"
    assert coordinator_label_value({"metadata": {"name": "x"}, "spec": {}}) is None


def test_one_service_workload_per_stack():
    svc = {"mode": "service"}
    msg = error(workloads=[{"name": "a", **svc}, {"name": "b", **svc}])
    assert msg.count("one service workload per stack") == 1 and "pathways:workloads[0].mode" in msg
    # one service beside batch workloads is fine
    cfg = model(workloads=[{"name": "svc", **svc}, {"name": "b1", "image": "example.com/t:1"}, {"name": "b2", "image": "example.com/t:1"}],
                kubernetes={"kueue": {"enabled": True}})
    assert [w.mode for w in cfg.workloads] == ["service", "batch", "batch"]


def test_admission_refuses_tpu_requests_on_a_cpu_pool():
    _, js = built()
    pools = [admission.PoolFacts("pathways-head", {"pathways/role": "head"}),
             admission.PoolFacts("tpu-main-0", {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice",
                                                "cloud.google.com/gke-tpu-topology": "4x4"}, chips_per_vm=4, hosts=4)]
    pod = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"] = {"pathways/role": "head"}  # workers sent to the head pool
    report = admission.check_jobset(js, pools)
    assert [(v.rule, v.message) for v in report.violations if v.rule == "tpu-request"] == [
        ("tpu-request", "requests TPUs but selects no TPU pool")]


def _cluster_queue(**spec_extra) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "pathways"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "head", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}], **spec_extra}}


def _rules(obj: dict) -> list[tuple[str, str]]:
    return sorted((v.rule, v.path) for v in admission.check_kueue(obj).violations)


def test_kueue_objects_names_quantities_and_labels():
    assert _rules(_cluster_queue()) == []
    bad = _cluster_queue()
    bad["metadata"]["name"] = "Bad_Name"
    assert ("name", "metadata.name") in _rules(bad)
    bad["metadata"]["name"] = "a" * 254  # a DNS subdomain is at most 253 characters
    assert ("name", "metadata.name") in _rules(bad)
    bad = _cluster_queue()
    bad["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "lots"
    assert ("quantity", "spec.resourceGroups[0].flavors[0]") in _rules(bad)
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tpu"},
              "spec": {"nodeLabels": {"a": "x" * 64, "b": "bad value", "c": "ok-1"}}}
    assert [r for r in _rules(flavor) if r[0] == "label"] == [("label", "spec.nodeLabels.a"), ("label", "spec.nodeLabels.b")]


def test_kueue_unknown_fields_are_refused():
    assert _rules(_cluster_queue(notAField=1)) == [("kueue-schema", "spec.notAField")]


def test_builtin_schema_errors_name_their_path():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": ["not", "a", "map"]}}
    violations = admission.check_builtin(ns).violations
    assert violations and violations[0].rule == "schema" and violations[0].path == "metadata.labels"


def test_an_oversized_sidecar_is_told_half_of_the_vm():
    # ct6e-standard-4t: 180 vCPU, 720 GiB (GKE TPU tables). GKE reserves 0.52 vCPU and ~21.3 GiB of
    # that, DaemonSets ~1 vCPU / 2 GiB: 178.48 vCPU and ~696.7 GiB allocatable; half is 89 and 348.
    sidecar = {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0", "cpu": "100", "memory": "16Gi"}
    msg = error(workloads=[{"name": "j", "image": "example.com/t:1", "colocatedPython": sidecar}])
    assert "use at most 89 CPU and 348Gi for memory + shmSize together" in msg


def test_a_long_bad_disruption_allowance_is_cut_in_the_message():
    msg = error(allowDisruption=["X" * 100])
    assert f"{'X' * 60!r} is not a resource name as `diff` prints it" in msg


def test_a_kueue_version_without_schema_says_so():
    obj = _cluster_queue()
    obj["apiVersion"] = "kueue.x-k8s.io/v9"
    report = admission.check_kueue(obj)
    assert report.notices == [f"Kueue ClusterQueue v9 schema not found under {admission.KUEUE_REFERENCE}; schema check skipped (run `make crds`)"]
