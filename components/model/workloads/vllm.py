"""vLLM TPU (tpu-inference) on Pathways: the pinned engine and every name the stack passes it.

JetStream's maintainers archived it on 2026-02-01 and moved its core to tpu-inference, vLLM's TPU backend.
tpu-inference runs on Pathways as a JAX client of the IFRT proxy: with ``proxy`` in ``JAX_PLATFORMS`` it
initialises pathwaysutils before any JAX call (``tpu_inference/__init__.py``), and it refuses to start unless
vLLM's engine core runs in-process (``platforms/tpu_platform.py`` ``check_and_update_config``:
"VLLM_ENABLE_V1_MULTIPROCESSING must be 0 when using Pathways(JAX_PLATFORMS=proxy)"; vLLM's ``envs.py``
derives ``VLLM_TPU_USING_PATHWAYS`` from ``"proxy" in JAX_PLATFORMS``).

Pins, each read from the released wheels (tools/serving/sources.lock hash-locks them, and
tests/test_vllm_sources.py checks every name below against them):
- ``docker.io/vllm/vllm-tpu:v0.32.0`` is vLLM's TPU image of the ``vllm-tpu`` 0.32.0 release (the newest on PyPI on
  2026-12-06), whose wheel requires ``tpu-inference==0.32.0`` (METADATA);
- tpu-inference 0.32.0 requires ``jax==0.11.2``, ``pathwaysutils`` and ``runai-model-streamer[gcs,s3]==0.15.9``
  (METADATA): the Pathways server and proxy must be ``jax-0.11.2`` (one JAX on both sides of the proxy), and the image
  can stream safetensors from ``gs://``. Neither image can be pulled here, and no public source shows Pathways images
  at jax-0.11.2 (nor at any JAX of tpu-inference 0.23.0 or later): the plan says so (images.PATHWAYS_TAG_SOURCES).
RELEASES keeps the tags pinned before with what their wheels required (0.21.0: jax 0.9.2), so a stack that stays on
one is paired with its Pathways release; only the pinned one's names are read from its wheels.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class VllmRelease:
    vllm: str  # the vllm-tpu wheel's version (the image's tag without its v)
    tpu_inference: str  # what that wheel requires
    jax: str  # what tpu-inference requires


VLLM_IMAGE_REPOSITORY = "docker.io/vllm/vllm-tpu"
RELEASES = {"v0.21.0": VllmRelease(vllm="0.21.0", tpu_inference="0.21.0", jax="0.9.2"),
            "v0.32.0": VllmRelease(vllm="0.32.0", tpu_inference="0.32.0", jax="0.11.2")}
VLLM_IMAGE = f"{VLLM_IMAGE_REPOSITORY}:v0.32.0"


def pathways_version(image_tag: str) -> str | None:
    """The Pathways release (jax-<version>) an engine tag of the vLLM TPU image runs on; None when unknown."""
    release = RELEASES.get(image_tag)
    return f"jax-{release.jax}" if release else None


# The OpenAI-compatible server: `vllm serve` (console script `vllm`, subcommand `serve`), its default port
# (FrontendArgs.port) and its routes.
COMMAND = ("vllm", "serve")
PORT = 8000
HEALTH_PATH = "/health"
# Its probes. `vllm serve` serves HTTP only once the engine is built (weights loaded, KV cache allocated,
# tpu-inference's precompilation done): run_server_worker builds the engine
# client, then serve_http (vllm-tpu 0.32.0: vllm/entrypoints/launchers/api_server/entry.py); setup_server only binds
# the socket before, so until then a probe's connection is refused.
# /health answers 200 while the engine lives, 503 once it is dead (serve/instrumentator/health.py): the startup probe tries
# from the start, every STARTUP_PERIOD_SECONDS, for serve.loadTimeoutMinutes, and readiness follows within
# READINESS_PERIOD_SECONDS of the engine answering (no fixed delay: JetStream's 600 s would hold every scaled-up
# replica unready for ten minutes).
STARTUP_PERIOD_SECONDS = 10
READINESS_PERIOD_SECONDS = 5
READINESS_FAILURES = 3
LIVENESS_PERIOD_SECONDS = 30
LIVENESS_FAILURES = 10
PROBE_TIMEOUT_SECONDS = 5
COMPLETIONS_PATH = "/v1/completions"
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
METRICS_PATH = "/metrics"
# Prometheus metrics the engine exports (vllm/v1/metrics/loggers.py): the queue and the KV cache, what an
# autoscaler or a dashboard reads.
METRIC_WAITING = "vllm:num_requests_waiting"
METRIC_RUNNING = "vllm:num_requests_running"
METRIC_KV_CACHE = "vllm:kv_cache_usage_perc"
# serve.autoscale.metric -> the gauge it scales on
AUTOSCALE_METRICS = {"queue": METRIC_WAITING, "kvCache": METRIC_KV_CACHE}

# Environment the engine gets on the leader. The proxy address: JAX's jax_backend_target, which pathwaysutils'
# proxy backend reads (pathwaysutils/proxy_backend.py), as on the JobSet path.
ENV_PLATFORMS = "JAX_PLATFORMS"
ENV_BACKEND_TARGET = "JAX_BACKEND_TARGET"
ENV_MULTIPROCESSING = "VLLM_ENABLE_V1_MULTIPROCESSING"
# Disaggregated serving, as tpu-inference 0.32.0 has it: (1) an engine in one process (core/core_tpu.py
# DisaggEngineCore, over PREFILL_SLICES / DECODE_SLICES chips) that `vllm serve` never selects (nothing in vLLM or the
# rest of tpu-inference refers to it); (2) two `vllm serve`s, prefill (kv_role kv_producer) and decode
# (kv_consumer), with --kv-transfer-config naming TPUConnector (distributed/tpu_connector.py; the platform allows it,
# platforms/tpu_platform.py) and a proxy that sends each request to prefill with max_tokens 1, then to decode with
# the kv_transfer_params prefill answered. (2) moves the KV cache over jax.experimental.transfer's server, started on
# jax.local_devices()[0].client (tpu_connector.py _maybe_start_p2p_server): a PjRt client's. On Pathways the
# engine's client is the IFRT proxy's (JAX_PLATFORMS=proxy), and jaxlib's transfer server takes PjRt clients only:
# read in the sources, not run (no TPU here). So serving_checks refuses serve.disaggregated with vllm; tests/
# test_vllm_sources.py fails when a pinned release wires DisaggEngineCore, and keeps TPUConnector's client in view.
DISAGGREGATED_ENGINE = "DisaggEngineCore"
KV_CONNECTOR = "TPUConnector"

# The direct runtime (serve.runtime: direct): `vllm serve` on the TPU host itself, JAX on the host's own PjRt TPU client,
# as tpu-inference's GKE manifests run it (tpu-inference .buildkite/kubernetes/manifests/v7x/single_prefill.yaml,
# single_decode.yaml: JAX_PLATFORMS=tpu,cpu; envs.py takes a comma-separated list of "", tpu, cpu, proxy).
DIRECT_PLATFORMS = "tpu,cpu"
# Split prefill/decode on it (serve.split), each name from the pinned wheels (tests/test_vllm_sources.py):
# - `--kv-transfer-config` (vllm/engine/arg_utils.py) takes KVTransferConfig as JSON (vllm/config/kv_transfer.py:
#   kv_connector, kv_role, kv_connector_module_path; extra fields are refused). vLLM's connector registry does not
#   know TPUConnector, so the module path is given (kv_connector/factory.py imports it); the TPU platform allows it
#   (platforms/tpu_platform.py). Prefill is kv_producer and decode kv_consumer: kv_both counts as a producer
#   (is_kv_producer), and TPUConnector branches on that alone, so a kv_both decode would never pull.
FLAG_KV_TRANSFER_CONFIG = "--kv-transfer-config"
KV_CONNECTOR_MODULE = "tpu_inference.distributed.tpu_connector"
KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
# - the connector's ports (tpu_inference/distributed/utils.py get_kv_ports, get_side_channel_port and their
#   defaults): both roles start a transfer server on TPU_KV_TRANSFER_PORT, sent to decode in kv_transfer_params
#   (remote_port); prefill binds the side channel on TPU_SIDE_CHANNEL_PORT, and decode dials prefill's host on its own
#   value of it, so the stack sets both, equal on both roles. The bulk transfer opens TPU_KV_TRANSFER_CHANNEL_NUMBER
#   (8) more sockets on ephemeral ports (tpu_connector.py _maybe_start_p2p_server: "host:0"): the endpoint's
#   NetworkPolicy admits every port between its own engines.
ENV_KV_TRANSFER_PORT = "TPU_KV_TRANSFER_PORT"
ENV_SIDE_CHANNEL_PORT = "TPU_SIDE_CHANNEL_PORT"
KV_TRANSFER_PORT = 9100
SIDE_CHANNEL_PORT = 9600
# - the address prefill tells decode to pull from: vLLM's get_ip() (VLLM_HOST_IP, else the default route's
#   interface), which the stack pins to the pod's IP.
ENV_HOST_IP = "VLLM_HOST_IP"
# - prefill offers its KV cache only for a request that ended at its length cap (tpu_connector.py request_finished:
#   FINISHED_LENGTH_CAPPED), so the proxy asks prefill for one token, non-streaming (only the full response carries
#   kv_transfer_params: vllm/entrypoints/openai/completion/serving.py), then hands what it answered to decode.
# - the engines must agree on the KV cache's layout: decode builds its pull from its own cache (tpu_connector.py
#   asserts equal block counts), so both roles share the slice type (the same --tensor-parallel-size), and these
#   flags may not differ between them.
SPLIT_EQUAL_FLAGS = ("--block-size", "--kv-cache-dtype", "--quantization", "--dtype")
# The proxy: tpu-inference's examples/disagg/toy_proxy_server.py, which its image carries (docker/Dockerfile: the
# repository under WORKDIR /workspace/tpu_inference) and its GKE manifest runs (v7x/proxy1p1d.yaml): round-robin over
# each role's hosts, prefill with max_tokens 1 and stream false, then decode with prefill's kv_transfer_params,
# streamed back; /health answers for the proxy itself. Read at tpu-inference b8692ff0, not in the wheels: that the
# v0.32.0 image has it at this path is not verified here (no registry).
PROXY_SCRIPT = "/workspace/tpu_inference/examples/disagg/toy_proxy_server.py"
PROXY_FLAGS = ("--host", "--port", "--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports")
# JAX devices per chip, for --tensor-parallel-size on the direct runtime: Ironwood shows each of its two TensorCores
# as a device (tpu-inference's v7x manifests: --tensor-parallel-size=8 on google.com/tpu: 4; llm-d README.tpu.md
# "4 chips = 8 cores"); v4 and v5p join theirs (megacore), v5e and v6e have one.
DEVICES_PER_CHIP = {"tpu7x": 2}


def kv_transfer_config(role: str) -> str:
    """--kv-transfer-config of a split endpoint's role (prefill or decode), compact JSON as vLLM parses it."""
    return json.dumps({"kv_connector": KV_CONNECTOR, "kv_connector_module_path": KV_CONNECTOR_MODULE,
                       "kv_role": KV_ROLES[role]}, separators=(",", ":"))
