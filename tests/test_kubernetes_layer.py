"""The Kubernetes half: provider, JobSet controller, and the Pathways JobSets as rendered."""

from __future__ import annotations

import pytest

from components.manifests import admission
from components.manifests.jobset import IMMUTABLE_SPEC_FIELDS
from infra.offline.render import check_plan, manifests
from tests.conftest import FLEET_MANAGERS, config_with, example_plan, in_zone_of, plan_of, stack_model

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
CHART = "kubernetes:helm.sh/v4:Chart"
VERSION = "jax-0.9.0"
IMAGE = "example.com/trainer:1"


def jobsets(plan):
    return {o["metadata"]["name"]: o for o in manifests(plan) if o["kind"] == "JobSet"}


def head_pod(js):
    return js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def worker_job(js):
    return js["spec"]["replicatedJobs"][1]


def env(container):
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def by_name(containers):
    return {c["name"]: c for c in containers}


def workload_plan(tpu, mode, **extra):
    w = {"name": "job", "mode": mode, "sliceGroup": "g", **extra}
    if mode == "batch":
        w.setdefault("image", IMAGE)
    return plan_of(config_with(slices=[{"name": "g", "tpu": tpu, "count": 2}], pathwaysVersion=VERSION, workloads=[w], **in_zone_of(tpu)))


SCHEMA_NOTICES: list[str] = []  # the upstream CRDs are there (make crds; tests/conftest.py requires them)


def _lws(plan):
    return [(o["metadata"]["name"], o) for o in manifests(plan) if o["kind"] == "LeaderWorkerSet"]


def test_schema_reference_is_used():
    assert admission._jobset_schema()["properties"]["spec"]["properties"]["replicatedJobs"]


def test_every_committed_stack_renders_clean(committed_stack):
    name, plan = committed_stack
    if name in FLEET_MANAGERS:
        assert not plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")  # nothing of its own to watch
        return
    reports = {**check_plan(plan), **{n: admission.check_lws(o) for n, o in _lws(plan)}}
    assert bool(reports) is bool(stack_model(name).active_workloads), "a JobSet or LeaderWorkerSet per workload, none without"
    for jobset_name, report in reports.items():
        assert report.violations == [], (jobset_name, [str(v) for v in report.violations])
        assert report.notices == SCHEMA_NOTICES


def test_provider_controller_and_dependencies():
    plan = example_plan("staging")
    provider = plan.one("pulumi:providers:kubernetes")
    assert provider.inputs["clusterIdentifier"] == "pathways-staging-123/us-east5-b/pathways-staging"
    chart = plan.one(CHART, "jobset")
    assert chart.input("chart") == "oci://registry.k8s.io/jobset/charts/jobset"
    assert chart.input("version") == "0.12.0" and chart.input("namespace") == "jobset-system"
    assert chart.input("values.controller.nodeSelector") == {"pathways/role": "system"}
    # CRD upgrades: a v4 Chart applies the chart's CRD as one of its objects (Helm would install
    # crds/ once and never upgrade them), so a jobsetVersion bump upgrades the CRD too.
    assert chart.input("skipCrds") is False
    assert plan.by_type("kubernetes:helm.sh/v3:Release") == []
    ns = next(r for r in plan.by_type("kubernetes:core/v1:Namespace") if r.input("metadata.name") == "jobset-system")
    assert ns.urn in chart.dependencies
    assert chart.options["provider"].endswith("pulumi:providers:kubernetes::gke")
    for js in plan.by_type(JOBSET):
        assert chart.urn in js.dependencies
        assert js.options["replaceOnChanges"] == sorted(f"spec.{f}" for f in IMMUTABLE_SPEC_FIELDS) and js.options["deleteBeforeReplace"] is True
        assert js.options["provider"] == chart.options["provider"]


FAMILIES = ["v5e-16", "v5p-128", "v6e-16", "v6e-8", "tpu7x-128", "v4-16"]
# Written out from GKE's TPU tables (not read back from the plan, which the catalog computes):
# slice -> (topology, VMs, gke-tpu-accelerator label, chips per VM, machine type)
SLICE_FACTS = {
    "v5e-16": ("4x4", 4, "tpu-v5-lite-podslice", 4, "ct5lp-hightpu-4t"),
    "v5p-128": ("4x4x4", 16, "tpu-v5p-slice", 4, "ct5p-hightpu-4t"),
    "v6e-16": ("4x4", 4, "tpu-v6e-slice", 4, "ct6e-standard-4t"),
    "v6e-8": ("2x4", 1, "tpu-v6e-slice", 8, "ct6e-standard-8t"),
    "tpu7x-128": ("4x4x4", 16, "tpu7x", 4, "tpu7x-standard-4t"),
    "v4-16": ("2x2x2", 2, "tpu-v4-podslice", 4, "ct4p-hightpu-4t"),
}

