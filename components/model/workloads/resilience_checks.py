"""Rules of resilience.mtc that span keys (sources in resilience.py and docs/resilience.md)."""

from __future__ import annotations

from components.model.errors import Problem, config_key
from components.model.stack import StackConfig

MTC_KEY = ("resilience", "mtc")


def mtc_sidecar(cfg: StackConfig) -> list[Problem]:
    """On Pathways, Orbax sets multi-tier checkpointing up and writes the local checkpoints from the colocated-Python
    sidecar (Orbax initialize_multi_tier_checkpointing(use_colocated_python=True); MaxText's guide: "Pathways MTC
    uses Colocated Python"): every batch workload that mounts the RAM disk needs one."""
    return [
        Problem(config_key(("workloads", i, "colocatedPython")), (
            "required with resilience.mtc: on Pathways the multi-tier checkpoints are written from the colocated-Python "
            "sidecar (Orbax, use_colocated_python); give colocatedPython.image, built for the program's JAX"
        ))
        for i, w in enumerate(cfg.workloads) if cfg.uses_mtc(w) and w.colocated_python is None
    ]


def mtc_ram_disk(cfg: StackConfig) -> list[Problem]:
    """The RAM disk is the TPU VM's memory, like the sidecar's and the shared directory's: together they leave the
    Pathways worker at least half of the VM (the sidecar_room rule's bound)."""
    mtc = cfg.resilience.mtc
    if mtc is None:
        return []
    problems = []
    for w in cfg.workloads:
        if not cfg.uses_mtc(w) or w.colocated_python is None:
            continue
        r = cfg.worker_resources(w)
        if (r.sidecar_memory_gib + r.shm_gib + mtc.size_gib) * 2 <= r.vm_memory_gib:
            continue
        machine = cfg.workload_group(w).tpu.machine_type
        room = int(r.vm_memory_gib / 2 - r.sidecar_memory_gib - r.shm_gib)
        problems.append(Problem(config_key((*MTC_KEY, "inMemoryVolumeSize")), (
            f"{mtc.in_memory_volume_size} with workload {w.name}'s sidecar ({w.colocated_python.memory} + shmSize "
            f"{w.colocated_python.shm_size}) leaves its Pathways worker less than half of a {machine} "
            f"({r.vm_memory_gib:.0f} GiB allocatable); use at most {max(room, 0)}Gi"
        )))
        break  # one message: the size is one key
    return problems


def mtc_existing_cluster(cfg: StackConfig) -> list[Problem]:
    """On a cluster made elsewhere the stack creates no bucket: the backups' bucket is named."""
    mtc = cfg.resilience.mtc
    if mtc is None or cfg.cluster.existing is None or mtc.bucket is not None:
        return []
    return [Problem(config_key((*MTC_KEY, "bucket")), (
        "required with cluster.existing: the stack creates no bucket there; name the hierarchical-namespace bucket "
        "the checkpoints are backed up to (GKE's checkpointing driver needs roles/storage.objectUser on it)"
    ))]


def mtc_bucket_apart(cfg: StackConfig) -> list[Problem]:
    """The backups' bucket is neither the scratch nor the artifacts bucket: it needs a hierarchical namespace, which
    a bucket gets only at creation, and the artifacts bucket's TTL would delete checkpoints."""
    name = cfg.mtc_bucket_name
    if name is None or name not in (cfg.bucket_name, cfg.artifacts_bucket_name):
        return []
    return [Problem(config_key((*MTC_KEY, "bucket")), (
        f"{name!r} is the stack's scratch or artifacts bucket; the checkpoints need a bucket of their own "
        "(hierarchical namespace, no TTL): name another or leave it out (<bucket.name>-checkpoints)"
    ))]


RULES = (mtc_sidecar, mtc_ram_disk, mtc_existing_cluster, mtc_bucket_apart)
