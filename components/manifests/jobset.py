"""Pathways JobSet manifests from the validated config model (pure Python, no Pulumi).

One JobSet per workload: replicatedJob `pathways-head` (resource manager + IFRT proxy, plus the
user's program in batch mode) and `worker` (one pod per TPU host, one Job per slice).
Facts: ../shared/PLATFORM-FACTS.md §1-2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..labels import HEAD_ROLE, HEAD_TAINT, ROLE_LABEL, SLICE_GROUP_LABEL, SPOT_LABEL
from ..model.config import (
    PROXY_RESOURCES,
    RESOURCE_MANAGER_RESOURCES,
    Capacity,
    StackConfig,
    Workload,
    coordinator_address,
    coordinator_label,
)
from ..model.ports import PROXY_PORT, RM_EXTRA_PORT, RM_PORT, SIDECAR_PORT, WORKER_EXTRA_PORTS, WORKER_PORT
from .guardrails import priority_class_name
from .kueue import queue_labels

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"
HEAD_JOB = "pathways-head"
WORKER_JOB = "worker"

COORDINATOR_LABEL = "jobset.sigs.k8s.io/coordinator"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
TPU_RESOURCE = "google.com/tpu"
WORKLOAD_LABEL = "pathways/workload"
PROFILING_TOKEN_KEY = "token"
SHM_VOLUME = "dshm"
# Colocated Python: the worker and the sidecar exchange large arrays through one memory-backed
# directory. The worker only does so when told the directory (--cloud_pathways_sidecar_shm_directory),
# and both read CLOUD_PATHWAYS_SIDECAR_SHM_DIRECTORY (pathwaysutils 0.1.13 experimental/gke/jobset.py,
# add_colocated_python; its default path is /tmp/shared-memory).
SIDECAR_SHM_VOLUME = "sidecar-shm"
SIDECAR_SHM_DIR = "/tmp/shared-memory"
SIDECAR_SHM_ENV = "CLOUD_PATHWAYS_SIDECAR_SHM_DIRECTORY"
SIDECAR_SHM_FLAG = "--cloud_pathways_sidecar_shm_directory"
# Documented JobSet annotations (kubernetes-sigs/jobset, jobset.sigs.k8s.io/*), which Google's
# generators expose to the RM and workers as env.
JOBSET_NAME_ANNOTATION = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_ANNOTATION = "jobset.sigs.k8s.io/replicatedjob-name"


@dataclass(frozen=True)
class WorkloadContext:
    """What a manifest needs beyond the config model: values only the stack knows."""

    cache_location: str
    """gs://<scratch bucket>/<cachePrefix>, shared by every workload."""
    artifacts_location: str
    """gs://<artifacts bucket>/<artifactsPrefix>."""
    profiling_secret: Optional[str] = None
    """Name of the Secret holding the profiler auth token, when profiling is on."""
    env_secret: Optional[str] = None
    """Name of the Secret holding the workload's env values, when they came from secret config."""


def env_secret_name(w: Workload) -> str:
    return f"{w.name}-env"


def context(cfg: StackConfig, w: Workload) -> WorkloadContext:
    """The values a workload's manifests need from the stack."""
    return WorkloadContext(
        cfg.cache_location,
        cfg.artifacts_location,
        profiling_secret=f"{w.name}-profiling-token" if w.profiling else None,
        env_secret=env_secret_name(w) if cfg.secret_env and w.env else None,
    )


def _label_env(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def _annotation_env(name: str, annotation: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}}


JOBSET_IDENTITY_ENV = (
    _annotation_env("JOBSET_NAME", JOBSET_NAME_ANNOTATION),
    _annotation_env("REPLICATED_JOB_NAME", REPLICATED_JOB_ANNOTATION),
)


def user_env(w: Workload, ctx: WorkloadContext) -> list[dict[str, Any]]:
    """The workload's own env: plain values, or references into its Secret when they were secret."""
    if ctx.env_secret:
        return [{"name": k, "valueFrom": {"secretKeyRef": {"name": ctx.env_secret, "key": k}}} for k in sorted(w.env)]
    return [{"name": k, "value": v} for k, v in sorted(w.env.items())]


