"""Every name the stack passes the vLLM TPU engine, read from the pinned engine's own sources.

build/serving-sources holds the vllm-tpu wheel of the pinned image tag and the tpu-inference it requires, installed
hash-locked without dependencies (tools/serving/sources.lock, `make serving-sources`, which `make test` runs). The
sources are parsed, never imported: a flag, an environment variable, a route, a metric or a version the pinned
release lacks fails here, not on a TPU at the endpoint's first start.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from components.manifests import lws
from components.model.workloads import vllm
from tests.conftest import config_with, plan_of

SOURCES = Path(__file__).resolve().parent.parent / "build" / "serving-sources"
TAG = vllm.VLLM_IMAGE.rsplit(":", 1)[1]
RELEASE = vllm.RELEASES[TAG]


def _read(relative: str) -> str:
    path = SOURCES / relative
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `make serving-sources` (make test does)")
    return path.read_text()


def _metadata(dist: str) -> tuple[str, list[str]]:
    text = _read(dist + "/METADATA")
    version = re.search(r"^Version: (.+)$", text, re.M)
    assert version, dist
    return version.group(1).strip(), re.findall(r"^Requires-Dist: (.+)$", text, re.M)


@cache
def _env_names(relative: str) -> frozenset[str]:
    """The keys of a module's `environment_variables = {...}` table."""
    for node in ast.parse(_read(relative)).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "environment_variables":
            assert isinstance(node.value, ast.Dict)
            return frozenset(k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    raise AssertionError(f"no environment_variables table in {relative}")


@cache
def _dataclass_fields(relative: str, *classes: str) -> dict[str, ast.expr | None]:
    """Annotated fields (name -> default) of the named classes: vLLM derives `--<name with - for _>` from them."""
    out: dict[str, ast.expr | None] = {}
    for node in ast.parse(_read(relative)).body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out[item.target.id] = item.value
    assert out, (relative, classes)
    return out


def _flags() -> dict[str, ast.expr | None]:
    fields = {**_dataclass_fields("vllm/engine/arg_utils.py", "EngineArgs"),
              **_dataclass_fields("vllm/entrypoints/launchers/cli_args.py", "BaseFrontendArgs", "FrontendArgs")}
    return {"--" + name.replace("_", "-"): default for name, default in fields.items()}


def _rendered_engine(**serve) -> dict:
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], pathwaysVersion=vllm.pathways_version(TAG), workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": "meta-llama/Llama-3.1-8B-Instruct", **serve}}])
    from infra.offline.render import manifests

    (lws_object,) = [o for o in manifests(plan_of(cfg)) if o["kind"] == "LeaderWorkerSet"]
    (engine,) = [c for c in lws_object["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"] if c["name"] == "vllm"]
    return engine


ENGINES = {
    "hugging-face": {},
    "gs-weights": {"weights": "gs://models/llama", "maxModelLen": 4096, "huggingFaceTokenSecret": "hf",
                   "extraArgs": ["--max-num-seqs=128"]},
}


def test_the_image_tag_is_the_vllm_tpu_release_and_its_tpu_inference_and_jax():
    version, requires = _metadata(f"vllm_tpu-{RELEASE.vllm}.dist-info")
    assert version == RELEASE.vllm and TAG == f"v{version}"
    assert f"tpu-inference=={RELEASE.tpu_inference}" in requires
    version, requires = _metadata(f"tpu_inference-{RELEASE.tpu_inference}.dist-info")
    assert version == RELEASE.tpu_inference
    # the Pathways server and proxy follow this JAX (serving_checks._engine_pathways_pair)
    assert f"jax=={RELEASE.jax}" in requires and vllm.pathways_version(TAG) == f"jax-{RELEASE.jax}"
    assert "pathwaysutils" in requires
    # gs:// weights stream through the Run:ai streamer's GCS backend, which the image carries
    assert any(r.startswith("runai-model-streamer[") and "gcs" in r.split("]")[0] for r in requires), requires


