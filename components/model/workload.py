"""One Pathways workload: images, head and worker resources, options, and the formulas that derive from them."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from . import inference_gateway, machines, maxtext, quantity, vllm
from .common import (
    DEFAULT_USER_RESOURCES,
    INT32_MAX,
    JETSTREAM_ENGINE_RESOURCES,
    JETSTREAM_HTTP_RESOURCES,
    MAX_NODES_PER_POOL_ZONE,
    MAX_RESTARTS_BOUND,
    MAX_TPU_POOLS,
    PROXY_RESOURCES,
    RESOURCE_MANAGER_RESOURCES,
    UNLIMITED_RESTARTS_PER_HOST,
    VLLM_ENGINE_RESOURCES,
    _dns_label,
    _Model,
)
from .ports import HEAD_NODE_PORTS
from .storage import GCSFUSE_PREFETCH_REQUESTS, GCSFUSE_SIDECAR_REQUESTS, MAX_MOUNTS, Mount, check_mounts

# --- workloads -----------------------------------------------------------------------------

# What Pathways needs on its scratch bucket (PLATFORM-FACTS §1); buckets.update: it attaches lifecycle rules.
SCRATCH_PERMISSIONS = (
    "storage.buckets.get",
    "storage.buckets.update",
    "storage.objects.create",
    "storage.objects.get",
    "storage.objects.list",
)
# Restart defaults that fit production (README, "Restarts per mode"): a batch run resumes from its last
# checkpoint a few times before a person looks; an interactive endpoint keeps coming back.
DEFAULT_BATCH_MAX_RESTARTS = 3
DEFAULT_INTERACTIVE_MAX_RESTARTS = 20
# pathwaysutils 0.1.13 shared_pathways_service/deploy_pathways_service.py: --max_restarts default 30.
DEFAULT_SERVICE_MAX_RESTARTS = 30
PATHWAYS_REGISTRY = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways"
# Env the user container gets from the stack; a user value would duplicate or contradict it.
RESERVED_ENV = frozenset({
    "PATHWAYS_HEAD", "JAX_PLATFORMS", "JAX_BACKEND_TARGET", "DATA_LOADER_WORKERS", "ENABLE_PATHWAYS_PERSISTENCE",
    "PATHWAYS_PROFILING_AUTH_TOKEN", "PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS", "PROFILER_PORT", "PROFILE_TRACE_DIR",
})
_SIDECAR_TAG = re.compile(r":[0-9]{8}-python_([0-9.]+)-jax_([0-9.]+)(@sha256:[0-9a-f]{64})?\Z")
# An image reference as the registry API writes it (distribution/reference grammar, simplified):
# [host[:port]/]path[:tag][@sha256:<64 hex>], path components lowercase.
_IMAGE_REF = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


def is_pinned(image: str) -> bool:
    """A well-formed reference with a full @sha256 digest, or an explicit tag that is not `latest`."""
    if not _IMAGE_REF.fullmatch(image):
        return False
    if "@" in image:
        return True  # the grammar admits only @sha256:<64 hex>
    tag = image_tag(image)
    return tag is not None and tag != "latest"


def check_pinned_image(image: str) -> str:
    if len(image) > 512 or not _IMAGE_REF.fullmatch(image):
        raise ValueError(f"{image[:80]!r} is not an image reference; use [registry/]path:tag or path@sha256:<64 hex digits>")
    if not is_pinned(image):
        raise ValueError(f"{image!r} is not pinned; give an explicit tag (not latest) or a @sha256 digest")
    return image


class Profiling(_Model):
    port: int = Field(default=9999, ge=1024, le=65535, description="jax.profiler.start_server port on the user container.")

    @field_validator("port")
    @classmethod
    def _free(cls, v: int) -> int:
        # The head pod is hostNetwork: the port is the node's, beside the RM, the proxy and the kubelet.
        if v in HEAD_NODE_PORTS:
            raise ValueError(f"{v} is taken on the head node by {HEAD_NODE_PORTS[v]}; use another port, e.g. 9999")
        return v


# Where the worker and the colocated-Python sidecar share memory (manifests/jobset.py has the sources).
SIDECAR_SHM_DIR = "/tmp/shared-memory"


class ColocatedPython(_Model):
    image: str = Field(description="Sidecar image built from pathways-colocated-python/sidecar:<date>-python_<X>-jax_<Y>.")
    cpu: str = Field(default="4", description="Sidecar CPU request (taken from the worker's share of the TPU VM).")
    memory: str = Field(default="16Gi", description="Sidecar memory (request = limit; taken from the worker's share).")
    shm_size: str = Field(default="8Gi", description=(
        "Size of the memory-backed directory the worker and sidecar share for large transfers; "
        "it counts against the pod's memory."
    ))

    @field_validator("cpu", "memory", "shm_size", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        quantity.parse(v)
        return str(v)

    @field_validator("image")
    @classmethod
    def _image(cls, v: str) -> str:
        check_pinned_image(v)
        if not _SIDECAR_TAG.search(v):
            raise ValueError(f"{v!r} has no <date>-python_<X>-jax_<Y> tag; the sidecar's JAX must be known to match the client's")
        return v

    @property
    def jax_version(self) -> str:
        m = _SIDECAR_TAG.search(self.image)
        assert m is not None  # the validator refused any image without the tag
        return m.group(2)


# What a failure of a JobSet workload does (JobSet v0.12.0 failurePolicy, the Job's podFailurePolicy; the sources
# are in docs/resilience.md). Exit codes that mean the program cannot run at all, whatever the slices do: 2 (Python's
# and Unix's "command line syntax error": Python's docs, sys.exit; the interpreter's own exit when it cannot open
# the script), 126 and 127 (the shell: found but not executable, not found; Bash manual, "Exit Status"). Not 1:
# a Pathways program that lost a worker raises in JAX and exits 1 like any other exception, so exit 1 cannot say
# "the program is wrong" (why xpk applies its exit-code rules to ordinary jobs only: commands/workload.py,
# b/408465881).
DEFAULT_FAIL_ON_EXIT_CODES = (2, 126, 127)
# podFailurePolicy onExitCodes: 1..255 (0 is refused with operator In), at most 255 values (the Job API): the range
# and uniqueness checks below bound the list.
# JobSet v0.12.0's alpha restart strategy: refused, with the reason (OnFailure._strategy).
ALPHA_RESTART_STRATEGIES = ("InPlaceRestart",)


class OnFailure(_Model):
    """Failure rules: a disruption (preemption, eviction, node maintenance) restarts the JobSet without spending
    maxRestarts; an exit code listed here fails it at once; any other failure restarts it and spends one."""

    fail_on_exit_codes: Optional[list[int]] = Field(default=None, description=(
        "batch: exit codes of the program (the head's jax-program container) that fail the JobSet at once, no "
        "restart. Default [2, 126, 127]: usage error, not executable, not found. [] restarts on every exit."))
    restart_strategy: str = Field(default="Recreate", description=(
        "JobSet failurePolicy.restartStrategy: Recreate (each Job recreated as soon as its pods are gone) or "
        "BlockingRecreate (no new Job before every pod of the last attempt is gone)."))

    @field_validator("fail_on_exit_codes")
    @classmethod
    def _exit_codes(cls, v: Optional[list[int]]) -> Optional[list[int]]:
        if v is None:
            return v
        bad = [c for c in v if not 1 <= c <= 255]
        if bad:
            raise ValueError(f"{bad} are not failure exit codes; valid: 1 to 255 (0 is success)")
        if len(set(v)) != len(v):
            raise ValueError(f"{v} repeats a code; list each once")
        return sorted(v)

    @field_validator("restart_strategy")
    @classmethod
    def _strategy(cls, v: str) -> str:
        if v in ALPHA_RESTART_STRATEGIES:
            raise ValueError(
                f"{v!r} is alpha in JobSet v0.12.0 behind its controller's {v} feature gate, which the pinned chart "
                "cannot turn on (its controller args are fixed), so the JobSet webhook refuses it; and it restarts "
                "pods in place through an agent in each pod that Pathways images do not run; valid: Recreate, BlockingRecreate")
        if v not in ("Recreate", "BlockingRecreate"):
            raise ValueError(f"{v!r} is not a restart strategy; valid: Recreate, BlockingRecreate")
        return v


class Elastic(_Model):
    # --num_elastic_slices is how many slices the job may lose, not the total (xpk help, PathwaysJob
    # docs; Google's elastic MaxText example runs 1 of 3).
    max_missing_slices: int = Field(default=1, ge=1, le=MAX_TPU_POOLS, description="Slices the job may lose and keep running (--num_elastic_slices): 1 up to the workload's slices.")



# The Shared Pathways Service contract (pathwaysutils 0.1.13, experimental/shared_pathways_service):
# clients deploy a proxy Job (yamls/pw-proxy.yaml: hostNetwork, port 29000, limits 16 CPU / 100G,
# runAsUser 1000, no tolerations) with `kubectl apply` into their context's namespace, and read the
# service JobSet from namespace "default" (gke_utils.get_pathways_service_images).
CLIENT_PROXY_RESOURCES = ("16", "100G")
CLIENT_NAMESPACE = "default"
# What the client accepts as a service's TPU (validators._validate_tpu_supported; tpu_specs assumes 4
# chips per VM for every family, so a 1- or 8-chip VM miscounts the slice's workers).
CLIENT_INSTANCE_TYPE = re.compile(r"tpu(v5e|v5|v6e|7x):[0-9]+(x[0-9]+){1,2}")
CLIENT_CHIPS_PER_VM = 4


class ServiceClient(_Model):
    kind: Literal["Group", "User"] = Field(default="Group", description="RBAC subject kind.")
    name: str = Field(description="Google group or user email, e.g. pathways-users@example.com.")

    @field_validator("name")
    @classmethod
    def _email(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\.[A-Za-z]{2,24}", v):
            raise ValueError(f"{v[:80]!r} is not a Google account or group email")
        return v


class SharedService(_Model):
    namespace: str = Field(default=CLIENT_NAMESPACE, description=(
        "Namespace of the service JobSet and of the clients' proxy Jobs: 'default', the only one pathwaysutils' "
        "client reads the service from."
    ))
    max_clients: int = Field(default=4, ge=1, le=MAX_NODES_PER_POOL_ZONE, description=(
        "Concurrent client proxies: one proxy node each (a proxy takes host port 29000)."
    ))
    proxy_machine_type: str = Field(default="n2-standard-32", description="Proxy nodes; must hold a 16 CPU / 100G proxy.")
    clients: list[ServiceClient] = Field(default_factory=list, max_length=50, description="Who may connect (a Role in the namespace).")

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        return _dns_label(v, 63)


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
    to the pool (components/model/inference_gateway.py gives the sources)."""

    enabled: bool = Field(default=False, description="Front the endpoint with the GKE Inference Gateway (vllm only).")
    external: bool = Field(default=False, description=(
        "Opt-in: a regional external Application Load Balancer (gke-l7-regional-external-managed), reachable from "
        "the internet. Default: the internal one (gke-l7-rilb), reachable from the VPC only."))
    picker_resources: Optional[PickerResources] = Field(default=None, description=(
        "The endpoint picker's CPU and memory requests; default the chart's (4 CPU, 8Gi; limit 16Gi), sized by its "
        "maintainers for high request rates. It runs on the system pool, whose nodes must hold it."))

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


