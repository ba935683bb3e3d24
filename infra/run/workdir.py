"""`submit --workdir DIR`: ship a directory of code with a run instead of building an image.

The directory is packed into a gzipped tar that is the same bytes for the same files (sorted, no times, owners or
modes but the executable bit), so its SHA-256 names the code a run ran. Excluded: `.git/`, what the directory's
`.gitignore` ignores (read as git reads it: pathspec's GitIgnoreSpec) and any `--exclude` pattern. It travels in a
ConfigMap next to the run (binaryData, under the API server's 1 MiB object limit; owned by the JobSet, so it goes
with the run), mounted read-only into the head's program container, whose command unpacks it into /workdir with
Python's tarfile (the `data` filter: no absolute paths, links out of the tree or devices) and starts there. The
stack's pinned image is the environment; only the code changes between runs.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pathspec import GitIgnoreSpec

from components.manifests.runs import WORKDIR_LABEL, WORKDIR_SUFFIX

# The ConfigMap holds at most 1 MiB (k8s.io/apimachinery validation: MaxConfigMapSize... 1048576 bytes of data and
# binaryData together); base64 is not counted (binaryData is stored as bytes), the headroom is for the object.
LIMIT = 900 * 1024
ARCHIVE = "workdir.tar.gz"
MOUNT = "/var/run/pathways/workdir"
TARGET = "/workdir"
ALWAYS_EXCLUDED = (".git/",)


class WorkdirError(ValueError):
    """The directory cannot be shipped (missing, too big): one line, keyed --workdir."""


@dataclass(frozen=True)
class Packed:
    data: bytes
    files: tuple[tuple[str, int], ...]
    """(path inside the directory, size) of what is shipped, sorted."""
    excluded: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def summary(self) -> str:
        total = sum(size for _, size in self.files)
        return (f"{len(self.files)} file(s), {total:,} bytes, packed {len(self.data):,} bytes, sha256 {self.sha256}"
                + (f"; {self.excluded} excluded (.git/, .gitignore, --exclude)" if self.excluded else ""))


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MiB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KiB"


def pack(directory: Path, excludes: tuple[str, ...] = ()) -> Packed:
    if not directory.is_dir():
        raise WorkdirError(f"--workdir {directory}: not a directory")
    ignore = directory / ".gitignore"
    lines = [*ALWAYS_EXCLUDED, *(ignore.read_text(encoding="utf-8", errors="replace").splitlines() if ignore.is_file() else []), *excludes]
    spec = GitIgnoreSpec.from_lines(lines)
    shipped: list[tuple[str, Path]] = []
    excluded = 0
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_dir() or (not path.is_file() and not path.is_symlink()):
            continue
        if spec.match_file(rel):
            excluded += 1
            continue
        if path.is_symlink():
            raise WorkdirError(f"--workdir {directory}: {rel} is a symbolic link; ship the file itself or exclude it")
        shipped.append((rel, path))
    if not shipped:
        raise WorkdirError(f"--workdir {directory}: nothing to ship (every file is excluded)")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path in shipped:
            data = path.read_bytes()
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), 0, 0o755 if path.stat().st_mode & 0o100 else 0o644
            tar.addfile(info, io.BytesIO(data))
    packed = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    if len(packed) > LIMIT:
        raise WorkdirError(f"--workdir {directory}: {_size(len(packed))} packed, over the {_size(LIMIT)} a run ships; exclude "
                           "data and outputs (.gitignore or --exclude) and mount them from a bucket (--mount)")
    files = tuple((rel, path.stat().st_size) for rel, path in shipped)
    return Packed(packed, files, excluded)


def config_map_name(run: str) -> str:
    return f"{run}{WORKDIR_SUFFIX}"  # the one name the runs policy lets a submitter create and a run mount


def config_map(run: str, namespace: str, packed: Packed, owner_uid: str) -> dict[str, Any]:
    """The ConfigMap that carries the code, owned by the run's JobSet (the garbage collector removes it with the run)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": config_map_name(run), "namespace": namespace, "labels": {WORKDIR_LABEL: "true"},
                         "annotations": {"pathways/workdir-sha256": packed.sha256},
                         "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": run, "uid": owner_uid}]},
            "immutable": True,  # what a run mounts never changes under it (the runs policy requires it)
            "binaryData": {ARCHIVE: base64.b64encode(packed.data).decode()}}


