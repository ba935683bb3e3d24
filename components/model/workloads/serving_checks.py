"""Rules of a serve workload (mode: serve, a LeaderWorkerSet; its schema: ``serving.ServeConfig``), each with
its source. Registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

import ipaddress
import re

from components.model import quantity
from components.model.capacity import machines
from components.model.errors import Problem, config_key
from components.model.resolved import server_image
from components.model.stack import StackConfig
from components.model.workloads import maxtext, models, vllm
from components.model.workloads.images import image_tag
from components.model.workloads.serving import _MAXTEXT_KEY, JETSTREAM_IMAGE, JETSTREAM_PATHWAYS_VERSION, SERVE_KEYS, ServeConfig
from components.model.workloads.workload import MAX_LABEL_VALUE, Workload, head_pod_demand, serve_worker_request

# Keys a LeaderWorkerSet has no use for: they configure the JobSet path (its restart budget, elastic slices,
# the colocated sidecar, the head's user container). xlaFlags are not among them: they go to the leader's IFRT
# proxy, as Google's disaggregated serving manifest passes its XLA flags.
JOBSET_ONLY_KEYS = ("slices", "max_restarts", "worker_restarts_per_host", "elastic", "colocated_python", "subdomain",
                    "hlo_dump", "profiling", "persistence", "ttl_seconds_after_finished",
                    "data_loader_workers", "shm_size", "cpu", "memory")
# MaxText model names (MaxText/configs/models/<name>.yml): lowercase, e.g. llama3.1-8b, gemma2-9b.
_MAXTEXT_MODEL = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
# serve.* keys of one engine only.
JETSTREAM_KEYS = ("config_file", "tokenizer", "tokenizer_type", "per_device_batch_size", "max_prefill_predict_length",
                  "max_target_length", "parallelism", "quantization", "quantize_kvcache", "weight_dtype", "jetstream_image",
                  "http_image")
VLLM_KEYS = ("max_model_len", "hugging_face_token_secret", "vllm_image", "load_timeout_minutes")
# LWS names its leader StatefulSet <name> and each group's workers <name>-<group>; a StatefulSet's pods carry
# controller-revision-hash=<statefulset>-<10-character hash>, a label value of at most 63 characters.
MAX_LWS_STATEFULSET_NAME = MAX_LABEL_VALUE - 11


def serve(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """serve: is for mode: serve only, and a serve workload's LeaderWorkerSet must fit its slice group."""
    if w.mode != "serve":
        if w.serve is not None:
            return [Problem(config_key(("workloads", i, "serve")), "only for mode: serve; remove it or set mode: serve")]
        return []
    if w.serve is None:
        return [Problem(config_key(("workloads", i, "serve")), (
            "required for mode: serve (at least serve.model: a Hugging Face id for vLLM, the default engine)"
        ))]
    problems = []
    fields = type(w).model_fields
    for name in JOBSET_ONLY_KEYS:
        if name in w.model_fields_set:
            hint = ("a serve workload takes serve.replicas slices (two each when serve.disaggregated)"
                    if name == "slices" else "it configures the JobSet path, which a serve workload does not use")
            problems.append(Problem(config_key(("workloads", i, fields[name].alias or name)), f"not for mode: serve; {hint}: remove it"))
    sv = w.serve
    group = cfg.workload_group(w)
    wanted = sv.max_replicas * sv.slices_per_replica
    if wanted > group.count:
        each = "two slices (prefill and decode)" if sv.disaggregated else "one slice"
        key = ("workloads", i, "serve", "autoscale", "maxReplicas") if sv.autoscale else ("workloads", i, "serve", "replicas")
        problems.append(Problem(config_key(key), (
            f"{sv.max_replicas} replica(s) of {each} need {wanted} slices, but group {group.name!r} has {group.count}; "
            f"use at most {group.count // sv.slices_per_replica} replica(s) or raise that group's count"
        )))
    if sv.autoscale and "replicas" in sv.model_fields_set:
        problems.append(Problem(config_key(("workloads", i, "serve", "replicas")), (
            "not with serve.autoscale: the autoscaler sets the replicas between minReplicas and maxReplicas; remove it")))
    if sv.autoscale and sv.engine_name != "vllm":
        problems.append(Problem(config_key(("workloads", i, "serve", "autoscale")), (
            "only for engine: vllm (it scales on vLLM's queue or KV-cache metric); remove it")))
    if sv.autoscale and w.state == "suspended" and not cfg.kubernetes.kueue.enabled:
        problems.append(Problem(config_key(("workloads", i, "state")), (
            "suspended with serve.autoscale needs Kueue (kubernetes.kueue.enabled): its queue's HoldAndDrain stops the "
            "replicas while the autoscaler keeps its count; without Kueue remove autoscale to suspend (replicas: 0)")))
    longest = (f"{w.name}-prefill-{max(sv.split.prefill.replicas, sv.split.decode.replicas) - 1}" if sv.split is not None
               else f"{w.name}-{max(sv.max_replicas - 1, 0)}")
    if len(longest) > MAX_LWS_STATEFULSET_NAME:
        problems.append(Problem(config_key(("workloads", i, "name")), (
            f"the LeaderWorkerSet's worker StatefulSet {longest!r} would be {len(longest)} characters, over the "
            f"{MAX_LWS_STATEFULSET_NAME} a StatefulSet name may have (its pods' controller-revision-hash label adds 11); "
            "use a shorter name"
        )))
    if sv.direct or sv.split is not None:
        problems += _direct(cfg, i, w)
    else:
        problems += _leader_fits(cfg, i, w)
        problems += _engine_pathways_pair(cfg, i, w)
    if sv.load_balancer_source_ranges and not sv.internal_load_balancer:
        problems.append(Problem(config_key(("workloads", i, "serve", "loadBalancerSourceRanges")), (
            "only with serve.internalLoadBalancer: true (the ClusterIP Service has no load balancer to restrict); remove it")))
    elif sv.internal_load_balancer and not cfg.load_balancer_source_ranges(w):
        problems.append(Problem(config_key(("workloads", i, "serve", "loadBalancerSourceRanges")), (
            "required with serve.internalLoadBalancer on an existing network or cluster (the stack knows no client "
            "ranges there, and an unrestricted load balancer admits the whole VPC and its peers); list the clients' CIDRs")))
    problems += _engine_keys(i, sv)
    if sv.engine_name == "jetstream":
        problems += _jetstream(i, sv, group.tpu.chips, group.tpu.name)
    else:
        problems += _vllm(i, sv)
    if sv.gateway.enabled:
        problems += _gateway(cfg, i, w)
    if w.priority is not None and w.priority != "serving":
        problems.append(Problem(config_key(("workloads", i, "priority")), (
            f"{w.priority} would let training preempt a serving endpoint; a serve workload runs at serving (remove it)"
        )))
    return problems