def test_tpu_inference_runs_on_pathways_as_the_stack_configures_it():
    init = _read("tpu_inference/__init__.py")
    assert 'if "proxy" in envs.JAX_PLATFORMS:' in init and "pathwaysutils.initialize()" in init
    platforms = re.search(r'"JAX_PLATFORMS":\s*env_with_choices\("JAX_PLATFORMS",\s*"",\s*\[([^\]]*)\]', _read("tpu_inference/envs.py"))
    assert platforms and '"proxy"' in platforms.group(1)
    # vLLM's own switch: Pathways when JAX_PLATFORMS names the proxy
    assert re.search(r'"VLLM_TPU_USING_PATHWAYS": lambda: bool\(\s*"proxy" in os\.getenv\("JAX_PLATFORMS", ""\)\.lower\(\)', _read("vllm/envs.py"))
    platform = _read("tpu_inference/platforms/tpu_platform.py")
    assert re.search(r"if vllm_envs\.VLLM_TPU_USING_PATHWAYS:\s*assert not vllm_envs\.VLLM_ENABLE_V1_MULTIPROCESSING", platform)
    # the stack's values satisfy those rules
    env = {e["name"]: e.get("value") for e in _rendered_engine()["env"]}
    assert env[vllm.ENV_PLATFORMS] == "proxy" and env[vllm.ENV_MULTIPROCESSING] == "0"


@pytest.mark.parametrize("variant", sorted(ENGINES))
def test_every_environment_variable_the_stack_sets_is_the_engines(variant):
    known = _env_names("vllm/envs.py") | _env_names("tpu_inference/envs.py")
    # JAX_BACKEND_TARGET is JAX's jax_backend_target (pathwaysutils' proxy backend reads it), HF_TOKEN huggingface_hub's:
    # names outside vLLM, used as on the JobSet path and in Hugging Face's docs
    outside = {vllm.ENV_BACKEND_TARGET, vllm.ENV_HF_TOKEN}
    names = [e["name"] for e in _rendered_engine(**ENGINES[variant])["env"]]
    assert [n for n in names if n not in known and n not in outside] == []


@pytest.mark.parametrize("variant", sorted(ENGINES))
def test_every_flag_the_stack_passes_is_a_vllm_serve_flag(variant):
    flags = _flags()
    engine = _rendered_engine(**ENGINES[variant])
    given = [a.split("=", 1)[0] for a in engine["args"] if a.startswith("--")]
    assert given and [f for f in given if f not in flags] == []
    # the flags the stack reserves for itself (serving_checks refuses them in extraArgs) exist too
    assert [f for f in (*vllm.STACK_FLAGS, vllm.FLAG_QUANTIZATION, vllm.FLAG_MAX_NUM_SEQS, vllm.FLAG_KV_CACHE_DTYPE)
            if f not in flags] == []
    # `vllm serve <model>`: the console script and the subcommand
    assert "vllm = vllm.entrypoints.cli.main:main" in _read(f"vllm_tpu-{RELEASE.vllm}.dist-info/entry_points.txt")
    assert engine["command"] == list(vllm.COMMAND) and 'name = "serve"' in _read("vllm/entrypoints/cli/serve.py")


