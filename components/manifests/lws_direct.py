"""Serving without Pathways (pure Python): serve.runtime: direct and serve.split (components/model/workloads/vllm.py
gives every name's source in the pinned wheels and tpu-inference's GKE manifests).

- direct: each replica is a LeaderWorkerSet group of one pod, `vllm serve` on a single-host slice's TPU VM with the
  host's own PjRt TPU client (JAX_PLATFORMS=tpu,cpu). A LeaderWorkerSet still, not a Deployment: Kueue admits each
  replica whole (its LWS integration), the HorizontalPodAutoscaler scales it through the scale subresource, the
  gateway's pool and the Service select its pods by LWS's own labels, which only the LWS controller's StatefulSets may
  carry (guardrails.py), and only the LWS controller may make a StatefulSet that reaches the TPU nodes.
- split: three LeaderWorkerSets of one-pod groups: <name>-prefill (kv_producer), <name>-decode (kv_consumer) and
  <name>-proxy, tpu-inference's proxy on the system pool (CPU only, not queued). The endpoint's Service selects the
  proxies; each role's Service (<name>-prefill-http, <name>-decode-http) its ready engines, which the proxy calls.
  Scaling one role changes only its own LeaderWorkerSet.

Deliberate differences from tpu-inference's GKE manifests (v7x/single_prefill.yaml): no privileged container, no
IPC_LOCK and no privileged sysctl init container (the guards refuse them; GKE's TPU device plugin hands the pod its
chips, and the containers keep the Pathways worker's capabilities, WORKER_SECURITY); probes (theirs have none: their
CI greps the log); requests of half the VM (workload.serve_worker_request), not all of it.
"""

from __future__ import annotations

from typing import Any, Optional

from components.constants import LWS_NAME_LABEL, LWS_WORKER_INDEX_LABEL, ROLE_LABEL, SYSTEM_ROLE
from components.manifests import lws
from components.manifests.jobset import (
    DROP_ALL,
    POD_ANNOTATIONS,
    POD_SECURITY,
    TPU_RESOURCE,
    WORKER_SECURITY,
    WORKLOAD_LABEL,
    guaranteed_resources,
    workload_metadata,
)
from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.workloads import vllm
from components.model.workloads.ports import SERVE_HTTP_PORT
from components.model.workloads.workload import serve_worker_request

ROLES = ("prefill", "decode")


def lws_name(w: ResolvedWorkload, role: Optional[str] = None) -> str:
    """The LeaderWorkerSet of a serve workload, or of one role of a split one (prefill, decode, proxy)."""
    return w.name if role is None else f"{w.name}-{role}"


def role_service_name(w: ResolvedWorkload, role: str) -> str:
    """The ClusterIP Service of a split endpoint's role's ready engines (LWS names its headless one <lws>)."""
    return f"{lws_name(w, role)}-http"


def tensor_parallel_size(w: ResolvedWorkload) -> int:
    """One engine spans its single-host slice's JAX devices (vllm.DEVICES_PER_CHIP)."""
    return w.group.tpu.chips * vllm.DEVICES_PER_CHIP.get(w.group.tpu.family, 1)


def engine_args(w: ResolvedWorkload, role: Optional[str] = None) -> list[str]:
    """lws.py vllm_args with the host's devices as the tensor-parallel size, and a split role's KV transfer and flags."""
    sv = w.spec.serve
    assert sv is not None
    kv = (f"{vllm.FLAG_KV_TRANSFER_CONFIG}={vllm.kv_transfer_config(role)}",) if role is not None else ()
    extra = getattr(sv.split, role).extra_args if role is not None and sv.split is not None else []
    return [*lws.vllm_args(w, tensor_parallel_size(w), kv), *extra]


