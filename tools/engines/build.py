"""Build the real engines (Pulumi CLI and providers, Kubernetes control plane, JobSet, Kueue, LWS) from
the pinned Go wrapper modules beside this file, into build/engines/bin.

    python tools/engines/build.py [--only NAME ...] [--bin DIR] [--list]

Each wrapper is a folder with go.mod and go.sum (the pins, hash-checked by Go: -mod=readonly, so a
missing or wrong hash fails instead of being fetched and trusted) and engine.json (which main packages
to build, with which ldflags). A wrapper whose go.mod, go.sum, engine.json and recipe are unchanged is
not rebuilt: its binaries are kept in a cache outside the checkout ($PATHWAYS_ENGINES_CACHE, default
~/.cache/pathways-gke/engines/<wrapper>-<hash>), so a fresh clone on a machine that built them once
links nothing. Go's own caches (GOCACHE, GOMODCACHE) make a rebuild after a pin change link-mostly.

Binaries a user already has are used instead of building: a `pulumi` on PATH, and provider plugins that
CLI already has at the pinned versions (`pulumi plugin ls --json`). Set PATHWAYS_ENGINES_IGNORE_PATH=1
to build them anyway.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_BIN = ROOT / "build" / "engines" / "bin"
# Bump when the way binaries are built changes (flags, layout): every cache entry is then rebuilt.
RECIPE = "2"
# The order matters only for the log: the control plane first (the e2e tier needs it first).
ORDER = ("kubernetes", "etcd", "kwok", "jobset", "kueue", "lws",
         "pulumi", "pulumi-language-python", "pulumi-kubernetes", "pulumi-random", "pulumi-gcp")
HEARTBEAT_SECONDS = 30


def log(msg: str) -> None:
    print(f"[engines {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wrappers() -> list[Path]:
    found = {p.parent.name: p.parent for p in HERE.glob("*/engine.json")}
    return [found[n] for n in sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))]


def spec_of(wrapper: Path) -> dict[str, Any]:
    return json.loads((wrapper / "engine.json").read_text())


def go_version() -> str:
    return subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def wrapper_key(wrapper: Path, goversion: str) -> str:
    h = hashlib.sha256(f"{RECIPE}\0{goversion}\0".encode())
    for name in ("go.mod", "go.sum", "engine.json"):
        h.update(name.encode() + b"\0" + (wrapper / name).read_bytes() + b"\0")
    spec = spec_of(wrapper)
    if spec.get("prepare"):
        h.update((HERE / "prepare.py").read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    env = os.environ.get("PATHWAYS_ENGINES_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pathways-gke" / "engines"


def outputs(spec: dict[str, Any]) -> list[str]:
    return [b["name"] for b in spec["binaries"]] + [f["name"] for f in spec.get("files", [])]


def _run(cmd: list[str], cwd: Path, env: dict[str, str], what: str) -> None:
    """Run a silent Go command with a heartbeat, so a long build never looks stuck."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            log(f"  ... {what}: {time.monotonic() - started:.0f} s")

    t = threading.Thread(target=beat, daemon=True)
    t.start()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    finally:
        done.set()
        t.join()
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"engines: {what} failed (exit {proc.returncode}): {' '.join(cmd)}")


def _module_dir_finder(workdir: Path, env: dict[str, str]) -> Callable[[str], Path]:
    def module_dir(module: str) -> Path:
        out = subprocess.run(["go", "list", "-m", "-json", module], cwd=workdir, env=env, check=True,
                             capture_output=True, text=True).stdout
        info = json.loads(out)
        if not info.get("Dir"):
            subprocess.run(["go", "mod", "download", module], cwd=workdir, env=env, check=True, capture_output=True)
            info = json.loads(subprocess.run(["go", "list", "-m", "-json", module], cwd=workdir, env=env, check=True,
                                             capture_output=True, text=True).stdout)
        return Path(info["Dir"])
    return module_dir