class ServeConfig(_Model):
    engine: Optional[Literal["vllm", "jetstream"]] = Field(default=None, description=(
        "vllm (default): vLLM TPU (tpu-inference) on Pathways, OpenAI-compatible API; jetstream: JetStream MaxText "
        "(archived by its maintainers on 2026-02-01), which the JetStream keys below configure."))
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
    hugging_face_token_secret: Optional[str] = Field(default=None, description=(
        "vllm: a Secret in the workload namespace whose HF_TOKEN key holds a Hugging Face token (gated models)."))
    vllm_image: str = Field(default=vllm.VLLM_IMAGE, description="vllm: the vLLM TPU image (pinned; its tpu-inference sets the Pathways JAX).")
    config_file: str = Field(default=maxtext.DEFAULT_CONFIG_FILE, description="jetstream: MaxText config file inside the JetStream image.")
    tokenizer: Optional[str] = Field(default=None, description=(
        "jetstream: MaxText tokenizer_path: a file in the JetStream image (e.g. assets/tokenizer_llama3.tiktoken) or a Hugging Face "
        "tokenizer id. Default: the one MaxText's own scripts pair with the model family (llama2, llama3, llama3.1, "
        "llama3.3, gemma, gemma2, gemma3, mistral-7b, mixtral); required for any other model."))
    tokenizer_type: Optional[maxtext.TokenizerType] = Field(default=None, description=(
        "jetstream: MaxText tokenizer_type; default: the family's (tiktoken for Llama 3), else sentencepiece."))
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
        for arg in v:
            if len(arg) > 1100 or not arg.isprintable():
                raise ValueError(f"{arg[:80]!r} is not an engine argument (printable, at most 1,100 characters)")
        return v

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
        return self.tokenizer, known[1] if known and known[0] == self.tokenizer else "sentencepiece"

    @property
    def min_replicas(self) -> int:
        return self.autoscale.min_replicas if self.autoscale else self.replicas

    @property
    def max_replicas(self) -> int:
        """The replicas the endpoint may run at most: what its slice group must hold."""
        return self.autoscale.max_replicas if self.autoscale else self.replicas

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


