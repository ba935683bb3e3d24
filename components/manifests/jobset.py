"""Pathways JobSet manifests from the validated config model (pure Python, no Pulumi).

One JobSet per workload: replicatedJob `pathways-head` (resource manager + IFRT proxy, plus the
user's program in batch mode) and `worker` (one pod per TPU host, one Job per slice).
Facts: the JobSet API (v0.12.0), Google's Pathways docs and pathwaysutils 0.1.13's GKE builder.
"""

from __future__ import annotations

from typing import Any, Optional

from components.constants import (
    HEAD_TAINT,
    NODE_POOL_LABEL,
    SLICE_GROUP_LABEL,
    SPOT_LABEL,
    TPU_ACCELERATOR_LABEL,
)
from components.manifests import placement, storage
from components.manifests.formed_slices import formed_slice_request
from components.manifests.kueue_api import queue_labels
from components.model.capacity.pools import Capacity
from components.model.common import PROXY_RESOURCES, RESOURCE_MANAGER_RESOURCES
from components.model.resolved import HEAD_JOB, ResolvedStack, ResolvedWorkload
from components.model.workloads.ports import PROXY_PORT, RM_EXTRA_PORT, RM_PORT, SIDECAR_PORT, WORKER_EXTRA_PORTS, WORKER_PORT
from components.model.workloads.resilience import MTC_CSI_DRIVER, MTC_VOLUME
from components.model.workloads.storage import GCSFUSE_ANNOTATION
from components.model.workloads.teams import TEAM_LABEL
from components.model.workloads.workload import SIDECAR_SHM_DIR, coordinator_label

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KIND = "JobSet"

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
SIDECAR_SHM_ENV = "CLOUD_PATHWAYS_SIDECAR_SHM_DIRECTORY"
SIDECAR_SHM_FLAG = "--cloud_pathways_sidecar_shm_directory"
# pathwaysutils' client finds the sidecar by this container name (gke_utils.get_pathways_service_images).
SIDECAR_CONTAINER = "colocated-python-sidecar"
# Documented JobSet annotations (kubernetes-sigs/jobset, jobset.sigs.k8s.io/*), which Google's
# generators expose to the RM and workers as env.
JOBSET_NAME_ANNOTATION = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_ANNOTATION = "jobset.sigs.k8s.io/replicatedjob-name"


# Failure handling (JobSet v0.12.0 failurePolicy over the Jobs' podFailurePolicy; docs/resilience.md gives the
# sources). A pod the API server marked DisruptionTarget (an eviction, a preemption, a drain for node maintenance)
# fails its Job at once with reason PodFailurePolicy and the message "Pod <ns>/<name> has condition
# DisruptionTarget matching FailJob rule at index 0" (the Job controller's text), which the JobSet rule
# `Disruption` restarts without spending maxRestarts, as JobSet's own host-maintenance example does. The batch
# program's listed exit codes fail the head Job with "Container jax-program for pod <ns>/<name> failed with exit
# code <n> matching FailJob rule at index 1", which `ProgramError` turns into a failed JobSet. Anything else (a
# crash past the Job's backoffLimit) falls to JobSet's default action, RestartJobSet, which spends one.
DISRUPTION_CONDITION = "DisruptionTarget"
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
DISRUPTION_RULE = "Disruption"
PROGRAM_ERROR_RULE = "ProgramError"
DISRUPTION_MESSAGE_PATTERN = f"has condition {DISRUPTION_CONDITION} matching FailJob rule"
USER_CONTAINER = "jax-program"
PROGRAM_ERROR_MESSAGE_PATTERN = rf"^Container {USER_CONTAINER} for pod \S+ failed with exit code [0-9]+ matching FailJob rule"
# GKE's cluster autoscaler never removes a node to evict a pod that says so (cluster-autoscaler FAQ, "What types
# of pods can prevent CA from removing a node?"): a long-running Pathways pod is not moved to save a node.
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
POD_ANNOTATIONS = {SAFE_TO_EVICT: "false"}


