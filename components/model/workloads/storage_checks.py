"""Rules of storage mounts that span keys (storage.py)."""

from __future__ import annotations

from components.model.errors import Problem, config_key
from components.model.stack import StackConfig
from components.model.workloads.workload import SIDECAR_SHM_DIR


def mounts(cfg: StackConfig) -> list[Problem]:
    """Mounts go where a program runs (batch), name a declared file system, and keep clear of the paths the stack
    mounts on the workers itself."""
    problems: list[Problem] = []
    names = [f.name for f in cfg.storage.file_systems]
    for i, w in enumerate(cfg.workloads):
        if not w.mounts:
            continue
        key = ("workloads", i, "mounts")
        if w.mode != "batch":
            problems.append(Problem(config_key(key), (
                f"mode {w.mode} has no program of the user's to mount storage into (the head runs Pathways' own "
                "containers only); mount it in a batch workload, or in a batch run with the notebook")))
            continue
        for j, m in enumerate(w.mounts):
            if m.file_system is not None and m.file_system not in names:
                valid = ", ".join(names) if names else "none: declare it in pathways:storage.fileSystems"
                problems.append(Problem(config_key((*key, j, "fileSystem")), (
                    f"{m.file_system!r} is not a file system of pathways:storage.fileSystems (declared: {valid})")))
            if not m.on_workers:
                continue
            # what the stack itself mounts on the workers: the API server refuses two mounts of one path
            taken = ([(SIDECAR_SHM_DIR, "the colocated-Python sidecar's shared memory")] if w.colocated_python else []) + (
                [(cfg.resilience.mtc.mount_path, "the multi-tier checkpointing RAM disk")]
                if cfg.uses_mtc(w) and cfg.resilience.mtc is not None else [])
            for path, what in taken:
                if m.path == path or m.path.startswith(path + "/") or path.startswith(m.path + "/"):
                    problems.append(Problem(config_key((*key, j, "path")), (
                        f"{m.path} overlaps {path}, {what} on the workers; use another path")))
    return problems


RULES = (mounts,)
