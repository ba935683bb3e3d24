"""One Pathways workload: images, head and worker resources, options, and the formulas that derive its facts (what
every mode shares; a mode's own settings are serving.py and service.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Optional

from pydantic import (
    Field,
    field_validator,
)

from components.model import quantity
from components.model.capacity import machines
from components.model.common import (
    DEFAULT_USER_RESOURCES,
    INT32_MAX,
    JETSTREAM_HTTP_RESOURCES,
    MAX_RESTARTS_BOUND,
    MAX_TPU_POOLS,
    PROXY_RESOURCES,
    RESOURCE_MANAGER_RESOURCES,
    UNLIMITED_RESTARTS_PER_HOST,
    _dns_label,
    _Model,
)
from components.model.workloads.images import check_pinned_image
from components.model.workloads.ports import HEAD_NODE_PORTS
from components.model.workloads.service import SharedService
from components.model.workloads.serving import ServeConfig
from components.model.workloads.storage import GCSFUSE_PREFETCH_REQUESTS, GCSFUSE_SIDECAR_REQUESTS, MAX_MOUNTS, Mount, check_mounts

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
# Env the user container gets from the stack; a user value would duplicate or contradict it.
RESERVED_ENV = frozenset({
    "PATHWAYS_HEAD", "JAX_PLATFORMS", "JAX_BACKEND_TARGET", "DATA_LOADER_WORKERS", "ENABLE_PATHWAYS_PERSISTENCE",
    "PATHWAYS_PROFILING_AUTH_TOKEN", "PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS", "PATHWAYS_PROFILING_SERVER_HOST", "PROFILER_PORT", "PROFILE_TRACE_DIR",
})
_SIDECAR_TAG = re.compile(r":[0-9]{8}-python_([0-9.]+)-jax_([0-9.]+)(@sha256:[0-9a-f]{64})?\Z")


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
# 2: usage error; 126: not executable; 127: not found (the shell's); 128: the container's command could not start at
# all: containerd's CRI ends such a container with reason StartError and exit code 128 (containerd
# internal/cri/server helpers.go errorStartReason/errorStartExitCode, "128 is the same with Docker's behavior"; GKE's
# nodes run containerd). None of them is cured by running the program again.
DEFAULT_FAIL_ON_EXIT_CODES = (2, 126, 127, 128)
# podFailurePolicy onExitCodes: 1..255 (0 is refused with operator In), at most 255 values (the Job API): the range
# and uniqueness checks below bound the list.
# JobSet v0.12.0's alpha restart strategy: refused, with the reason (OnFailure._strategy).
ALPHA_RESTART_STRATEGIES = ("InPlaceRestart",)


class OnFailure(_Model):
    """Failure rules: a disruption (preemption, eviction, node maintenance) restarts the JobSet without spending
    maxRestarts; an exit code listed here fails it at once; any other failure restarts it and spends one."""

    fail_on_exit_codes: Optional[list[int]] = Field(default=None, description=(
        "batch: exit codes of the program (the head's jax-program container) that fail the JobSet at once, no "
        "restart. Default [2, 126, 127, 128]: usage error, not executable, not found, the command could not start "
        "(the container runtime's StartError). [] restarts on every exit."))
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
    team: Optional[str] = Field(default=None, description=(
        "The team (pathways:teams) it belongs to: it runs in the team's namespace on the team's queue, under its share "
        "and weight; default: the stack's own queue and namespace."))
    slices: Optional[int] = Field(default=None, ge=1, le=MAX_TPU_POOLS, description=(
        "Slices used; default: all slices of the group (then a change of the group's count replaces the workload: "
        "pin it to keep the run going)."))
    topology: Optional[str] = Field(default=None, max_length=20, description=(
        "On a pool set (slices[].subBlocks): the topology of each slice GKE forms for it, a sub-slice (2x2x1, 2x2x2, "
        "2x2x4, 2x4x4) or a super-slice of whole cubes (4x4x4, 4x4x8, 4x8x8, ...); `slices` of them (default 1). "
        "Changing it reshapes the slice and replaces no node pool. docs/dynamic-slicing.md."))
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