def pod_failure_policy(on_disruption: str, exit_codes: tuple[int, ...] = ()) -> dict[str, Any]:
    """A Job's podFailurePolicy: the disruption rule first (an evicted pod's containers exit too), then the
    program's exit codes."""
    rules: list[dict[str, Any]] = [
        {"action": on_disruption, "onPodConditions": [{"type": DISRUPTION_CONDITION, "status": "True"}]}]
    if exit_codes:
        rules.append({"action": "FailJob", "onExitCodes": {"containerName": USER_CONTAINER, "operator": "In", "values": list(exit_codes)}})
    return {"rules": rules}


def failure_policy(w: ResolvedWorkload) -> dict[str, Any]:
    on_failure = w.spec.on_failure
    if on_failure is None:
        return {"maxRestarts": w.restarts}
    rules: list[dict[str, Any]] = [{
        "name": DISRUPTION_RULE, "action": "RestartJobSetAndIgnoreMaxRestarts",
        "onJobFailureReasons": [POD_FAILURE_POLICY_REASON], "onJobFailureMessagePatterns": [DISRUPTION_MESSAGE_PATTERN],
    }]
    if w.fail_on_exit_codes:
        rules.append({
            "name": PROGRAM_ERROR_RULE, "action": "FailJobSet", "targetReplicatedJobs": [HEAD_JOB],
            "onJobFailureReasons": [POD_FAILURE_POLICY_REASON], "onJobFailureMessagePatterns": [PROGRAM_ERROR_MESSAGE_PATTERN],
        })
    return {"maxRestarts": w.restarts, "restartStrategy": on_failure.restart_strategy, "rules": rules}


def _label_env(name: str, label: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def _annotation_env(name: str, annotation: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}}}


JOBSET_IDENTITY_ENV = (
    _annotation_env("JOBSET_NAME", JOBSET_NAME_ANNOTATION),
    _annotation_env("REPLICATED_JOB_NAME", REPLICATED_JOB_ANNOTATION),
)


def user_env(w: ResolvedWorkload) -> list[dict[str, Any]]:
    """The workload's own env: plain values, or references into its Secret when they were secret."""
    if w.env_secret:
        return [{"name": k, "valueFrom": {"secretKeyRef": {"name": w.env_secret, "key": k}}} for k in sorted(w.spec.env)]
    return [{"name": k, "value": v} for k, v in sorted(w.spec.env.items())]


def guaranteed_resources(cpu: str, memory: str, extra: Optional[dict[str, Any]] = None) -> dict[str, Any]:
    # requests = limits: Guaranteed QoS, so the head pod is the last thing evicted on its node.
    amounts = {"cpu": cpu, "memory": memory, **(extra or {})}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _ports(*ports: int) -> list[dict[str, Any]]:
    return [{"containerPort": p, "protocol": "TCP"} for p in ports]


