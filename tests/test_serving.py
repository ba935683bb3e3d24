"""Real-time serving (mode: serve) against Google's documented shape (PLATFORM-FACTS §7: "Perform multihost
inference using Pathways" and the GKE tutorial "Serve an LLM using multi-host TPUs with JetStream and
Pathways"), the LWS v0.9.0 webhook's rules, and this project's deliberate differences (README, "Serving a
model")."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from components.manifests import admission
from components.model.config import load
from components.model.errors import ConfigError
from components.model.workloads import models
from infra.offline.diff import diff, guard
from infra.offline.render import check_builtins, manifests
from infra.offline.stackfile import flatten
from tests.conftest import config_with, example_path, example_plan, plan_of

VERSION = "jax-0.5.3"  # the Pathways release Google pairs with jetstream-pathways:v0.2.0
WEIGHTS = "gs://acme-models/llama3.1-8b/checkpoints/0/items"
POOL = "gcp:container/nodePool:NodePool"
BUCKET_IAM = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_IAM = "gcp:projects/iAMMember:IAMMember"
CHART = "kubernetes:helm.sh/v4:Chart"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def serve_config(slices=None, **serve):
    """A JetStream serve workload (engine: jetstream, as an existing stack must now say); tests/test_vllm.py has vLLM's."""
    return config_with(slices=slices or [{"name": "main", "tpu": "v6e-16", "count": 2}], pathwaysVersion=VERSION, workloads=[
        {"name": "chat", "mode": "serve", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS, **serve}},
    ])


def objects(plan, kind):
    return [o for o in manifests(plan) if o["kind"] == kind]


def the_lws(plan):
    (lws,) = objects(plan, "LeaderWorkerSet")
    return lws


def containers(pod):
    return {c["name"]: c for c in pod["spec"]["containers"]}


PLAN = plan_of(serve_config(replicas=2))