# A gated Hugging Face model's token: read by huggingface_hub, which vLLM downloads with (not a vLLM name).
ENV_HF_TOKEN = "HF_TOKEN"

# `vllm serve` flags, from EngineArgs / FrontendArgs field names (vllm/engine/arg_utils.py,
# vllm/entrypoints/launchers/cli_args.py: --<field with - for _>).
FLAG_PORT = "--port"
FLAG_TENSOR_PARALLEL = "--tensor-parallel-size"
FLAG_MAX_MODEL_LEN = "--max-model-len"
FLAG_SERVED_MODEL_NAME = "--served-model-name"
FLAG_LOAD_FORMAT = "--load-format"
LOAD_FORMAT_STREAMER = "runai_streamer"  # vllm/model_executor/model_loader: streams safetensors from gs://
FLAG_QUANTIZATION = "--quantization"
# FP8 on tpu-inference: weights by --quantization=fp8 (tpu_platform.py TpuPlatform.supported_quantization), the KV
# cache by --kv-cache-dtype=fp8 (tpu_inference/utils.py's dtype table: fp8, fp8_e4m3, fp8_e5m2). MaxText's
# `quantization: fp8` and `quantize_kvcache` (serve.quantization, serve.quantizeKvcache) are JetStream's names.
QUANTIZATION_FP8 = "fp8"
# --quantization values `vllm serve` takes on TPU: tpu-inference's TpuPlatform.supported_quantization (vllm's
# Platform.verify_quantization refuses any other: "... is currently not supported in TPU") and the method it registers
# beside them (tpu_inference/layers/common/quant_methods.py UNQUANTIZED; vllm's register_quantization_config appends it
# to the platform's list). tests/test_vllm_sources.py reads both from the pinned wheels.
TPU_QUANTIZATION = ("compressed-tensors", "auto_awq", "fp8", "gpt_oss_mxfp4", "modelopt_fp4", "deepseek_v4_fp8", "unquantized")
# --kv-cache-dtype values that reach tpu-inference: vLLM's CacheDType that its dtype table or JAX maps
# (tpu_inference/utils.py to_jax_dtype: fp8, fp8_e4m3, fp8_e5m2; auto is the model's; float16 and bfloat16 are JAX's)
TPU_KV_CACHE_DTYPES = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
FLAG_KV_CACHE_DTYPE = "--kv-cache-dtype"
FLAG_MAX_NUM_SEQS = "--max-num-seqs"
# What the stack sets itself: extraArgs may not repeat them (the last one would win silently).
STACK_FLAGS = frozenset({"--model", "--host", FLAG_PORT, FLAG_TENSOR_PARALLEL, FLAG_MAX_MODEL_LEN, FLAG_SERVED_MODEL_NAME,
                         FLAG_LOAD_FORMAT, "--pipeline-parallel-size", "--data-parallel-size", "--distributed-executor-backend",
                         "--kv-transfer-config"})
