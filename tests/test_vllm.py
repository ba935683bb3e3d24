"""serve.engine: vllm (the default): vLLM TPU on Pathways in a LeaderWorkerSet leader (components/model/workloads/vllm.py;
every name it uses is checked against the pinned engine's sources in tests/test_vllm_sources.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from components.model.config import load, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.errors import ConfigError
from components.model.workloads import vllm
from infra.offline.render import manifests
from infra.offline.stackfile import flatten
from tests.conftest import config_with, example_path, example_plan, plan_of

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
WEIGHTS = "gs://acme-models/meta-llama/Llama-3.1-8B-Instruct"
VERSION = f"jax-{vllm.RELEASES[vllm.VLLM_IMAGE.rsplit(':', 1)[1]].jax}"  # what the pinned tpu-inference requires


def vllm_config(slices=None, version=VERSION, **serve):
    return config_with(slices=slices or [{"name": "main", "tpu": "v6e-16", "count": 2}], pathwaysVersion=version, workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": MODEL, **serve}}])


def the_lws(plan):
    (lws,) = [o for o in manifests(plan) if o["kind"] == "LeaderWorkerSet"]
    return lws


def containers(pod):
    return {c["name"]: c for c in pod["spec"]["containers"]}


def _raw(config) -> dict:
    flat, _ = flatten(config)
    return {k.split(":", 1)[1]: (json.loads(v) if v[:1] in "[{" else v) for k, v in flat.items()}


def _errors(config):
    with pytest.raises(ConfigError) as e:
        load(_raw(config), stack="test")
    return str(e.value).splitlines()


def test_a_serve_workload_runs_vllm_on_pathways_by_default():
    plan = plan_of(vllm_config(weights=WEIGHTS, maxModelLen=4096, replicas=2))
    t = the_lws(plan)["spec"]["leaderWorkerTemplate"]
    c = containers(t["leaderTemplate"])
    assert list(c) == ["pathways-proxy", "pathways-rm", "vllm"]  # vLLM serves HTTP itself: no front end container
    assert c["pathways-proxy"]["image"].endswith(f"/proxy_server:{VERSION}") and c["pathways-rm"]["image"].endswith(f"/server:{VERSION}")
    engine = c["vllm"]
    assert engine["image"] == "docker.io/vllm/vllm-tpu:v0.32.0"
    assert engine["command"] == ["vllm", "serve"]
    # the weights streamed from gs://, served under the model's name, one v6e-16 slice's 16 chips as the tensor-parallel size
    assert engine["args"] == [WEIGHTS, "--port=8000", "--tensor-parallel-size=16", f"--served-model-name={MODEL}",
                              "--load-format=runai_streamer", "--max-model-len=4096"]
    assert engine["env"] == [{"name": "JAX_PLATFORMS", "value": "proxy"},
                             {"name": "JAX_BACKEND_TARGET", "value": "grpc://localhost:38681"},
                             {"name": "VLLM_ENABLE_V1_MULTIPROCESSING", "value": "0"}]
    assert engine["ports"] == [{"containerPort": 8000, "name": "http", "protocol": "TCP"}]
    assert engine["startupProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    # Guaranteed, 16 vCPU / 64Gi by default (the engine streams the weights through the proxy)
    assert engine["resources"] == {"requests": {"cpu": "16", "memory": "64Gi"}, "limits": {"cpu": "16", "memory": "64Gi"}}
    (worker,) = t["workerTemplate"]["spec"]["containers"]
    assert worker["image"].endswith(f"/server:{VERSION}")
    out = plan.outputs["serving"]["chat"]
    assert out["engine"] == "vllm"
    assert out["completions"].startswith("curl -s http://127.0.0.1:8000/v1/completions ") and f'"model": "{MODEL}"' in out["completions"]
    assert out["chat"].startswith("curl -s http://127.0.0.1:8000/v1/chat/completions ")
    assert out["health"].endswith("http://127.0.0.1:8000/health") and "/metrics" in out["metrics"]
    assert "generate" not in out


def test_without_weights_the_model_comes_from_hugging_face_with_the_teams_token():
    engine = containers(the_lws(plan_of(vllm_config(huggingFaceTokenSecret="hf-token")))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["vllm"]
    assert engine["args"][:4] == [MODEL, "--port=8000", "--tensor-parallel-size=16", f"--served-model-name={MODEL}"]
    assert not [a for a in engine["args"] if a.startswith("--load-format")]
    assert engine["env"][-1] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "HF_TOKEN"}}}


def test_the_example_serving_stack_runs_vllm():
    cfg = load(_raw(yaml.safe_load(example_path("serving").read_text())["config"]), stack="serving")
    (w,) = cfg.workloads
    assert w.serve is not None and w.serve.engine_name == "vllm" and w.serve.engine is None
    plan = example_plan("serving")
    assert "vllm" in containers(the_lws(plan)["spec"]["leaderWorkerTemplate"]["leaderTemplate"])


@pytest.mark.parametrize(("config", "key", "text"), [
    # an existing JetStream stack does not switch engines silently
    (vllm_config(model="llama3.1-8b", weights=WEIGHTS, maxTargetLength=4096), "pathways:workloads[0].serve.maxTargetLength",
     "serve.engine is not set, and the default engine is vllm: set serve.engine: jetstream"),
    (vllm_config(model="llama3.1-8b", weights=WEIGHTS), "pathways:workloads[0].serve.model",
     "'llama3.1-8b' is not a Hugging Face model id"),
    (vllm_config(engine="vllm", parallelism={"tensor": 16}), "pathways:workloads[0].serve.parallelism",
     "a JetStream (MaxText) key, not for engine: vllm"),
    # the engine's JAX on both sides of the proxy: tpu-inference 0.32.0 requires jax 0.11.2
    (vllm_config(version="jax-0.9.0"), "pathways:pathwaysVersion",
     "jax-0.9.0 for serve workload 'chat', but its engine image v0.32.0 runs on Pathways jax-0.11.2 (its tpu-inference requires jax 0.11.2)"),
    (vllm_config(extraArgs=["--tensor-parallel-size=8"]), "pathways:workloads[0].serve.extraArgs[0]",
     "--tensor-parallel-size is set by the stack from the stack (the chips of one slice)"),
    (vllm_config(extraArgs=["--max-num-seqs=64", "--port=9000"]), "pathways:workloads[0].serve.extraArgs[1]", "--port is set by the stack"),
    (vllm_config(extraArgs=["max_num_seqs=64"]), "pathways:workloads[0].serve.extraArgs[0]", "is not a vllm serve flag"),
    # #76.3: values checked by the same tables as typed keys (tpu-inference's, from the pinned wheels)
    (vllm_config(extraArgs=["--quantization=gptq"]), "pathways:workloads[0].serve.extraArgs[0]",
     "--quantization='gptq' is not one vLLM takes on TPU (tpu-inference's): use one of compressed-tensors, auto_awq, fp8"),
    (vllm_config(extraArgs=["--kv-cache-dtype=fp8_inc"]), "pathways:workloads[0].serve.extraArgs[0]",
     "--kv-cache-dtype='fp8_inc' is not one vLLM takes on TPU"),
    (vllm_config(weights="s3://bucket/model"), "pathways:workloads[0].serve.weights", "is not a gs://<bucket>/<path> location"),
    (vllm_config(huggingFaceTokenSecret="HF_Token"), "pathways:workloads[0].serve.huggingFaceTokenSecret",
     "'HF_Token' is not a valid name; use lowercase letters"),
    (vllm_config(model="not a model"), "pathways:workloads[0].serve.model", "is not a model name"),
    # tpu-inference's disaggregated engine is not reachable from `vllm serve` (tests/test_vllm_sources.py)
    (vllm_config(disaggregated=True), "pathways:workloads[0].serve.disaggregated",
     "not with engine: vllm: tpu-inference 0.32.0's disaggregated engine (DisaggEngineCore) is not reachable from `vllm serve`, "
     "and its prefill/decode KV transfer (TPUConnector) needs a PjRt TPU client"),
    # the other engine's keys
    (vllm_config(engine="jetstream", model="llama3.1-8b", weights=WEIGHTS, maxModelLen=4096, version="jax-0.5.3"),
     "pathways:workloads[0].serve.maxModelLen", "a vLLM key, not for engine: jetstream"),
    (vllm_config(engine="jetstream", model="llama3.1-8b", version="jax-0.5.3"), "pathways:workloads[0].serve.weights",
     "required for engine: jetstream"),
    (vllm_config(engine="jetstream", weights=WEIGHTS, version="jax-0.5.3"), "pathways:workloads[0].serve.model",
     "is not a MaxText model name"),
    # the default leader (RM 8/32Gi + proxy 16/100Gi + engine 16/64Gi) leaves a v5e worker less than half its VM
    (vllm_config(slices=[{"name": "main", "tpu": "v5e-16", "count": 1}]), "pathways:workloads[0].sliceGroup",
     "leaves its worker less than half of a ct5lp-hightpu-4t"),
])
def test_bad_vllm_configs_give_one_clear_error(config, key, text):
    lines = _errors(config)
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


def test_the_plan_names_the_engine_image():
    s = stack_summary(resolve(load(_raw(vllm_config(weights=WEIGHTS)), stack="test")))
    assert s["workloads"][0]["images"]["vllm"] == "docker.io/vllm/vllm-tpu:v0.32.0"
    assert not [n for n in s["notices"] if "archived" in n]


def test_the_endpoint_alert_watches_the_vllm_engine_container():
    plan = plan_of(vllm_config(weights=WEIGHTS))
    (alert,) = [a for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if a.input("displayName").endswith("serving endpoint not ready")]
    query = alert.input("conditions")[0]["conditionPrometheusQueryLanguage"]["query"]
    # the container the leader runs (a query on JetStream's jax-tpu would never fire for a vLLM endpoint)
    assert 'container="vllm"' in query and "jax-tpu" not in query


AUTOSCALE = {"minReplicas": 1, "maxReplicas": 4, "metric": "queue", "target": 8}
FOUR = [{"name": "main", "tpu": "v6e-16", "count": 4}]


def test_autoscale_scales_the_leader_worker_set_on_vllms_queue():
    plan = plan_of(vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE))
    objects = manifests(plan)
    lws = the_lws(plan)
    # the autoscaler owns the count: the stack sends no spec.replicas, so `pulumi up` never resets it
    assert "replicas" not in lws["spec"]
    (hpa,) = [o for o in objects if o["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    spec = hpa["spec"]
    assert spec["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "chat"}
    assert (spec["minReplicas"], spec["maxReplicas"]) == (1, 4)
    assert spec["metrics"] == [{"type": "Pods", "pods": {"metric": {"name": "prometheus.googleapis.com|vllm:num_requests_waiting|gauge"},
                                                         "target": {"type": "AverageValue", "averageValue": "8"}}}]
    # one replica per model load, a 30-minute lull before one is dropped
    assert spec["behavior"]["scaleUp"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 600}]
    assert spec["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 1800
    (pm,) = [o for o in objects if o["kind"] == "PodMonitoring"]
    assert pm["apiVersion"] == "monitoring.googleapis.com/v1"
    # the leaders only (one per replica, where vLLM runs), as the LWS scale subresource's selector picks them
    assert pm["spec"]["selector"] == {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"}}
    assert pm["spec"]["endpoints"] == [{"port": 8000, "path": "/metrics", "interval": "15s"}]


def test_autoscale_on_the_kv_cache_takes_a_fraction():
    plan = plan_of(vllm_config(slices=FOUR, autoscale={**AUTOSCALE, "metric": "kvCache", "target": 0.8}))
    (hpa,) = [o for o in manifests(plan) if o["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["spec"]["metrics"][0]["pods"] == {"metric": {"name": "prometheus.googleapis.com|vllm:kv_cache_usage_perc|gauge"},
                                                 "target": {"type": "AverageValue", "averageValue": "800m"}}


@pytest.mark.parametrize(("config", "key", "text"), [
    (vllm_config(autoscale={**AUTOSCALE, "maxReplicas": 3}), "pathways:workloads[0].serve.autoscale.maxReplicas",
     "3 replica(s) of one slice need 3 slices, but group 'main' has 2; use at most 2 replica(s)"),
    (vllm_config(slices=FOUR, disaggregated=True, autoscale={**AUTOSCALE, "maxReplicas": 3}), "pathways:workloads[0].serve.autoscale.maxReplicas",
     "need 6 slices, but group 'main' has 4"),
    (vllm_config(slices=FOUR, replicas=2, autoscale=AUTOSCALE), "pathways:workloads[0].serve.replicas", "not with serve.autoscale"),
    (vllm_config(slices=FOUR, autoscale={**AUTOSCALE, "minReplicas": 5}), "pathways:workloads[0].serve.autoscale",
     "minReplicas 5 exceeds maxReplicas 4"),
    (vllm_config(slices=FOUR, autoscale={**AUTOSCALE, "metric": "kvCache", "target": 80}), "pathways:workloads[0].serve.autoscale",
     "target 80 is not a KV-cache fraction"),
    (vllm_config(slices=FOUR, autoscale={"maxReplicas": 2}), "pathways:workloads[0].serve.autoscale.target", "required"),
    (vllm_config(slices=FOUR, engine="jetstream", model="llama3.1-8b", weights=WEIGHTS, version="jax-0.5.3", autoscale=AUTOSCALE),
     "pathways:workloads[0].serve.autoscale", "only for engine: vllm"),
])
def test_bad_autoscale_configs_give_one_clear_error(config, key, text):
    lines = _errors(config)
    assert any(line.startswith(f"{key}: ") and text in line for line in lines), lines


def test_an_autoscaled_endpoint_suspends_through_kueue_only():
    cfg = vllm_config(slices=FOUR, autoscale=AUTOSCALE)
    cfg["pathways:workloads"][0]["state"] = "suspended"
    plan = plan_of(cfg)
    assert "replicas" not in the_lws(plan)["spec"]  # the autoscaler keeps its count; the queue holds the groups
    (lq,) = [o for o in manifests(plan) if o["kind"] == "LocalQueue"]
    assert lq["spec"]["stopPolicy"] == "HoldAndDrain"
    cfg["pathways:kubernetes"] = {"kueue": {"enabled": False}}
    assert any(line.startswith("pathways:workloads[0].state: ") and "needs Kueue" in line for line in _errors(cfg))


def test_the_plan_costs_an_autoscaled_endpoint_at_min_and_max():
    scale_to_zero = [{"name": "main", "tpu": "v6e-16", "count": 4, "scaleToZero": True}]
    s = stack_summary(resolve(load(_raw(vllm_config(slices=scale_to_zero, autoscale={**AUTOSCALE, "minReplicas": 1})), stack="test")))
    cost = s["cost"]
    (kept,) = [line for line in cost["lines"] if line["item"].startswith("TPU v6e")]
    (used,) = [line for line in cost["whenUsed"] if line["item"].startswith("TPU v6e")]
    # the idle floor holds minReplicas' slice (16 chips); the other three slices run only when the autoscaler adds replicas
    assert kept["quantity"] == 16 and used["quantity"] == 48
    (w,) = s["workloads"]
    a = w["autoscale"]
    assert {k: a[k] for k in ("minReplicas", "maxReplicas", "metric", "target", "chipsAtMin", "chipsAtMax")} == {
        "minReplicas": 1, "maxReplicas": 4, "metric": "vllm:num_requests_waiting", "target": 8.0, "chipsAtMin": 16, "chipsAtMax": 64}
    # at min the chips kept up cost what the cost table's kept line says; at max four times that
    assert a["hourlyAtMin"] == kept["hourly"] and a["hourlyAtMax"] == pytest.approx(4 * kept["hourly"])


def test_the_plan_text_shows_engine_endpoint_bounds_and_cost():
    s = stack_summary(resolve(load(_raw(vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE)), stack="test")))
    text = "\n".join(summary_text(s))
    assert "  chat endpoint: vllm at chat-http.pathways.svc.cluster.local:8000" in text
    a = s["workloads"][0]["autoscale"]
    assert a["hourlyAtMax"] == pytest.approx(4 * a["hourlyAtMin"])
    assert (f"  chat autoscale: 1-4 replicas on vllm:num_requests_waiting (target 8 per replica), 16-64 chips; "
            f"TPU chips ${a['hourlyAtMin']:,.2f}/h at min, ${a['hourlyAtMax']:,.2f}/h at max") in text
    # the adapter the autoscaler reads through is the stack's (tests/test_metrics_adapter.py): nothing to warn of
    assert not any("Custom Metrics Stackdriver Adapter" in n for n in s["notices"])


def test_the_pod_monitoring_is_checked_against_gmps_own_crd():
    from components.manifests.admission import check_gke_custom
    from infra.offline.render import check_builtins

    plan = plan_of(vllm_config(slices=FOUR, autoscale=AUTOSCALE))
    reports = check_builtins(plan)
    assert reports["PodMonitoring/chat-vllm"].violations == [] and reports["HorizontalPodAutoscaler/chat"].violations == []
    (pm,) = [o for o in manifests(plan) if o["kind"] == "PodMonitoring"]
    # prometheus-engine v0.17.2's schema (build/crds/gke): a misspelt field and a value of the wrong type are refused
    pm["spec"]["endpoints"][0]["scrapeInterval"] = "15s"
    pm["spec"]["endpoints"][0]["path"] = 9
    found = {v.path for v in check_gke_custom(pm).violations}
    assert found == {"spec.endpoints[0].scrapeInterval", "spec.endpoints[0].path"}, found


@pytest.mark.parametrize(("flag", "key"), [
    ("--load-format=auto", "serve.weights (runai_streamer for gs://)"),
    ("--served-model-name=x", "serve.model"),
    ("--data-parallel-size=2", "serve.replicas"),
    ("--distributed-executor-backend=ray", "the stack (Pathways: one process drives every chip)"),
    ("--pipeline-parallel-size=2", "the stack (one engine spans its slice)"),
])
def test_an_extra_arg_the_stack_sets_is_refused_naming_the_key_that_sets_it(flag, key):
    from components.model.workloads.vllm import flag_problem

    assert flag_problem(flag) == f"{flag.partition('=')[0]} is set by the stack from {key}; set it there instead"


def test_maxtexts_fp8_keys_with_vllm_point_at_tpu_inferences_names():
    lines = _errors(vllm_config(engine="vllm", quantization="fp8", quantizeKvcache=True))
    for key in ("quantization", "quantizeKvcache"):
        (line,) = [x for x in lines if x.startswith(f"pathways:workloads[0].serve.{key}: ")]
        assert "a JetStream (MaxText) key" in line and "--quantization=fp8 for the weights, --kv-cache-dtype=fp8 for the KV cache" in line
