"""What `submit` accepted that a researcher likely did not mean (#74.8; pure): said on stderr as `note:` lines, the
run still submitted. Secret-looking files shipped with --workdir (the code is readable by everyone who reads runs in
the namespace), an image reference with no registry (Docker Hub, as the container runtime resolves it: the nodes
reach no Docker Hub from private nodes without NAT, and it is rarely what a team means), a notebook image built for
another jax than the stack's Pathways (its kernel would speak another JAX to the run's proxy)."""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Iterable, Optional

# Files that hold credentials by name (the patterns secret scanners and .gitignore templates share)
SECRET_FILES = (".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa", "id_ed25519", "id_ecdsa", ".netrc",
                "credentials.json", "*service-account*.json", "*-sa-key*.json", ".pypirc", ".npmrc", "*.kubeconfig", "kubeconfig")
_JAX_IN_TAG = re.compile(r"jax[-_]?(\d+\.\d+\.\d+)")


def secret_files(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if any(fnmatch.fnmatch(p.rsplit("/", 1)[-1], pat) for pat in SECRET_FILES)]


def registry_less(image: str) -> bool:
    """No registry host: the first path part has no '.' or ':' and is not localhost (the runtime's docker.io rule)."""
    first, slash, _ = image.partition("/")
    return not slash or ("." not in first and ":" not in first and first != "localhost")


def notes(spec: dict[str, Any], shipped: Optional[Iterable[str]], stack_jax: Optional[str], notebook: bool) -> list[str]:
    out = []
    found = secret_files(shipped or ())
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        out.append(f"note: --workdir ships {shown}, which look like credentials: a run's code is readable by everyone who "
                   "reads runs in the namespace; leave them out (--exclude, or .gitignore) and give the program a reference "
                   "it resolves itself")
    image = str(spec.get("image") or "")
    if image and registry_less(image):
        out.append(f"note: --image {image} names no registry, so the nodes pull it from Docker Hub (docker.io); give the "
                   "full reference (e.g. us-docker.pkg.dev/<project>/<repository>/<image>:<tag>)")
    m = _JAX_IN_TAG.search(image.rsplit(":", 1)[-1]) if notebook and ":" in image else None
    if m and stack_jax and m.group(1) != stack_jax:
        out.append(f"note: the notebook image is built for jax {m.group(1)}, and the stack's Pathways is jax {stack_jax}: its "
                   "kernel would speak another JAX to the run's proxy; use the stack's notebook image (no --image)")
    return out


def dry_run_summary(cfg: Any, obj: dict[str, Any], shipped: Optional[str]) -> list[str]:
    """The five lines a dry run opens with (#74.7): what, where, how many chips, the cost per hour, the queue."""
    from components.constants import SLICE_GROUP_LABEL
    from components.manifests.kueue_api import MAX_EXEC_TIME_LABEL, QUEUE_LABEL
    from components.model.cost.pricing import tpu_chip_price
    from infra.run.notebook_save import SAVE_ANNOTATION

    labels = obj["metadata"].get("labels") or {}
    jobs = obj["spec"]["replicatedJobs"]
    workers = [rj for rj in jobs if rj["name"] != "pathways-head"]
    head_pod = jobs[0]["template"]["spec"]["template"]["spec"]
    program = next((c for c in head_pod.get("containers") or [] if c["name"] == "jax-program"), None)
    command = list(program.get("command") or []) if program else []
    if command[:2] == ["/bin/sh", "-c"] and len(command) > 4 and "tarfile" in command[2]:
        command = command[4:]  # --workdir's unpack script, then the program (infra/run/workdir.py)
    if command[:2] == ["/bin/sh", "-c"] and len(command) > 4 and "notebook: saved" in command[2]:
        command = command[4:]  # a notebook's save wrapper, then JupyterLab (infra/run/notebook_save.py)
    what = f"{' '.join(command)[:80]} in {program.get('image')}" if program else "an interactive head (the proxy)"
    lines = [f"run {obj['metadata']['name']}: {what}" + (f", code {shipped}" if shipped else "")]
    slices = sum(int(rj.get("replicas") or 0) for rj in workers)
    selector = (workers[0]["template"]["spec"]["template"]["spec"].get("nodeSelector") or {}) if workers else {}
    group = next((g for g in cfg.slices if g.name == selector.get(SLICE_GROUP_LABEL)), cfg.slices[0] if cfg.slices else None)
    chips = slices * group.tpu.chips if group is not None else 0
    lines.append(f"  where: namespace {obj['metadata']['namespace']}, {slices} slice(s) of group "
                 f"{group.name if group else '?'} ({group.tpu.name if group else '?'}), {chips} TPU chips")
    price, basis = tpu_chip_price(group.tpu.family, group.capacity, cfg.prices) if group is not None else (None, "")
    lines.append(f"  cost: about ${price * chips:,.2f}/hour while it runs, {basis}" if price is not None else
                 "  cost: no price for this TPU and capacity (pathways:prices)")
    lines.append(f"  queue: {labels.get(QUEUE_LABEL, 'none (no Kueue)')}, priority {labels.get('kueue.x-k8s.io/priority-class', '?')}")
    limit = labels.get(MAX_EXEC_TIME_LABEL)
    restarts = (obj["spec"].get("failurePolicy") or {}).get("maxRestarts", 0)
    saves = (obj["metadata"].get("annotations") or {}).get(SAVE_ANNOTATION)
    if saves:
        lines.append(f"  its files: saved to {saves}<time>/ when it stops")
    lines.append(f"  ends: {'after ' + limit + ' s (--time-limit)' if limit else 'when its program does'}; restarts after a failure: {restarts}")
    return lines
