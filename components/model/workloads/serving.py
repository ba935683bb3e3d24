"""A real-time serving workload (mode: serve, a LeaderWorkerSet): its engine, model, replicas, autoscaling and
gateway (its rules: serving_checks.py; the shared parts of a workload: workload.py)."""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal, Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.model import quantity
from components.model.common import (
    JETSTREAM_ENGINE_RESOURCES,
    PROXY_RESOURCES,
    VLLM_ENGINE_RESOURCES,
    _dns_label,
    _Model,
    _network,
)
from components.model.workloads import inference_gateway, maxtext, vllm
from components.model.workloads.images import check_pinned_image, image_tag

# Real-time serving (Google, "Perform multihost inference using Pathways"; GKE tutorial "Serve an LLM using
# multi-host TPUs with JetStream and Pathways"): the JetStream MaxText engine and its HTTP front end beside
# the IFRT proxy and the resource manager in a LeaderWorkerSet's leader, Pathways workers on one slice.
# The images Google documents, pinned by tag (jetstream-pathways v0.2.0 carries the disaggregated server
# the docs name, ExperimentalMaxtextDisaggregatedServer_8, removed from MaxText on 2025-05-14).
JETSTREAM_IMAGE = "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-pathways:v0.2.0"
JETSTREAM_HTTP_IMAGE = "us-docker.pkg.dev/cloud-tpu-images/inference/jetstream-http:v0.2.3"
DISAGGREGATED_SERVER = "ExperimentalMaxtextDisaggregatedServer_8"
# The Pathways release Google runs beside each JetStream engine tag: the engine's JAX talks to the IFRT proxy, so
# the two must be one JAX (GKE tutorial "Serve an LLM using multi-host TPUs with JetStream and Pathways", updated
# 2026-04-10, = GoogleCloudPlatform/kubernetes-engine-samples ai-ml/llm-serving-tpus-jetstream/pathways/
# jetstream-pathways-llama-3-1-405b-4x4.yaml: server and proxy_server jax-0.5.3 beside jetstream-pathways:v0.2.0).
JETSTREAM_PATHWAYS_VERSION = {"v0.2.0": "jax-0.5.3"}
# MaxText keys the stack sets itself (a user's extraArgs may not repeat them).
SERVE_KEYS = frozenset({
    "model_name", "load_parameters_path", "max_prefill_predict_length", "max_target_length", "per_device_batch_size",
    "scan_layers", "weight_dtype", "enable_single_controller", "enable_model_warmup", "quantization",
    "quantize_kvcache", "inference_server", "tokenizer_path", "tokenizer_type",
})
_MAXTEXT_KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")
PARALLELISM_AXES = ("data", "fsdp", "fsdp_transpose", "sequence", "tensor", "tensor_transpose", "tensor_sequence",
                    "autoregressive", "expert", "pipeline")


class ContainerResources(_Model):
    """A serve leader container's CPU and memory (request = limit: the leader pod stays Guaranteed)."""

    cpu: str = Field(description="CPU (request = limit), e.g. 8.")
    memory: str = Field(description="Memory (request = limit), e.g. 32Gi.")

    @field_validator("cpu", "memory", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        quantity.parse(v)
        return str(v)


class ServeAutoscale(_Model):
    """A HorizontalPodAutoscaler on the LeaderWorkerSet's scale subresource, on a vLLM metric of the leaders
    (scraped by Managed Service for Prometheus, read through the Custom Metrics Stackdriver Adapter)."""

    min_replicas: int = Field(default=1, ge=1, le=100, description="Replicas kept running however idle (each holds its slices).")
    max_replicas: int = Field(ge=1, le=100, description="At most this many replicas; x slices per replica must fit the slice group.")
    metric: Literal["queue", "kvCache"] = Field(default="queue", description=(
        "queue: requests waiting per replica (vllm:num_requests_waiting); kvCache: the KV cache's use per replica, "
        "0 to 1 (vllm:kv_cache_usage_perc)."))
    target: float = Field(gt=0, le=100_000, description=(
        "The average per replica above which the autoscaler adds replicas: waiting requests for queue, a fraction "
        "(e.g. 0.8) for kvCache. Measure your model's latency under load to choose it."))

    @model_validator(mode="after")
    def _bounds(self) -> "ServeAutoscale":
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} exceeds maxReplicas {self.max_replicas}")
        if self.metric == "kvCache" and self.target > 1:
            raise ValueError(f"target {self.target:g} is not a KV-cache fraction (kvCache: above 0, at most 1, e.g. 0.8)")
        return self