def _resources(cpu: str, memory: str, extra: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    # requests = limits: Guaranteed QoS, so the head pod is the last thing evicted on its node.
    amounts = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _ports(*ports: int) -> list[dict[str, Any]]:
    return [{"containerPort": p, "protocol": "TCP"} for p in ports]


def _shm_volume(size: str) -> dict[str, Any]:
    return {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}


SHM_MOUNT = {"name": SHM_VOLUME, "mountPath": "/dev/shm"}

# Container security contexts. Every container: no privilege escalation (setuid binaries gain
# nothing). The IFRT proxy runs exactly as Google runs it for the Shared Pathways Service: rootless,
# no capabilities, RuntimeDefault seccomp (pathwaysutils 0.1.13 shared_pathways_service/yamls/
# pw-proxy.yaml). The user's program and the colocated sidecar drop every capability too; the RM and
# the TPU workers keep the image's defaults beyond that (no public source says what libtpu needs).
NO_ESCALATION = {"allowPrivilegeEscalation": False}
DROP_ALL = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
ROOTLESS = {**DROP_ALL, "runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}


def _pod_common(w: Workload) -> dict[str, Any]:
    """Pod fields every Pathways pod shares."""
    return {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        # Pathways never calls the Kubernetes API: no token in the pod to steal.
        "automountServiceAccountToken": False,
        "priorityClassName": priority_class_name(w),
        "terminationGracePeriodSeconds": w.termination_grace_period_seconds,
    }


def resource_manager(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    group = cfg.workload_group(w)
    return {
        "name": "pathways-rm",
        "image": cfg.server_image(w),
        "args": [
            f"--server_port={RM_PORT}",
            "--node_type=resource_manager",
            f"--instance_count={cfg.workload_slices(w)}",
            f"--instance_type={group.tpu.instance_type}",
            f"--gcs_scratch_location={ctx.cache_location}",
        ],
        "env": [
            _label_env("HOST_ADDRESS", COORDINATOR_LABEL), {"name": "TPU_SKIP_MDS_QUERY", "value": "true"}, *JOBSET_IDENTITY_ENV,
        ],
        "ports": _ports(RM_PORT, RM_EXTRA_PORT),
        "resources": _resources(*RESOURCE_MANAGER_RESOURCES),
        "securityContext": NO_ESCALATION,
    }


def hlo_dump_location(w: Workload, ctx: WorkloadContext) -> str:
    return f"{ctx.artifacts_location}/{w.name}/hlo/"


def proxy(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    args = [
        f"--server_port={PROXY_PORT}",
        f"--resource_manager_address=$(PATHWAYS_HEAD):{RM_PORT}",
        f"--gcs_scratch_location={ctx.cache_location}",
        *w.xla_flags,
    ]
    if w.hlo_dump:
        args.append(f"--xla_dump_to={hlo_dump_location(w, ctx)}")
    if w.elastic:
        args.append(f"--num_elastic_slices={w.elastic.max_missing_slices}")
    return {
        "name": "pathways-proxy",
        "image": cfg.proxy_image(w),
        "args": args,
        "env": [_label_env("PATHWAYS_HEAD", COORDINATOR_LABEL)],
        "ports": _ports(PROXY_PORT),
        "resources": _resources(*PROXY_RESOURCES),
        "securityContext": ROOTLESS,
    }


def user_container(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        _label_env("PATHWAYS_HEAD", COORDINATOR_LABEL),  # defined first: $(PATHWAYS_HEAD) below expands it
        {"name": "JAX_PLATFORMS", "value": "proxy"},
        {"name": "JAX_BACKEND_TARGET", "value": f"grpc://$(PATHWAYS_HEAD):{PROXY_PORT}"},
        # An explicit count: os.cpu_count() reports the host's vCPUs, not the container's limit.
        {"name": "DATA_LOADER_WORKERS", "value": str(w.data_loader_workers)},
    ]
    ports: list[int] = []
    if w.persistence:
        env.append({"name": "ENABLE_PATHWAYS_PERSISTENCE", "value": "1"})
    if w.profiling:
        profile_dir = f"{ctx.artifacts_location}/{w.name}/profiles/"
        env += [
            {"name": "PATHWAYS_PROFILING_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": ctx.profiling_secret, "key": PROFILING_TOKEN_KEY}}},
            # Exact gs:// paths: pathwaysutils (>= 0.1.12, profiling.py) refuses anything not gs:// and
        # matches by prefix, so a bare bucket name fails and gs://b would admit gs://b-other.
        {"name": "PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS", "value": profile_dir},
            {"name": "PROFILER_PORT", "value": str(w.profiling.port)},
            {"name": "PROFILE_TRACE_DIR", "value": profile_dir},
        ]
        ports.append(w.profiling.port)
    env += user_env(w, ctx)
    container: dict[str, Any] = {"name": "jax-program", "image": w.image}
    if w.command:
        container["command"] = list(w.command)
    if w.args:
        container["args"] = list(w.args)
    container.update({
        "env": env,
        "resources": _resources(w.cpu, w.memory),
        "volumeMounts": [SHM_MOUNT],
        "securityContext": DROP_ALL,
    })
    if ports:
        container["ports"] = _ports(*ports)
    return container


def head_job(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    rm, px = resource_manager(cfg, w, ctx), proxy(cfg, w, ctx)
    pod: dict[str, Any] = {
        **_pod_common(w),
        "restartPolicy": "Never",
        "nodeSelector": {ROLE_LABEL: HEAD_ROLE},
        "tolerations": [{"key": HEAD_TAINT[0], "operator": "Equal", "value": HEAD_TAINT[1], "effect": "NoSchedule"}],
    }
    if w.mode == "service":
        # Shared Pathways Service: the RM alone; each client brings its own IFRT proxy (pathwaysutils
        # 0.1.13 experimental/gke/jobset.py, shared_pathways_service=True).
        pod["containers"] = [rm]
    elif w.mode == "batch":
        # Native sidecars: RM and proxy stop with the pod, so the head Job completes when the program exits.
        pod["initContainers"] = [{**rm, "restartPolicy": "Always"}, {**px, "restartPolicy": "Always"}]
        pod["containers"] = [user_container(cfg, w, ctx)]
        pod["volumes"] = [_shm_volume(w.shm_size)]
    else:
        # Headless: regular containers, which must not carry restartPolicy.
        pod["containers"] = [rm, px]
    return {
        "name": HEAD_JOB,
        "replicas": 1,
        "template": {
            "metadata": {"annotations": {EXCLUSIVE_TOPOLOGY: "kubernetes.io/hostname"}},
            "spec": {
                "backoffLimit": 0,
                "completionMode": "Indexed",
                "completions": 1,
                "parallelism": 1,
                "template": {"metadata": {"labels": {WORKLOAD_LABEL: w.name}}, "spec": pod},
            },
        },
    }


def worker_job(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    group = cfg.workload_group(w)
    tpu = group.tpu
    res = cfg.worker_resources(w)
    args = [
        f"--server_port={WORKER_PORT}",
        f"--resource_manager_address=$(PATHWAYS_HEAD):{RM_PORT}",
        f"--gcs_scratch_location={ctx.cache_location}",
    ]
    env = [
        _label_env("PATHWAYS_HEAD", COORDINATOR_LABEL),
        _label_env("MEGASCALE_COORDINATOR_ADDRESS", COORDINATOR_LABEL),
        _label_env("MEGASCALE_NUM_SLICES", "jobset.sigs.k8s.io/replicatedjob-replicas"),
        _label_env("MEGASCALE_SLICE_ID", "jobset.sigs.k8s.io/job-index"),
        *JOBSET_IDENTITY_ENV,
    ]
    tpu_chips = str(tpu.chips_per_vm)
    worker: dict[str, Any] = {
        "name": "pathways-worker",
        "image": cfg.server_image(w),
        "args": args,
        "env": env,
        "ports": _ports(WORKER_PORT, *WORKER_EXTRA_PORTS),
        # Requests from the TPU VM's allocatable (Burstable, not BestEffort: the last pods evicted
        # under node pressure); no CPU or memory limit, the worker owns the VM. TPU chips: whole VM.
        "resources": {
            "requests": {"cpu": str(res.worker_cpu), "memory": f"{res.worker_memory_gib}Gi", TPU_RESOURCE: tpu_chips},
            "limits": {TPU_RESOURCE: tpu_chips},
        },
        "securityContext": NO_ESCALATION,
    }
    tolerations = [{"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    if group.capacity is Capacity.SPOT:
        tolerations.append({"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    pod: dict[str, Any] = {
        **_pod_common(w),
        # As every peer (xpk, PathwaysJob, pathwaysutils): a crashed worker restarts in place on its
        # TPU host, counted against backoffLimit, instead of a new pod waiting for the same node.
        "restartPolicy": "OnFailure",
        "nodeSelector": {
            "cloud.google.com/gke-tpu-accelerator": tpu.accelerator,
            "cloud.google.com/gke-tpu-topology": tpu.topology,
            SLICE_GROUP_LABEL: group.name,
        },
        "tolerations": tolerations,
        "containers": [worker],
    }
    if w.colocated_python:
        sc = w.colocated_python
        shm_env = {"name": SIDECAR_SHM_ENV, "value": SIDECAR_SHM_DIR}
        shm_mount = {"name": SIDECAR_SHM_VOLUME, "mountPath": SIDECAR_SHM_DIR}
        args.append(f"{SIDECAR_SHM_FLAG}={SIDECAR_SHM_DIR}")
        env.append(shm_env)
        worker["volumeMounts"] = [shm_mount]
        pod["initContainers"] = [{
            "name": "colocated-python",
            "image": sc.image,
            "restartPolicy": "Always",
            "env": [{"name": "GRPC_SERVER_ADDRESS", "value": f"0.0.0.0:{SIDECAR_PORT}"}, shm_env],
            "ports": _ports(SIDECAR_PORT),
            "resources": {"requests": {"cpu": sc.cpu, "memory": sc.memory}, "limits": {"memory": sc.memory}},
            "volumeMounts": [shm_mount],
            "securityContext": DROP_ALL,
        }]
        # Bounded, and counted: the worker's memory request above leaves this much of the VM free.
        pod["volumes"] = [{"name": SIDECAR_SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": sc.shm_size}}]
    return {
        "name": WORKER_JOB,
        "replicas": cfg.workload_slices(w),
        "template": {
            "metadata": {"annotations": {EXCLUSIVE_TOPOLOGY: "cloud.google.com/gke-nodepool"}},
            "spec": {
                "backoffLimit": cfg.worker_backoff_limit(w),
                "completionMode": "Indexed",
                "completions": tpu.hosts,
                "parallelism": tpu.hosts,
                "template": {"metadata": {"labels": {WORKLOAD_LABEL: w.name}}, "spec": pod},
            },
        },
    }


def jobset(cfg: StackConfig, w: Workload, ctx: WorkloadContext) -> dict[str, Any]:
    """The JobSet for one workload."""
    network: dict[str, Any] = {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    if w.subdomain:
        network["subdomain"] = w.subdomain
    spec: dict[str, Any] = {
        "coordinator": {"replicatedJob": HEAD_JOB, "jobIndex": 0, "podIndex": 0},
        "network": network,
        "startupPolicy": {"startupPolicyOrder": "InOrder"},
        "failurePolicy": {"maxRestarts": w.restarts},
        "replicatedJobs": [head_job(cfg, w, ctx), worker_job(cfg, w, ctx)],
    }
    if w.state == "suspended" and not cfg.kubernetes.kueue.enabled:
        # The one spec field JobSet lets change in place. With Kueue, Kueue owns it (it un-suspends every
        # job it admits): the workload's LocalQueue holds it instead (manifests/kueue.py).
        spec["suspend"] = True
    if w.mode == "batch":
        spec["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [HEAD_JOB]}
        if w.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = w.ttl_seconds_after_finished
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": w.name,
            "namespace": cfg.workload_namespace(w),
            "labels": {
                WORKLOAD_LABEL: w.name, "app.kubernetes.io/managed-by": "pulumi",
                # Queued by Kueue: admitted all-or-nothing when its slices are free (manifests/kueue.py).
                **(queue_labels(w) if cfg.kubernetes.kueue.enabled else {}),
            },
        },
        "spec": spec,
    }


# JobSet's spec is immutable once created except `suspend` (the JobSet webhook): a change to any of
# these replaces the JobSet (old one first), while suspend/resume updates it in place.
IMMUTABLE_SPEC_FIELDS = (
    "replicatedJobs", "network", "successPolicy", "failurePolicy", "startupPolicy", "coordinator",
    "managedBy", "ttlSecondsAfterFinished",
)


def service_access(cfg: StackConfig, w: Workload) -> dict[str, Any]:
    """What a Shared Pathways Service's users paste (pathwaysutils 0.1.13 shared_pathways_service:
    run_workload's flags, isc_pathways.connect's arguments)."""
    group = cfg.workload_group(w)
    address = f"{coordinator(w)}:{RM_PORT}"
    slices = cfg.workload_slices(w)
    location = cfg.region if cfg.cluster.regional else cfg.zone
    command = (
        "python3 -m pathwaysutils.experimental.shared_pathways_service.run_workload "
        f"--cluster={cfg.cluster_name} --project={cfg.project} --region={location} "
        f"--gcs_bucket={cfg.cache_location} --pathways_service={address} "
        f"--tpu_type={group.tpu.instance_type} --tpu_count=1 --command='python3 my_program.py'"
    )
    return {
        "address": address,
        "namespace": cfg.workload_namespace(w),
        "instanceType": group.tpu.instance_type,
        "maxVirtualSlices": slices,
        "proxyImage": cfg.proxy_image(w),
        "gcsScratchLocation": cfg.cache_location,
        "runWorkload": command,
        "connect": (
            f"isc_pathways.connect(cluster={cfg.cluster_name!r}, project={cfg.project!r}, region={location!r}, "
            f"gcs_bucket={cfg.cache_location!r}, pathways_service={address!r}, "
            f"expected_tpu_instances={{{group.tpu.instance_type!r}: 1}})"
        ),
    }


def coordinator(w: Workload) -> str:
    return coordinator_address(w.name, w.subdomain)


def coordinator_label_value(obj: dict[str, Any]) -> Optional[str]:
    """The coordinator label JobSet puts on its pods, read from a JobSet manifest (None without a coordinator)."""
    spec = obj.get("spec") or {}
    c = spec.get("coordinator") or {}
    if not c:
        return None
    name = (obj.get("metadata") or {}).get("name", "")
    subdomain = (spec.get("network") or {}).get("subdomain")
    return coordinator_label(name, c.get("replicatedJob", ""), c.get("jobIndex", 0), c.get("podIndex", 0), subdomain)


def interactive_access(cfg: StackConfig, w: Workload) -> dict[str, str]:
    """How a notebook reaches an interactive workload's IFRT proxy."""
    ns = cfg.kubernetes.namespace
    return {
        # The head pod's DNS name under the JobSet's headless service: reachable from the Pathways nodes
        # (and network.pathwaysClientRanges) only, the VPC firewall closes port 29000 to the rest.
        "proxyAddress": f"grpc://{coordinator(w)}.{ns}.svc.cluster.local:{PROXY_PORT}",
        "portForward": (
            f"kubectl -n {ns} port-forward $(kubectl -n {ns} get pods -l jobset.sigs.k8s.io/jobset-name={w.name},"
            f"jobset.sigs.k8s.io/replicatedjob-name={HEAD_JOB} -o name) {PROXY_PORT}:{PROXY_PORT}"
        ),
        "notebookEnv": f"JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://127.0.0.1:{PROXY_PORT}",
    }