def engine_env(w: ResolvedWorkload, role: Optional[str] = None) -> list[dict[str, Any]]:
    sv = w.spec.serve
    assert sv is not None
    env: list[dict[str, Any]] = [{"name": vllm.ENV_PLATFORMS, "value": vllm.DIRECT_PLATFORMS}]
    if role is not None:
        env += [
            {"name": vllm.ENV_HOST_IP, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": vllm.ENV_KV_TRANSFER_PORT, "value": str(vllm.KV_TRANSFER_PORT)},
            {"name": vllm.ENV_SIDE_CHANNEL_PORT, "value": str(vllm.SIDE_CHANNEL_PORT)},
        ]
    if sv.hugging_face_token_secret:
        env.append({"name": vllm.ENV_HF_TOKEN, "valueFrom": {"secretKeyRef": {"name": sv.hugging_face_token_secret, "key": vllm.ENV_HF_TOKEN}}})
    return env


def engine_template(w: ResolvedWorkload, role: Optional[str] = None) -> dict[str, Any]:
    """The one pod of a direct replica: `vllm serve` on the slice's TPU VM, all its chips."""
    sv = w.spec.serve
    assert sv is not None
    chips = str(w.group.tpu.chips_per_vm)
    cpu, memory_gib = serve_worker_request(w.group.tpu.machine_type)
    if sv.engine_resources is not None:
        cpu, memory = sv.engine_resources.cpu, sv.engine_resources.memory
    else:
        cpu, memory = str(cpu), f"{memory_gib}Gi"
    ports = [lws._port(vllm.PORT, "http")]
    if role is not None:
        ports.append(lws._port(vllm.KV_TRANSFER_PORT, "kv-transfer"))
        if role == "prefill":
            ports.append(lws._port(vllm.SIDE_CHANNEL_PORT, "kv-side"))
    return {
        "metadata": {"labels": {WORKLOAD_LABEL: w.name}, "annotations": dict(POD_ANNOTATIONS)},
        "spec": {
            **lws._pod_common(w),
            "containers": [{
                "name": "vllm",
                "image": sv.vllm_image,
                "command": list(vllm.COMMAND),
                "args": engine_args(w, role),
                "env": engine_env(w, role),
                "ports": ports,
                **lws._vllm_probes(sv.load_timeout_minutes),
                # the TPU VM is the pod's alone: half of it requested (not the kubelet's first eviction), no CPU or
                # memory limit, as the Pathways worker (workload.serve_worker_request)
                "resources": {"requests": {TPU_RESOURCE: chips, "cpu": cpu, "memory": memory}, "limits": {TPU_RESOURCE: chips}},
                "securityContext": WORKER_SECURITY,
            }],
        },
    }


def _one_pod_set(w: ResolvedWorkload, name: str, template: dict[str, Any], replicas: Optional[int],
                 queued: bool = True) -> dict[str, Any]:
    metadata = workload_metadata(w, {lws.EXCLUSIVE_TOPOLOGY: lws.NODEPOOL_LABEL} if queued else None)
    metadata["name"] = name
    if not queued:  # the proxy holds no TPU: not Kueue's to admit
        metadata["labels"] = {k: v for k, v in metadata["labels"].items() if not k.startswith("kueue.x-k8s.io/")}
    return {
        "apiVersion": lws.API_VERSION,
        "kind": lws.KIND,
        "metadata": metadata,
        "spec": {
            **({} if replicas is None else {"replicas": replicas}),
            "startupPolicy": "LeaderCreated",
            # size 1: the leader is the group; without a leaderTemplate it is made from workerTemplate
            "leaderWorkerTemplate": {"size": 1, "restartPolicy": "RecreateGroupOnPodRestart", "workerTemplate": template},
        },
    }


def proxy_template(w: ResolvedWorkload) -> dict[str, Any]:
    """tpu-inference's proxy (vllm.PROXY_SCRIPT) from the engine's image, on the system pool, over each role's Service."""
    sv = w.spec.serve
    assert sv is not None and sv.split is not None
    res = sv.split.proxy_resources
    args = [vllm.PROXY_SCRIPT, "--host", "0.0.0.0", "--port", str(SERVE_HTTP_PORT),
            "--prefiller-hosts", f"{role_service_name(w, 'prefill')}.{w.namespace}.svc", "--prefiller-ports", str(vllm.PORT),
            "--decoder-hosts", f"{role_service_name(w, 'decode')}.{w.namespace}.svc", "--decoder-ports", str(vllm.PORT)]
    probe = {"httpGet": {"path": vllm.HEALTH_PATH, "port": SERVE_HTTP_PORT}, "timeoutSeconds": vllm.PROBE_TIMEOUT_SECONDS}
    return {
        "metadata": {"labels": {WORKLOAD_LABEL: w.name}, "annotations": dict(POD_ANNOTATIONS)},
        "spec": {
            "automountServiceAccountToken": False,
            "priorityClassName": f"pathways-{w.priority}",
            "securityContext": dict(POD_SECURITY),
            "nodeSelector": {ROLE_LABEL: SYSTEM_ROLE},
            "containers": [{
                "name": "proxy",
                "image": sv.vllm_image,
                "command": ["python3"],
                "args": args,
                "ports": [lws._port(SERVE_HTTP_PORT, "http")],
                "readinessProbe": {**probe, "periodSeconds": vllm.READINESS_PERIOD_SECONDS, "failureThreshold": vllm.READINESS_FAILURES},
                "livenessProbe": {**probe, "periodSeconds": vllm.LIVENESS_PERIOD_SECONDS, "failureThreshold": vllm.LIVENESS_FAILURES},
                "resources": guaranteed_resources(res.cpu, res.memory),
                "securityContext": DROP_ALL,
            }],
        },
    }


def leader_worker_sets(stack: ResolvedStack, w: ResolvedWorkload) -> list[dict[str, Any]]:
    """A serve workload's LeaderWorkerSets: the Pathways one (lws.py), one of direct replicas, or a split endpoint's
    prefill, decode and proxy sets."""
    sv = w.spec.serve
    assert sv is not None
    if not sv.direct:
        return [lws.leader_worker_set(stack, w)]
    held = w.state == "suspended"
    if sv.split is None:
        # with autoscale the HorizontalPodAutoscaler owns the count (lws.py leader_worker_set)
        return [_one_pod_set(w, lws_name(w), engine_template(w), None if sv.autoscale else (0 if held else sv.replicas))]
    return [
        *(_one_pod_set(w, lws_name(w, role), engine_template(w, role), 0 if held else getattr(sv.split, role).replicas)
          for role in ROLES),
        _one_pod_set(w, lws_name(w, "proxy"), proxy_template(w), 0 if held else sv.split.proxy_replicas, queued=False),
    ]


def _selector(w: ResolvedWorkload, role: Optional[str]) -> dict[str, str]:
    return {LWS_NAME_LABEL: lws_name(w, role), LWS_WORKER_INDEX_LABEL: "0"}


def http_service(w: ResolvedWorkload) -> dict[str, Any]:
    """The endpoint's Service (lws.py http_service); a split endpoint's selects its proxies."""
    svc = lws.http_service(w)
    sv = w.spec.serve
    if sv is not None and sv.split is not None:
        svc["spec"]["selector"] = _selector(w, "proxy")
    return svc


def role_services(w: ResolvedWorkload) -> list[dict[str, Any]]:
    """Each role's ClusterIP Service over its ready engines, which the proxy calls (none unless split)."""
    sv = w.spec.serve
    if sv is None or sv.split is None:
        return []
    return [{
        "apiVersion": "v1", "kind": "Service",
        "metadata": {**lws.owned_metadata(w, role_service_name(w, role)), "annotations": {lws.SKIP_AWAIT: "true"}},
        "spec": {"type": "ClusterIP", "selector": _selector(w, role),
                 "ports": [{"name": "http", "port": vllm.PORT, "targetPort": vllm.PORT, "protocol": "TCP", "appProtocol": "http"}]},
    } for role in ROLES]


def network_policy(w: ResolvedWorkload) -> dict[str, Any]:
    """lws.py network_policy; a split endpoint's pods (three LeaderWorkerSets) admit one another on every port (the
    KV transfer opens ephemeral ones: vllm.py) and anyone on the HTTP port only."""
    policy = lws.network_policy(w)
    sv = w.spec.serve
    if sv is not None and sv.split is not None:
        members = {"podSelector": {"matchExpressions": [
            {"key": LWS_NAME_LABEL, "operator": "In", "values": [lws_name(w, r) for r in (*ROLES, "proxy")]}]}}
        policy["spec"]["podSelector"] = members["podSelector"]
        policy["spec"]["ingress"][0] = {"from": [members]}
    return policy


def serving_access(w: ResolvedWorkload) -> dict[str, str]:
    """lws.py serving_access; a split endpoint's metrics are its engines' (its proxy exports none): decode's here."""
    out = lws.serving_access(w)
    sv = w.spec.serve
    if sv is not None and sv.split is not None:
        svc = role_service_name(w, "decode")
        out["metrics"] = (f"kubectl -n {w.namespace} port-forward svc/{svc} 8001:{vllm.PORT} & curl -s http://127.0.0.1:8001"
                          f"{vllm.METRICS_PATH} | grep -E '^vllm:(num_requests_waiting|kv_cache_usage_perc)' (prefill: svc/"
                          f"{role_service_name(w, 'prefill')})")
    return out