class PickerResources(ContainerResources):
    """The endpoint picker container's requests; its memory limit is twice the request, the chart's own ratio."""

    cpu: str = Field(description="CPU request, e.g. 2.")
    memory: str = Field(description="Memory request, e.g. 4Gi (the limit is twice this).")


class ServeGateway(_Model):
    """GKE Inference Gateway: an InferencePool over the replicas' leaders, the pool's endpoint picker (which sends
    each request to the replica with the shortest queue and the most free KV cache), a GKE Gateway and an HTTPRoute
    to the pool (components/model/workloads/inference_gateway.py gives the sources)."""

    enabled: bool = Field(default=False, description="Front the endpoint with the GKE Inference Gateway (vllm only).")
    external: bool = Field(default=False, description=(
        "Opt-in: a regional external Application Load Balancer (gke-l7-regional-external-managed), reachable from "
        "the internet. Default: the internal one (gke-l7-rilb), reachable from the VPC only."))
    client_ranges: list[str] = Field(default_factory=list, max_length=50, description=(
        "With external: the client CIDR ranges the gateway answers; the stack makes a Cloud Armor regional security policy "
        "that allows these and denies everything else (403), set as the pool's backend policy. Required in a protected "
        "stack: vLLM's HTTP API has no authentication of its own (docs/serving.md)."))
    picker_resources: Optional[PickerResources] = Field(default=None, description=(
        "The endpoint picker's CPU and memory requests; default the chart's (4 CPU, 8Gi; limit 16Gi), sized by its "
        "maintainers for high request rates. It runs on the system pool, whose nodes must hold it."))

    @field_validator("client_ranges")
    @classmethod
    def _client_ranges(cls, v: list[str]) -> list[str]:
        for cidr in v:
            if _network(cidr).prefixlen == 0:
                raise ValueError(f"{cidr} is the whole internet, which Cloud Armor would let through; list the clients' ranges")
        if len(set(v)) != len(v):
            raise ValueError("names a range twice; list each once")
        return v

    @property
    def access(self) -> inference_gateway.GatewayAccess:
        return "external" if self.external else "internal"

    @property
    def picker_requests(self) -> tuple[str, str, str]:
        """(cpu, memory, memory limit) of the endpoint picker."""
        if self.picker_resources is None:
            return inference_gateway.PICKER_CPU, inference_gateway.PICKER_MEMORY, inference_gateway.PICKER_MEMORY_LIMIT
        limit = quantity.parse(self.picker_resources.memory) * 2
        mib = limit / 2**20
        text = quantity.canonical(f"{int(mib)}Mi") if mib == mib.to_integral_value() else str(int(limit))
        return self.picker_resources.cpu, self.picker_resources.memory, text


def _engine_arguments(v: list[str]) -> list[str]:
    for arg in v:
        if len(arg) > 1100 or not arg.isprintable():
            raise ValueError(f"{arg[:80]!r} is not an engine argument (printable, at most 1,100 characters)")
    return v


class SplitRole(_Model):
    """One role of a split endpoint: its replicas (each a single-host slice of the workload's group) and flags."""

    replicas: int = Field(default=1, ge=1, le=100, description="Replicas of this role, each one `vllm serve` on a single-host slice of its own.")
    extra_args: list[str] = Field(default_factory=list, max_length=50, description=(
        "`vllm serve` flags for this role only (--name=value), after serve.extraArgs; the flags that must be equal on "
        "both roles (vllm.SPLIT_EQUAL_FLAGS: --block-size, --kv-cache-dtype, ...) are checked equal."))

    @field_validator("extra_args")
    @classmethod
    def _extra(cls, v: list[str]) -> list[str]:
        return _engine_arguments(v)