def test_leader_worker_set_has_googles_shape():
    lws = the_lws(PLAN)
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["metadata"]["annotations"] == {"leaderworkerset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    spec = lws["spec"]
    assert spec["replicas"] == 2 and spec["startupPolicy"] == "LeaderCreated"
    t = spec["leaderWorkerTemplate"]
    assert t["size"] == 4 + 1  # a v6e-16 slice has four TPU hosts, plus the leader
    assert t["restartPolicy"] == "RecreateGroupOnPodRestart" and "subGroupPolicy" not in t
    leader = t["leaderTemplate"]
    assert leader["metadata"]["labels"] == {"pathways/workload": "chat"}  # LWS adds its own (leader_selector)
    c = containers(leader)
    assert list(c) == ["pathways-proxy", "pathways-rm", "jax-tpu", "jetstream-http"]
    assert c["pathways-proxy"]["image"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:{VERSION}"
    assert c["pathways-proxy"]["args"] == ["--resource_manager_address=$(LWS_LEADER_ADDRESS):38677", "--server_port=38681",
                                           "--gcs_scratch_location=gs://test-proj-123-test-pathways/pathways-cache"]
    assert c["pathways-rm"]["image"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:{VERSION}"
    assert c["pathways-rm"]["env"] == [{"name": "HOST_ADDRESS", "value": "$(LWS_LEADER_ADDRESS)"}, {"name": "TPU_SKIP_MDS_QUERY", "value": "true"}]
    assert c["pathways-rm"]["args"] == ["--server_port=38677", "--gcs_scratch_location=gs://test-proj-123-test-pathways/pathways-cache",
                                        "--node_type=resource_manager", "--instance_count=1", "--instance_type=tpuv6e:4x4"]
    engine = c["jax-tpu"]
    assert engine["image"] == "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0"
    assert [p["containerPort"] for p in engine["ports"]] == [9000]
    assert engine["args"] == [
        "MaxText/configs/base.yml", "model_name=llama3.1-8b", f"load_parameters_path={WEIGHTS}",
        "max_prefill_predict_length=1024", "max_target_length=2048", "per_device_batch_size=1", "scan_layers=false",
        "weight_dtype=bfloat16", "enable_single_controller=true", "enable_model_warmup=true",
        # Llama 3's own tokenizer, not base.yml's Llama 2 default (components/model/workloads/maxtext.py)
        "tokenizer_path=assets/tokenizer_llama3.tiktoken", "tokenizer_type=tiktoken",
    ]
    probe = {"httpGet": {"path": "/healthcheck", "port": 8000}}
    assert engine["startupProbe"] == {**probe, "periodSeconds": 1, "initialDelaySeconds": 600, "failureThreshold": 10000}
    assert engine["livenessProbe"] == engine["readinessProbe"] == {**probe, "periodSeconds": 60, "failureThreshold": 10}
    http = c["jetstream-http"]
    assert http["image"] == "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3"
    assert [p["containerPort"] for p in http["ports"]] == [8000]
    # the leader runs on its slice's nodes but takes no chips; the pod network, not the host's
    pod = leader["spec"]
    assert pod["nodeSelector"]["pathways/slice-group"] == "main" and pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert "google.com/tpu" not in json.dumps(pod["containers"]) and "hostNetwork" not in pod
    (worker,) = t["workerTemplate"]["spec"]["containers"]
    assert worker["image"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:{VERSION}"
    assert worker["args"] == ["--server_port=38679", "--resource_manager_address=$(LWS_LEADER_ADDRESS):38677",
                              "--gcs_scratch_location=gs://test-proj-123-test-pathways/pathways-cache"]
    # half the ct6e-standard-4t's allocatable (178.48 vCPU, 696.7 GiB), no CPU or memory limit: Burstable, never the
    # kubelet's first eviction beside the Guaranteed leader (workload.serve_worker_request)
    assert worker["resources"] == {"requests": {"google.com/tpu": "4", "cpu": "89", "memory": "348Gi"},
                                   "limits": {"google.com/tpu": "4"}}


def test_deliberate_differences_from_googles_example():
    t = the_lws(PLAN)["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        pod = t[role]["spec"]
        assert pod["priorityClassName"] == "pathways-serving"
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
        for c in pod["containers"]:
            assert c["securityContext"]["allowPrivilegeEscalation"] is False
            assert c["securityContext"]["capabilities"]["drop"], c["name"]
    for c in t["leaderTemplate"]["spec"]["containers"]:  # Guaranteed: requests = limits
        assert c["resources"]["requests"] == c["resources"]["limits"], c["name"]


def test_the_http_service_and_outputs():
    (svc,) = objects(PLAN, "Service")
    assert svc["metadata"]["name"] == "chat-http" and svc["spec"]["type"] == "ClusterIP"
    # the leaders by LWS's own labels, as the LWS controller selects them (no pod of the namespace can copy them:
    # tests/test_security.py)
    assert svc["spec"]["selector"] == {"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert svc["spec"]["ports"] == [{"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP", "appProtocol": "http"}]
    # never a load balancer unless asked; never awaited: Pulumi's await wants every leader ready within 10 minutes,
    # a model may load for longer (a first up or a rolling update would fail)
    assert svc["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
    out = PLAN.outputs["serving"]["chat"]
    assert out["portForward"] == "kubectl -n pathways port-forward svc/chat-http 8000:8000"
    assert out["generate"].startswith("curl -s -X POST http://127.0.0.1:8000/generate ") and '"max_tokens"' in out["generate"]
    # the health check through the port-forward: jetstream-http's /healthcheck, which asks the engine (lws.py HEALTH_PATH)
    assert out["health"] == "curl -s http://127.0.0.1:8000/healthcheck"
    assert set(out) == {"engine", "service", "portForward", "generate", "health"} and out["engine"] == "jetstream"
    (ilb,) = objects(plan_of(serve_config(internalLoadBalancer=True)), "Service")
    assert ilb["spec"]["type"] == "LoadBalancer"
    # only the cluster's own subnet (nodes and pods) may call it unless the stack lists its clients
    assert ilb["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/20", "10.4.0.0/14"]
    (ilb,) = objects(plan_of(serve_config(internalLoadBalancer=True, loadBalancerSourceRanges=["10.30.0.0/16"])), "Service")
    assert ilb["spec"]["loadBalancerSourceRanges"] == ["10.30.0.0/16"]
    assert ilb["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true", "networking.gke.io/load-balancer-type": "Internal"}


def test_model_settings_become_maxtext_arguments():
    plan = plan_of(serve_config(parallelism={"tensor": 8, "fsdp": 2}, quantization="int8", quantizeKvcache=True,
                                perDeviceBatchSize=0.5, maxPrefillPredictLength=512, maxTargetLength=1024,
                                configFile="MaxText/configs/inference.yml", extraArgs=["attention=dot_product"]))
    args = containers(the_lws(plan)["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]
    assert args[0] == "MaxText/configs/inference.yml"
    for arg in ("per_device_batch_size=0.5", "max_prefill_predict_length=512", "max_target_length=1024", "ici_fsdp_parallelism=2",
                "ici_tensor_parallelism=8", "quantization=int8", "quantize_kvcache=true"):
        assert arg in args
    assert args[-1] == "attention=dot_product"


def test_disaggregated_serving_spans_two_slices():
    lws = the_lws(plan_of(serve_config(disaggregated=True)))
    assert lws["metadata"]["annotations"] == {"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "cloud.google.com/gke-nodepool"}
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2 * 4 + 1 and t["subGroupPolicy"] == {"subGroupSize": 4}
    c = containers(t["leaderTemplate"])
    assert "--instance_count=2" in c["pathways-rm"]["args"]
    assert "inference_server=ExperimentalMaxtextDisaggregatedServer_8" in c["jax-tpu"]["args"]
    assert admission.check_lws(lws).violations == []


def test_every_object_passes_the_crd_webhook_and_pod_schemas():
    assert admission.check_lws(the_lws(PLAN)).violations == []
    assert {k: [str(v) for v in r.violations] for k, r in check_builtins(PLAN).items() if r.violations} == {}


@pytest.mark.parametrize("change,rule", [
    (lambda o: o["spec"]["leaderWorkerTemplate"].update(size=0), "size must be equal or greater than 1"),
    (lambda o: o["spec"]["leaderWorkerTemplate"].update(subGroupPolicy={"subGroupSize": 3}), "size or size - 1 must be divisible"),
    (lambda o: o["spec"]["leaderWorkerTemplate"].update(subGroupPolicy={"subGroupSize": 3, "type": "LeaderExcluded"}), "size-1 must be divisible"),
    (lambda o: o["metadata"]["annotations"].update({"leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology": "x"}), "without subGroupSize"),
    (lambda o: o["metadata"]["annotations"].update({"leaderworkerset.gke.io/subgroup-exclusive-topology": "x"}), "not an annotation LWS v0.9.0 reads"),
    (lambda o: o["metadata"].update(name="9chat"), "DNS-1035"),
    (lambda o: o["spec"].update(replicas=-1), "replicas must be equal or greater than 0"),
    (lambda o: o["spec"].update(surprise=1), "surprise"),
    (lambda o: o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"].update(hostNetwork="yes"), "hostNetwork"),
])
def test_the_lws_webhook_rules_run_offline(change, rule):
    lws = copy.deepcopy(the_lws(PLAN))
    change(lws)
    assert any(rule in str(v) for v in admission.check_lws(lws).violations), [str(v) for v in admission.check_lws(lws).violations]


def _errors(config) -> list[str]:
    flat, _ = flatten(config)
    raw = {k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}
    with pytest.raises(ConfigError) as err:
        load(raw, stack="test")
    return str(err.value).splitlines()


def _with_workload(**w):
    return config_with(pathwaysVersion=VERSION, workloads=[{"name": "chat", "mode": "serve",
                                                            "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS}, **w}])


@pytest.mark.parametrize("config,key,text", [
    (config_with(pathwaysVersion=VERSION, workloads=[{"name": "chat", "mode": "serve"}]), "pathways:workloads[0].serve", "required for mode: serve"),
    (config_with(pathwaysVersion=VERSION, workloads=[{"name": "t", "image": "x:1", "serve": {"model": "m", "weights": WEIGHTS}}]),
     "pathways:workloads[0].serve", "only for mode: serve"),
    (_with_workload(slices=1), "pathways:workloads[0].slices", "takes serve.replicas slices"),
    (_with_workload(maxRestarts=3), "pathways:workloads[0].maxRestarts", "not for mode: serve"),
    (_with_workload(priority="training"), "pathways:workloads[0].priority", "would let training preempt"),
    (_with_workload(name="a" * 55), "pathways:workloads[0].name", "StatefulSet"),
    (serve_config(replicas=3), "pathways:workloads[0].serve.replicas", "need 3 slices, but group 'main' has 2; use at most 2"),
    (serve_config(replicas=2, disaggregated=True), "pathways:workloads[0].serve.replicas", "need 4 slices"),
    (serve_config(weights="s3://bucket/x"), "pathways:workloads[0].serve.weights", "gs://<bucket>/<path>"),
    (serve_config(maxPrefillPredictLength=2048, maxTargetLength=2048), "pathways:workloads[0].serve", "must exceed maxPrefillPredictLength"),
    (serve_config(extraArgs=["model_name=other"]), "pathways:workloads[0].serve.extraArgs[0]", "set by the stack"),
    (serve_config(extraArgs=["ici_tensor_parallelism=4"]), "pathways:workloads[0].serve.extraArgs[0]", "set by the stack"),
    (serve_config(extraArgs=["no-equals"]), "pathways:workloads[0].serve.extraArgs[0]", "not a MaxText key=value"),
    (serve_config(parallelism={"warp": 2}), "pathways:workloads[0].serve.parallelism", "not a MaxText parallelism axis"),
    (serve_config(jetstreamImage="us-docker.pkg.dev/x/jetstream:latest"), "pathways:workloads[0].serve.jetstreamImage", "latest"),
    (serve_config(disaggregated=True, jetstreamImage="us-docker.pkg.dev/x/jetstream:v0.3.0",
                  slices=[{"name": "main", "tpu": "v6e-16", "count": 2}]), "pathways:workloads[0].serve", "ExperimentalMaxtextDisaggregatedServer_8"),
    (serve_config(replicas=0), "pathways:workloads[0].serve.replicas", "greater than or equal to 1"),
    (config_with(kubernetes={"lwsVersion": "0.5.0"}), "pathways:kubernetes.lwsVersion", "older than 0.6.0"),
    # a model the image has no tokenizer for (base.yml's default is Llama 2's: nonsense for any other model)
    (_with_workload(serve={"engine": "jetstream", "model": "qwen3-8b", "weights": WEIGHTS}), "pathways:workloads[0].serve.tokenizer",
     "required for model 'qwen3-8b'"),
    (serve_config(tokenizer="../etc/passwd"), "pathways:workloads[0].serve.tokenizer", "not a tokenizer path"),
    (serve_config(extraArgs=["tokenizer_path=assets/tokenizer.llama2"]), "pathways:workloads[0].serve.extraArgs[0]", "set by the stack"),
    # Google runs jetstream-pathways:v0.2.0 on Pathways jax-0.5.3 only (the engine's JAX talks to the proxy)
    (config_with(pathwaysVersion="jax-0.9.0", workloads=[{"name": "chat", "mode": "serve", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS}}]),
     "pathways:pathwaysVersion", "jax-0.9.0 for serve workload 'chat', but its engine image v0.2.0 runs on Pathways jax-0.5.3"),
    (_with_workload(serverImage="us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.9.0"), "pathways:workloads[0].serverImage",
     "use jax-0.5.3"),
    (serve_config(loadBalancerSourceRanges=["10.30.0.0/16"]), "pathways:workloads[0].serve.loadBalancerSourceRanges",
     "only with serve.internalLoadBalancer: true"),
    (serve_config(internalLoadBalancer=True, loadBalancerSourceRanges=["0.0.0.0/0"]),
     "pathways:workloads[0].serve.loadBalancerSourceRanges", "every address"),
    ({**serve_config(internalLoadBalancer=True), "pathways:network": {"existingNetwork": "shared-vpc", "existingSubnetwork": "ml"}},
     "pathways:workloads[0].serve.loadBalancerSourceRanges", "required with serve.internalLoadBalancer on an existing network"),
    # MaxText's fill_unspecified_mesh_axes on the 16 chips of a v6e-16 slice
    (serve_config(parallelism={"tensor": 32}), "pathways:workloads[0].serve.parallelism", "does not divide the slice's 16 chips"),
    (serve_config(parallelism={"tensor": 3}), "pathways:workloads[0].serve.parallelism", "multiply to 3"),
    (serve_config(parallelism={"tensor": -1, "autoregressive": -1}), "pathways:workloads[0].serve.parallelism",
     "tensor, autoregressive are all -1"),
    (serve_config(parallelism={"tensor": 4, "fsdp": 2}), "pathways:workloads[0].serve.parallelism",
     "multiply to 8, not the slice's 16 chips"),
])
def test_bad_serve_configs_give_one_clear_error(config, key, text):
    lines = _errors(config)
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


def test_the_leader_must_fit_beside_a_worker():
    # a one-chip v5e host (ct5lp-hightpu-1t: 24 vCPU, 48 GB) cannot hold the leader's proxy, RM and engine
    lines = _errors(serve_config(slices=[{"name": "main", "tpu": "v5e-1", "count": 1}]))
    assert any(line.startswith("pathways:workloads[0].sliceGroup: ") and "leaves its worker less than half" in line for line in lines), lines


def test_the_leader_leaves_its_worker_half_of_the_vm():
    # ct5lp-hightpu-4t (192 GB, 179.3 GiB allocatable): the default leader (166 GiB) would leave the worker about
    # 13 GiB, the first pod evicted under pressure (issue #35); the worker requests half, 89 GiB
    v5e = [{"name": "main", "tpu": "v5e-16", "count": 1}]
    (line,) = [x for x in _errors(serve_config(slices=v5e)) if x.startswith("pathways:workloads[0].sliceGroup: ")]
    assert "166.0 GiB" in line and "requests 55 vCPU, 89 GiB" in line and "within 56 vCPU and 90 GiB" in line, line
    # a smaller proxy and engine fit, and the rendered pods say so
    small = serve_config(slices=v5e, proxyResources={"cpu": "16", "memory": "40Gi"}, engineResources={"cpu": "8", "memory": "16Gi"})
    t = the_lws(plan_of(small))["spec"]["leaderWorkerTemplate"]
    c = containers(t["leaderTemplate"])
    assert c["pathways-proxy"]["resources"]["limits"] == {"cpu": "16", "memory": "40Gi"}
    assert c["jax-tpu"]["resources"]["requests"] == {"cpu": "8", "memory": "16Gi"}
    (worker,) = t["workerTemplate"]["spec"]["containers"]
    assert worker["resources"]["requests"] == {"google.com/tpu": "4", "cpu": "55", "memory": "89Gi"}


def test_serving_pools_run_on_the_node_identity_with_read_on_the_weights_only():
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=[
        {"name": "main", "tpu": "v6e-16", "count": 1}, {"name": "train", "tpu": "v6e-16", "count": 1}], workloads=[
        {"name": "chat", "mode": "serve", "sliceGroup": "main", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS}},
        {"name": "fit", "sliceGroup": "train", "image": "x:1"}]))
    modes = {p.input("name"): p.input("nodeConfig.workloadMetadataConfig.mode") for p in plan.by_type(POOL)}
    # Google runs JetStream-on-Pathways pools without Workload Identity; every other pool keeps it
    assert modes.pop("tpu-main-0") == "GCE_METADATA"
    assert set(modes.values()) == {"GKE_METADATA"} and "tpu-train-0" in modes
    reads = [r for r in plan.by_type(BUCKET_IAM) if r.input("bucket") == "acme-models"]
    node_sa = plan.outputs["nodeServiceAccounts"]["pathways"]
    assert [(r.input("role"), r.input("member")) for r in reads] == [("roles/storage.objectViewer", f"serviceAccount:{node_sa}")]
    assert not [r for r in plan.by_type(PROJECT_IAM) if "storage" in r.input("role")]


def test_the_lws_controller_is_installed_only_for_serving():
    chart = PLAN.one(CHART, "lws")
    assert chart.input("chart") == "oci://registry.k8s.io/lws/charts/lws" and chart.input("version") == "0.9.0"
    assert chart.input("namespace") == "lws-system" and chart.input("skipCrds") is False
    assert chart.input("values.image.manager") == {"repository": "registry.k8s.io/lws/lws", "tag": "v0.9.0", "pullPolicy": "IfNotPresent"}
    assert chart.input("values.nodeSelector") == {"pathways/role": "system"}
    ns = PLAN.one("kubernetes:core/v1:Namespace", "lws-namespace")
    assert ns.input("metadata.labels")["pod-security.kubernetes.io/enforce"] == "restricted"
    (lws,) = PLAN.by_type(LWS)
    assert chart.urn in lws.dependencies  # CRD and webhooks first: the pod webhook injects LWS_LEADER_ADDRESS
    assert not [r for r in example_plan("dev").by_type(CHART) if r.name == "lws"]


def test_kueue_queues_serving_above_training_and_holds_a_suspended_endpoint():
    lws = the_lws(PLAN)
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "chat"
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "pathways-serving"
    classes = {o["metadata"]["name"]: o["value"] for o in objects(PLAN, "PriorityClass")}
    assert classes["pathways-serving"] > classes["pathways-training"]
    config = serve_config()
    config["pathways:workloads"][0]["state"] = "suspended"
    plan = plan_of(config)
    assert the_lws(plan)["spec"]["replicas"] == 0
    (lq,) = objects(plan, "LocalQueue")
    assert lq["spec"]["stopPolicy"] == "HoldAndDrain"


def test_a_serving_only_stack_has_an_empty_head_pool():
    assert PLAN.one(POOL, "head-pool").input("nodeCount") == 0
    names = [a.input("displayName") for a in PLAN.by_type("gcp:monitoring/alertPolicy:AlertPolicy")]
    assert not [n for n in names if "head pod" in n] and [n for n in names if n.endswith("serving endpoint not ready")]


def _serving_config():
    return yaml.safe_load(example_path("serving").read_text())["config"]


def test_the_change_review_says_what_serving_loses():
    before = _serving_config()
    after = copy.deepcopy(before)
    after["pathways:workloads"][0]["serve"]["maxModelLen"] = 8192
    changes = {c.name: c for c in diff(plan_of(before, "serving"), plan_of(after, "serving"))}
    c = changes["serve-llama"]
    assert c.action == "update" and c.disruptive
    # the example autoscales: the count is the autoscaler's, and at its floor of one replica the endpoint goes down
    assert c.interrupts == ["llama (serve, autoscaled replica(s)): drops in-flight requests on each replica as it is recreated, one "
                            "at a time; at one replica the endpoint is down until it has loaded the model again"]
    # turning (JetStream's) disaggregation on cannot happen in place (the LWS webhook refuses a new subGroupSize): replaced
    before = serve_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 4}], replicas=2)
    after = copy.deepcopy(before)
    after["pathways:workloads"][0]["serve"]["disaggregated"] = True
    before_plan, after_plan = plan_of(before), plan_of(after)
    changes = {c.name: c for c in diff(before_plan, after_plan)}
    assert changes["serve-chat"].action == "replace"
    assert "drops in-flight requests; the endpoint is down" in changes["serve-chat"].interrupts[0]
    # in a protected stack the replacement needs an allowance
    verdict = guard(list(changes.values()), before_plan, after_plan, True, [])
    assert any(r.startswith("serve-chat (LeaderWorkerSet)") for r in verdict.refusals)


def test_without_kueue_a_serve_workload_counts_its_replicas_slices_not_its_group():
    # a Kueue-off stack refuses workloads whose slices exceed their group's (components/model/capacity/pools_checks.py
    # sharing): an endpoint of one replica on a four-slice group leaves three slices to a batch run of three
    four = [{"name": "main", "tpu": "v6e-16", "count": 4}]
    serve = {"name": "chat", "mode": "serve", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS, "replicas": 1}}
    batch = {"name": "train", "image": "example.com/t:1", "slices": 3}
    cfg = config_with(slices=four, pathwaysVersion=VERSION, kubernetes={"kueue": {"enabled": False}}, workloads=[serve, batch])
    flat, _ = flatten(cfg)
    load({k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}, stack="test")
    # two replicas disaggregated take four: with the batch run's three, seven of four
    serve["serve"] = {**serve["serve"], "replicas": 2, "disaggregated": True}
    assert any("want 7 slices of group 'main', which has 4" in line for line in _errors(cfg))


@pytest.mark.parametrize("model,path,kind", [
    ("llama2-70b", "assets/tokenizer.llama2", "sentencepiece"),
    ("llama3.1-405b", "assets/tokenizer_llama3.tiktoken", "tiktoken"),
    ("llama3.3-70b", "assets/tokenizer_llama3.tiktoken", "tiktoken"),
    ("gemma3-27b", "assets/tokenizer.gemma3", "sentencepiece"),
    ("gemma2-9b", "assets/tokenizer.gemma", "sentencepiece"),
    ("mixtral-8x22b", "assets/tokenizer.mistral-v3", "sentencepiece"),
    ("mixtral-8x7b", "assets/tokenizer.mistral-v1", "sentencepiece"),
])
def test_each_model_family_gets_the_tokenizer_maxtext_pairs_with_it(model, path, kind):
    args = containers(the_lws(plan_of(serve_config(model=model)))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]
    assert f"tokenizer_path={path}" in args and f"tokenizer_type={kind}" in args


def test_a_tokenizer_the_stack_names_is_used_as_given():
    lws = the_lws(plan_of(serve_config(model="qwen3-8b", tokenizer="Qwen/Qwen3-8B", tokenizerType="huggingface")))
    args = containers(lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]
    assert "tokenizer_path=Qwen/Qwen3-8B" in args and "tokenizer_type=huggingface" in args


@pytest.mark.parametrize("parallelism", [{"tensor": 16}, {"tensor": 8}, {"tensor": 8, "autoregressive": 2, "fsdp": 1},
                                         {"tensor": -1}, {"tensor": 4, "fsdp": -1}])
def test_meshes_maxtext_can_fill_pass(parallelism):
    plan_of(serve_config(parallelism=parallelism))


def test_a_serve_workload_beside_batch_work_of_another_jax_runs_on_its_engines_pathways():
    # the batch program's JAX is 0.9.0; the endpoint's Pathways images follow its engine's (serverImage, proxy derived)
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], pathwaysVersion="jax-0.9.0", workloads=[
        {"name": "train", "image": "example.com/t:1", "slices": 1},
        {"name": "chat", "mode": "serve", "serverImage": "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.5.3",
         "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS}}])
    leader = containers(the_lws(plan_of(cfg))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    assert leader["pathways-proxy"]["image"].endswith("/proxy_server:jax-0.5.3") and leader["pathways-rm"]["image"].endswith("/server:jax-0.5.3")
    # a JetStream image of another repository is the user's to pair
    load_ok = plan_of(config_with(pathwaysVersion="jax-0.9.0", workloads=[{"name": "chat", "mode": "serve", "serve": {
        "engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS, "jetstreamImage": "example.com/my-jetstream:jax-0.9.0"}}]))
    assert the_lws(load_ok)


def test_only_the_endpoint_port_is_open_beyond_the_sets_own_pods():
    # the serve pods use the pod network, where Dataplane V2 enforces NetworkPolicy: the proxy (38681), resource
    # manager (38677), worker (38679) and engine gRPC (9000) ports only from the set's own pods; HTTP 8000 for clients
    (netpol,) = objects(PLAN, "NetworkPolicy")
    assert netpol["metadata"]["namespace"] == "pathways"
    members = {"podSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "chat"}}}
    assert netpol["spec"] == {**members, "policyTypes": ["Ingress"],
                              "ingress": [{"from": [members]}, {"ports": [{"protocol": "TCP", "port": 8000}]}]}
    # it selects every pod of the set: LWS puts its name label on both templates' pods
    report = check_builtins(PLAN)["NetworkPolicy/chat-serve"]  # Kubernetes' strict schema
    assert not report.violations, [str(v) for v in report.violations]
    (policy,) = [r for r in PLAN.resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy"]
    (lws,) = [r for r in PLAN.resources if r.type == LWS]
    assert policy.urn in lws.dependencies  # in place before the first pod starts


def test_xla_flags_go_to_the_leaders_proxy():
    # Google's disaggregated serving manifest passes its XLA flags to the IFRT proxy, as the JobSet path does
    cfg = serve_config()
    cfg["pathways:workloads"][0]["xlaFlags"] = ["--xla_tpu_enable_flash_attention=true"]
    leader = containers(the_lws(plan_of(cfg))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])
    assert leader["pathways-proxy"]["args"][-1] == "--xla_tpu_enable_flash_attention=true"
    assert not any("xla" in a for a in leader["jax-tpu"]["args"] + leader["pathways-rm"]["args"])


def test_a_serve_workloads_http_service_never_takes_another_workloads_headless_service():
    # the HTTP Service chat-http, beside LWS's headless chat: a JobSet named chat-http has a headless Service of that
    # name in the same namespace, so the API server would refuse the second one at deploy time
    cfg = config_with(pathwaysVersion=VERSION, slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], workloads=[
        {"name": "chat-http", "mode": "interactive"},
        {"name": "chat", "mode": "serve", "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": WEIGHTS}}])
    assert "pathways:workloads[1].name: its HTTP Service 'chat-http' is workloads[0]'s headless Service too; rename one" in _errors(cfg)


# --- security #58.6: an external gateway's clients ---------------------------------------------------------------

def _gateway_stack(gateway: dict, **extra) -> dict:
    import yaml

    from tests.conftest import example_path

    config = yaml.safe_load(example_path("serving").read_text())["config"]
    workloads = config["pathways:workloads"]
    i = next(i for i, w in enumerate(workloads) if w.get("mode") == "serve" and (w.get("serve") or {}).get("engine", "vllm") == "vllm")
    workloads[i] = {**workloads[i], "serve": {**workloads[i]["serve"], "gateway": {"enabled": True, **gateway}}}
    return {**config, **extra}


def test_security_58_6_client_ranges_make_a_cloud_armor_policy_the_pools_backend_policy_names():
    from tests.conftest import plan_of

    plan = plan_of(_gateway_stack({"external": True, "clientRanges": [f"203.0.113.{i}/32" for i in range(12)]}), "serving")
    (armor,) = plan.by_type("gcp:compute/regionSecurityPolicy:RegionSecurityPolicy")
    rules = armor.input("rules")
    assert armor.input("type") == "CLOUD_ARMOR" and [r["priority"] for r in rules] == [1000, 1001, 2147483647]
    assert [len(r["match"]["config"]["srcIpRanges"]) for r in rules] == [10, 2, 1]  # at most 10 a rule
    assert rules[-1]["action"] == "deny(403)" and rules[-1]["match"]["config"]["srcIpRanges"] == ["*"]
    (backend,) = plan.by_type("kubernetes:networking.gke.io/v1:GCPBackendPolicy")
    assert backend.input("spec.default.securityPolicy") == armor.input("name")
    assert backend.input("spec.targetRef.kind") == "InferencePool"
    assert any(plan.get(d).name == armor.name or plan.get(d).type == "pathways:gcp:GatewayArmor" for d in backend.dependencies)
    # both objects pass GKE's own CRDs (tools/engines/gke-crds, as render checks them)
    from components.manifests import admission
    from infra.offline.render import manifests

    for obj in (o for o in manifests(plan) if o["kind"] in ("GCPBackendPolicy", "HealthCheckPolicy")):
        report = admission.check_gke_custom(obj)
        assert report.violations == [] and report.notices == [], (obj["kind"], report.notices)  # checked, not skipped
    (chart,) = [c for c in plan.by_type("kubernetes:helm.sh/v4:Chart") if c.input("values.provider")]
    assert chart.input("values.provider") == {"name": "none"}  # the chart's own GCPBackendPolicy would conflict


@pytest.mark.parametrize(("gateway", "extra", "line"), [
    ({"external": True}, {"pathways:protected": True}, "clientRanges: required in a protected stack with external: true"),
    ({"clientRanges": ["203.0.113.0/24"]}, {}, "clientRanges: only with external: true"),
    ({"external": True, "clientRanges": ["0.0.0.0/0"]}, {}, "0.0.0.0/0 is the whole internet"),
])
def test_security_58_6_refusals(gateway, extra, line):
    from tests.conftest import plan_of

    with pytest.raises(Exception) as e:
        plan_of(_gateway_stack(gateway, **extra), "serving")
    assert line in str(e.value), str(e.value)


def test_security_58_6_the_pack_refuses_a_protected_stacks_gateway_open_to_everyone():
    """The mandatory rule, on plans: an internet-facing gateway of a protected stack needs a backend policy naming a
    Cloud Armor policy. (The stack file refuses it first; the rule holds for a program change or a hand-edited plan.)"""
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES
    from tests.conftest import plan_of
    from tests.test_policies import mutate

    guarded = plan_of(_gateway_stack({"external": True, "clientRanges": ["203.0.113.0/24"]}), "serving")
    cluster = guarded.one("gcp:container/cluster:Cluster")
    as_protected = mutate(guarded, cluster.type, cluster.name, "resourceLabels", {"pathways-protected": "true"})
    assert not [v for v in run_policies(as_protected, ALL_POLICIES) if v.policy == "pathways-network-exposure" and "gateway" in v.message]
    (backend,) = as_protected.by_type("kubernetes:networking.gke.io/v1:GCPBackendPolicy")
    open_to_all = mutate(as_protected, backend.type, backend.name, "spec.default", {"timeoutSec": 300})
    found = [v.message for v in run_policies(open_to_all, ALL_POLICIES) if v.policy == "pathways-network-exposure" and "gateway" in v.message]
    assert len(found) == 1 and "names no Cloud Armor policy" in found[0]
    # the same plan, unprotected: shown in the plan, not refused by the pack
    assert not [v for v in run_policies(mutate(open_to_all, cluster.type, cluster.name, "resourceLabels", {}), ALL_POLICIES)
                if v.policy == "pathways-network-exposure" and "gateway" in v.message]


# --- #59 item 5: serving input the engines would refuse only after the slices came up ------------------------------


@pytest.mark.parametrize("serve, key, text", [
    # another family's file in the image, named explicitly
    ({"model": "llama3.1-8b", "tokenizer": "assets/tokenizer.llama2"}, "serve.tokenizer",
     "assets/tokenizer.llama2 is the tokenizer of llama2, not of llama3.1-8b; its own is assets/tokenizer_llama3.tiktoken"),
    ({"model": "gemma2-9b", "tokenizer": "assets/tokenizer_llama3.tiktoken", "tokenizerType": "tiktoken"}, "serve.tokenizer",
     "is the tokenizer of llama3, llama3.1, llama3.3, not of gemma2-9b"),
    ({"model": "qwen3-8b", "tokenizer": "assets/tokenizer.gemma3"}, "serve.tokenizer", "the image has none for it"),
    # a file of one format declared as another
    ({"model": "llama3.1-8b", "tokenizerType": "sentencepiece"}, "serve.tokenizerType",
     "sentencepiece does not read assets/tokenizer_llama3.tiktoken, a tiktoken tokenizer"),
    ({"model": "qwen3-8b", "tokenizer": "assets/qwen.tiktoken", "tokenizerType": "sentencepiece"}, "serve.tokenizerType",
     "a tiktoken tokenizer"),
    ({"model": "qwen3-8b", "tokenizer": "Qwen/Qwen3-8B", "tokenizerType": "tiktoken"}, "serve.tokenizerType",
     "a huggingface tokenizer"),
    ({"model": "llama2-7b", "tokenizerType": "tiktoken"}, "serve.tokenizerType", "a sentencepiece tokenizer"),
])
def test_a_tokenizer_of_another_family_or_format_is_refused(serve, key, text):
    lines = _errors(serve_config(**serve))
    assert any(line.startswith(f"pathways:workloads[0].{key}: ") and text in line for line in lines), lines


def test_a_tokenizers_type_follows_its_file_when_not_given():
    args = containers(the_lws(plan_of(serve_config(model="qwen3-8b", tokenizer="Qwen/Qwen3-8B")))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]
    assert "tokenizer_type=huggingface" in args
    args = containers(the_lws(plan_of(serve_config(model="llama3.1-8b", tokenizer="assets/tokenizer_llama3.tiktoken")))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]
    assert "tokenizer_type=tiktoken" in args


@pytest.mark.parametrize("model, context", sorted(models.CONTEXT.items()))
def test_max_model_len_above_the_models_context_is_refused(model, context):
    from tests.test_vllm import vllm_config

    config = vllm_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}])
    config["pathways:workloads"][0]["serve"].update(model=model, maxModelLen=context * 2)
    (line,) = [x for x in _errors(config) if x.startswith("pathways:workloads[0].serve.maxModelLen: ")]
    assert line == (f"pathways:workloads[0].serve.maxModelLen: {context * 2} is above {model}'s context ({context} tokens, "
                    f"max_position_embeddings in its config.json), which vLLM refuses at start; use at most {context}, or leave "
                    "it out for the model's own")
    config["pathways:workloads"][0]["serve"].update(model=model.upper(), maxModelLen=context)  # the Hub's ids ignore case
    assert plan_of(config)


def test_the_issues_example_llama_3_1_at_262144_is_refused_and_an_unknown_model_is_left_to_vllm():
    from tests.test_vllm import vllm_config

    config = vllm_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], maxModelLen=262144)
    assert any("131072 tokens" in line for line in _errors(config))
    config["pathways:workloads"][0]["serve"].update(model="acme/house-model-7b")
    assert plan_of(config)


def test_an_inference_gateway_needs_a_gke_with_the_inferencepool_crd():
    from tests.test_vllm import vllm_config

    config = vllm_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}],
                         gateway={"enabled": True, "pickerResources": {"cpu": "1", "memory": "2Gi"}})
    config["pathways:cluster"] = {"minMasterVersion": "1.34.0-gke.1500000"}
    (line,) = [x for x in _errors(config) if x.startswith("pathways:cluster.minMasterVersion: ")]
    assert "the inference gateway (GKE's InferencePool CRD) needs 1.34.0-gke.1626000" in line and "use 1.34.0-gke.1626000 or later" in line
    config["pathways:cluster"] = {"minMasterVersion": "1.34.0-gke.1626000"}
    assert plan_of(config)


def test_max_model_len_is_judged_against_the_weights_vllm_loads():
    from tests.test_vllm import vllm_config

    slices = [{"name": "main", "tpu": "v6e-16", "count": 2}]
    # a gs:// copy of the model's directory is that model: refused
    copy = vllm_config(slices=slices, weights="gs://acme-models/meta-llama/Llama-3.1-8B-Instruct/", maxModelLen=262144)
    assert any(line.startswith("pathways:workloads[0].serve.maxModelLen: ") for line in _errors(copy))
    # a fine-tune served under the base model's name may be longer: vLLM reads its own config.json
    tuned = vllm_config(slices=slices, weights="gs://acme-models/long-context-tune", maxModelLen=262144)
    assert plan_of(tuned)


@pytest.mark.parametrize("tokenizer, kind", [
    ("tokenizers/llama.model", "sentencepiece"),  # a file of the image outside assets/: not a Hugging Face id
    ("/deps/assets/tokenizer_llama3.tiktoken", "tiktoken"),  # the image's file by its absolute path
])
def test_a_tokenizer_file_is_not_mistaken_for_another_kind(tokenizer, kind):
    lws = the_lws(plan_of(serve_config(model="llama3.1-8b", tokenizer=tokenizer, tokenizerType=kind)))
    assert f"tokenizer_type={kind}" in containers(lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["jax-tpu"]["args"]


def test_the_image_files_absolute_path_is_still_judged_by_its_family():
    lines = _errors(serve_config(model="llama3.1-8b", tokenizer="/deps/assets/tokenizer.llama2"))
    assert any("is the tokenizer of llama2, not of llama3.1-8b" in line for line in lines), lines