def build_wrapper(wrapper: Path, dest: Path) -> None:
    """Build every binary of one wrapper into dest (a fresh directory)."""
    spec = spec_of(wrapper)
    env = {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"}
    with tempfile.TemporaryDirectory(prefix=f"engine-{wrapper.name}-") as tmp:
        workdir = Path(tmp) / wrapper.name
        shutil.copytree(wrapper, workdir)
        started = time.monotonic()
        log(f"{wrapper.name}: downloading pinned modules (go mod download; verified against go.sum)")
        _run(["go", "mod", "download"], workdir, env, f"{wrapper.name}: module download")
        log(f"{wrapper.name}: modules ready in {time.monotonic() - started:.0f} s")
        module_dir = _module_dir_finder(workdir, env)
        if spec.get("prepare"):
            prep = importlib.util.spec_from_file_location("engine_prepare", HERE / "prepare.py")
            assert prep and prep.loader
            mod = importlib.util.module_from_spec(prep)
            prep.loader.exec_module(mod)
            log(f"{wrapper.name}: prepare step {spec['prepare']}")
            getattr(mod, spec["prepare"])(workdir, module_dir)
        for b in spec["binaries"]:
            t0 = time.monotonic()
            log(f"{wrapper.name}: building {b['name']} ({b['package']})")
            cmd = ["go", "build", "-trimpath", "-p", os.environ.get("PATHWAYS_ENGINES_JOBS", "2"), "-o", str(dest / b["name"])]
            if b.get("tags"):
                cmd += ["-tags", ",".join(b["tags"])]
            if b.get("ldflags"):
                cmd += ["-ldflags", " ".join(b["ldflags"])]
            cmd.append(b["package"])
            _run(cmd, workdir, {**env, **b.get("env", {})}, f"{wrapper.name}: go build {b['name']}")
            log(f"{wrapper.name}: {b['name']} built in {time.monotonic() - t0:.0f} s")
        for f in spec.get("files", []):
            src = module_dir(f["module"]) / f["path"]
            shutil.copyfile(src, dest / f["name"])
            os.chmod(dest / f["name"], int(f.get("mode", "0644"), 8))


def _path_pulumi(bin_dir: Path) -> Optional[Path]:
    """A real pulumi CLI the user has on PATH (not ours)."""
    if os.environ.get("PATHWAYS_ENGINES_IGNORE_PATH") == "1":
        return None
    found = shutil.which("pulumi")
    if not found or Path(found).resolve().parent == bin_dir.resolve():
        return None
    return Path(found)


def _user_plugins(pulumi: Path) -> set[tuple[str, str]]:
    """(name, version) of the resource plugins that CLI has installed."""
    proc = subprocess.run([str(pulumi), "plugin", "ls", "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        return set()
    return {(p["name"], p["version"]) for p in json.loads(proc.stdout or "[]") if p.get("kind") == "resource"}


def _provider_pin(spec: dict[str, Any]) -> Optional[tuple[str, str]]:
    """('gcp', '10.2.0') for a provider wrapper (its plugin name and pinned version), else None."""
    for b in spec["binaries"]:
        if b["name"].startswith("pulumi-resource-"):
            return b["name"][len("pulumi-resource-"):], spec["version"]
    return None


def link_into(bin_dir: Path, src_dir: Path, names: list[str]) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    for n in names:
        target = bin_dir / n
        if target.is_symlink() or target.exists():
            target.unlink()
        target.symlink_to(src_dir / n)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="wrapper names to build (default: all)")
    parser.add_argument("--bin", type=Path, default=DEFAULT_BIN, help=f"where the binaries go (default {DEFAULT_BIN.relative_to(ROOT)})")
    parser.add_argument("--list", action="store_true", help="list the wrappers and their binaries, then exit")
    args = parser.parse_args(argv)
    all_wrappers = wrappers()
    chosen = [w for w in all_wrappers if args.only is None or w.name in args.only]
    unknown = set(args.only or ()) - {w.name for w in all_wrappers}
    if unknown:
        parser.error(f"unknown wrapper(s) {', '.join(sorted(unknown))}; known: {', '.join(w.name for w in all_wrappers)}")
    if args.list:
        for w in chosen:
            print(f"{w.name}: {', '.join(outputs(spec_of(w)))}")
        return 0
    goversion = go_version()
    total = time.monotonic()
    user_pulumi = _path_pulumi(args.bin)
    user_plugins = _user_plugins(user_pulumi) if user_pulumi else set()
    for i, w in enumerate(chosen, 1):
        spec = spec_of(w)
        names = outputs(spec)
        prefix = f"[{i}/{len(chosen)}] {w.name}"
        pin = _provider_pin(spec)
        if user_pulumi and (w.name in ("pulumi", "pulumi-language-python") or (pin and pin in user_plugins)):
            if w.name == "pulumi":
                link_into(args.bin, user_pulumi.parent, ["pulumi"])
            log(f"{prefix}: using the pulumi on PATH ({user_pulumi}) and its plugins; not building")
            continue
        key = wrapper_key(w, goversion)
        cached = cache_root() / f"{w.name}-{key}"
        if all((cached / n).exists() for n in names):
            link_into(args.bin, cached, names)
            log(f"{prefix}: up to date ({cached})")
            continue
        log(f"{prefix}: building ({len(spec['binaries'])} binaries; a first build takes long, later ones reuse Go's cache)")
        t0 = time.monotonic()
        staging = cache_root() / f".{w.name}-{key}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        build_wrapper(w, staging)
        shutil.rmtree(cached, ignore_errors=True)
        staging.rename(cached)
        link_into(args.bin, cached, names)
        log(f"{prefix}: done in {time.monotonic() - t0:.0f} s")
    log(f"all engines ready in {args.bin} ({time.monotonic() - total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
