"""A notebook that keeps its work (#74.9): when JupyterLab ends — its idle stop, `delete`, a time limit or a
preemption — the researcher's files in the notebook's home are copied to a bucket before the pod goes.

Where: `submit --notebook --save-to gs://BUCKET`, or else the first bucket the run mounts read-write (`--mount
PATH=gs://B:rw`), or else the first bucket its namespace may write (`teams[].buckets` with `--team`, `runs.buckets`
otherwise, `readOnly: false`); `--save-to none` keeps nothing. The bucket is mounted like any run mount (Cloud Storage
FUSE, as the runs' service account the bootstrap grants objectUser on it), so the runs policy judges it as it judges
`--mount`. The files land under `notebooks/<run>/<UTC time>/` of the bucket.

How: the program is `sh -c WRAPPER <save dir> jupyter lab ...`. The wrapper runs JupyterLab as its child, passes
SIGTERM on (the kubelet's stop, at delete, eviction or a time limit), waits for it to end, then copies: every file
under $HOME but hidden ones and those in hidden directories (a name starting with '.': caches, .local, .jupyter,
.ipynb_checkpoints, an .env) and the save mount itself. It exits with JupyterLab's own status (0 after the idle stop: the
JobSet completes). A stop by SIGTERM has the pod's grace period for both; a notebook that saves gets
`SAVE_GRACE_SECONDS` unless the spec sets terminationGracePeriodSeconds. tests/test_notebook_save.py runs the
rendered wrapper as this machine's unprivileged user: the idle exit, SIGTERM, a failure and the mounts it skips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

SAVE_MOUNT = "/notebook-saves"
SAVE_PREFIX = "notebooks"
SAVE_GRACE_SECONDS = 300
NONE = "none"
SAVE_ANNOTATION = "pathways/notebook-saves-to"

# $0 is the directory to save into (the mount plus notebooks/<run>); "$@" is JupyterLab's command. The trap is set
# before JupyterLab starts (a stop that comes first is passed on as soon as it runs); `wait` returns early when the
# trap runs: the loop waits again until the child itself has ended, and keeps its status. The copy leaves out the
# save mount and every other mount point under $HOME (a dataset bucket mounted there is not copied into the save), and
# copies nothing when $HOME is itself inside the save mount (its files are in the bucket already).
_COPY = (
    "import os, shutil, sys, time\n"
    "src, dest = os.path.realpath(os.environ.get('HOME') or '.'), sys.argv[1]\n"
    "skip = os.path.realpath(sys.argv[2])\n"
    "if src == skip or src.startswith(skip + os.sep):\n"
    "    print('notebook: its home is in the save mount ' + skip + ': its files are there already', file=sys.stderr)\n"
    "    sys.exit(0)\n"
    "out = os.path.join(dest, time.strftime('%Y%m%dT%H%M%SZ', time.gmtime()))\n"
    "n = size = 0\n"
    "for root, dirs, files in os.walk(src):\n"
    "    dirs[:] = sorted(d for d in dirs if not d.startswith('.') and os.path.realpath(os.path.join(root, d)) != skip\n"
    "                     and not os.path.ismount(os.path.join(root, d)))\n"
    "    for f in sorted(f for f in files if not f.startswith('.')):\n"
    "        p = os.path.join(root, f)\n"
    "        if os.path.islink(p) or not os.path.isfile(p):\n"
    "            continue\n"
    "        target = os.path.join(out, os.path.relpath(p, src))\n"
    "        os.makedirs(os.path.dirname(target), exist_ok=True)\n"
    "        shutil.copyfile(p, target)\n"
    "        n, size = n + 1, size + os.path.getsize(p)\n"
    "print(f'notebook: saved {n} file(s), {size} bytes, to {out}', file=sys.stderr)\n"
)


def wrapper(mount: str, python: str = "python3") -> str:
    """The `sh -c` script: run "$@", forward SIGTERM, then save $HOME (less `mount`, the bucket) into "$0", exit with
    the program's status. `mount` is a mount path (letters, digits, '_', '.', '/', '-': components' Mount)."""
    return ("child=\n"
            "trap 'stop=1; [ -n \"$child\" ] && kill -TERM \"$child\" 2>/dev/null' TERM INT\n"
            "\"$@\" & child=$!\n"
            "[ -n \"$stop\" ] && kill -TERM \"$child\" 2>/dev/null\n"
            "wait \"$child\"; rc=$?\n"
            "while kill -0 \"$child\" 2>/dev/null; do wait \"$child\"; rc=$?; done\n"
            f"{python} -c \"{_COPY}\" \"$0\" '{mount}' || echo 'notebook: saving its files failed' >&2\n"
            "exit $rc")


@dataclass(frozen=True)
class SaveTarget:
    bucket: str
    mounted: bool
    """The run already mounts the bucket read-write (at `path`); otherwise it is mounted at SAVE_MOUNT."""
    path: str

    def directory(self, run: str) -> str:
        return f"{self.path}/{SAVE_PREFIX}/{run}"

    def url(self, run: str) -> str:
        return f"gs://{self.bucket}/{SAVE_PREFIX}/{run}/"


def _writable(buckets: Any) -> list[str]:
    return [b.name for b in buckets or [] if not b.read_only]


def target(cfg: Any, spec: dict[str, Any], save_to: Optional[str]) -> Optional[SaveTarget]:
    """Where the notebook's files go (module docstring), or None: `--save-to none`, or no bucket to write."""
    from infra.offline.stackfile import StackFileError

    if save_to == NONE:
        return None
    mounts = [m for m in spec.get("mounts") or [] if isinstance(m, dict)]
    if save_to is not None:
        if not save_to.startswith("gs://") or not save_to[5:].strip("/") or "/" in save_to[5:].strip("/"):
            raise StackFileError(f"--save-to {save_to[:80]!r} is not gs://BUCKET or none (the files go under "
                                 f"gs://BUCKET/{SAVE_PREFIX}/<run>/)")
        bucket = save_to[5:].strip("/")
    else:
        own = [m for m in mounts if m.get("bucket") and m.get("readOnly") is False]
        if own:
            return SaveTarget(own[0]["bucket"], True, own[0]["path"])
        team = cfg.team(spec["team"]) if isinstance(spec.get("team"), str) else None
        allowed = _writable(team.buckets if team is not None else (cfg.runs.buckets if cfg.runs is not None else []))
        if not allowed:
            return None
        bucket = allowed[0]
    same = next((m for m in mounts if m.get("bucket") == bucket), None)
    if same is not None and same.get("readOnly") is not False:
        if save_to is not None:
            raise StackFileError(f"--save-to gs://{bucket}: the run mounts it read-only at {same.get('path')}; mount it with :rw "
                                 "or save elsewhere")
        return None  # the default bucket is mounted read-only on purpose: keep nothing rather than write it (the note says so)
    if same is not None:
        return SaveTarget(bucket, True, same["path"])
    return SaveTarget(bucket, False, SAVE_MOUNT)


