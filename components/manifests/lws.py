"""Real-time serving manifests (pure Python): a LeaderWorkerSet and its HTTP Service per serve workload.

Two engines. vLLM TPU (the default; components/model/workloads/vllm.py): the leader runs the IFRT proxy, the resource
manager and `vllm serve` as a JAX client of the proxy (JAX_PLATFORMS=proxy), which serves the OpenAI-compatible
API on port 8000 itself. JetStream (archived by its maintainers) in Google's documented shape below.

Google's documented shape (PLATFORM-FACTS §7: "Perform multihost inference using Pathways", the GKE
tutorial "Serve an LLM using multi-host TPUs with JetStream and Pathways"): each LWS group is one model
replica on its own slice (two with disaggregated serving). The leader runs the IFRT proxy, the resource
manager, the JetStream MaxText engine (`jax-tpu`) and its HTTP front end; the workers are Pathways
workers, one per TPU host. The pods use the pod network and LWS's own addresses: its pod webhook puts
LWS_LEADER_ADDRESS (<lws>-<group>.<lws>.<namespace>) first in every container's env.

Where this project deliberately differs from Google's example (README, "Serving a model"):
- images pinned: the Pathways server and proxy at the stack's jax-<version>, JetStream at its documented
  tags; the scratch location is the stack's own bucket;
- the leader's containers request CPU and memory (requests = limits, Guaranteed), the workers their chips and
  half their VM (Burstable, no CPU or memory limit), and a leader that leaves a worker less is refused: neither
  is the kubelet's first eviction on the host they share (Google's manifests request the chips only);
- every container drops its capabilities except what the root worker needs (as on the JobSet path), with the
  runtime's seccomp profile; no service account token is mounted;
- the workload's PriorityClass (pathways-serving), its Kueue queue, and a nodeSelector on the slice group, so
  a replica never lands on another workload's slices;
- `startupPolicy: LeaderCreated` and `restartPolicy: RecreateGroupOnPodRestart` are written out, not left to
  the CRD's defaults, so a diff shows them.
"""

from __future__ import annotations

import math
from typing import Any

from components.constants import (
    LWS_NAME_LABEL,
    LWS_WORKER_INDEX_LABEL,
    NODE_POOL_LABEL,
    SPOT_LABEL,
)
from components.manifests import placement
from components.manifests.jobset import (
    DROP_ALL,
    POD_ANNOTATIONS,
    POD_SECURITY,
    ROOTLESS,
    TPU_RESOURCE,
    WORKER_SECURITY,
    WORKLOAD_LABEL,
    guaranteed_resources,
    workload_metadata,
)
from components.model.capacity.pools import Capacity
from components.model.common import JETSTREAM_HTTP_RESOURCES, RESOURCE_MANAGER_RESOURCES
from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.workloads import vllm
from components.model.workloads.ports import SERVE_GRPC_PORT, SERVE_HTTP_PORT, SERVE_PROXY_PORT, SERVE_RM_PORT, SERVE_WORKER_PORT
from components.model.workloads.serving import DISAGGREGATED_SERVER
from components.model.workloads.workload import serve_service_name, serve_worker_request

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/exclusive-topology"
SUBGROUP_EXCLUSIVE_TOPOLOGY = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
NODEPOOL_LABEL = NODE_POOL_LABEL
LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
# jetstream-http's /healthcheck asks the engine's gRPC HealthCheck (127.0.0.1:9000). Loading a 405B
# model took 7-20 minutes in Google's runs: the startup probe waits at least 10 minutes before its first
# try and then keeps trying every second (failureThreshold 10000, Google's values).
HEALTH_PATH = "/healthcheck"
STARTUP_DELAY_SECONDS = 600
# The LWS webhook refuses to add or remove subGroupSize on an existing LeaderWorkerSet (ValidateUpdate,
# v0.9.0 pkg/webhooks/leaderworkerset_webhook.go): turning disaggregated serving on or off replaces it.
REPLACE_ON_CHANGES = ("spec.leaderWorkerTemplate.subGroupPolicy",)