# Worker requests per TPU VM, written out: the VM (vCPU, GB from the Cloud TPU docs' machine tables)
# less GKE's reservations (CPU: 6% of the 1st core, 1% of the 2nd, 0.5% of the next 2, 0.25% above;
# memory: 25/20/10/6/2% tiers + 100 MiB eviction threshold, GKE "Plan node sizes") less 1 CPU / 2 GiB
# for DaemonSets, rounded down.
WORKER_REQUESTS = {
    "ct5lp-hightpu-4t": {"cpu": "110", "memory": "179Gi"},  # 112 vCPU, 192 GB
    "ct5p-hightpu-4t": {"cpu": "206", "memory": "430Gi"},  # 208, 448
    "ct6e-standard-4t": {"cpu": "178", "memory": "696Gi"},  # 180, 720
    "ct6e-standard-8t": {"cpu": "178", "memory": "1402Gi"},  # 180, 1440
    "tpu7x-standard-4t": {"cpu": "222", "memory": "931Gi"},  # 224, 960
    "ct4p-hightpu-4t": {"cpu": "238", "memory": "390Gi"},  # 240, 407
}


@pytest.mark.parametrize("tpu", FAMILIES)
@pytest.mark.parametrize("mode", ["batch", "interactive"])
def test_family_by_mode_passes_admission_and_has_the_seed_shape(tpu, mode):
    plan = workload_plan(tpu, mode)
    report = check_plan(plan)["job"]
    assert report.violations == [], [str(v) for v in report.violations]
    js = jobsets(plan)["job"]
    spec = js["spec"]
    topology, hosts, accelerator, chips_per_vm, machine_type = SLICE_FACTS[tpu]
    assert spec["coordinator"] == {"replicatedJob": "pathways-head", "jobIndex": 0, "podIndex": 0}
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "InOrder"}
    pod = head_pod(js)
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["nodeSelector"] == {"pathways/role": "head"}
    assert spec["replicatedJobs"][0]["template"]["metadata"]["annotations"] == {"alpha.jobset.sigs.k8s.io/exclusive-topology": "kubernetes.io/hostname"}
    assert "ttlSecondsAfterFinished" not in spec  # a TTL-deleted JobSet would be re-run by `pulumi up --refresh`
    if mode == "batch":
        assert spec["successPolicy"] == {"operator": "All", "targetReplicatedJobs": ["pathways-head"]}
        sidecars = by_name(pod["initContainers"])
        assert {c["restartPolicy"] for c in sidecars.values()} == {"Always"}
        rm, proxy = sidecars["pathways-rm"], sidecars["pathways-proxy"]
        (user,) = pod["containers"]
        e = env(user)
        assert e["JAX_PLATFORMS"] == "proxy" and e["JAX_BACKEND_TARGET"] == "grpc://$(PATHWAYS_HEAD):29000"
        assert list(e)[0] == "PATHWAYS_HEAD"  # defined before it is referenced
        assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in pod["volumes"]
        assert {"name": "dshm", "mountPath": "/dev/shm"} in user["volumeMounts"]
    else:
        assert "successPolicy" not in spec and "initContainers" not in pod
        containers = by_name(pod["containers"])
        assert set(containers) == {"pathways-rm", "pathways-proxy"}
        assert all("restartPolicy" not in c for c in containers.values())
        rm, proxy = containers["pathways-rm"], containers["pathways-proxy"]
    cache = plan.outputs["cacheLocation"]
    assert rm["image"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:{VERSION}"
    assert proxy["image"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:{VERSION}"
    assert rm["args"] == [
        "--server_port=29001", "--node_type=resource_manager", "--instance_count=2",
        f"--instance_type={'tpuv6e1t' if tpu == 'v6e-8' else {'v5e': 'tpuv5e', 'v5p': 'tpuv5', 'v6e': 'tpuv6e', 'tpu7x': 'tpu7x', 'v4': 'tpuv4'}[tpu.split('-')[0]]}:{topology}",
        f"--gcs_scratch_location={cache}",
    ]
    assert env(rm)["TPU_SKIP_MDS_QUERY"] == "true"
    assert env(rm)["HOST_ADDRESS"] == {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/coordinator']"}}
    assert proxy["args"][:3] == ["--server_port=29000", "--resource_manager_address=$(PATHWAYS_HEAD):29001", f"--gcs_scratch_location={cache}"]
    assert [p["containerPort"] for p in rm["ports"]] == [29001, 29002]
    # workers
    wj = worker_job(js)
    job = wj["template"]["spec"]
    assert wj["replicas"] == 2
    assert job["parallelism"] == job["completions"] == hosts
    # batch: a crash loop ends the run (hosts x 4, the anchors'); interactive keeps serving:
    # pathwaysutils gives headless workers 1_000_000 restarts per host (experimental/gke/jobset.py)
    assert job["backoffLimit"] == hosts * (4 if mode == "batch" else 1_000_000)
    assert wj["template"]["metadata"]["annotations"] == {"alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    wpod = job["template"]["spec"]
    assert wpod["hostNetwork"] is True
    assert wpod["nodeSelector"] == {
        "cloud.google.com/gke-tpu-accelerator": accelerator,
        "cloud.google.com/gke-tpu-topology": topology,
        "pathways/slice-group": "g",
    }
    assert wpod["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert wpod["restartPolicy"] == "OnFailure"  # as xpk, PathwaysJob and pathwaysutils: restart in place
    (worker,) = wpod["containers"]
    # the VM's TPU chips and nothing else, as every peer (xpk, PathwaysJob, pathwaysutils): a CPU or memory
    # request near the VM's allocatable leaves the worker Pending when GKE's own reservations grow
    assert worker["resources"] == {"requests": {"google.com/tpu": str(chips_per_vm)}, "limits": {"google.com/tpu": str(chips_per_vm)}}
    assert machine_type in WORKER_REQUESTS  # the VM's allocatable still sizes the Kueue quotas (test_kueue)
    we = env(worker)
    assert we["MEGASCALE_NUM_SLICES"] == {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/replicatedjob-replicas']"}}
    assert we["MEGASCALE_SLICE_ID"] == {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/job-index']"}}
    assert we["MEGASCALE_COORDINATOR_ADDRESS"] == we["PATHWAYS_HEAD"]
    assert [p["containerPort"] for p in worker["ports"]] == [29005, 29006, 8471, 8080]
    assert worker["args"][0] == "--server_port=29005"


def test_spot_groups_tolerate_the_spot_taint():
    plan = plan_of(config_with(slices=[{"name": "g", "tpu": "v6e-16", "spot": True}], pathwaysVersion=VERSION, workloads=[{"name": "nb", "mode": "interactive"}]))
    wpod = worker_job(jobsets(plan)["nb"])["template"]["spec"]["template"]["spec"]
    assert {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in wpod["tolerations"]
    assert check_plan(plan)["nb"].violations == []


def test_every_workload_option():
    plan = workload_plan(
        "v6e-16", "batch",
        persistence=True, profiling={"port": 9100}, xlaFlags=["--xla_tpu_enable_latency_hiding_scheduler=true"],
        hloDump=True, colocatedPython={"image": "example.com/sidecar:20261101-python_3.12-jax_0.9.0"},
        elastic={"maxMissingSlices": 1}, workerRestartsPerHost=6, maxRestarts=3, terminationGracePeriodSeconds=120, ttlSecondsAfterFinished=600,
        dataLoaderWorkers=16, shmSize="32Gi", env={"RUN": "x", "STEPS": 100, "DEBUG": True},
    )
    assert check_plan(plan)["job"].violations == []
    js = jobsets(plan)["job"]
    spec, pod = js["spec"], head_pod(js)
    artifacts = plan.outputs["artifactsLocation"]
    assert spec["failurePolicy"] == {"maxRestarts": 3} and spec["ttlSecondsAfterFinished"] == 600
    assert pod["terminationGracePeriodSeconds"] == 120
    proxy = by_name(pod["initContainers"])["pathways-proxy"]
    assert "--xla_tpu_enable_latency_hiding_scheduler=true" in proxy["args"]
    assert f"--xla_dump_to={artifacts}/job/hlo/" in proxy["args"]
    # the number of slices the job may lose, not the total (2 here)
    assert "--num_elastic_slices=1" in proxy["args"]
    (user,) = pod["containers"]
    e = env(user)
    assert e["ENABLE_PATHWAYS_PERSISTENCE"] == "1" and e["DATA_LOADER_WORKERS"] == "16" and e["RUN"] == "x" and (e["STEPS"], e["DEBUG"]) == ("100", "true")
    assert e["PATHWAYS_PROFILING_AUTH_TOKEN"] == {"secretKeyRef": {"name": "job-profiling-token", "key": "token"}}
    # exact gs:// prefix: pathwaysutils >= 0.1.12 refuses a bare bucket name ("Path must be a GCS path")
    # and matches by prefix, so gs://<bucket> alone would also admit gs://<bucket>-other
    assert e["PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS"] == f"{artifacts}/job/profiles/"
    assert e["PROFILE_TRACE_DIR"] == f"{artifacts}/job/profiles/"
    assert user["ports"] == [{"containerPort": 9100, "protocol": "TCP"}]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in pod["volumes"]
    wj = worker_job(js)
    assert wj["template"]["spec"]["backoffLimit"] == 4 * 6
    wpod = wj["template"]["spec"]["template"]["spec"]
    (sidecar,) = wpod["initContainers"]
    (worker,) = wpod["containers"]
    assert sidecar["restartPolicy"] == "Always" and sidecar["ports"] == [{"containerPort": 50051, "protocol": "TCP"}]
    assert env(sidecar)["GRPC_SERVER_ADDRESS"] == "0.0.0.0:50051"
    # one memory-backed directory shared by worker and sidecar, and both told where it is
    # (pathwaysutils 0.1.13 experimental/gke/jobset.py add_colocated_python)
    assert wpod["volumes"] == [{"name": "sidecar-shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    for c in (worker, sidecar):
        assert c["volumeMounts"] == [{"name": "sidecar-shm", "mountPath": "/tmp/shared-memory"}]
        assert env(c)["CLOUD_PATHWAYS_SIDECAR_SHM_DIRECTORY"] == "/tmp/shared-memory"
    assert "--cloud_pathways_sidecar_shm_directory=/tmp/shared-memory" in worker["args"]
    # the sidecar is bounded; the worker asks for its TPU chips only
    assert sidecar["resources"] == {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"memory": "16Gi"}}
    assert worker["resources"] == {"requests": {"google.com/tpu": "4"}, "limits": {"google.com/tpu": "4"}}
    # the token is a generated secret, in a Kubernetes Secret the JobSet waits for
    secret = plan.one("kubernetes:core/v1:Secret")
    assert secret.input("metadata.name") == "job-profiling-token" and secret.input("stringData") == "[secret]"
    assert plan.one("random:index/randomPassword:RandomPassword").input("length") == 40
    assert secret.urn in plan.one(JOBSET).dependencies


def test_workload_waits_on_controller_and_its_own_pools_only():
    cfg = config_with(
        slices=[{"name": "a", "tpu": "v6e-16"}, {"name": "b", "tpu": "v5p-8"}], pathwaysVersion=VERSION,
        workloads=[{"name": "on-a", "mode": "interactive", "sliceGroup": "a"}],
    )
    plan = plan_of(cfg)
    js = plan.one(JOBSET)
    deps = {plan.get(d).name for d in js.dependencies}
    # depends_on a component waits for its children: the release, group a's pool, the head pool
    assert {"jobset", "slices-a-0", "head-pool", "workloads", "scratch", "scratch-scratch-0"} <= deps
    assert plan.get(next(d for d in js.dependencies if plan.get(d).name == "jobset")).type == CHART
    assert not any(d.startswith("slices-b") for d in deps)


def test_interactive_outputs():
    out = example_plan("dev").outputs["interactive"]["notebook"]
    assert out["proxyAddress"] == "grpc://notebook-pathways-head-0-0.notebook.pathways.svc.cluster.local:29000"
    # the proxy speaks ALTS: clients in the VPC use the address; a laptop's notebook runs in the cluster instead
    assert out["clientEnv"] == "JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://notebook-pathways-head-0-0.notebook.pathways.svc.cluster.local:29000"
    assert "port-forward" not in out["clientEnv"] and "python -m infra.run submit --stack dev --notebook" in out["fromALaptop"]


def test_image_overrides_and_subdomain():
    plan = workload_plan(
        "v6e-16", "interactive", name="a-rather-long-workload-name", subdomain="pw",
        serverImage="example.com/server@sha256:" + "a" * 64, proxyImage="example.com/proxy@sha256:" + "b" * 64,
    )
    js = jobsets(plan)["a-rather-long-workload-name"]
    assert js["spec"]["network"]["subdomain"] == "pw"
    rm = by_name(head_pod(js)["containers"])["pathways-rm"]
    assert rm["image"].startswith("example.com/server@sha256:")
    assert check_plan(plan)["a-rather-long-workload-name"].violations == []


def test_only_a_suspended_workload_sets_spec_suspend_when_kueue_is_off():
    plan = plan_of(config_with(pathwaysVersion=VERSION, kubernetes={"kueue": {"enabled": False}}, workloads=[
        {"name": "run", "mode": "interactive"}, {"name": "held", "mode": "interactive", "state": "suspended"}]))
    specs = {name: js["spec"] for name, js in jobsets(plan).items()}
    assert "suspend" not in specs["run"]
    assert specs["held"]["suspend"] is True
