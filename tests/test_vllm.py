"""serve.engine: vllm (the default): vLLM TPU on Pathways in a LeaderWorkerSet leader (components/model/vllm.py;
every name it uses is checked against the pinned engine's sources in tests/test_vllm_sources.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from components.model.config import load, resolve
from components.model.errors import ConfigError
from components.model.summary import stack_summary
from infra.offline.render import manifests
from infra.offline.stackfile import flatten, stack_path
from tests.conftest import config_with, plan_of, stack_plan

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
WEIGHTS = "gs://acme-models/meta-llama/Llama-3.1-8B-Instruct"
VERSION = "jax-0.9.2"  # what tpu-inference 0.21.0 requires (vllm.RELEASES)


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
    assert engine["image"] == "docker.io/vllm/vllm-tpu:v0.21.0"
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


def test_disaggregated_vllm_gives_each_phase_one_slice():
    lws = the_lws(plan_of(vllm_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], weights=WEIGHTS, disaggregated=True)))
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2 * 4 + 1 and t["subGroupPolicy"] == {"subGroupSize": 4}
    c = containers(t["leaderTemplate"])
    assert "--instance_count=2" in c["pathways-rm"]["args"]
    env = {e["name"]: e["value"] for e in c["vllm"]["env"]}
    assert env["PREFILL_SLICES"] == env["DECODE_SLICES"] == "16"


def test_the_example_serving_stack_runs_vllm():
    cfg = load(_raw(yaml.safe_load(stack_path("serving").read_text())["config"]), stack="serving")
    (w,) = cfg.workloads
    assert w.serve is not None and w.serve.engine_name == "vllm" and w.serve.engine is None
    plan = stack_plan("serving")
    assert "vllm" in containers(the_lws(plan)["spec"]["leaderWorkerTemplate"]["leaderTemplate"])


@pytest.mark.parametrize(("config", "key", "text"), [
    # an existing JetStream stack does not switch engines silently
    (vllm_config(model="llama3.1-8b", weights=WEIGHTS, maxTargetLength=4096), "pathways:workloads[0].serve.maxTargetLength",
     "serve.engine is not set, and the default engine is vllm: set serve.engine: jetstream"),
    (vllm_config(model="llama3.1-8b", weights=WEIGHTS), "pathways:workloads[0].serve.model",
     "'llama3.1-8b' is not a Hugging Face model id"),
    (vllm_config(engine="vllm", parallelism={"tensor": 16}), "pathways:workloads[0].serve.parallelism",
     "a JetStream (MaxText) key, not for engine: vllm"),
    # the engine's JAX on both sides of the proxy: tpu-inference 0.21.0 requires jax 0.9.2
    (vllm_config(version="jax-0.7.2"), "pathways:pathwaysVersion",
     "jax-0.7.2 for serve workload 'chat', but its engine image v0.21.0 runs on Pathways jax-0.9.2 (its tpu-inference requires jax 0.9.2)"),
    (vllm_config(extraArgs=["--tensor-parallel-size=8"]), "pathways:workloads[0].serve.extraArgs[0]",
     "--tensor-parallel-size is set by the stack from the stack (the chips of one slice)"),
    (vllm_config(extraArgs=["--max-num-seqs=64", "--port=9000"]), "pathways:workloads[0].serve.extraArgs[1]", "--port is set by the stack"),
    (vllm_config(extraArgs=["max_num_seqs=64"]), "pathways:workloads[0].serve.extraArgs[0]", "is not a vllm serve flag"),
    (vllm_config(weights="s3://bucket/model"), "pathways:workloads[0].serve.weights", "is not a gs://<bucket>/<path> location"),
    (vllm_config(huggingFaceTokenSecret="HF_Token"), "pathways:workloads[0].serve.huggingFaceTokenSecret", ""),
    (vllm_config(model="not a model"), "pathways:workloads[0].serve.model", "is not a model name"),
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
    assert s["workloads"][0]["images"]["vllm"] == "docker.io/vllm/vllm-tpu:v0.21.0"
    assert not [n for n in s["notices"] if "archived" in n]


def test_the_endpoint_alert_watches_the_vllm_engine_container():
    plan = plan_of(vllm_config(weights=WEIGHTS))
    (alert,) = [a for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if a.input("displayName").endswith("serving endpoint not ready")]
    query = alert.input("conditions")[0]["conditionPrometheusQueryLanguage"]["query"]
    # the container the leader runs (a query on JetStream's jax-tpu would never fire for a vLLM endpoint)
    assert 'container="vllm"' in query and "jax-tpu" not in query
