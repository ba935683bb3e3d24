"""Rules of the workloads (their schema: ``workload``) that span keys: names and Services unique in the stack,
a slice group that exists, the JobSet head's labels and containers, the sidecar, images of one release, what
each mode takes. Each with its source; registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

from typing import Optional

from components.model import quantity
from components.model.errors import Problem, config_key
from components.model.resolved import proxy_image, server_image
from components.model.stack import StackConfig
from components.model.workloads.images import derived_proxy_image, image_tag
from components.model.workloads.workload import MAX_LABEL_VALUE, Workload, coordinator_address, serve_service_name

# --- every workload, whatever its slice group ------------------------------------------------


def _service_owners(cfg: StackConfig, upto: int) -> dict[tuple[str, str], int]:
    """(namespace, Service name) -> the first of workloads[:upto] that makes it: each active JobSet's headless
    Service (named after its subdomain) and each active serve workload's HTTP Service."""
    owners: dict[tuple[str, str], int] = {}
    for j, x in enumerate(cfg.workloads[:upto]):
        if x.state != "finished":
            owners.setdefault((cfg.workload_namespace(x), x.subdomain or x.name), j)
            if x.mode == "serve":
                owners.setdefault((cfg.workload_namespace(x), serve_service_name(x.name)), j)
    return owners


def _first_named(cfg: StackConfig, name: str, upto: int) -> Optional[int]:
    return next((j for j, x in enumerate(cfg.workloads[:upto]) if x.name == name), None)