def test_the_port_routes_load_format_and_metrics_are_the_engines():
    port = _flags()["--port"]
    assert isinstance(port, ast.Constant) and port.value == vllm.PORT
    routes = {vllm.HEALTH_PATH: "vllm/entrypoints/serve/instrumentator/health.py",
              vllm.COMPLETIONS_PATH: "vllm/entrypoints/openai/completion/api_router.py",
              vllm.CHAT_PATH: "vllm/entrypoints/openai/chat_completion/api_router.py",
              vllm.MODELS_PATH: "vllm/entrypoints/openai/models/api_router.py",
              vllm.METRICS_PATH: "vllm/entrypoints/serve/instrumentator/metrics.py"}
    for route, source in routes.items():
        assert f'"{route}"' in _read(source), route
    assert f'"{vllm.LOAD_FORMAT_STREAMER}"' in _read("vllm/model_executor/model_loader/__init__.py")
    loggers = _read("vllm/v1/metrics/loggers.py")
    for metric in (vllm.METRIC_WAITING, vllm.METRIC_RUNNING, vllm.METRIC_KV_CACHE):
        assert f'name="{metric}"' in loggers, metric
    # the probes and the Service use that port and route
    engine = _rendered_engine()
    assert engine["ports"] == [{"containerPort": vllm.PORT, "name": "http", "protocol": "TCP"}]
    assert engine["readinessProbe"]["httpGet"] == {"path": vllm.HEALTH_PATH, "port": vllm.PORT} and lws.SERVE_HTTP_PORT == vllm.PORT


def test_vllm_serve_cannot_reach_tpu_inferences_disaggregated_engine():
    """Why serve.disaggregated is refused with vllm: tpu-inference defines its disaggregated engine, but nothing
    outside core/core_tpu.py names it, so `vllm serve` runs the ordinary engine core whatever PREFILL_SLICES says.
    A pinned release that wires it fails here: then render PREFILL_SLICES / DECODE_SLICES and lift the refusal."""
    core = _read("tpu_inference/core/core_tpu.py")
    assert f"class {vllm.DISAGGREGATED_ENGINE}(" in core
    users = [p for p in SOURCES.rglob("*.py") if "/tests/" not in str(p) and p.name != "core_tpu.py"
             and re.search(rf"\b{vllm.DISAGGREGATED_ENGINE}\b|\bcore_tpu\b", p.read_text(errors="replace"))]
    assert users == [], users


def test_the_fp8_names_the_refusal_points_at_are_tpu_inferences():
    """serve.quantization with vllm names vLLM's FP8 flags (serving_checks): fp8 is a quantization tpu-inference
    supports and a KV-cache dtype it maps."""
    platform = _read("tpu_inference/platforms/tpu_platform.py")
    supported = re.search(r"supported_quantization: list\[str\] = \[([^\]]*)\]", platform)
    assert supported and f'"{vllm.QUANTIZATION_FP8}"' in supported.group(1)
    assert re.search(rf'^\s*"{vllm.QUANTIZATION_FP8}": jnp\.float8', _read("tpu_inference/utils.py"), re.M)


def test_the_quantizations_and_kv_cache_dtypes_the_plan_allows_are_the_pinned_engines():
    """serve.extraArgs' --quantization and --kv-cache-dtype are held to vllm.TPU_QUANTIZATION and TPU_KV_CACHE_DTYPES
    (#76.3): tpu-inference's supported list and the method it registers, vLLM's cache dtypes JAX can map."""
    platform = _read("tpu_inference/platforms/tpu_platform.py")
    supported = re.search(r"supported_quantization: list\[str\] = \[([^\]]*)\]", platform)
    assert supported
    registered = re.findall(r'^UNQUANTIZED = "([^"]+)"', _read("tpu_inference/layers/common/quant_methods.py"), re.M)
    assert set(vllm.TPU_QUANTIZATION) == set(re.findall(r'"([^"]+)"', supported.group(1))) | set(registered)
    methods = _read("vllm/model_executor/layers/quantization/__init__.py")
    literal = re.search(r"QuantizationMethods = Literal\[(.*?)\]", methods, re.S)
    assert literal and set(vllm.TPU_QUANTIZATION) - {"unquantized"} <= set(re.findall(r'"([^"]+)"', literal.group(1)))
    cache = re.search(r"CacheDType = Literal\[(.*?)\]", _read("vllm/config/cache.py"), re.S)
    assert cache and set(vllm.TPU_KV_CACHE_DTYPES) <= set(re.findall(r'"([^"]+)"', cache.group(1)))
    jax_table = re.search(r"_DTYPE_STR_ALIAS_TO_JAX_DTYPE = \{(.*?)\}", _read("tpu_inference/utils.py"), re.S)
    assert jax_table and {"fp8", "fp8_e4m3", "fp8_e5m2"} <= set(re.findall(r'"([^"]+)":', jax_table.group(1)))


