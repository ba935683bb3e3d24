"""The inside of a pod sandbox: run as `unshare -n -m --propagation private python3 sandbox.py SPEC`, it waits
until the harness has moved the pod's veth end (eth0) into its new network namespace (one line on stdin),
then gives the pod its IP and routes, mounts the pod's volumes at their paths in a root of its own, changes
root there and execs the container's entrypoint. What a container runtime and a CNI plugin do for a pod,
reduced to what a static Go controller needs: its own network (its pod IP, the ports its config names), its
volumes where its args and config expect them, its environment.

SPEC is a JSON file: {"root": dir, "ip": pod IP, "gateway": host address, "mounts": [[src, dst, readOnly]],
"argv": [...], "env": {...}, "cwd": "/"}. Standard library only; Linux; needs root (it mounts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def sh(*args: str) -> None:
    subprocess.run(list(args), check=True, capture_output=True)


def mount_point(path: Path, is_dir: bool) -> None:
    if is_dir:
        path.mkdir(parents=True, exist_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    if sys.stdin.readline().strip() != "net":  # the harness moved eth0 in (or gave up: then stop here)
        return 1
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "addr", "add", f"{spec['ip']}/32", "dev", "eth0")
    sh("ip", "link", "set", "eth0", "up")
    sh("ip", "route", "add", spec["gateway"], "dev", "eth0")
    sh("ip", "route", "add", "default", "via", spec["gateway"], "dev", "eth0")
    root = Path(spec["root"])
    for name in ("proc", "dev"):
        mount_point(root / name, True)
        sh("mount", "--rbind", f"/{name}", str(root / name))
    mount_point(root / "tmp", True)
    sh("mount", "-t", "tmpfs", "tmpfs", str(root / "tmp"))
    for src, dst, read_only in spec["mounts"]:
        target = root / dst.lstrip("/")
        mount_point(target, Path(src).is_dir())
        sh("mount", "--bind", src, str(target))
        if read_only:
            sh("mount", "-o", "remount,bind,ro", str(target))
    os.chroot(root)
    os.chdir(spec.get("cwd") or "/")
    os.execve(spec["argv"][0], spec["argv"], spec["env"])
    return 1  # execve does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
