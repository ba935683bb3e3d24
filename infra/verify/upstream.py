"""Upstream releases: every pin the stack installs or is built against, beside the newest release its registry
offers (`verify --upstream`; the network, never the cloud).

- the controllers' charts (the stack's kubernetes.* versions) and the inference extension's, by their Go modules
  (the charts are released with the module's tags): the Go module proxy's `@latest`, and a `// Deprecated:` comment
  in the newest go.mod (what `go list -m -u` reports as deprecated);
- the serving engine (vllm-tpu and the tpu-inference it requires), the Pulumi SDKs and the policy SDK: PyPI's JSON
  API (`info.version`; a pinned release yanked, or a project marked `Development Status :: 7 - Inactive`);
- the Pulumi CLI the workflows run and the real-engine tier builds (tools/engines/pulumi/go.mod).

The GKE version is the cloud's (`gcloud container get-server-config`, read with --live): the stack's release
channel's default against the model's table of what each channel creates clusters at. Archival of a
repository (as the inference extension's endpoint picker was) shows only where its maintainers also mark the
module deprecated or the project inactive; the finding says when the index lists nothing newer than the pin (a
partial mirror answers so).
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from infra.verify.findings import Finding

ROOT = Path(__file__).resolve().parents[2]
Fetch = Callable[[str], Optional[str]]
"""A URL's body, or None when the registry has no answer (404, unreachable)."""


@dataclass(frozen=True)
class Pin:
    name: str
    registry: str
    """go or pypi"""
    package: str
    version: str
    where: str
    """where the pin is set, for the fix"""


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", v.split("+")[0].split("-")[0])[:3])


def _locked(lock: str, name: str) -> Optional[str]:
    m = re.search(rf"^{re.escape(name)}==([^\s\\]+)", lock, re.M)
    return m.group(1) if m else None


def _go_requirement(gomod: Path, module: str) -> Optional[str]:
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)} (v[^\s]+)", gomod.read_text(), re.M) if gomod.exists() else None
    return m.group(1) if m else None


def pins(cfg: object) -> list[Pin]:
    """The stack's pins (its StackConfig) and the project's (requirements.lock, the engines' go.mod files)."""
    from components.model.workloads.vllm import RELEASES, VLLM_IMAGE

    kube = cfg.kubernetes  # type: ignore[attr-defined]
    out = [Pin("JobSet", "go", "sigs.k8s.io/jobset", kube.jobset_version, "pathways:kubernetes.jobsetVersion"),
           Pin("Kueue", "go", "sigs.k8s.io/kueue", kube.kueue.version, "pathways:kubernetes.kueue.version")]
    if any(w.mode == "serve" for w in cfg.workloads):  # type: ignore[attr-defined]
        tag = VLLM_IMAGE.rsplit(":", 1)[1]
        out += [Pin("LeaderWorkerSet", "go", "sigs.k8s.io/lws", kube.lws_version, "pathways:kubernetes.lwsVersion"),
                Pin("inference extension", "go", "sigs.k8s.io/gateway-api-inference-extension", kube.inference_pool_version,
                    "pathways:kubernetes.inferencePoolVersion"),
                Pin("vllm-tpu", "pypi", "vllm-tpu", RELEASES[tag].vllm, "components/model/workloads/vllm.py VLLM_IMAGE"),
                Pin("tpu-inference", "pypi", "tpu-inference", RELEASES[tag].tpu_inference, "components/model/workloads/vllm.py RELEASES")]
    lock_file = ROOT / "requirements.lock"
    lock = lock_file.read_text() if lock_file.exists() else ""
    for name in ("pulumi", "pulumi-gcp", "pulumi-kubernetes", "pulumi-policy"):
        version = _locked(lock, name)
        if version:
            out.append(Pin(f"{name} SDK", "pypi", name, version, "requirements.txt (make lock)"))
    # the CLI the workflows and the real-engine tier run; the Kubernetes provider is the SDK's release (a pseudo-version
    # of that tag's commit in tools/engines/pulumi-kubernetes/go.mod), judged as the SDK above
    version = _go_requirement(ROOT / "tools" / "engines" / "pulumi" / "go.mod", "github.com/pulumi/pulumi/pkg/v3")
    if version:
        out.append(Pin("pulumi CLI", "go", "github.com/pulumi/pulumi/pkg/v3", version, "tools/engines/pulumi/go.mod and the workflows' PULUMI_VERSION"))
    return out