def test_health_answers_only_once_the_engine_is_built():
    """The leader's probes have no fixed delay (components/manifests/lws.py _vllm_probes): they rely on `vllm serve`
    serving HTTP only after the engine client is built, on a socket only bound (not listening) before."""
    entry = _read("vllm/entrypoints/launchers/api_server/entry.py")
    worker = entry[entry.index("async def run_server_worker"):]
    assert worker.index("build_async_engine_client(") < worker.index("build_and_serve(")
    served = entry[entry.index("async def build_and_serve"):entry.index("async def run_server(")]
    assert "serve_http(" in served
    launcher = _read("vllm/entrypoints/launchers/launcher.py")
    create = launcher[launcher.index("def create_server_socket"):launcher.index("def setup_server")]
    assert "sock.bind(" in create and ".listen(" not in create


def test_the_kv_connector_moves_the_cache_over_a_pjrt_clients_transfer_server():
    """Why serve.disaggregated is refused with vllm on Pathways (vllm.py): TPUConnector's transfer server is started
    on the engine's device client, which is the IFRT proxy's on Pathways. A release that changes this fails here."""
    connector = _read("tpu_inference/distributed/tpu_connector.py")
    assert f"class {vllm.KV_CONNECTOR}(" in connector
    assert re.search(r"start_transfer_server\(\s*jax\.local_devices\(\)\[0\]\.client", connector)
    assert f'"{vllm.KV_CONNECTOR}"' in _read("tpu_inference/platforms/tpu_platform.py")


# --- the direct runtime and serve.split (components/manifests/lws_direct.py) -------------------------------------

def _split_engines() -> dict[str, dict]:
    """The vllm container of each role of a rendered split endpoint (serve.split on single-host v6e-8 slices)."""
    from infra.offline.render import manifests

    cfg = config_with(slices=[{"name": "serve", "tpu": "v6e-8", "count": 3}], workloads=[{
        "name": "chat", "mode": "serve", "sliceGroup": "serve", "serve": {
            "model": "Qwen/Qwen3-8B", "huggingFaceTokenSecret": "hf", "extraArgs": ["--block-size=256"],
            "split": {"prefill": {"replicas": 1}, "decode": {"replicas": 2, "extraArgs": ["--max-num-seqs=64"]}}}}])
    out = {}
    for o in manifests(plan_of(cfg)):
        if o["kind"] == "LeaderWorkerSet" and o["metadata"]["name"] in ("chat-prefill", "chat-decode"):
            (c,) = o["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"]
            out[o["metadata"]["name"].rsplit("-", 1)[1]] = c
    assert set(out) == {"prefill", "decode"}
    return out


def test_the_direct_runtime_uses_the_hosts_own_tpu_client():
    """JAX_PLATFORMS=tpu,cpu: values tpu-inference's table allows (a comma-separated list), and not Pathways' mode."""
    platforms = re.search(r'"JAX_PLATFORMS":\s*env_with_choices\("JAX_PLATFORMS",\s*"",\s*\[([^\]]*)\],\s*allow_csv=True\)',
                          _read("tpu_inference/envs.py"))
    assert platforms, "JAX_PLATFORMS no longer takes a comma-separated list of choices"
    choices = {c.strip().strip('"') for c in platforms.group(1).split(",")}
    assert set(vllm.DIRECT_PLATFORMS.split(",")) <= choices and "proxy" not in vllm.DIRECT_PLATFORMS


