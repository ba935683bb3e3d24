"""Build the real engines (Pulumi CLI and its Kubernetes provider, the Kubernetes control plane with kwok,
JobSet, Kueue and LWS, etcd) from the pinned Go wrapper modules beside this file, into build/engines/bin.

    python tools/engines/build.py [--only NAME ...] [--bin DIR] [--list] [--estimate]

Each wrapper is a folder with go.mod and go.sum (the pins, hash-checked by Go: -mod=readonly, so a
missing or wrong hash fails instead of being fetched and trusted) and engine.json (which main packages
to build, with which ldflags). A wrapper's binaries come from ONE `go build -o DIR pkg...`: Go compiles
each shared package once and links the binaries in parallel. That is why the control plane, kwok and the
three controllers share one wrapper (control-plane): one module graph, so client-go, apimachinery, the
API types and controller-runtime are compiled once at one version instead of once per wrapper.

Cold builds are long (a fresh machine has empty Go caches), so: every wrapper's modules are downloaded
first, all at once (network, not CPU); then every wrapper builds at once, the two longest at normal priority
and the others niced, so that they take only the cycles the long builds' serial phases (links, the largest
packages) leave idle and never lengthen the longest; the packages are compiled without DWARF (engine.json
`gcflags`: the links strip it anyway, `-w`; about 10 % less compile time). Compiling without inlining (`-l`)
saved another 20 % of the compile but made the real-engine tier's Pulumi scenarios slower by about as much time
as it saved (measured in two cold CI runs): a cold build happens once a machine, the tier every run. The
cold-build estimate (engine.json `coldCpuSeconds`, measured) is printed before anything starts.

A wrapper whose go.mod, go.sum, engine.json and recipe are unchanged is not rebuilt: its binaries are
kept in a cache outside the checkout ($PATHWAYS_ENGINES_CACHE, default
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
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEFAULT_BIN = ROOT / "build" / "engines" / "bin"
# Bump when the way binaries are built changes (flags, layout): every cache entry is then rebuilt.
RECIPE = "3"
HEARTBEAT_SECONDS = 30
# Builds at normal priority; every other build runs at the same time, niced (NICE_OTHERS). Two on two cores.
# Each build itself runs `go build -p 2`.
PARALLEL_BUILDS = int(os.environ.get("PATHWAYS_ENGINES_PARALLEL", "2"))
NICE_OTHERS = 10
CORES = 2
_print_lock = threading.Lock()


def log(msg: str) -> None:
    with _print_lock:
        print(f"[engines {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def spec_of(wrapper: Path) -> dict[str, Any]:
    return json.loads((wrapper / "engine.json").read_text())


def cold_cpu_seconds(wrapper: Path) -> int:
    """The CPU seconds the wrapper's cold build took (engine.json `coldCpuSeconds`, measured), for ordering and
    the estimate: unlike wall time, a figure that does not depend on what else the machine ran."""
    return int(spec_of(wrapper).get("coldCpuSeconds", 0))


def wrappers() -> list[Path]:
    """Every wrapper, longest cold build first (the order they start in)."""
    found = [p.parent for p in HERE.glob("*/engine.json")]
    return sorted(found, key=lambda w: (-cold_cpu_seconds(w), w.name))


def go_version() -> str:
    return subprocess.run(["go", "env", "GOVERSION"], check=True, capture_output=True, text=True).stdout.strip()


def wrapper_key(wrapper: Path, goversion: str) -> str:
    h = hashlib.sha256(f"{RECIPE}\0{goversion}\0".encode())
    spec = spec_of(wrapper)
    spec.pop("coldCpuSeconds", None)  # a measurement, not an input: re-measuring rebuilds nothing
    h.update(json.dumps(spec, sort_keys=True).encode() + b"\0")
    for name in ("go.mod", "go.sum"):
        h.update(name.encode() + b"\0" + (wrapper / name).read_bytes() + b"\0")
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


def _run(cmd: list[str], cwd: Path, env: dict[str, str], what: str, nice: int = 0) -> float:
    """Run a silent Go command with a heartbeat, so a long build never looks stuck. Returns the CPU seconds it
    and the processes it waited for (the compiler, the linker) used: a figure that, unlike wall time, does not
    depend on what else the machine runs."""
    started = time.monotonic()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(HEARTBEAT_SECONDS):
            log(f"  ... {what}: {time.monotonic() - started:.0f} s")

    t = threading.Thread(target=beat, daemon=True)
    t.start()
    output: list[str] = []
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=(lambda: os.nice(nice)) if nice else None)
        assert proc.stdout is not None
        reader = threading.Thread(target=lambda: output.append(proc.stdout.read() if proc.stdout else ""), daemon=True)
        reader.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        reader.join()
    finally:
        done.set()
        t.join()
    if proc.returncode != 0:
        with _print_lock:
            sys.stderr.write("".join(output))
        raise BuildError(f"engines: {what} failed (exit {proc.returncode}): {' '.join(cmd)}")
    return usage.ru_utime + usage.ru_stime


class BuildError(RuntimeError):
    pass


def _go_env() -> dict[str, str]:
    return {**os.environ, "GOFLAGS": "-mod=readonly -buildvcs=false"}


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


def default_output_name(package: str) -> str:
    """The file name `go build -o DIR/` gives a main package: its last path element, or the one before a
    major-version suffix (go.etcd.io/etcd/server/v3 -> server)."""
    parts = package.rstrip("/").split("/")
    last = parts[-1]
    if len(parts) > 1 and last[:1] == "v" and last[1:].isdigit():
        last = parts[-2]
    return last


def download(wrapper: Path) -> None:
    """Every module the wrapper pins, verified against its go.sum (no CPU to speak of: run them all at once)."""
    t0 = time.monotonic()
    _run(["go", "mod", "download"], wrapper, _go_env(), f"{wrapper.name}: module download")
    log(f"{wrapper.name}: modules ready in {time.monotonic() - t0:.0f} s")


def build_wrapper(wrapper: Path, dest: Path, nice: int = 0) -> None:
    """Build every binary of one wrapper into dest (a fresh directory) with one `go build`."""
    spec = spec_of(wrapper)
    env = _go_env()
    with tempfile.TemporaryDirectory(prefix=f"engine-{wrapper.name}-") as tmp:
        workdir = Path(tmp) / wrapper.name
        shutil.copytree(wrapper, workdir)
        module_dir = _module_dir_finder(workdir, env)
        if spec.get("prepare"):
            prep = importlib.util.spec_from_file_location("engine_prepare", HERE / "prepare.py")
            assert prep and prep.loader
            mod = importlib.util.module_from_spec(prep)
            prep.loader.exec_module(mod)
            log(f"{wrapper.name}: prepare step {spec['prepare']}")
            getattr(mod, spec["prepare"])(workdir, module_dir)
        out = Path(tmp) / "out"
        out.mkdir()
        binaries = spec["binaries"]
        names = [default_output_name(b["package"]) for b in binaries]
        if len(set(names)) != len(names):
            raise BuildError(f"engines: {wrapper.name}: two packages build to the same file name ({names})")
        t0 = time.monotonic()
        log(f"{wrapper.name}: building {', '.join(b['name'] for b in binaries)}")
        cmd = ["go", "build", "-trimpath", "-p", os.environ.get("PATHWAYS_ENGINES_JOBS", "2"), "-o", f"{out}{os.sep}"]
        if spec.get("gcflags"):
            cmd += ["-gcflags", "all=" + " ".join(spec["gcflags"])]
        if spec.get("tags"):
            cmd += ["-tags", ",".join(spec["tags"])]
        if spec.get("ldflags"):
            cmd += ["-ldflags", " ".join(spec["ldflags"])]
        cmd += [b["package"] for b in binaries]
        cpu = _run(cmd, workdir, {**env, **spec.get("env", {})}, f"{wrapper.name}: go build", nice)
        for b, built in zip(binaries, names, strict=True):
            shutil.move(str(out / built), str(dest / b["name"]))
        log(f"{wrapper.name}: {len(binaries)} binaries built in {time.monotonic() - t0:.0f} s ({cpu:.0f} CPU-seconds)")
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
    """('kubernetes', '4.25.0') for a provider wrapper (its plugin name and pinned version), else None."""
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


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


# Wall time of a cold build with every wrapper at once, as a share of their CPU seconds spread over the cores
# (the links and the last packages run alone at the end): measured on 2 cores, docs/real-engines.md.
SERIAL_SHARE = 1.08


def estimate(todo: list[Path]) -> float:
    """Cold wall time on 2 cores, every build at once: their measured CPU seconds over the cores, plus what runs
    alone; never less than the longest build on its own."""
    if not todo:
        return 0.0
    return max(sum(cold_cpu_seconds(w) for w in todo) / CORES * SERIAL_SHARE, max(cold_cpu_seconds(w) for w in todo) / CORES)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="wrapper names to build (default: all)")
    parser.add_argument("--bin", type=Path, default=DEFAULT_BIN, help=f"where the binaries go (default {DEFAULT_BIN.relative_to(ROOT)})")
    parser.add_argument("--list", action="store_true", help="list the wrappers and their binaries, then exit")
    parser.add_argument("--estimate", action="store_true", help="print what would be built and the cold-build estimate, then exit")
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
    todo: list[tuple[Path, Path]] = []
    for w in chosen:
        spec = spec_of(w)
        names = outputs(spec)
        pin = _provider_pin(spec)
        if user_pulumi and (w.name == "pulumi" or (pin and pin in user_plugins)):
            if w.name == "pulumi":
                link_into(args.bin, user_pulumi.parent, ["pulumi"])
            log(f"{w.name}: using the pulumi on PATH ({user_pulumi}) and its plugins; not building")
            continue
        cached = cache_root() / f"{w.name}-{wrapper_key(w, goversion)}"
        if all((cached / n).exists() for n in names):
            if not args.estimate:
                link_into(args.bin, cached, names)
            log(f"{w.name}: up to date ({cached})")
            continue
        todo.append((w, cached))
    parallel = max(1, PARALLEL_BUILDS)
    if todo:
        log(f"to build: {', '.join(f'{w.name} (~{cold_cpu_seconds(w)} CPU-s cold)' for w, _ in todo)}")
        log(f"cold-build estimate on {CORES} cores with empty Go caches: ~{_minutes(estimate([w for w, _ in todo]))} "
            f"(all at once, the {parallel} longest at normal priority); a warm Go cache (a pin change) takes a fraction of it")
    if args.estimate or not todo:
        log(f"all engines ready in {args.bin} ({time.monotonic() - total:.0f} s)" if not todo else "estimate only; nothing built")
        return 0
    failures: list[str] = []
    # Modules first, every wrapper at once: downloads wait on the network, not the CPU.
    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        for fut in [pool.submit(download, w) for w, _ in todo]:
            try:
                fut.result()
            except BuildError as e:
                failures.append(str(e))
    if failures:
        raise SystemExit("\n".join(failures))

    def build_one(w: Path, cached: Path, nice: int) -> None:
        t0 = time.monotonic()
        log(f"{w.name}: building{f' (niced {nice})' if nice else ''}; a first build takes long, later ones reuse Go's cache")
        staging = cache_root() / f".{w.name}-{cached.name.rsplit('-', 1)[-1]}.partial"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        build_wrapper(w, staging, nice)
        shutil.rmtree(cached, ignore_errors=True)
        staging.rename(cached)
        link_into(args.bin, cached, outputs(spec_of(w)))
        log(f"{w.name}: done in {time.monotonic() - t0:.0f} s")

    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        futures = {pool.submit(build_one, w, cached, 0 if i < parallel else NICE_OTHERS): w
                   for i, (w, cached) in enumerate(todo)}  # longest first
        for fut in as_completed(futures):
            try:
                fut.result()
            except BuildError as e:
                failures.append(str(e))
    if failures:
        raise SystemExit("\n".join(failures))
    log(f"all engines ready in {args.bin} ({time.monotonic() - total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