def fetch_url(url: str) -> Optional[str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode("utf-8")
    except OSError:
        return None


def _proxy() -> str:
    first = (os.environ.get("GOPROXY") or "https://proxy.golang.org").split(",")[0].split("|")[0]
    return first if first.startswith("http") else "https://proxy.golang.org"


def _escaped(module: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)


def newest(pin: Pin, fetch: Fetch) -> tuple[Optional[str], list[str]]:
    """(the newest release the registry offers, what it says about the pin or the project: deprecated, yanked)."""
    notes: list[str] = []
    if pin.registry == "go":
        base = f"{_proxy()}/{_escaped(pin.package)}/@v"
        listed = [v for v in (fetch(f"{base}/list") or "").split() if re.fullmatch(r"v\d+\.\d+\.\d+", v)]
        latest = max(listed, key=_version_key) if listed else None
        mod = fetch(f"{base}/{latest}.mod") if latest else None
        m = re.search(r"//\s*Deprecated:\s*(.+)", mod or "")
        if m:
            notes.append(f"the module is deprecated: {m.group(1).strip()[:160]}")
        return (latest.lstrip("v") if latest else None), notes
    doc = fetch(f"https://pypi.org/pypi/{pin.package}/json")
    if doc is None:
        return None, notes
    info = json.loads(doc)
    if any(f.get("yanked") for f in (info.get("releases") or {}).get(pin.version, [])):
        notes.append(f"{pin.version} is yanked on PyPI")
    if "Development Status :: 7 - Inactive" in (info.get("info") or {}).get("classifiers", []):
        notes.append("the project is marked inactive on PyPI")
    return (info.get("info") or {}).get("version"), notes


def findings(cfg: object, fetch: Fetch = fetch_url) -> list[Finding]:
    out = []
    for pin in pins(cfg):
        current = pin.version.lstrip("v")
        latest, notes = newest(pin, fetch)
        subject = f"{pin.name} {current}"
        if notes:
            out.append(Finding("high", "upstream", subject, "; ".join(notes),
                               f"move to a maintained release or replacement ({pin.where}), after reading its release notes"))
        if latest is None:
            out.append(Finding("info", "upstream", subject, f"{pin.package}: the registry gave no release list",
                               "check the project's release page by hand"))
        elif _version_key(latest) < _version_key(current):
            out.append(Finding("info", "upstream", subject, f"{pin.package}: the registry lists {latest} as newest, older than the pin "
                               "(a partial mirror or index)", "check the project's release page by hand"))
        elif _version_key(latest) > _version_key(current):
            cur, new = _version_key(current), _version_key(latest)
            behind = "a major" if new[0] > cur[0] else (f"{new[1] - cur[1]} minor" if new[1] > cur[1] else "a patch")
            severity = "medium" if new[0] > cur[0] or new[1] - cur[1] >= 2 else ("low" if new[1] > cur[1] else "info")
            out.append(Finding(severity, "upstream", subject, f"{pin.package} {latest} is out ({behind} release(s) ahead)",
                               f"read its release notes (deprecations, API moves), then raise {pin.where} in a pull request; "
                               "the real-engine tier builds and runs what it pins"))
    return out


def gke_findings(cfg: object, server_config: Optional[dict[str, Any]]) -> list[Finding]:
    """The stack's release channel as GKE offers it today (`gcloud container get-server-config --format=json`: the API's
    ServerConfig, channels[] of {channel, defaultVersion, validVersions}) against the minor the model says the channel
    creates clusters at (components/model/cluster/cluster.py CHANNEL_DEFAULT_MINOR, read from GKE's release notes)."""
    from components.model.cluster.cluster import CHANNEL_DEFAULT_MINOR

    channel = str(getattr(cfg.cluster.release_channel, "value", cfg.cluster.release_channel))  # type: ignore[attr-defined]
    if server_config is None:
        return [Finding("info", "upstream", "GKE version", "not checked: the cloud's list of versions was not read (--live reads it)",
                        f"gcloud container get-server-config --location {cfg.region} --format=json")]  # type: ignore[attr-defined]
    offered = next((c for c in server_config.get("channels") or [] if isinstance(c, dict) and c.get("channel") == channel), None)
    if offered is None:
        return [Finding("high", "upstream", f"GKE {channel}", f"GKE offers no {channel} channel in {cfg.region}",  # type: ignore[attr-defined]
                        "pick an offered channel (cluster.releaseChannel)")]
    default = str(offered.get("defaultVersion") or "")
    minor = ".".join(default.split(".")[:2])
    known = CHANNEL_DEFAULT_MINOR.get(channel)
    if known and minor and minor != known:
        return [Finding("low", "upstream", f"GKE {channel}", f"creates clusters at {default} now; the model's table says {known}",
                        "update CHANNEL_DEFAULT_MINOR in components/model/cluster/cluster.py (its version rules read it), "
                        "after GKE's release notes")]
    return []


def server_config(cfg: object) -> Optional[dict[str, Any]]:
    """`gcloud container get-server-config` for the stack's region, or None when gcloud cannot read it."""
    import subprocess

    proc = subprocess.run(["gcloud", "container", "get-server-config", "--location", cfg.region, "--project",  # type: ignore[attr-defined]
                           cfg.project, "--format=json"], capture_output=True, text=True, timeout=120)  # type: ignore[attr-defined]
    return json.loads(proc.stdout) if proc.returncode == 0 and proc.stdout.strip() else None