def _port(port: int, name: str) -> dict[str, Any]:
    return {"containerPort": port, "name": name, "protocol": "TCP"}


def _tpu_placement(w: ResolvedWorkload) -> dict[str, Any]:
    tolerations = [{"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    if w.group.capacity is Capacity.SPOT:
        tolerations.append({"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    pools = placement.pool_affinity(w.group)
    return {
        "nodeSelector": placement.group_selector(w.group),
        "tolerations": tolerations,
        **({"affinity": pools} if pools is not None else {}),
    }


def _pod_common(w: ResolvedWorkload) -> dict[str, Any]:
    return {
        # Pathways never calls the Kubernetes API: no token in the pod to steal.
        "automountServiceAccountToken": False,
        "priorityClassName": f"pathways-{w.priority}",
        "terminationGracePeriodSeconds": w.spec.termination_grace_period_seconds,
        "securityContext": dict(POD_SECURITY),
        **_tpu_placement(w),
    }


def engine_args(w: ResolvedWorkload) -> list[str]:
    """The JetStream MaxText engine's arguments: a config file, then MaxText key=value settings."""
    sv = w.spec.serve
    assert sv is not None
    args = [
        sv.config_file,
        f"model_name={sv.model}",
        f"load_parameters_path={sv.weights}",
        f"max_prefill_predict_length={sv.max_prefill_predict_length}",
        f"max_target_length={sv.max_target_length}",
        f"per_device_batch_size={sv.per_device_batch_size:g}",
        "scan_layers=false",
        f"weight_dtype={sv.weight_dtype}",
        "enable_single_controller=true",
        "enable_model_warmup=true",
    ]
    tokenizer = sv.tokenizer_args
    assert tokenizer is not None  # serving_checks refuses a model without one
    args += [f"tokenizer_path={tokenizer[0]}", f"tokenizer_type={tokenizer[1]}"]
    args += [f"ici_{axis}_parallelism={n}" for axis, n in sorted(sv.parallelism.items())]
    if sv.quantization:
        args.append(f"quantization={sv.quantization}")
    if sv.quantize_kvcache:
        args.append("quantize_kvcache=true")
    if sv.disaggregated and not any(a.startswith("inference_server=") for a in sv.extra_args):
        args.append(f"inference_server={DISAGGREGATED_SERVER}")
    return [*args, *sv.extra_args]


def _probes(path: str, port: int) -> dict[str, Any]:
    """JetStream's, Google's probe timings: a first try after 10 minutes, then every second for a model that loads for hours;
    liveness and readiness every minute, ten failures allowed."""
    probe = {"httpGet": {"path": path, "port": port}}
    return {
        "startupProbe": {**probe, "periodSeconds": 1, "initialDelaySeconds": STARTUP_DELAY_SECONDS, "failureThreshold": 10000},
        "livenessProbe": {**probe, "periodSeconds": 60, "failureThreshold": 10},
        "readinessProbe": {**probe, "periodSeconds": 60, "failureThreshold": 10},
    }


def _vllm_probes(load_timeout_minutes: int) -> dict[str, Any]:
    """vLLM's: its /health answers only once the model is loaded (vllm.py), so no delay: startup every 10 s for as
    long as the model may load, readiness every 5 s after, liveness every 30 s, ten failures allowed."""
    probe = {"httpGet": {"path": vllm.HEALTH_PATH, "port": vllm.PORT}, "timeoutSeconds": vllm.PROBE_TIMEOUT_SECONDS}
    return {
        "startupProbe": {**probe, "periodSeconds": vllm.STARTUP_PERIOD_SECONDS,
                         "failureThreshold": math.ceil(load_timeout_minutes * 60 / vllm.STARTUP_PERIOD_SECONDS)},
        "readinessProbe": {**probe, "periodSeconds": vllm.READINESS_PERIOD_SECONDS, "failureThreshold": vllm.READINESS_FAILURES},
        "livenessProbe": {**probe, "periodSeconds": vllm.LIVENESS_PERIOD_SECONDS, "failureThreshold": vllm.LIVENESS_FAILURES},
    }


def _jetstream_containers(w: ResolvedWorkload) -> list[dict[str, Any]]:
    sv = w.spec.serve
    assert sv is not None
    return [
        {
            "name": "jax-tpu",
            "image": sv.jetstream_image,
            "args": engine_args(w),
            "ports": [_port(SERVE_GRPC_PORT, "grpc")],
            **_probes(HEALTH_PATH, SERVE_HTTP_PORT),
            "resources": guaranteed_resources(*sv.engine_container_resources),
            "securityContext": DROP_ALL,
        },
        {
            "name": "jetstream-http",
            "image": sv.http_image,
            "ports": [_port(SERVE_HTTP_PORT, "http")],
            "resources": guaranteed_resources(*JETSTREAM_HTTP_RESOURCES),
            "securityContext": DROP_ALL,
        },
    ]


def vllm_args(w: ResolvedWorkload, tensor_parallel: int | None = None, stack_args: tuple[str, ...] = ()) -> list[str]:
    """`vllm serve` arguments (components/model/workloads/vllm.py, each name from the pinned vLLM): the model (or its gs://
    weights, streamed), the port, one slice's chips as the tensor-parallel size (the direct runtime gives its own),
    the name clients ask for, then `stack_args` (the direct runtime's KV transfer) and serve.extraArgs."""
    sv = w.spec.serve
    assert sv is not None
    args = [sv.weights or sv.model, f"{vllm.FLAG_PORT}={vllm.PORT}",
            f"{vllm.FLAG_TENSOR_PARALLEL}={tensor_parallel or w.group.tpu.chips}", f"{vllm.FLAG_SERVED_MODEL_NAME}={sv.model}"]
    if sv.weights:
        args.append(f"{vllm.FLAG_LOAD_FORMAT}={vllm.LOAD_FORMAT_STREAMER}")
    if sv.max_model_len:
        args.append(f"{vllm.FLAG_MAX_MODEL_LEN}={sv.max_model_len}")
    return [*args, *stack_args, *sv.extra_args]


def vllm_env(w: ResolvedWorkload) -> list[dict[str, Any]]:
    """The engine on Pathways: the proxy platform and address (the proxy shares the pod) and vLLM's engine core
    in-process (tpu-inference refuses anything else on Pathways)."""
    sv = w.spec.serve
    assert sv is not None
    env: list[dict[str, Any]] = [
        {"name": vllm.ENV_PLATFORMS, "value": "proxy"},
        {"name": vllm.ENV_BACKEND_TARGET, "value": f"grpc://localhost:{SERVE_PROXY_PORT}"},
        {"name": vllm.ENV_MULTIPROCESSING, "value": "0"},
    ]
    if sv.hugging_face_token_secret:
        env.append({"name": vllm.ENV_HF_TOKEN, "valueFrom": {"secretKeyRef": {"name": sv.hugging_face_token_secret, "key": vllm.ENV_HF_TOKEN}}})
    return env


def _vllm_containers(w: ResolvedWorkload) -> list[dict[str, Any]]:
    sv = w.spec.serve
    assert sv is not None
    return [{
        "name": "vllm",
        "image": sv.vllm_image,
        "command": list(vllm.COMMAND),
        "args": vllm_args(w),
        "env": vllm_env(w),
        "ports": [_port(vllm.PORT, "http")],
        **_vllm_probes(sv.load_timeout_minutes),
        "resources": guaranteed_resources(*sv.engine_container_resources),
        "securityContext": DROP_ALL,
    }]


def leader_template(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    sv = w.spec.serve
    assert sv is not None
    containers = [
        {
            "name": "pathways-proxy",
            "image": w.proxy_image,
            "args": [
                f"--resource_manager_address={LEADER_ADDRESS}:{SERVE_RM_PORT}",
                f"--server_port={SERVE_PROXY_PORT}",
                f"--gcs_scratch_location={stack.cache_location}",
                # as on the JobSet path (jobset.py proxy) and in Google's disaggregated serving manifest
                *w.spec.xla_flags,
            ],
            "ports": [_port(SERVE_PROXY_PORT, "proxy")],
            "resources": guaranteed_resources(sv.proxy_resources.cpu, sv.proxy_resources.memory),
            "securityContext": ROOTLESS,
        },
        {
            "name": "pathways-rm",
            "image": w.server_image,
            "env": [{"name": "HOST_ADDRESS", "value": LEADER_ADDRESS}, {"name": "TPU_SKIP_MDS_QUERY", "value": "true"}],
            "args": [
                f"--server_port={SERVE_RM_PORT}",
                f"--gcs_scratch_location={stack.cache_location}",
                "--node_type=resource_manager",
                f"--instance_count={w.slices_per_replica}",
                f"--instance_type={w.group.tpu.instance_type}",
            ],
            "ports": [_port(SERVE_RM_PORT, "rm")],
            "resources": guaranteed_resources(*RESOURCE_MANAGER_RESOURCES),
            "securityContext": DROP_ALL,
        },
        *(_vllm_containers(w) if sv.engine_name == "vllm" else _jetstream_containers(w)),
    ]
    return {
        "metadata": {"labels": {WORKLOAD_LABEL: w.name}, "annotations": dict(POD_ANNOTATIONS)},
        "spec": {**_pod_common(w), "containers": containers},
    }


def worker_template(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    chips = str(w.group.tpu.chips_per_vm)
    cpu, memory_gib = serve_worker_request(w.group.tpu.machine_type)
    return {
        "metadata": {"labels": {WORKLOAD_LABEL: w.name}, "annotations": dict(POD_ANNOTATIONS)},
        "spec": {
            **_pod_common(w),
            "containers": [{
                "name": "pathways-worker",
                "image": w.server_image,
                "args": [
                    f"--server_port={SERVE_WORKER_PORT}",
                    f"--resource_manager_address={LEADER_ADDRESS}:{SERVE_RM_PORT}",
                    f"--gcs_scratch_location={stack.cache_location}",
                ],
                "ports": [_port(SERVE_WORKER_PORT, "worker")],
                # Half the VM (workload.serve_worker_request): unlike the JobSet path's workers, one worker per
                # replica shares its VM with the Guaranteed leader and must not be the kubelet's first eviction.
                # No CPU or memory limit: the other workers own their VMs whole.
                "resources": {"requests": {TPU_RESOURCE: chips, "cpu": str(cpu), "memory": f"{memory_gib}Gi"},
                              "limits": {TPU_RESOURCE: chips}},
                "securityContext": WORKER_SECURITY,
            }],
        },
    }


def leader_worker_set(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    sv = w.spec.serve
    assert sv is not None
    template: dict[str, Any] = {
        "size": w.lws_size,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": leader_template(stack, w),
        "workerTemplate": worker_template(stack, w),
    }
    annotations = {EXCLUSIVE_TOPOLOGY: NODEPOOL_LABEL}
    if sv.disaggregated:
        # Prefill and decode each own one slice (node pool): a subgroup per slice; the leader joins the first.
        annotations = {SUBGROUP_EXCLUSIVE_TOPOLOGY: NODEPOOL_LABEL}
        template["subGroupPolicy"] = {"subGroupSize": w.hosts}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": workload_metadata(w, annotations),
        "spec": {
            # Suspended: no replica runs (a LeaderWorkerSet has no suspend); the Kueue queue holds it too. With
            # autoscale the HorizontalPodAutoscaler owns the count: the stack leaves spec.replicas out, so `pulumi up`
            # never resets it (server-side apply manages only the fields it sends), and suspension is Kueue's.
            **({} if sv.autoscale else {"replicas": 0 if w.state == "suspended" else sv.replicas}),
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": template,
        },
    }


SKIP_AWAIT = "pulumi.com/skipAwait"


def owned_metadata(w: ResolvedWorkload, name: str) -> dict[str, Any]:
    """Metadata of an object the stack makes beside a serve workload's LeaderWorkerSet."""
    return {"name": name, "namespace": w.namespace, "labels": {WORKLOAD_LABEL: w.name, "app.kubernetes.io/managed-by": "pulumi"}}
# A new replica serves only after it has loaded and compiled the model (STARTUP_DELAY_SECONDS and more): the
# autoscaler adds one replica per such period, so that a queue that stays long while the first loads does not
# raise every replica at once, and keeps a replica through 30 minutes of lull before it drops it (a reload costs
# the same again).
REPLICA_STEP_SECONDS = 600
SCALE_DOWN_STABILIZATION_SECONDS = 1800
SCRAPE_INTERVAL = "15s"


def _target_quantity(value: float) -> str:
    """A Kubernetes quantity for an average: whole numbers as they are, fractions in milli-units (0.8 -> 800m)."""
    return str(int(value)) if value == int(value) else f"{round(value * 1000)}m"


def autoscaler(w: ResolvedWorkload) -> dict[str, Any]:
    """The HorizontalPodAutoscaler of an autoscaled endpoint, on the LeaderWorkerSet's scale subresource (whose
    selector, .status.hpaPodSelector, picks the leaders: one per replica, where vLLM runs and exports its metrics)."""
    sv = w.spec.serve
    assert sv is not None and sv.autoscale is not None
    a = sv.autoscale
    # the Custom Metrics Stackdriver Adapter's name for a Managed Prometheus metric (Google Cloud docs, Managed
    # Service for Prometheus, "Horizontal Pod autoscaling": prometheus.googleapis.com|<metric>|<kind>)
    metric = f"prometheus.googleapis.com|{vllm.AUTOSCALE_METRICS[a.metric]}|gauge"
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": owned_metadata(w, w.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": API_VERSION, "kind": KIND, "name": w.name},
            "minReplicas": a.min_replicas,
            "maxReplicas": a.max_replicas,
            "metrics": [{"type": "Pods", "pods": {"metric": {"name": metric},
                                                  "target": {"type": "AverageValue", "averageValue": _target_quantity(a.target)}}}],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": REPLICA_STEP_SECONDS}]},
                "scaleDown": {"stabilizationWindowSeconds": SCALE_DOWN_STABILIZATION_SECONDS,
                              "policies": [{"type": "Pods", "value": 1, "periodSeconds": REPLICA_STEP_SECONDS}]},
            },
        },
    }


def pod_monitoring(w: ResolvedWorkload) -> dict[str, Any]:
    """Managed Service for Prometheus scrapes vLLM's /metrics on the leaders (monitoring.googleapis.com/v1
    PodMonitoring; the cluster runs managed collection, components/gcp/cluster.py)."""
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": owned_metadata(w, f"{w.name}-vllm"),
        "spec": {
            "selector": {"matchLabels": leader_selector(w)},
            "endpoints": [{"port": vllm.PORT, "path": vllm.METRICS_PATH, "interval": SCRAPE_INTERVAL}],
        },
    }


def leader_selector(w: ResolvedWorkload) -> dict[str, str]:
    return {LWS_NAME_LABEL: w.name, LWS_WORKER_INDEX_LABEL: "0"}


def http_service(w: ResolvedWorkload) -> dict[str, Any]:
    """The ClusterIP Service of the leaders' HTTP front ends; with serve.internalLoadBalancer, a GKE internal
    passthrough load balancer instead (reachable from the VPC only; GKE docs, "LoadBalancer Service
    parameters": networking.gke.io/load-balancer-type: Internal)."""
    sv = w.spec.serve
    assert sv is not None
    # Pulumi's await on a Service with a selector ends only when every endpoint is ready (pulumi-kubernetes v4.25
    # pkg/await/service.go: no notReadyAddresses), within 10 minutes, while a leader loading its model may take
    # hours within its startup probe: every first `pulumi up` and every rolling update of a model that loads for
    # longer than 10 minutes would fail. The outputs are commands, not the Service's status, so nothing waits on it.
    metadata: dict[str, Any] = {**owned_metadata(w, serve_service_name(w.name)), "annotations": {SKIP_AWAIT: "true"}}
    spec: dict[str, Any] = {
        "type": "ClusterIP",
        # the set's leaders by LWS's own labels, as its controller selects them: only the StatefulSet controller may
        # create a pod carrying them there, from a StatefulSet only the LWS controller may make (guardrails.py), so no
        # other pod of the namespace can join the endpoint and receive its prompts
        "selector": leader_selector(w),
        # appProtocol: what the port speaks, for load balancers and meshes that read it (GKE's Gateway among them)
        "ports": [{"name": "http", "port": SERVE_HTTP_PORT, "targetPort": SERVE_HTTP_PORT, "protocol": "TCP", "appProtocol": "http"}],
    }
    if sv.internal_load_balancer:
        metadata["annotations"]["networking.gke.io/load-balancer-type"] = "Internal"
        spec["type"] = "LoadBalancer"
        # GKE turns these into the load balancer's firewall rules (GKE docs, "LoadBalancer Service parameters":
        # spec.loadBalancerSourceRanges); without them any address that reaches the VPC may call the endpoint
        spec["loadBalancerSourceRanges"] = list(w.load_balancer_source_ranges)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def network_policy(w: ResolvedWorkload) -> dict[str, Any]:
    """Ingress to a serve workload's pods: the HTTP front end (SERVE_HTTP_PORT) from anywhere the Service and the
    load balancer let clients in; every other port (the proxy, the resource manager, the workers, the engine's
    gRPC) only from the set's own pods. Unlike the JobSet path's hostNetwork pods, these use the pod network,
    where the cluster's Dataplane V2 enforces NetworkPolicy (components/gcp/cluster.py ADVANCED_DATAPATH); the
    kubelet's probes come from the node, which GKE's network policies always admit."""
    members = {"podSelector": {"matchLabels": {LWS_NAME_LABEL: w.name}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": owned_metadata(w, f"{w.name}-serve"),
        "spec": {
            **members,
            "policyTypes": ["Ingress"],
            "ingress": [
                {"from": [members]},
                {"ports": [{"protocol": "TCP", "port": SERVE_HTTP_PORT}]},
            ],
        },
    }


def serving_access(w: ResolvedWorkload) -> dict[str, str]:
    """What a user runs to reach the endpoint (the outputs)."""
    sv = w.spec.serve
    assert sv is not None
    name, ns = serve_service_name(w.name), w.namespace
    local = f"http://127.0.0.1:{SERVE_HTTP_PORT}"
    out = {
        "engine": sv.engine_name,
        "service": f"{name}.{ns}.svc.cluster.local:{SERVE_HTTP_PORT}",
        "portForward": f"kubectl -n {ns} port-forward svc/{name} {SERVE_HTTP_PORT}:{SERVE_HTTP_PORT}",
    }
    if sv.engine_name == "vllm":
        # vLLM's OpenAI-compatible routes (components/model/workloads/vllm.py); the model is the name clients ask for
        out["completions"] = (f"curl -s {local}{vllm.COMPLETIONS_PATH} -H 'Content-Type: application/json' "
                              f"-d '{{\"model\": \"{sv.model}\", \"prompt\": \"What are the top 5 programming languages\", \"max_tokens\": 200}}'")
        out["chat"] = (f"curl -s {local}{vllm.CHAT_PATH} -H 'Content-Type: application/json' "
                       f"-d '{{\"model\": \"{sv.model}\", \"messages\": [{{\"role\": \"user\", \"content\": \"Hello\"}}]}}'")
        out["health"] = f"curl -s -o /dev/null -w '%{{http_code}}\\n' {local}{vllm.HEALTH_PATH}"
        out["metrics"] = f"curl -s {local}{vllm.METRICS_PATH} | grep -E '^vllm:(num_requests_waiting|kv_cache_usage_perc)'"
        path = vllm.COMPLETIONS_PATH
    else:
        out["generate"] = (f"curl -s -X POST {local}/generate -H 'Content-Type: application/json' "
                           "-d '{\"prompt\": \"What are the top 5 programming languages\", \"max_tokens\": 200}'")
        out["health"] = f"curl -s {local}{HEALTH_PATH}"
        path = "/generate"
    if sv.internal_load_balancer:
        out["internalAddress"] = (f"kubectl -n {ns} get svc {name} -o jsonpath='{{.status.loadBalancer.ingress[0].ip}}' "
                                  f"(then http://<address>:{SERVE_HTTP_PORT}{path} from the VPC)")
    return out