def unique_services(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """One Service a name in a namespace: JobSet makes a headless Service named after the subdomain, so two JobSets
    sharing one fight over it and one loses its pods' DNS names; a serve workload adds its HTTP Service beside it."""
    if w.state == "finished":
        return []
    problems = []
    owners = _service_owners(cfg, i)
    sub = (cfg.workload_namespace(w), w.subdomain or w.name)
    if sub in owners and _first_named(cfg, w.name, i) is None:  # a repeated name is reported once, as a name
        problems.append(Problem(config_key(("workloads", i, "subdomain")), (
            f"{sub[1]!r} is workloads[{owners[sub]}]'s subdomain too; each JobSet's headless Service is named after its "
            "subdomain, so give each workload its own"
        )))
    owners.setdefault(sub, i)
    if w.mode == "serve":
        # A serve workload's HTTP Service, beside the headless one LWS names after it.
        http = (cfg.workload_namespace(w), serve_service_name(w.name))
        if http in owners:
            problems.append(Problem(config_key(("workloads", i, "name")), (
                f"its HTTP Service {http[1]!r} is workloads[{owners[http]}]'s headless Service too; rename one"
            )))
    return problems


def unique_names(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """A workload's name names its JobSet or LeaderWorkerSet, queue and Secrets: one workload a name."""
    first = _first_named(cfg, w.name, i)
    if first is None:
        return []
    return [Problem(config_key(("workloads", i, "name")), f"{w.name!r} is already used by workloads[{first}]; workload names must be unique")]


def slice_group(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """sliceGroup names a group; it may be left out when there is only one. The rules after it need the group."""
    names = ", ".join(dict.fromkeys(g.name for g in cfg.slices))
    if w.slice_group is None and len(cfg.slices) > 1:
        return [Problem(config_key(("workloads", i, "sliceGroup")), f"required when there are several slice groups; valid: {names}")]
    if w.slice_group is not None and all(g.name != w.slice_group for g in cfg.slices):
        return [Problem(config_key(("workloads", i, "sliceGroup")), f"{w.slice_group!r} is not a slice group; valid: {names}")]
    return []


# --- a workload on its slice group --------------------------------------------------------


def coordinator_label(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """JobSet labels every pod with the coordinator's DNS name, a label value of at most 63 characters (Kubernetes)."""
    coordinator = coordinator_address(w.name, w.subdomain)
    if w.mode == "serve" or len(coordinator) <= MAX_LABEL_VALUE:
        return []
    room = MAX_LABEL_VALUE - len(f"{w.name}-pathways-head-0-0.")  # what a subdomain may take
    hint = (
        f"use a name of at most 22 characters, or set workloads[{i}].subdomain to at most {room} characters"
        if w.subdomain is None and room > 0
        else "use a shorter name or subdomain"
    )
    key = ("workloads", i, "subdomain" if w.subdomain else "name")
    return [Problem(config_key(key), (
        f"the coordinator label {coordinator!r} would be {len(coordinator)} characters, over Kubernetes' "
        f"{MAX_LABEL_VALUE} for a label value (JobSet rejects it); {hint}"
    ))]


def user_container(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """A batch user container's data loaders fit its CPU limit, and its memory-backed /dev/shm its memory limit."""
    if w.mode != "batch":
        return []
    problems = []
    cpu_limit = quantity.parse(w.cpu)
    if w.data_loader_workers > cpu_limit:
        problems.append(Problem(config_key(("workloads", i, "dataLoaderWorkers")), (
            f"{w.data_loader_workers} exceeds the user container's CPU limit of {w.cpu}; use at most "
            f"{int(cpu_limit)} or raise workloads[{i}].cpu"
        )))
    if w.shm_bytes > quantity.parse(w.memory):
        problems.append(Problem(config_key(("workloads", i, "shmSize")), (
            f"{w.shm_size} exceeds the user container's memory limit {w.memory} (a memory-backed /dev/shm counts against it)"
        )))
    return problems


def elastic(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """elastic.maxMissingSlices is at most the workload's slices."""
    if not w.elastic or w.elastic.max_missing_slices <= cfg.workload_slices(w):
        return []
    # pathwaysutils 0.1.13 experimental/gke/jobset.py refuses elastic_slices > num_slices (0 < N <= slices); N = slices is its
    # own fixture (model_lite_tpuv5e_4x8.yaml): the job waits for any slice to come back.
    n = cfg.workload_slices(w)
    return [Problem(config_key(("workloads", i, "elastic", "maxMissingSlices")), (
        f"{w.elastic.max_missing_slices} is more than the workload's {n} slice(s) (it is how many slices the job may "
        f"lose and keep running); use 1..{n}"
    ))]


def sidecar_room(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """The colocated-Python sidecar leaves the Pathways worker at least half of its TPU VM (machines.py)."""
    if not w.colocated_python:
        return []
    r = cfg.worker_resources(w)
    sc = w.colocated_python
    if r.sidecar_cpu * 2 <= r.vm_cpu and (r.sidecar_memory_gib + r.shm_gib) * 2 <= r.vm_memory_gib:
        return []
    machine = cfg.workload_group(w).tpu.machine_type
    return [Problem(config_key(("workloads", i, "colocatedPython")), (
        f"cpu {sc.cpu}, memory {sc.memory} + shmSize {sc.shm_size} leave the Pathways worker less than half of a "
        f"{machine} ({r.vm_cpu:.0f} vCPU, {r.vm_memory_gib:.0f} GiB allocatable); use at most "
        f"{int(r.vm_cpu / 2)} CPU and {int(r.vm_memory_gib / 2)}Gi for memory + shmSize together"
    ))]


def same_release_images(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """The IFRT proxy must come from the same Pathways release as the server (RM and workers)."""
    key = config_key(("workloads", i, "proxyImage"))
    if w.server_image and not w.proxy_image and derived_proxy_image(w.server_image) is None:
        return [Problem(key, (
            f"required when serverImage is {w.server_image!r}: no same-release proxy_server image can be derived "
            "from a digest or a path not ending in /server; give the proxy_server image of the same release"
        ))]
    server, proxy = server_image(cfg.pathways_version, w), proxy_image(cfg.pathways_version, w)
    s_tag, p_tag = image_tag(server), image_tag(proxy)
    if s_tag != p_tag and (s_tag or p_tag) and (w.server_image or w.proxy_image):
        if s_tag and p_tag:
            why = f"its tag {p_tag} differs from the server's {s_tag}"
        else:
            why = "one of the two is given by digest only, so their release cannot be compared; give both by tag (name:tag or name:tag@sha256:...)"
        return [Problem(key, f"{proxy!r} is not from the server's release ({server}): {why}; the proxy and server must match")]
    return []


def sidecar_jax(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """The sidecar image is built for one JAX (its tag ends in -jax_<version>): the program's, pathwaysVersion's."""
    if not (w.colocated_python and cfg.jax_version and w.colocated_python.jax_version != cfg.jax_version):
        return []
    return [Problem(config_key(("workloads", i, "colocatedPython", "image")), (
        f"the sidecar is built for JAX {w.colocated_python.jax_version} but pathwaysVersion is {cfg.pathways_version}; "
        f"use a sidecar tag ending in -jax_{cfg.jax_version}"
    ))]


def finished_state(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """state: finished is for batch runs; an endpoint is suspended or removed."""
    if w.mode == "batch" or w.state != "finished":
        return []
    return [Problem(config_key(("workloads", i, "state")), (
        f"finished is for batch runs; an {w.mode} workload is suspended (state: suspended) or removed"
    ))]


# XLA flags the stack writes from a typed key (manifests/jobset.py proxy, lws.py): given in xlaFlags too, the proxy
# would take whichever comes last, silently (#76.3)
XLA_FLAGS_OF_KEYS = {"--xla_dump_to": ("hloDump", lambda w: w.hlo_dump)}


def xla_flags(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """Each XLA flag once, and none the stack sets from a typed key."""
    problems = []
    seen: dict[str, int] = {}
    for j, flag in enumerate(w.xla_flags):
        name = flag.partition("=")[0]
        key = config_key(("workloads", i, "xlaFlags", j))
        if name in seen:
            problems.append(Problem(key, f"{name} is given twice (also xlaFlags[{seen[name]}]); the proxy would take the last silently"))
        seen.setdefault(name, j)
        typed = XLA_FLAGS_OF_KEYS.get(name)
        if typed is not None and typed[1](w):
            problems.append(Problem(key, f"{name} is set by the stack from {typed[0]}: true; remove one of them"))
    return problems


def interactive_keys(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """profiling and persistence configure the user container, which only batch workloads have."""
    if w.mode == "interactive" and (w.profiling or w.persistence):
        return [Problem(config_key(("workloads", i, "mode")), "profiling and persistence configure the user container, which interactive workloads do not have")]
    return []


def batch_image(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """A batch workload runs the user's program: its image is required."""
    if w.mode == "batch" and not w.image:
        return [Problem(config_key(("workloads", i, "image")), "required for a batch workload (the user program's image)")]
    return []


def user_container_keys(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """env, image, command and args configure the user container, which only batch workloads have."""
    if w.mode == "batch":
        return []
    problems = []
    if w.env:
        problems.append(Problem(config_key(("workloads", i, "env")), (
            f"{w.mode} workloads run no user container, so env would reach nothing; remove it or use mode: batch"
        )))
    if w.image or w.command or w.args:
        problems.append(Problem(config_key(("workloads", i, "mode")), f"{w.mode} workloads run no user container; remove image, command and args or use mode: batch"))
    return problems


def on_failure_keys(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """failOnExitCodes judges the program's exit, which only a batch workload's head runs; a serve workload is a
    LeaderWorkerSet, which recreates a failed group and has no failure policy."""
    if w.on_failure is None:
        return []
    if w.mode == "serve":
        return [Problem(config_key(("workloads", i, "onFailure")), (
            "serve workloads are LeaderWorkerSets, which recreate a group whose pod fails and take no failure rules; remove it"))]
    if w.mode != "batch" and w.on_failure.fail_on_exit_codes is not None:
        return [Problem(config_key(("workloads", i, "onFailure", "failOnExitCodes")), (
            f"{w.mode} workloads run no program of their own, so no exit code is theirs to judge; remove it or use mode: batch"))]
    return []


# --- the workloads together ------------------------------------------------------------------


def pathways_version(cfg: StackConfig) -> list[Problem]:
    """Workloads run the Pathways images of pathwaysVersion (jax-<version>, the program's JAX)."""
    # a serve workload on the direct runtime runs no Pathways image (serving.py ServeConfig.runtime)
    if any(not (w.serve is not None and w.mode == "serve" and w.serve.direct) for w in cfg.workloads) and cfg.pathways_version is None:
        return [Problem(config_key(("pathwaysVersion",)), "required when workloads are set; use the jax-<version> tag matching your program's JAX, e.g. jax-0.9.0")]
    return []