STACK_FLAG_KEYS = {
    "--model": "serve.model / serve.weights", "--host": "the stack (every interface of the pod)", FLAG_PORT: "the stack (8000)",
    FLAG_TENSOR_PARALLEL: "the stack (the chips of one slice)", FLAG_MAX_MODEL_LEN: "serve.maxModelLen",
    FLAG_SERVED_MODEL_NAME: "serve.model", FLAG_LOAD_FORMAT: "serve.weights (runai_streamer for gs://)",
    "--pipeline-parallel-size": "the stack (one engine spans its slice)", "--data-parallel-size": "serve.replicas",
    "--distributed-executor-backend": "the stack (Pathways: one process drives every chip)",
    "--kv-transfer-config": "serve.split (TPUConnector, the role's kv_role)",
}
_FLAG = re.compile(r"--[a-z][a-z0-9-]{0,63}")
_HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


def is_hugging_face_id(model: str) -> bool:
    return bool(_HF_ID.fullmatch(model))


def flag_problem(arg: str) -> str | None:
    """Why a `vllm serve` extra argument is refused, or None."""
    flag, _, value = arg.partition("=")
    if not _FLAG.fullmatch(flag) or len(value) > 1000 or not arg.isprintable():
        return f"{arg[:80]!r} is not a vllm serve flag (--name or --name=value)"
    if flag in STACK_FLAGS:
        return f"{flag} is set by the stack from {STACK_FLAG_KEYS[flag]}; set it there instead"
    # the same tables wherever a value is given (#76.3): vLLM would refuse these only once the pod starts
    for name, allowed in ((FLAG_QUANTIZATION, TPU_QUANTIZATION), (FLAG_KV_CACHE_DTYPE, TPU_KV_CACHE_DTYPES)):
        if flag == name and value not in allowed:
            return f"{flag}={value[:40]!r} is not one vLLM takes on TPU (tpu-inference's): use one of {', '.join(allowed)}"
    return None