class ServeSplit(_Model):
    """Split prefill/decode on the direct runtime (vllm.py: tpu-inference's TPUConnector over the data-centre network):
    prefill engines (kv_producer) and decode engines (kv_consumer), and the proxy that sends each request to a prefill
    engine (one token) and then, with the KV cache's address prefill answered, to a decode engine."""

    prefill: SplitRole = Field(default_factory=SplitRole, description="The prefill engines (kv_role kv_producer).")
    decode: SplitRole = Field(default_factory=SplitRole, description="The decode engines (kv_role kv_consumer).")
    proxy_resources: ContainerResources = Field(
        default_factory=lambda: ContainerResources(cpu="2", memory="4Gi"), description=(
            "The proxy's CPU and memory (request = limit); it runs on the system pool, whose nodes must hold it."))
    proxy_replicas: int = Field(default=2, ge=1, le=20, description="Proxy replicas behind the endpoint's Service.")


class ServeConfig(_Model):
    engine: Optional[Literal["vllm", "jetstream"]] = Field(default=None, description=(
        "vllm (default): vLLM TPU (tpu-inference) on Pathways, OpenAI-compatible API; jetstream: JetStream MaxText "
        "(archived by its maintainers on 2026-02-01), which the JetStream keys below configure."))
    runtime: Optional[Literal["pathways", "direct"]] = Field(default=None, description=(
        "pathways (default): the engine is a JAX client of a Pathways IFRT proxy on the replica's leader; direct: vLLM "
        "TPU runs on the TPU host itself (JAX_PLATFORMS=tpu,cpu, as tpu-inference's own GKE manifests run it), no "
        "Pathways, single-host slices only (vllm only). serve.split implies direct."))
    replicas: int = Field(default=1, ge=1, le=100, description="Model replicas: one LeaderWorkerSet group each, on its own slice (two when disaggregated).")
    model: str = Field(description=(
        "vllm: the Hugging Face model id (e.g. meta-llama/Llama-3.1-8B-Instruct), the name clients ask for; "
        "jetstream: the MaxText model_name (e.g. llama3.1-8b)."))
    weights: Optional[str] = Field(default=None, description=(
        "gs:// location of the weights; the nodes get read access to that bucket only. vllm: a Hugging Face-format "
        "directory (config, tokenizer, safetensors) streamed with runai_streamer; absent: downloaded from Hugging Face. "
        "jetstream (required): the MaxText checkpoint (load_parameters_path)."))
    max_model_len: Optional[int] = Field(default=None, ge=16, le=10_485_760, description=(
        "vllm: --max-model-len (prompt + generated tokens); default: the model's own."))
    load_timeout_minutes: int = Field(default=180, ge=5, le=1440, description=(
        "vllm: how long the engine may take to load and compile the model: its startup probe (on /health, which answers "
        "only once the model is loaded) tries every 10 s for this long, then the container restarts. A leader is ready "
        "within seconds of its engine answering."))
    hugging_face_token_secret: Optional[str] = Field(default=None, description=(
        "vllm: a Secret in the workload namespace whose HF_TOKEN key holds a Hugging Face token (gated models)."))
    vllm_image: str = Field(default=vllm.VLLM_IMAGE, description="vllm: the vLLM TPU image (pinned; its tpu-inference sets the Pathways JAX).")
    config_file: str = Field(default=maxtext.DEFAULT_CONFIG_FILE, description="jetstream: MaxText config file inside the JetStream image.")
    tokenizer: Optional[str] = Field(default=None, description=(
        "jetstream: MaxText tokenizer_path: a file in the JetStream image (e.g. assets/tokenizer_llama3.tiktoken) or a Hugging Face "
        "tokenizer id. Default: the one MaxText's own scripts pair with the model family (llama2, llama3, llama3.1, "
        "llama3.3, gemma, gemma2, gemma3, mistral-7b, mixtral); required for any other model."))
    tokenizer_type: Optional[maxtext.TokenizerType] = Field(default=None, description=(
        "jetstream: MaxText tokenizer_type; default: the tokenizer's own (tiktoken for a .tiktoken file, huggingface for "
        "a Hugging Face id, the family's for a file of the image), else sentencepiece."))
    per_device_batch_size: float = Field(default=1, gt=0, le=1024, description="jetstream: MaxText per_device_batch_size.")
    max_prefill_predict_length: int = Field(default=1024, ge=1, le=1_048_576, description="jetstream: MaxText max_prefill_predict_length (prompt tokens).")
    max_target_length: int = Field(default=2048, ge=2, le=1_048_576, description="jetstream: MaxText max_target_length (prompt + generated tokens).")
    parallelism: dict[str, int] = Field(default_factory=dict, max_length=len(PARALLELISM_AXES), description=(
        "jetstream: MaxText ici_<axis>_parallelism by axis, e.g. {tensor: 8}; axes: " + ", ".join(PARALLELISM_AXES) + "."
    ))
    quantization: Optional[Literal["int8", "int4", "fp8", "int8w", "int4w"]] = Field(default=None, description="jetstream: MaxText quantization.")
    quantize_kvcache: bool = Field(default=False, description="jetstream: MaxText quantize_kvcache.")
    weight_dtype: Literal["bfloat16", "float32"] = Field(default="bfloat16", description="jetstream: MaxText weight_dtype.")
    extra_args: list[str] = Field(default_factory=list, max_length=50, description=(
        "More engine arguments: vllm serve flags (--name=value) for vllm, MaxText key=value for jetstream."))
    disaggregated: bool = Field(default=False, description=(
        "jetstream: prefill and decode on separate slices (two slices a replica), Google's disaggregated MaxText server. "
        "Not with vllm: `vllm serve` of the pinned tpu-inference cannot run its disaggregated engine."
    ))
    split: Optional[ServeSplit] = Field(default=None, description=(
        "vllm, direct runtime: split prefill/decode (P/D disaggregation): serve.split.prefill.replicas prefill engines and "
        "serve.split.decode.replicas decode engines, each on a single-host slice, joined by tpu-inference's TPUConnector, "
        "behind a proxy (replaces serve.replicas; docs/serving.md)."))
    jetstream_image: str = Field(default=JETSTREAM_IMAGE, description="jetstream: JetStream MaxText engine image (pinned).")
    http_image: str = Field(default=JETSTREAM_HTTP_IMAGE, description="jetstream: JetStream HTTP front end image (pinned).")
    engine_resources: Optional[ContainerResources] = Field(default=None, description=(
        "The engine container's CPU and memory on the leader (request = limit). Google's manifests set none; the "
        "defaults are this project's (vllm 16 / 64Gi: the engine process streams the weights to the TPUs through the "
        "proxy; jetstream 8 / 32Gi): raise the memory for a larger model."))
    proxy_resources: ContainerResources = Field(
        default_factory=lambda: ContainerResources(cpu=PROXY_RESOURCES[0], memory=PROXY_RESOURCES[1]),
        description=("The leader's IFRT proxy CPU and memory (request = limit); the default is the JobSet head's. Lower "
                     "it where the leader must leave a worker half of a small TPU VM (v5e: 192 GB)."))
    autoscale: Optional[ServeAutoscale] = Field(default=None, description=(
        "vllm: scale the replicas between minReplicas and maxReplicas on a vLLM metric (replaces serve.replicas)."))
    gateway: ServeGateway = Field(default_factory=ServeGateway, description=(
        "vllm: the GKE Inference Gateway in front of the replicas (gateway.enabled), internal by default."))
    internal_load_balancer: bool = Field(default=False, description=(
        "Also expose port 8000 to the VPC through a GKE internal passthrough load balancer (never a public one)."
    ))
    load_balancer_source_ranges: list[str] = Field(default_factory=list, max_length=20, description=(
        "Client ranges (CIDRs) the internal load balancer admits (its Service's loadBalancerSourceRanges). Default: the "
        "created subnet's node and pod ranges; required on an existing network or cluster."))

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        # the engine's own form (a MaxText name or a Hugging Face id) is serving_checks' to judge, with its key
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?", v):
            raise ValueError(f"{v[:80]!r} is not a model name (a Hugging Face id such as meta-llama/Llama-3.1-8B-Instruct, "
                             "or a MaxText name such as llama3.1-8b with engine: jetstream)")
        return v

    @field_validator("hugging_face_token_secret")
    @classmethod
    def _secret(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 253)

    @field_validator("weights")
    @classmethod
    def _weights(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not re.fullmatch(r"gs://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9](/[^\s]{0,1000})?", v):
            raise ValueError(f"{v[:80]!r} is not a gs://<bucket>/<path> location")
        return v

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and (not re.fullmatch(r"[A-Za-z0-9_./-]{1,300}", v) or ".." in v.split("/")):
            raise ValueError(f"{v[:80]!r} is not a tokenizer path in the image or a Hugging Face id (e.g. assets/tokenizer.gemma)")
        return v

    @field_validator("load_balancer_source_ranges")
    @classmethod
    def _source_ranges(cls, v: list[str]) -> list[str]:
        for cidr in v:
            try:
                net = ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                raise ValueError(f"{cidr[:60]!r} is not a CIDR range (e.g. 10.20.0.0/16)") from None
            if net.prefixlen == 0:
                raise ValueError(f"{cidr} is every address; list the ranges of the clients that call the endpoint")
        return v

    @field_validator("config_file")
    @classmethod
    def _config_file(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_./-]{1,300}\.ya?ml", v) or ".." in v.split("/"):
            raise ValueError(f"{v[:80]!r} is not a MaxText config file path (e.g. MaxText/configs/base.yml)")
        return v

    @field_validator("parallelism")
    @classmethod
    def _parallelism(cls, v: dict[str, int]) -> dict[str, int]:
        for axis, n in v.items():
            if axis not in PARALLELISM_AXES:
                raise ValueError(f"{axis[:40]!r} is not a MaxText parallelism axis; valid: {', '.join(PARALLELISM_AXES)}")
            if not isinstance(n, int) or not 1 <= n <= 65536 and n != -1:
                raise ValueError(f"{axis}: {n!r} is not a parallelism (a positive integer, or -1 for the rest)")
        return v

    @field_validator("extra_args")
    @classmethod
    def _extra(cls, v: list[str]) -> list[str]:
        # the form (a vllm flag or a MaxText key=value) depends on the engine: serving_checks._vllm and _jetstream
        return _engine_arguments(v)

    @field_validator("jetstream_image", "http_image", "vllm_image")
    @classmethod
    def _pinned(cls, v: str) -> str:
        return check_pinned_image(v)

    @model_validator(mode="after")
    def _lengths(self) -> "ServeConfig":
        if self.engine_name != "jetstream":
            return self
        if self.max_target_length <= self.max_prefill_predict_length:
            raise ValueError(f"maxTargetLength {self.max_target_length} must exceed maxPrefillPredictLength "
                             f"{self.max_prefill_predict_length} (it counts the prompt and the generated tokens)")
        if self.disaggregated and image_tag(self.jetstream_image) != image_tag(JETSTREAM_IMAGE) and \
                not any(a.startswith("inference_server=") for a in self.extra_args):
            raise ValueError(f"disaggregated serving names {DISAGGREGATED_SERVER}, which only the {image_tag(JETSTREAM_IMAGE)} "
                             "JetStream image has; with another image give its disaggregated server in extraArgs "
                             "(inference_server=...)")
        return self

    @property
    def tokenizer_args(self) -> Optional[tuple[str, maxtext.TokenizerType]]:
        """(tokenizer_path, tokenizer_type) the engine gets: the stack's own, else the model family's; None when
        neither is known (serving_checks refuses that)."""
        known = maxtext.known_tokenizer(self.model)
        if self.tokenizer is None:
            return (known[0], self.tokenizer_type or known[1]) if known else None
        if self.tokenizer_type is not None:
            return self.tokenizer, self.tokenizer_type
        return self.tokenizer, maxtext.tokenizer_format(self.tokenizer) or "sentencepiece"

    @property
    def min_replicas(self) -> int:
        if self.split is not None:
            return self.split.prefill.replicas + self.split.decode.replicas
        return self.autoscale.min_replicas if self.autoscale else self.replicas

    @property
    def max_replicas(self) -> int:
        """The replicas the endpoint may run at most: what its slice group must hold (a split endpoint's: both roles')."""
        if self.split is not None:
            return self.split.prefill.replicas + self.split.decode.replicas
        return self.autoscale.max_replicas if self.autoscale else self.replicas

    @property
    def runtime_name(self) -> Literal["pathways", "direct"]:
        """direct where set or where the endpoint is split (TPUConnector needs a PjRt client: vllm.py), else pathways."""
        if self.runtime is not None:
            return self.runtime
        return "direct" if self.split is not None else "pathways"

    @property
    def direct(self) -> bool:
        return self.runtime_name == "direct"

    @property
    def runtime_because(self) -> str:
        """Why the endpoint runs on its runtime, for the plan."""
        if self.split is not None:
            return (f"split prefill/decode: tpu-inference's {vllm.KV_CONNECTOR} needs the host's own PjRt TPU client, "
                    "which an engine on Pathways (a client of the IFRT proxy) does not have")
        if self.runtime == "direct":
            return "serve.runtime: direct: vLLM on each single-host slice's TPU VM, no Pathways head"
        if self.engine_name == "jetstream":
            return "JetStream runs on Pathways"
        return ("the default: vLLM as a client of a Pathways IFRT proxy on each replica's leader (serve.runtime: direct "
                "runs it on single-host slices without Pathways)")

    @property
    def engine_name(self) -> Literal["vllm", "jetstream"]:
        """The engine: vllm unless serve.engine says jetstream (serving_checks refuses JetStream keys without it)."""
        return self.engine or "vllm"

    @property
    def weights_bucket(self) -> Optional[str]:
        return self.weights[len("gs://"):].split("/", 1)[0] if self.weights else None

    @property
    def engine_image(self) -> str:
        return self.vllm_image if self.engine_name == "vllm" else self.jetstream_image

    @property
    def engine_container_resources(self) -> tuple[str, str]:
        if self.engine_resources is not None:
            return self.engine_resources.cpu, self.engine_resources.memory
        return VLLM_ENGINE_RESOURCES if self.engine_name == "vllm" else JETSTREAM_ENGINE_RESOURCES

    @property
    def slices_per_replica(self) -> int:
        return 2 if self.disaggregated else 1


def jetstream_notice(name: str, sv: ServeConfig) -> str:
    """The plan's notice for a JetStream endpoint (archived upstream on 2026-02-01): it keeps working as it is, and
    this is its vLLM equivalent (docs/serving.md, "Moving from JetStream")."""
    shape = ("serve.split: {prefill: {replicas: 1}, decode: {replicas: 1}} on a group of single-host slices (prefill "
             "and decode apart, as disaggregated: true has them)" if sv.disaggregated else
             "serve.replicas as now (one slice each, on Pathways), or serve.runtime: direct on single-host slices")
    return (f"serve workload {name} runs JetStream, which its maintainers archived on 2026-02-01 (its core moved to "
            "tpu-inference, vLLM's TPU backend): no fixes will come, and it keeps running as it is. Its vLLM equivalent: "
            f"serve.engine: vllm, serve.model: the Hugging Face id of {sv.model} (e.g. meta-llama/Llama-3.1-8B-Instruct "
            "for llama3.1-8b), serve.weights: a Hugging Face-format copy (not the MaxText checkpoint), "
            f"{shape}; `make diff` shows what the switch recreates (docs/serving.md, Moving from JetStream)")