def with_save(spec: dict[str, Any], run: str, where: SaveTarget) -> dict[str, Any]:
    """The spec with the save mount (unless the run mounts the bucket already), the wrapper around its command and
    a grace period long enough to copy."""
    out = dict(spec)
    if not where.mounted:
        out["mounts"] = [*(spec.get("mounts") or []), {"path": SAVE_MOUNT, "bucket": where.bucket, "readOnly": False}]
    out["command"] = ["/bin/sh", "-c", wrapper(where.path), where.directory(run), *spec["command"]]
    out.setdefault("terminationGracePeriodSeconds", SAVE_GRACE_SECONDS)
    return out


def not_saved_note(spec: dict[str, Any]) -> str:
    where = f"teams[{spec['team']}].buckets" if spec.get("team") else "runs.buckets"
    return (f"note: this notebook's files are not kept when it stops: no bucket to write ({where} has none with "
            "readOnly: false); give --save-to gs://BUCKET, or ask your platform team for one")


def for_submit(cfg: Any, spec: dict[str, Any], save_to: Optional[str], notes: list[str]) -> tuple[dict[str, Any], Optional[str]]:
    """`submit --notebook`'s spec with its files saved at its end, and where (gs://...); or the spec as it was and a
    note that nothing is kept."""
    name = spec.get("name")
    if not isinstance(name, str):
        return spec, None  # refused by the spec's own rules (run.name) in a moment
    where = target(cfg, spec, save_to)
    if where is None:
        if save_to != NONE:
            notes.append(not_saved_note(spec))
        return spec, None
    return with_save(spec, name, where), where.url(name)