# serve.* keys of the Pathways runtime only: the leader's IFRT proxy and its JAX.
PATHWAYS_RUNTIME_KEYS = ("proxy_resources",)
PATHWAYS_WORKLOAD_KEYS = ("server_image", "proxy_image", "xla_flags")


def _direct(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """serve.runtime: direct (and serve.split, which runs on it): vLLM on single-host slices, nothing of Pathways."""
    sv = w.serve
    assert sv is not None
    group = cfg.workload_group(w)
    key = ("workloads", i, "serve", "runtime" if sv.runtime is not None else "split")
    out: list[Problem] = []
    if sv.runtime == "pathways" and sv.split is not None:
        return [Problem(config_key(("workloads", i, "serve", "runtime")), (
            f"pathways cannot run serve.split: tpu-inference's {vllm.KV_CONNECTOR} moves the KV cache through a transfer "
            "server that takes a PjRt TPU client, and on Pathways the engine's client is the IFRT proxy's; use runtime: "
            "direct (or leave it out)"))]
    if sv.engine_name != "vllm":
        out.append(Problem(config_key(key), "only for engine: vllm (JetStream runs on Pathways); remove it or use engine: vllm"))
    if group.tpu.hosts != 1:
        out.append(Problem(config_key(key), (
            f"needs single-host slices, and group {group.name!r} is {group.tpu.name} ({group.tpu.hosts} hosts a slice): "
            "without Pathways one `vllm serve` drives only its own host's chips (tpu-inference's multi-host path needs Ray); "
            f"serve from a group of single-host slices (at most {group.tpu.chips_per_vm} chips, one {group.tpu.machine_type}) "
            "or use runtime: pathways")))
    fields = type(sv).model_fields
    for name in PATHWAYS_RUNTIME_KEYS:
        if name in sv.model_fields_set:
            out.append(Problem(config_key(("workloads", i, "serve", fields[name].alias or name)),
                               "configures the Pathways leader's IFRT proxy, which the direct runtime does not run; remove it"))
    wfields = type(w).model_fields
    for name in PATHWAYS_WORKLOAD_KEYS:
        if name in w.model_fields_set:
            out.append(Problem(config_key(("workloads", i, wfields[name].alias or name)), (
                "configures Pathways, which the direct runtime does not run (vLLM's own JAX drives the chips); remove it")))
    if sv.split is not None:
        out += _split(cfg, i, w)
    return out


def _split(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    sv = w.serve
    assert sv is not None and sv.split is not None
    key = ("workloads", i, "serve")
    out: list[Problem] = []
    if "replicas" in sv.model_fields_set:
        out.append(Problem(config_key((*key, "replicas")), (
            "not with serve.split: each role gives its own (split.prefill.replicas, split.decode.replicas); remove it")))
    if sv.autoscale is not None:
        out.append(Problem(config_key((*key, "autoscale")), (
            "not with serve.split yet: the autoscaler scales one LeaderWorkerSet, and a split endpoint has two whose ratio "
            "is the model's; set split.prefill.replicas and split.decode.replicas (scaling one leaves the other untouched)")))
    if sv.gateway.enabled:
        out.append(Problem(config_key((*key, "gateway", "enabled")), (
            "not with serve.split: the pinned endpoint picker (GAIE 1.5.0) picks one pod of one pool and knows no prefill "
            "and decode roles (llm-d's P/D scheduler does, and is not pinned here); the split endpoint's proxy routes "
            "instead (docs/serving.md): remove it")))
    for role in ("prefill", "decode"):
        for j, arg in enumerate(getattr(sv.split, role).extra_args):
            why = vllm.flag_problem(arg)
            if why:
                out.append(Problem(config_key((*key, "split", role, "extraArgs", j)), why))

    def flags(role: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for arg in (*sv.extra_args, *getattr(sv.split, role).extra_args):
            flag, _, value = arg.partition("=")
            if flag in vllm.SPLIT_EQUAL_FLAGS:
                found[flag] = value
        return found

    prefill, decode = flags("prefill"), flags("decode")
    for flag in vllm.SPLIT_EQUAL_FLAGS:
        if prefill.get(flag) != decode.get(flag):
            out.append(Problem(config_key((*key, "split", "decode", "extraArgs")), (
                f"{flag} is {prefill.get(flag) or 'the default'} on prefill and {decode.get(flag) or 'the default'} on decode: "
                f"decode pulls prefill's KV cache into its own layout ({vllm.KV_CONNECTOR}), which must be the same; give it "
                "once in serve.extraArgs, or equal in both roles")))
    # the proxy runs on the system pool (components/manifests/lws.py split_proxy)
    if cfg.cluster.existing is None:
        system = cfg.cluster.system_pool.machine_type
        node = machines.shape(system)
        res = sv.split.proxy_resources
        need_cpu, need_mem = quantity.parse(res.cpu), quantity.parse(res.memory) / quantity.GIB
        if not machines.fits(node, need_cpu, need_mem):
            out.append(Problem(config_key((*key, "split", "proxyResources")), (
                f"the proxy requests {res.cpu} CPU and {res.memory}, more than one {system} system-pool node holds "
                f"({node.allocatable_cpu:.2f} CPU, {node.allocatable_memory_gib:.1f} GiB allocatable); lower it or set "
                f"cluster.systemPool.machineType to {machines.smallest_fitting(need_cpu, need_mem, machines.SYSTEM_CANDIDATES)}")))
    return out


def _leader_fits(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """The leader runs on a TPU host beside a worker that requests half the VM (workload.serve_worker_request);
    machines.py: the VM's allocatable."""
    assert w.serve is not None
    group = cfg.workload_group(w)
    problems: list[Problem] = []
    vm = machines.tpu_vm_shape(group.tpu.machine_type)
    cpu, mem, parts = head_pod_demand(w)
    w_cpu, w_mem = serve_worker_request(group.tpu.machine_type)
    if not machines.fits(vm, cpu + w_cpu, mem + w_mem):
        room_cpu, room_mem = vm.allocatable_cpu - w_cpu, vm.allocatable_memory_gib - w_mem
        problems.append(Problem(config_key(("workloads", i, "sliceGroup")), (
            f"the serving leader ({cpu:g} vCPU, {mem:.1f} GiB: {parts}) leaves its worker less than half of a "
            f"{group.tpu.machine_type} ({vm.allocatable_cpu:.0f} vCPU, {vm.allocatable_memory_gib:.0f} GiB allocatable; the "
            f"worker requests {w_cpu} vCPU, {w_mem} GiB so that it is not evicted first); keep the leader within "
            f"{room_cpu:.0f} vCPU and {room_mem:.0f} GiB (serve.proxyResources, serve.engineResources) or serve from a "
            "slice group with larger TPU VMs"
        )))
    return problems


def _engine_pathways_pair(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """The Pathways server and proxy are the release the engine image's JAX needs (one JAX on both sides of the
    proxy): for vLLM, what its tpu-inference requires (vllm.py); for JetStream, what Google documents beside the
    image. An image of another repository is the user's to pair."""
    assert w.serve is not None
    sv = w.serve
    engine = sv.engine_image
    tag = image_tag(engine) or ""
    repository = engine.split("@")[0].rsplit(":", 1)[0]
    if sv.engine_name == "vllm":
        wanted = vllm.pathways_version(tag) if repository == vllm.VLLM_IMAGE_REPOSITORY else None
        source = f"its tpu-inference requires jax {wanted[len('jax-'):]}" if wanted else ""
    else:
        wanted = JETSTREAM_PATHWAYS_VERSION.get(tag) if repository == JETSTREAM_IMAGE.rsplit(":", 1)[0] else None
        source = "Google's pairing: the engine's JAX talks to the IFRT proxy"
    running = image_tag(server_image(cfg.pathways_version, w))
    if wanted is None or running == wanted:
        return []
    key = ("workloads", i, "serverImage") if w.server_image else ("pathwaysVersion",)
    return [Problem(config_key(key), (
        f"{running} for serve workload {w.name!r}, but its engine image {tag} runs on Pathways {wanted} ({source}); "
        f"use {wanted}, or give this workload serverImage .../pathways/server:{wanted} (its proxy follows) where other "
        f"workloads need {running}"
    ))]


def _engine_keys(i: int, sv: ServeConfig) -> list[Problem]:
    """Keys of the other engine are refused; JetStream's keys without serve.engine say that vllm is now the default
    (an existing JetStream stack must not switch engines silently)."""
    fields = type(sv).model_fields
    out = []
    if sv.engine_name == "vllm":
        for name in JETSTREAM_KEYS:
            if name in sv.model_fields_set:
                why = ("serve.engine is not set, and the default engine is vllm: set serve.engine: jetstream to keep "
                       "JetStream (archived by its maintainers on 2026-02-01), or remove it and configure vLLM"
                       if sv.engine is None else "a JetStream (MaxText) key, not for engine: vllm; remove it")
                if name in ("quantization", "quantize_kvcache") and sv.engine is not None:
                    why += (f" (vLLM's FP8 is serve.extraArgs: {vllm.FLAG_QUANTIZATION}={vllm.QUANTIZATION_FP8} for the "
                            f"weights, {vllm.FLAG_KV_CACHE_DTYPE}={vllm.QUANTIZATION_FP8} for the KV cache)")
                out.append(Problem(config_key(("workloads", i, "serve", fields[name].alias or name)), why))
    else:
        for name in VLLM_KEYS:
            if name in sv.model_fields_set:
                out.append(Problem(config_key(("workloads", i, "serve", fields[name].alias or name)),
                                   "a vLLM key, not for engine: jetstream; remove it"))
    return out


def _vllm(i: int, sv: ServeConfig) -> list[Problem]:
    out = []
    if sv.disaggregated:
        out.append(Problem(config_key(("workloads", i, "serve", "disaggregated")), (
            f"not with engine: vllm: tpu-inference {vllm.RELEASES[vllm.VLLM_IMAGE.rsplit(':', 1)[1]].tpu_inference}'s "
            f"disaggregated engine ({vllm.DISAGGREGATED_ENGINE}) is not reachable from `vllm serve`, and its prefill/decode "
            f"KV transfer ({vllm.KV_CONNECTOR}) needs a PjRt TPU client, which the engine does not have on Pathways (the "
            "IFRT proxy's); for prefill and decode on separate slices use serve.split: {prefill: {replicas: 1}, decode: "
            "{replicas: 1}} (vLLM on single-host slices, without Pathways: docs/serving.md)")))
    if not vllm.is_hugging_face_id(sv.model):
        out.append(Problem(config_key(("workloads", i, "serve", "model")), (
            f"{sv.model!r} is not a Hugging Face model id, which vLLM serves (e.g. meta-llama/Llama-3.1-8B-Instruct); "
            "a MaxText model name needs serve.engine: jetstream")))
    for j, arg in enumerate(sv.extra_args):
        why = vllm.flag_problem(arg)
        if why:
            out.append(Problem(config_key(("workloads", i, "serve", "extraArgs", j)), why))
    # vLLM reads the config of what it loads: the model from Hugging Face, or serve.weights, which is that model only
    # where it is a copy of its directory (gs://<bucket>/.../<org>/<name>); a fine-tune there may be longer
    loads_the_model = sv.weights is None or sv.weights.rstrip("/").lower().endswith("/" + sv.model.lower())
    limit = models.context(sv.model) if loads_the_model else None
    if sv.max_model_len is not None and limit is not None and sv.max_model_len > limit:
        out.append(Problem(config_key(("workloads", i, "serve", "maxModelLen")), (
            f"{sv.max_model_len} is above {sv.model}'s context ({limit} tokens, max_position_embeddings in its "
            f"config.json), which vLLM refuses at start; use at most {limit}, or leave it out for the model's own")))
    return out


def _jetstream(i: int, sv: ServeConfig, chips: int, tpu_name: str) -> list[Problem]:
    out = []
    if sv.weights is None:
        out.append(Problem(config_key(("workloads", i, "serve", "weights")), (
            "required for engine: jetstream: the gs:// MaxText checkpoint (load_parameters_path)")))
    if not _MAXTEXT_MODEL.fullmatch(sv.model):
        out.append(Problem(config_key(("workloads", i, "serve", "model")), (
            f"{sv.model!r} is not a MaxText model name (e.g. llama3.1-8b), which JetStream serves")))
    for j, arg in enumerate(sv.extra_args):
        key, sep, _ = arg.partition("=")
        if not sep or not _MAXTEXT_KEY.fullmatch(key):
            out.append(Problem(config_key(("workloads", i, "serve", "extraArgs", j)), f"{arg[:80]!r} is not a MaxText key=value argument"))
        elif key in SERVE_KEYS or key.startswith("ici_"):
            out.append(Problem(config_key(("workloads", i, "serve", "extraArgs", j)),
                               f"{key} is set by the stack from its own keys (serve.*); set it there instead"))
    out += _tokenizer(i, sv)
    if sv.tokenizer_args is None:
        out.append(Problem(config_key(("workloads", i, "serve", "tokenizer")), (
            f"required for model {sv.model!r}: the JetStream image has no tokenizer MaxText pairs with it (base.yml's "
            "default is Llama 2's, which decodes any other model into nonsense); set the model's tokenizer (a file in the "
            "image or a Hugging Face id) and serve.tokenizerType"
        )))
    mesh = maxtext.mesh_problem(sv.parallelism, chips, sv.config_file)
    if mesh:
        out.append(Problem(config_key(("workloads", i, "serve", "parallelism")), (
            f"{mesh}; each replica's engine spans one {tpu_name} slice ({chips} chips)"
        )))
    return out


def _tokenizer(i: int, sv: ServeConfig) -> list[Problem]:
    """An explicit tokenizer that is another family's file in the image, or whose type is not its file's format."""
    args = sv.tokenizer_args
    if args is None:
        return []
    path, kind = args
    own = maxtext.known_tokenizer(sv.model)
    families = maxtext.families_of(path)
    if sv.tokenizer is not None and families and (own is None or own[0] != maxtext.image_file(path)):
        return [Problem(config_key(("workloads", i, "serve", "tokenizer")), (
            f"{path} is the tokenizer of {', '.join(families)}, not of {sv.model}; "
            + (f"its own is {own[0]} (the default: leave serve.tokenizer out)" if own else
               "the image has none for it: name its Hugging Face tokenizer"
               ) + "; another family's vocabulary decodes into nonsense"))]
    expected = maxtext.tokenizer_format(path)
    if expected is not None and kind != expected:
        return [Problem(config_key(("workloads", i, "serve", "tokenizerType")), (
            f"{kind} does not read {path}, a {expected} tokenizer; set {expected} or leave serve.tokenizerType out"))]
    return []


# The chart names its picker <release truncated to 40>-epp (epplib _helpers.tpl gateway-api-inference-extension.name).
MAX_GATEWAY_RELEASE = 40


def _gateway(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """serve.gateway: what the inferencepool chart and GKE's Gateway need (components/model/workloads/inference_gateway.py)."""
    sv = w.serve
    assert sv is not None
    key = ("workloads", i, "serve", "gateway")
    out = []
    if sv.engine_name != "vllm":
        out.append(Problem(config_key((*key, "enabled")), (
            "only for engine: vllm; the endpoint picker of the pinned chart reads one of the model servers "
            "vllm, sglang, triton-tensorrt-llm, trtllm-serve (values.yaml modelServerType), not JetStream: remove it")))
    if len(w.name) > MAX_GATEWAY_RELEASE:
        out.append(Problem(config_key(("workloads", i, "name")), (
            f"{len(w.name)} characters; with serve.gateway at most {MAX_GATEWAY_RELEASE}: the chart cuts the pool's "
            "name to 40 characters in its endpoint picker's name, which the InferencePool then would not find")))
    if cfg.cluster.existing is None:
        # the picker runs on the system pool (components/manifests/inference_gateway.py)
        system = cfg.cluster.system_pool.machine_type
        node = machines.shape(system)
        cpu, memory, _ = sv.gateway.picker_requests
        need_cpu, need_mem = quantity.parse(cpu), quantity.parse(memory) / quantity.GIB
        if not machines.fits(node, need_cpu, need_mem):
            out.append(Problem(config_key((*key, "pickerResources")), (
                f"the endpoint picker requests {cpu} CPU and {memory} (the chart's sizing unless set here), more than one "
                f"{system} system-pool node holds ({node.allocatable_cpu:.2f} CPU, {node.allocatable_memory_gib:.1f} GiB "
                f"allocatable); set cluster.systemPool.machineType to {machines.smallest_fitting(need_cpu, need_mem, machines.SYSTEM_CANDIDATES)} "
                "or larger, or lower serve.gateway.pickerResources")))
    gw = sv.gateway
    if gw.client_ranges and cfg.cluster.existing is not None:
        out.append(Problem(config_key((*key, "clientRanges")), (
            "only on a cluster the stack makes: on a cluster made elsewhere the stack makes no GCP resource, so no Cloud "
            "Armor policy; protect the gateway there yourself")))
    elif gw.client_ranges and not gw.external:
        out.append(Problem(config_key((*key, "clientRanges")), (
            "only with external: true; the internal gateway is reachable from the VPC only (its firewall rules decide)")))
    elif gw.external and not gw.client_ranges and cfg.protected:
        out.append(Problem(config_key((*key, "clientRanges")), (
            "required in a protected stack with external: true: the gateway would publish an unauthenticated model "
            "endpoint to the internet (vLLM's HTTP API has no authentication of its own); list the clients' CIDR ranges "
            "(a Cloud Armor policy lets only those in), or use the internal gateway")))
    if cfg.creates_proxy_only_subnet and w is cfg.gateway_workloads[0]:
        proxy = ipaddress.ip_network(cfg.network.proxy_only_cidr)
        for name, cidr in cfg.network.named_ranges:
            if proxy.overlaps(ipaddress.ip_network(cidr)):
                out.append(Problem(config_key(("network", "proxyOnlyCidr")), (
                    f"{proxy} overlaps {name} {cidr}; the gateway's proxy-only subnet needs a range of its own (e.g. a /23)")))
    return out