class Workload(_Model):
    """One Pathways workload: batch, interactive, a shared service (JobSets) or real-time serving (a LeaderWorkerSet)."""

    name: str = Field(description=(
        "Workload name (DNS-1123 label), unique in the stack: the JobSet's or LeaderWorkerSet's; at most 22 characters "
        "for a JobSet with the default subdomain (the coordinator label must stay within 63)."))
    mode: Literal["batch", "interactive", "service", "serve"] = Field(default="batch", description=(
        "batch: user container on the head; interactive: RM + proxy only; service: a Shared Pathways Service "
        "(RM-only head, long-lived workers; each client brings its own proxy); serve: real-time inference with "
        "vLLM (or JetStream) on a LeaderWorkerSet (serve.*)."
    ))
    state: Literal["running", "suspended", "finished"] = Field(default="running", description=(
        "running; suspended (its Kueue LocalQueue is held, stopPolicy HoldAndDrain: pods stop, the JobSet stays; "
        "without Kueue, JobSet spec.suspend; a serve workload scales to 0 replicas; resuming restarts from the last "
        "checkpoint); finished (batch only: the stack stops managing the run, so nothing re-runs it)."
    ))
    slice_group: Optional[str] = Field(default=None, description="Slice group it runs on; default: the only group.")
    slices: Optional[int] = Field(default=None, ge=1, le=MAX_TPU_POOLS, description=(
        "Slices used; default: all slices of the group (then a change of the group's count replaces the workload: "
        "pin it to keep the run going)."))
    image: Optional[str] = Field(default=None, description="User program image (batch only).")
    command: list[str] = Field(default_factory=list, description="User program command (batch only).")
    args: list[str] = Field(default_factory=list, description="User program args (batch only).")
    env: dict[str, str] = Field(default_factory=dict, description=(
        "Extra env for the user container (batch only; names the stack sets are reserved); secret values go to a "
        "Kubernetes Secret <workload>-env."))
    cpu: str = Field(default=DEFAULT_USER_RESOURCES[0], description="User container CPU (request = limit).")
    memory: str = Field(default=DEFAULT_USER_RESOURCES[1], description="User container memory (request = limit).")
    data_loader_workers: int = Field(default=4, ge=0, le=1024, description="Data-loader worker count, passed as DATA_LOADER_WORKERS (never os.cpu_count()).")
    shm_size: str = Field(default="16Gi", description="Size of the memory-backed /dev/shm; counts against memory.")
    persistence: bool = Field(default=False, description="ENABLE_PATHWAYS_PERSISTENCE=1 (Orbax through pathwaysutils).")
    profiling: Optional["Profiling"] = Field(default=None, description="Profiler server and trace upload.")
    xla_flags: list[str] = Field(default_factory=list, description="XLA flags for the IFRT proxy (each --xla_*).")
    hlo_dump: bool = Field(default=False, description="Dump HLO to gs://<artifacts>/<prefix>/<workload>/hlo/ through the proxy.")
    colocated_python: Optional["ColocatedPython"] = Field(default=None, description="Colocated-Python sidecar on the workers.")
    elastic: Optional["Elastic"] = Field(default=None, description="Elastic slices: the job survives losing slices.")
    on_failure: Optional[OnFailure] = Field(default=None, description=(
        "JobSet workloads: failure rules (onFailure: {} for the defaults). With them a disruption restarts without "
        "spending maxRestarts, failOnExitCodes fail at once, anything else restarts and spends one; without them "
        "every failure spends one. Opt-in because a JobSet's failurePolicy is immutable: turning it on replaces "
        "the workload's JobSet. docs/resilience.md."))
    priority: Optional[Literal["serving", "training", "interactive", "experiment"]] = Field(default=None, description=(
        "PriorityClass pathways-<priority> of its pods; default serving for serve, training for batch, interactive "
        "for interactive and service."
    ))
    max_restarts: Optional[int] = Field(default=None, ge=0, le=MAX_RESTARTS_BOUND, description=(
        "JobSet failurePolicy.maxRestarts: whole-JobSet restarts after a failure. Default 3 for batch (each resumes "
        "from the last checkpoint), 20 for interactive (the endpoint keeps coming back), 30 for service."
    ))
    worker_restarts_per_host: Optional[int] = Field(default=None, ge=1, le=UNLIMITED_RESTARTS_PER_HOST, description=(
        "Worker restarts allowed per TPU host (worker Job backoffLimit = hosts x this). Default: 4 for batch "
        "(a crash loop ends the run), unlimited otherwise (the endpoint keeps serving)."
    ))
    termination_grace_period_seconds: int = Field(default=30, ge=0, le=86400, description="Pod termination grace period (at most a day).")
    # Off by default: a JobSet deleted by its TTL is gone from the cluster but not from the stack, so
    # the next `pulumi up --refresh` would create it again and re-run the job.
    ttl_seconds_after_finished: Optional[int] = Field(default=None, ge=0, le=INT32_MAX, description=(
        "Delete a finished batch JobSet after this long. Off by default: pulumi up --refresh would re-create, i.e. "
        "re-run, a JobSet its TTL deleted."))
    mounts: list[Mount] = Field(default_factory=list, max_length=MAX_MOUNTS, description=(
        "batch: storage the program mounts: GCS buckets (Cloud Storage FUSE) and pathways:storage file systems "
        "(docs/storage.md)."))
    server_image: Optional[str] = Field(default=None, description="Override of the RM/worker image (default pathways/server:<pathwaysVersion>).")
    proxy_image: Optional[str] = Field(default=None, description="Override of the IFRT proxy image (default pathways/proxy_server:<pathwaysVersion>).")
    subdomain: Optional[str] = Field(default=None, description="JobSet network.subdomain (default: the name), to keep the coordinator label <= 63.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("cpu", "memory", "shm_size", mode="before")
    @classmethod
    def _quantity(cls, v: Any) -> str:
        quantity.parse(v)
        return str(v)

    @field_validator("env", mode="before")
    @classmethod
    def _env_text(cls, v: Any) -> Any:
        # YAML reads `STEPS: 100` or `DEBUG: true` as numbers and booleans; Kubernetes wants text.
        if isinstance(v, dict):
            return {k: (str(x).lower() if isinstance(x, bool) else str(x) if isinstance(x, (int, float)) else x) for k, x in v.items()}
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not re.fullmatch(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$", name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
            if name in RESERVED_ENV:
                raise ValueError(f"{name} is set by the stack (reserved: {', '.join(sorted(RESERVED_ENV))}); use the workload's own keys instead")
        return v

    @field_validator("xla_flags")
    @classmethod
    def _xla_flags(cls, v: list[str]) -> list[str]:
        for flag in v:
            if not re.fullmatch(r"^--xla_[a-z0-9_]+(=.*)?$", flag):
                raise ValueError(f"{flag!r} is not an XLA flag; each entry must look like --xla_<name>=<value>")
        return v

    @field_validator("mounts")
    @classmethod
    def _mounts(cls, v: list[Mount]) -> list[Mount]:
        return check_mounts(v)

    @field_validator("subdomain")
    @classmethod
    def _subdomain(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 63)

    @field_validator("server_image", "proxy_image")
    @classmethod
    def _pinned(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            check_pinned_image(v)
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            check_pinned_image(v)
        return v

    service: Optional["SharedService"] = Field(default=None, description="Shared Pathways Service settings (mode: service).")
    serve: Optional["ServeConfig"] = Field(default=None, description="Model serving settings (mode: serve).")

    @property
    def service_settings(self) -> SharedService:
        return self.service or SharedService()

    @property
    def restarts(self) -> int:
        if self.max_restarts is not None:
            return self.max_restarts
        # A LeaderWorkerSet has no restart budget: it recreates a group whose pod restarts, for as long as it runs.
        return {"batch": DEFAULT_BATCH_MAX_RESTARTS, "interactive": DEFAULT_INTERACTIVE_MAX_RESTARTS,
                "service": DEFAULT_SERVICE_MAX_RESTARTS, "serve": 0}[self.mode]

    @property
    def effective_priority(self) -> str:
        return self.priority or {"batch": "training", "serve": "serving"}.get(self.mode, "interactive")

    @property
    def on_head_pool(self) -> bool:
        """Its head pod runs on the head pool (a serve workload's leader runs on its own slice)."""
        return self.mode != "serve"

    @property
    def shm_bytes(self) -> Decimal:
        return quantity.parse(self.shm_size)

    def head_containers(self) -> list[tuple[str, str, str]]:
        """(container, cpu, memory) of the head pod (a serve workload's leader pod)."""
        out: list[tuple[str, str, str]] = [("resource manager", *RESOURCE_MANAGER_RESOURCES)]
        if self.mode == "serve" and self.serve is not None:
            sv = self.serve
            out.append(("IFRT proxy", sv.proxy_resources.cpu, sv.proxy_resources.memory))
            if sv.engine_name == "vllm":
                return [*out, ("vLLM engine", *sv.engine_container_resources)]
            return [*out, ("JetStream engine", *sv.engine_container_resources), ("JetStream HTTP", *JETSTREAM_HTTP_RESOURCES)]
        if self.mode != "service":  # a service's clients bring their own proxies
            out.append(("IFRT proxy", *PROXY_RESOURCES))
        if self.mode == "batch":
            out.append(("user container", self.cpu, self.memory))
            if any(m.bucket for m in self.mounts):
                out += [("GCS FUSE sidecar", *GCSFUSE_SIDECAR_REQUESTS), ("GCS FUSE metadata prefetch", *GCSFUSE_PREFETCH_REQUESTS)]
        return out



def image_tag(image: str) -> Optional[str]:
    """The tag of an image reference (also in name:tag@sha256:...), or None (digest only / no tag)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def derived_proxy_image(server_image: str) -> Optional[str]:
    """.../server:T -> .../proxy_server:T; None where no same-release proxy can be named (a digest
    names one image, and a path not ending in /server has no known proxy beside it)."""
    if "@" in server_image:
        return None
    name, _, tag = server_image.rpartition(":")
    if not tag or "/" in tag or not name.endswith("/server"):
        return None
    return f"{name[: -len('server')]}proxy_server:{tag}"


@dataclass(frozen=True)
class WorkerResources:
    """Requests of a worker pod's containers on one TPU VM (Burstable QoS; the TPU chips are limits)."""

    vm_cpu: Decimal  # allocatable
    vm_memory_gib: Decimal
    worker_cpu: int
    worker_memory_gib: int
    sidecar_cpu: Decimal = Decimal(0)
    sidecar_memory_gib: Decimal = Decimal(0)
    shm_gib: Decimal = Decimal(0)


def worker_resources(machine_type: str, sidecar: Optional["ColocatedPython"]) -> WorkerResources:
    """What the worker requests: the TPU VM's allocatable (GKE's reservations and DaemonSets taken
    off, machines.MachineShape), less the colocated sidecar's CPU and memory and the shared-memory
    directory, which is memory-backed and so counts against the pod's memory."""
    vm = machines.tpu_vm_shape(machine_type)
    cpu, mem = vm.allocatable_cpu, vm.allocatable_memory_gib
    if sidecar is None:
        return WorkerResources(cpu, mem, int(cpu), int(mem))
    s_cpu = quantity.parse(sidecar.cpu)
    s_mem = quantity.parse(sidecar.memory) / quantity.GIB
    shm = quantity.parse(sidecar.shm_size) / quantity.GIB
    return WorkerResources(cpu, mem, int(cpu - s_cpu), int(mem - s_mem - shm), s_cpu, s_mem, shm)


def serve_worker_request(machine_type: str) -> tuple[int, int]:
    """(vCPU, GiB) a serve worker requests: half of its TPU VM's allocatable, rounded down. The leader shares one
    VM of each replica with a worker and is Guaranteed; a worker with no request would be BestEffort, the first pod
    the kubelet evicts under memory pressure (and RecreateGroupOnPodRestart then recreates the whole replica). With
    half the VM requested, the worker is evicted only when it uses more than that, and serving_checks refuses a
    leader that leaves less. Half, not all the rest: a request near the VM's size leaves the pod Pending once GKE's
    reservations or DaemonSets grow (docs/workloads.md, Worker resources); the worker may still use the whole VM
    (no CPU or memory limit)."""
    vm = machines.tpu_vm_shape(machine_type)
    return int(vm.allocatable_cpu / 2), int(vm.allocatable_memory_gib / 2)


def head_pod_demand(w: Optional[Workload]) -> tuple[Decimal, Decimal, str]:
    """(vCPU, GiB, breakdown) of a workload's head pod; None means a default batch workload."""
    containers = (w or Workload(name="default", image="default:unused")).head_containers()
    cpu = sum((quantity.parse(c) for _, c, _ in containers), Decimal(0))
    mem = sum((quantity.parse(m) for _, _, m in containers), Decimal(0)) / quantity.GIB
    parts = " + ".join(f"{n} {c}/{m}" for n, c, m in containers)
    return cpu, mem, parts


MAX_LABEL_VALUE = 63


def coordinator_label(jobset: str, replicated_job: str, job_index: int, pod_index: int, subdomain: Optional[str]) -> str:
    """The label JobSet puts on every pod: <jobset>-<replicatedJob>-<job>-<pod>.<subdomain (default: jobset)>."""
    return f"{jobset}-{replicated_job}-{job_index}-{pod_index}.{subdomain or jobset}"


def serve_service_name(name: str) -> str:
    """A serve workload's ClusterIP Service (the HTTP front end): <name>-http, beside the headless Service
    LeaderWorkerSet names after the workload."""
    return f"{name}-http"


def serve_leader_address(name: str, namespace: str) -> str:
    """The first replica's leader, as LWS_LEADER_ADDRESS names it (<lws>-<group>.<lws>.<namespace>)."""
    return f"{name}-0.{name}.{namespace}"


def coordinator_address(name: str, subdomain: Optional[str]) -> str:
    """The coordinator label of a Pathways JobSet (head job, first pod)."""
    return coordinator_label(name, "pathways-head", 0, 0, subdomain)