# The digest the run was submitted with is in its pod template, which only its submitter wrote: the code mounted is
# checked against it before anything is unpacked, and the very bytes checked are the ones unpacked (security #73.4).
# tarfile's `data` filter (PEP 706) came with Python 3.12 and the security releases 3.8.17, 3.9.17, 3.10.12 and
# 3.11.4; images on a distribution's older Python lack it (Debian bookworm's python3 is 3.11.2). There the script
# checks every member itself, as pack() writes them: regular files and directories under relative paths, no `..`;
# anything else is refused with the same exit (#74.3). tests/test_workdir.py runs both paths, unprivileged.
UNPACK_EXIT = 3
CODE_VOLUME = "workdir-code"


def unpack_script(mount: str = MOUNT, target: str = TARGET, python: str = "python3") -> str:
    """The head's `sh -c` script: check the mounted archive's digest ($0), unpack it into `target` (a writable
    emptyDir, so any image user may), start the program ($@) there."""
    return (f"{python} -c \"import hashlib, io, sys, tarfile\n"
            f"data = open('{mount}/{ARCHIVE}', 'rb').read()\n"
            f"got = hashlib.sha256(data).hexdigest()\n"
            f"if got != sys.argv[1]:\n"
            f"    print('workdir: the mounted code is sha256 ' + got + ', not the ' + sys.argv[1] + ' this run was submitted with; "
            f"not running it', file=sys.stderr)\n"
            f"    sys.exit({UNPACK_EXIT})\n"
            f"t = tarfile.open(fileobj=io.BytesIO(data))\n"
            f"if hasattr(tarfile, 'data_filter'):\n"
            f"    t.extractall('{target}', filter='data')\n"
            f"else:\n"
            f"    bad = [m.name for m in t.getmembers() if not (m.isfile() or m.isdir()) or m.name.startswith('/') "
            f"or '..' in m.name.split('/')]\n"
            f"    if bad:\n"
            f"        print('workdir: not unpacking ' + bad[0] + ': only files and directories under the run directory "
            f"are shipped', file=sys.stderr)\n"
            f"        sys.exit({UNPACK_EXIT})\n"
            f"    t.extractall('{target}')\n"
            f"\" \"$0\" && cd {target} && exec \"$@\"")


UNPACK = unpack_script()


def with_workdir(jobset: dict[str, Any], container: str, packed: Packed) -> dict[str, Any]:
    """The run's JobSet with the head's program started in the unpacked directory (pure: a changed copy)."""
    import copy

    out = copy.deepcopy(jobset)
    name = out["metadata"]["name"]
    out["metadata"].setdefault("annotations", {})["pathways/workdir-sha256"] = packed.sha256
    for rj in out["spec"]["replicatedJobs"]:
        pod = rj["template"]["spec"]["template"]["spec"]
        program = next((c for c in pod.get("containers") or [] if c["name"] == container), None)
        if program is None:
            continue
        pod.setdefault("volumes", []).extend([{"name": "workdir", "configMap": {"name": config_map_name(name)}},
                                              {"name": CODE_VOLUME, "emptyDir": {}}])  # writable by the image's user, whoever
        program.setdefault("volumeMounts", []).extend([{"name": "workdir", "mountPath": MOUNT, "readOnly": True},
                                                       {"name": CODE_VOLUME, "mountPath": TARGET}])
        command = [*(program.get("command") or []), *(program.pop("args", None) or [])]
        if not command:
            raise WorkdirError("--workdir needs the program's command (after --): the image's own entrypoint is not known here")
        # sh -c SCRIPT $0 $@: $0 is the digest the script checks, $@ the program
        program["command"] = ["/bin/sh", "-c", UNPACK, packed.sha256, *command]
    return out


def for_submit(directory: Optional[Path], excludes: tuple[str, ...], fleet_manager: bool, notebook: bool) -> Optional[Packed]:
    """`submit`'s --workdir and --exclude, packed; refused where the code cannot reach the pods."""
    if directory is None:
        if excludes:
            raise WorkdirError("--exclude leaves files out of --workdir: give it with --workdir")
        return None
    if fleet_manager:
        raise WorkdirError("--workdir: a fleet manager dispatches the JobSet alone (MultiKueue), not its code; "
                           "submit to a worker's stack, or ship the code in the image")
    if notebook:
        raise WorkdirError("--workdir ships code for a program; a notebook starts JupyterLab (open files in it instead)")
    return pack(directory, excludes)


def checked_with_workdir(jobset: dict[str, Any], packed: Packed) -> dict[str, Any]:
    """with_workdir on the run's program container, held to the guards' and runs policy's rules as `submit` holds
    every run (components/manifests/admission.py)."""
    from components.manifests.admission import check_jobset
    from components.manifests.jobset import USER_CONTAINER
    from components.model.errors import ConfigError, Problem

    out = with_workdir(jobset, USER_CONTAINER, packed)
    report = check_jobset(out)
    if report.violations:
        raise ConfigError([Problem("run", str(v)) for v in report.violations])
    return out