def test_every_flag_and_variable_a_split_endpoint_sets_is_the_engines():
    flags, known = _flags(), _env_names("vllm/envs.py") | _env_names("tpu_inference/envs.py")
    utils = _read("tpu_inference/distributed/utils.py")
    for role, engine in _split_engines().items():
        given = [a.split("=", 1)[0] for a in engine["args"] if a.startswith("--")]
        assert vllm.FLAG_KV_TRANSFER_CONFIG in given and [f for f in given if f not in flags] == [], role
        # the connector's ports are read by tpu-inference's distributed/utils.py, not its envs table; HF_TOKEN is
        # huggingface_hub's
        names = [e["name"] for e in engine["env"]]
        outside = {vllm.ENV_HF_TOKEN, vllm.ENV_KV_TRANSFER_PORT, vllm.ENV_SIDE_CHANNEL_PORT}
        assert [n for n in names if n not in known and n not in outside] == [], role
    # the ports the stack sets are the connector's defaults, read where the connector reads them
    assert f'os.getenv("{vllm.ENV_KV_TRANSFER_PORT}", "{vllm.KV_TRANSFER_PORT}")' in utils
    assert f'os.getenv("{vllm.ENV_SIDE_CHANNEL_PORT}", "{vllm.SIDE_CHANNEL_PORT}")' in utils
    # the address prefill tells decode to pull from: vLLM's get_ip(), which VLLM_HOST_IP sets
    assert "host_ip = envs.VLLM_HOST_IP" in _read("vllm/utils/network_utils.py") and vllm.ENV_HOST_IP in known


def test_the_kv_transfer_config_is_one_vllm_and_the_tpu_platform_take():
    import json

    fields = _dataclass_fields("vllm/config/kv_transfer.py", "KVTransferConfig")
    config = _read("vllm/config/kv_transfer.py")
    assert re.search(r'^KVProducer = Literal\["kv_producer", "kv_both"\]$', config, re.M)
    assert re.search(r'^KVConsumer = Literal\["kv_consumer", "kv_both"\]$', config, re.M)
    for role, engine in _split_engines().items():
        (arg,) = [a for a in engine["args"] if a.startswith(vllm.FLAG_KV_TRANSFER_CONFIG + "=")]
        given = json.loads(arg.split("=", 1)[1])
        assert set(given) <= set(fields), role  # vLLM's config classes refuse any other field
        assert given["kv_role"] == vllm.KV_ROLES[role] and given["kv_connector"] == vllm.KV_CONNECTOR
        # vLLM's registry does not know the connector: it imports the named module and takes the class from it
        module = given["kv_connector_module_path"].replace(".", "/") + ".py"
        assert f"class {given['kv_connector']}(" in _read(module)
    assert "kv_connector_module_path" in _read("vllm/distributed/kv_transfer/kv_connector/factory.py")
    # prefill produces, decode consumes: kv_both would count as a producer, and TPUConnector branches on that alone
    assert vllm.KV_ROLES == {"prefill": "kv_producer", "decode": "kv_consumer"}
    assert "self.is_producer = self.config.is_kv_producer" in _read("tpu_inference/distributed/tpu_connector.py")


def test_prefill_offers_its_cache_only_at_its_length_cap_and_decode_reads_what_it_answered():
    """What the proxy relies on (vllm.py PROXY_SCRIPT): one token from prefill, non-streaming, then decode."""
    connector = _read("tpu_inference/distributed/tpu_connector.py")
    assert "if request.status != RequestStatus.FINISHED_LENGTH_CAPPED:" in connector
    for name in ("remote_block_ids", "remote_host", "remote_port", "uuid"):
        assert f'params["{name}"]' in connector or f"{name}=" in connector, name
    # only the full (non-streaming) response carries them
    assert "kv_transfer_params" in _read("vllm/entrypoints/openai/completion/protocol.py")
    assert "kv_transfer_params=" in _read("vllm/entrypoints/openai/completion/serving.py")