def _shm_volume(size: str) -> dict[str, Any]:
    return {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": size}}


SHM_MOUNT = {"name": SHM_VOLUME, "mountPath": "/dev/shm"}

# Security contexts. Every pod: the runtime's default seccomp profile. Every container: no privilege
# escalation (setuid binaries gain nothing). The IFRT proxy runs exactly as Google runs it for the Shared
# Pathways Service: rootless, no capabilities (pathwaysutils 0.1.13 shared_pathways_service/yamls/
# pw-proxy.yaml); the user's program, the colocated sidecar and the resource manager (a CPU-only gRPC
# server on ports above 1024) drop every capability too. The TPU workers run the server image as root
# (Google publishes no rootless worker) and keep only the capabilities a root process needs for files it
# does not own (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, SETUID, SETGID); NET_RAW, which on the host network
# would let a compromised worker forge traffic, and the rest of the runtime's defaults are dropped.
POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}
NO_ESCALATION = {"allowPrivilegeEscalation": False}
DROP_ALL = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
ROOTLESS = {**DROP_ALL, "runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}
WORKER_DROPPED_CAPABILITIES = ("AUDIT_WRITE", "KILL", "MKNOD", "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETPCAP", "SYS_CHROOT")
WORKER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": list(WORKER_DROPPED_CAPABILITIES)}}


def _pod_common(w: ResolvedWorkload) -> dict[str, Any]:
    """Pod fields every Pathways pod shares."""
    return {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        # Pathways never calls the Kubernetes API: no token in the pod to steal.
        "automountServiceAccountToken": False,
        "priorityClassName": f"pathways-{w.priority}",
        "terminationGracePeriodSeconds": w.spec.termination_grace_period_seconds,
        "securityContext": dict(POD_SECURITY),
    }


def resource_manager(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    return {
        "name": "pathways-rm",
        "image": w.server_image,
        "args": [
            f"--server_port={RM_PORT}",
            "--node_type=resource_manager",
            f"--instance_count={w.slices}",
            f"--instance_type={w.tpu.instance_type}",
            f"--gcs_scratch_location={w.cache_location}",
        ],
        "env": [
            _label_env("HOST_ADDRESS", COORDINATOR_LABEL), {"name": "TPU_SKIP_MDS_QUERY", "value": "true"}, *JOBSET_IDENTITY_ENV,
        ],
        "ports": _ports(RM_PORT, RM_EXTRA_PORT),
        "resources": guaranteed_resources(*RESOURCE_MANAGER_RESOURCES),
        "securityContext": DROP_ALL,
    }


def hlo_dump_location(stack: ResolvedStack, w: ResolvedWorkload) -> str:
    return f"{w.artifacts_location}/{w.name}/hlo/"


def proxy(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    args = [
        f"--server_port={PROXY_PORT}",
        f"--resource_manager_address=$(PATHWAYS_HEAD):{RM_PORT}",
        f"--gcs_scratch_location={w.cache_location}",
        *w.spec.xla_flags,
    ]
    if w.spec.hlo_dump:
        args.append(f"--xla_dump_to={hlo_dump_location(stack, w)}")
    if w.spec.elastic:
        args.append(f"--num_elastic_slices={w.spec.elastic.max_missing_slices}")
    return {
        "name": "pathways-proxy",
        "image": w.proxy_image,
        "args": args,
        "env": [_label_env("PATHWAYS_HEAD", COORDINATOR_LABEL)],
        "ports": _ports(PROXY_PORT),
        "resources": guaranteed_resources(*PROXY_RESOURCES),
        "securityContext": ROOTLESS,
    }


def user_container(stack: ResolvedStack, rw: ResolvedWorkload) -> dict[str, Any]:
    w = rw.spec
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
        profile_dir = f"{rw.artifacts_location}/{w.name}/profiles/"
        # a declared workload's server checks the stack's token; an ad-hoc run holds no Secret, so its server listens
        # on the head node's loopback alone (pathwaysutils' PATHWAYS_PROFILING_SERVER_HOST), reached through
        # `kubectl port-forward`, which the API server authorizes (python -m infra.run profile)
        access = ([{"name": "PATHWAYS_PROFILING_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": rw.profiling_secret, "key": PROFILING_TOKEN_KEY}}}]
                  if rw.profiling_secret else [{"name": "PATHWAYS_PROFILING_SERVER_HOST", "value": "127.0.0.1"}])
        env += [
            *access,
            # Exact gs:// paths: pathwaysutils (>= 0.1.12, profiling.py) refuses anything not gs:// and
        # matches by prefix, so a bare bucket name fails and gs://b would admit gs://b-other.
        {"name": "PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS", "value": profile_dir},
            {"name": "PROFILER_PORT", "value": str(w.profiling.port)},
            {"name": "PROFILE_TRACE_DIR", "value": profile_dir},
        ]
        ports.append(w.profiling.port)
    env += user_env(rw)
    container: dict[str, Any] = {"name": USER_CONTAINER, "image": w.image}
    if w.command:
        container["command"] = list(w.command)
    if w.args:
        container["args"] = list(w.args)
    container.update({
        "env": env,
        "resources": guaranteed_resources(w.cpu, w.memory),
        "volumeMounts": [SHM_MOUNT],
        "securityContext": DROP_ALL,
    })
    if ports:
        container["ports"] = _ports(*ports)
    return container


def head_job(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    rm, px = resource_manager(stack, w), proxy(stack, w)
    pod: dict[str, Any] = {
        **_pod_common(w),
        "restartPolicy": "Never",
        "nodeSelector": placement.head_selector(stack),
        # Never a TPU VM. Said for Kueue: it matches a PodSet against a flavor by the flavor's own nodeLabels keys
        # only (v0.19.2 flavorassigner.go, flavorSelector), so the role selector alone let a head PodSet fit a
        # TPU flavor's cpu and memory quota whenever the head flavor's was held, and that head never ran
        # (found by the real-engine tier, prod -> staging). TPU flavors carry this key; head nodes lack it.
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": TPU_ACCELERATOR_LABEL, "operator": "DoesNotExist"}]}]}}},
        "tolerations": [{"key": HEAD_TAINT[0], "operator": "Equal", "value": HEAD_TAINT[1], "effect": "NoSchedule"}],
    }
    if w.mode == "service":
        # Shared Pathways Service: the RM alone; each client brings its own IFRT proxy (pathwaysutils
        # 0.1.13 experimental/gke/jobset.py, shared_pathways_service=True).
        pod["containers"] = [rm]
    elif w.mode == "batch":
        # Native sidecars: RM and proxy stop with the pod, so the head Job completes when the program exits.
        pod["initContainers"] = [{**rm, "restartPolicy": "Always"}, {**px, "restartPolicy": "Always"}]
        program = user_container(stack, w)
        volumes, mounts = storage.pod_mounts(stack, w, workers=False)
        program["volumeMounts"] += mounts
        pod["containers"] = [program]
        pod["volumes"] = [_shm_volume(w.spec.shm_size), *volumes]
    else:
        # Headless: regular containers, which must not carry restartPolicy.
        pod["containers"] = [rm, px]
    _storage_identity(w, pod, workers=False)
    return {
        "name": HEAD_JOB,
        "replicas": 1,
        "template": {
            "metadata": {"annotations": {EXCLUSIVE_TOPOLOGY: "kubernetes.io/hostname"}},
            "spec": {
                "backoffLimit": 0,
                **({"podFailurePolicy": pod_failure_policy("FailJob", w.fail_on_exit_codes)} if w.spec.on_failure else {}),
                "completionMode": "Indexed",
                "completions": 1,
                "parallelism": 1,
                "template": {"metadata": {"labels": {WORKLOAD_LABEL: w.name, **team_labels(w)}, "annotations": pod_annotations(w, workers=False)}, "spec": pod},
            },
        },
    }


def pod_annotations(w: ResolvedWorkload, *, workers: bool) -> dict[str, str]:
    """Every Pathways pod's, and the one that has GKE's Cloud Storage FUSE webhook add its sidecar to a pod that
    mounts a bucket."""
    return {**POD_ANNOTATIONS, **({GCSFUSE_ANNOTATION: "true"} if storage.mounts_buckets(w, workers=workers) else {})}


def _storage_identity(w: ResolvedWorkload, pod: dict[str, Any], *, workers: bool) -> None:
    """A pod that mounts a bucket runs as the workload's Kubernetes service account (its bucket grants' principal)."""
    if w.service_account and storage.mounts_buckets(w, workers=workers):
        pod["serviceAccountName"] = w.service_account


def worker_job(stack: ResolvedStack, rw: ResolvedWorkload) -> dict[str, Any]:
    w, tpu = rw.spec, rw.tpu
    args = [
        f"--server_port={WORKER_PORT}",
        f"--resource_manager_address=$(PATHWAYS_HEAD):{RM_PORT}",
        f"--gcs_scratch_location={rw.cache_location}",
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
        "image": rw.server_image,
        "args": args,
        "env": env,
        "ports": _ports(WORKER_PORT, *WORKER_EXTRA_PORTS),
        # The TPU chips of the whole VM, and no CPU or memory request, as every peer does (xpk, Google's
        # PathwaysJob and pathwaysutils builders): one worker owns its TPU VM (the TPU request and the
        # exclusive-topology annotation keep others off), and a CPU or memory request near the VM's size
        # would leave the worker Pending whenever GKE's reservations or its own DaemonSets on TPU nodes
        # grow (README, "Worker resources").
        "resources": {"requests": {TPU_RESOURCE: tpu_chips}, "limits": {TPU_RESOURCE: tpu_chips}},
        "securityContext": WORKER_SECURITY,
    }
    tolerations = [{"key": TPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    if rw.group.capacity is Capacity.SPOT:
        tolerations.append({"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    pod: dict[str, Any] = {
        **_pod_common(rw),
        # As every peer (xpk, PathwaysJob, pathwaysutils): a crashed worker restarts in place on its TPU host,
        # counted against backoffLimit. With failure rules, Never: the Job API takes a podFailurePolicy only with
        # Never; a crashed worker is then replaced by a new pod, counted the same, which JobSet's exclusive
        # placement (a required affinity to its Job's other pods) puts back on its slice's node pool.
        "restartPolicy": "Never" if w.on_failure else "OnFailure",
        "nodeSelector": placement.group_selector(rw.group),
        "tolerations": tolerations,
        "containers": [worker],
    }
    pools = placement.pool_affinity(rw.group)
    if pools is not None:
        pod["affinity"] = pools
    slice_request = formed_slice_request(rw)
    if slice_request:
        pod["affinity"] = slice_request[1]
    if len(rw.rungs) > 1:
        # A capacity ladder: the workers may run on any rung, and Kueue picks one (the first flavor in the ClusterQueue's
        # order with room) and writes that flavor's nodeLabels (its slice group) and tolerations into the template on
        # admission. Kueue matches a PodSet to a flavor by its nodeSelector and required node affinity restricted to the
        # flavor's label keys (pkg/scheduler/flavorassigner), so the group is given as a set, not one value.
        del pod["nodeSelector"][SLICE_GROUP_LABEL]
        pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": SLICE_GROUP_LABEL, "operator": "In", "values": [g.name for g in rw.rungs]}]}]}}}
    if w.colocated_python:
        sc = w.colocated_python
        shm_env = {"name": SIDECAR_SHM_ENV, "value": SIDECAR_SHM_DIR}
        shm_mount = {"name": SIDECAR_SHM_VOLUME, "mountPath": SIDECAR_SHM_DIR}
        args.append(f"{SIDECAR_SHM_FLAG}={SIDECAR_SHM_DIR}")
        env.append(shm_env)
        worker["volumeMounts"] = [shm_mount]
        pod["initContainers"] = [{
            "name": SIDECAR_CONTAINER,
            "image": sc.image,
            "restartPolicy": "Always",
            "env": [{"name": "GRPC_SERVER_ADDRESS", "value": f"0.0.0.0:{SIDECAR_PORT}"}, shm_env],
            "ports": _ports(SIDECAR_PORT),
            "resources": {"requests": {"cpu": sc.cpu, "memory": sc.memory}, "limits": {"memory": sc.memory}},
            "volumeMounts": [shm_mount],
            "securityContext": DROP_ALL,
        }]
        # Bounded, and counted: the shared directory is memory-backed.
        pod["volumes"] = [{"name": SIDECAR_SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": sc.shm_size}}]
        if rw.mtc_mount_path:
            # Multi-tier checkpointing: GKE's checkpointing driver serves the host's RAM disk as an inline CSI volume
            # (its CheckpointConfiguration sizes it); Orbax writes the local checkpoints from the sidecar, and the
            # worker sees them too, as Cluster Toolkit mounts it (resilience.py has the sources).
            mtc_mount = {"name": MTC_VOLUME, "mountPath": rw.mtc_mount_path}
            worker["volumeMounts"].append(mtc_mount)
            pod["initContainers"][0]["volumeMounts"].append(dict(mtc_mount))
            pod["volumes"].append({"name": MTC_VOLUME, "csi": {"driver": MTC_CSI_DRIVER}})
    volumes, mounts = storage.pod_mounts(stack, rw, workers=True)
    if volumes:
        # The Pathways server, and the colocated-Python sidecar that loads data on the TPU host, see the same mounts.
        for container in [worker, *pod.get("initContainers", [])]:
            container["volumeMounts"] = [*container.get("volumeMounts", []), *(dict(m) for m in mounts)]
        pod["volumes"] = [*pod.get("volumes", []), *volumes]
    _storage_identity(rw, pod, workers=True)
    return {
        "name": rw.worker_job,
        "replicas": rw.slices,
        "template": {
            # a slice of its own node pool each; slices formed on a pool set share its cubes' pools instead
            **({} if slice_request else {"metadata": {"annotations": {EXCLUSIVE_TOPOLOGY: NODE_POOL_LABEL}}}),
            "spec": {
                "backoffLimit": rw.worker_backoff_limit,
                # An elastic workload keeps running without the slice: its disrupted worker is replaced when the
                # slice's VMs return, without spending backoffLimit (Ignore); any other restarts the JobSet.
                **({"podFailurePolicy": pod_failure_policy("Ignore" if w.elastic else "FailJob")} if w.on_failure else {}),
                "completionMode": "Indexed",
                "completions": tpu.hosts,
                "parallelism": tpu.hosts,
                "template": {"metadata": {"labels": {WORKLOAD_LABEL: w.name, **team_labels(rw)}, "annotations": {
                    **pod_annotations(rw, workers=True), **(slice_request[0] if slice_request else {})}}, "spec": pod},
            },
        },
    }


def jobset(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    """The JobSet for one workload."""
    network: dict[str, Any] = {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    if w.spec.subdomain:
        network["subdomain"] = w.spec.subdomain
    spec: dict[str, Any] = {
        "coordinator": {"replicatedJob": HEAD_JOB, "jobIndex": 0, "podIndex": 0},
        "network": network,
        "startupPolicy": {"startupPolicyOrder": "InOrder"},
        "failurePolicy": failure_policy(w),
        "replicatedJobs": [head_job(stack, w), worker_job(stack, w)],
    }
    if w.state == "suspended" and w.local_queue is None:
        # The one spec field JobSet lets change in place. With Kueue, Kueue owns it (it un-suspends every
        # job it admits): the workload's LocalQueue holds it instead (manifests/kueue.py).
        spec["suspend"] = True
    if w.mode == "batch":
        spec["successPolicy"] = {"operator": "All", "targetReplicatedJobs": [HEAD_JOB]}
        if w.spec.ttl_seconds_after_finished is not None:
            spec["ttlSecondsAfterFinished"] = w.spec.ttl_seconds_after_finished
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": workload_metadata(w),
        "spec": spec,
    }


def team_labels(w: ResolvedWorkload) -> dict[str, str]:
    """pathways/team=<team> on a team's workload and its pods (pathways:teams): GKE's cost allocation splits by it."""
    return {TEAM_LABEL: w.spec.team} if w.spec.team else {}


def workload_metadata(w: ResolvedWorkload, annotations: Optional[dict[str, str]] = None) -> dict[str, Any]:
    """A workload object's metadata (JobSet or LeaderWorkerSet): its name, namespace and labels."""
    return {
        "name": w.name,
        "namespace": w.namespace,
        **({"annotations": annotations} if annotations else {}),
        "labels": {
            WORKLOAD_LABEL: w.name, "app.kubernetes.io/managed-by": "pulumi", **team_labels(w),
            # Queued by Kueue: admitted all-or-nothing when its slices are free (manifests/kueue.py).
            **(queue_labels(w) if w.local_queue else {}),
        },
    }


# JobSet's spec is immutable once created except `suspend` (the JobSet webhook): a change to any of
# these replaces the JobSet (old one first), while suspend/resume updates it in place.
IMMUTABLE_SPEC_FIELDS = (
    "replicatedJobs", "network", "successPolicy", "failurePolicy", "startupPolicy", "coordinator",
    "managedBy", "ttlSecondsAfterFinished",
)


def coordinator_label_value(obj: dict[str, Any]) -> Optional[str]:
    """The coordinator label JobSet puts on its pods, read from a JobSet manifest (None without a coordinator)."""
    spec = obj.get("spec") or {}
    c = spec.get("coordinator") or {}
    if not c:
        return None
    name = (obj.get("metadata") or {}).get("name", "")
    subdomain = (spec.get("network") or {}).get("subdomain")
    return coordinator_label(name, c.get("replicatedJob", ""), c.get("jobIndex", 0), c.get("podIndex", 0), subdomain)
