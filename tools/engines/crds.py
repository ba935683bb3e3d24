"""The upstream CRDs the offline admission checks read and the charts the offline render expands, from the Go
modules of the controller versions the stack installs (tools/engines/control-plane pins them; go.sum
verifies what the module proxy serves):

    python tools/engines/crds.py          # -> build/crds/{jobset,kueue,lws,gke}/*.yaml, build/charts/{jobset,kueue,lws}/

JobSet v0.12.0 config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml, Kueue v0.19.2
config/components/crd/bases/kueue.x-k8s.io_*.yaml and LeaderWorkerSet v0.9.0
config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml, byte for byte; and each module's
charts/<name> directory, the chart `pulumi up` installs (a local copy of what registry.k8s.io serves as
oci://registry.k8s.io/<name>/charts/<name>). Beside them, build/crds/gke: the CRDs GKE installs itself that the
stack's objects use (Managed Prometheus' PodMonitoring, the Inference Extension's InferencePool, the Gateway API's
standard channel, the Cluster Autoscaler's ProvisioningRequest, and stand-ins for GKE's own Gateway policies), and build/charts/inferencepool. A second run with the same pins copies nothing. Only
`go mod download` of the pinned modules is needed (no build): a fresh machine with Go gets them in seconds (Google's
API discovery documents, build/crds/gcp-api, come in a 53 MB module zip)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "build" / "crds"
CHARTS = ROOT / "build" / "charts"
WRAPPER = "control-plane"
# name: (wrapper module, Go module, CRD directory in it, file pattern)
SOURCES = {
    "jobset": (WRAPPER, "sigs.k8s.io/jobset", "config/components/crd/bases", "*.yaml"),
    "kueue": (WRAPPER, "sigs.k8s.io/kueue", "config/components/crd/bases", "*.yaml"),
    "lws": (WRAPPER, "sigs.k8s.io/lws", "config/crd/bases", "leaderworkerset.x-k8s.io_*.yaml"),
}
# Releases a stack may choose besides the pinned ones (components/model/cluster/controller_versions.py, "offline"):
# one wrapper module a release under versions/<name>-<version>, copied to build/crds/<name>@<version> and
# build/charts/<name>@<version>.
VERSIONS = HERE / "versions"


def extra_versions() -> dict[str, tuple[str, str, str, str, str]]:
    """<name>@<version> -> (wrapper, Go module, CRD directory, file pattern, chart name), one per wrapper in versions/."""
    out = {}
    for wrapper in sorted(p for p in VERSIONS.iterdir() if (p / "go.mod").is_file()):
        name, _, version = wrapper.name.partition("-")
        _, module, directory, pattern = SOURCES[name]
        out[f"{name}@{version}"] = (f"versions/{wrapper.name}", module, directory, pattern, name)
    return out


# CRDs GKE itself installs (no chart of the stack's): the tier applies them when it starts the control plane,
# as a GKE cluster has them (tools/engines/gke-crds pins the modules).
GKE_WRAPPER = "gke-crds"
GKE_SOURCES = {
    "gmp": (GKE_WRAPPER, "github.com/GoogleCloudPlatform/prometheus-engine", "charts/operator/crds",
            "monitoring.googleapis.com_podmonitorings.yaml"),
    "inference": (GKE_WRAPPER, "sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases",
                  "inference.networking.k8s.io_inferencepools.yaml"),
    "gateway": (GKE_WRAPPER, "sigs.k8s.io/gateway-api", "config/crd/standard", "gateway.networking.k8s.io_*.yaml"),
    "provisioning": (GKE_WRAPPER, "k8s.io/autoscaler/cluster-autoscaler/apis", "config/crd",
                     "autoscaling.x-k8s.io_provisioningrequests.yaml"),
}
GKE_OUT = OUT / "gke"
# GKE's Gateway policy and checkpointing CRDs, which no public module holds: the project's stand-ins (their files say so).
GKE_STAND_INS = sorted((HERE / GKE_WRAPPER).glob("*.gke.io_*.yaml"))
# The Inference Extension's inferencepool chart, packaged as its release does (hack/push-chart.sh: `helm dependency
# update` puts config/charts/epplib in as its inference-extension dependency, `helm package --version <tag>
# --app-version <tag>` stamps the release): the chart oci://registry.k8s.io/gateway-api-inference-extension/charts/
# inferencepool serves at that tag.
INFERENCE_CHART = (GKE_WRAPPER, "sigs.k8s.io/gateway-api-inference-extension", "config/charts/inferencepool",
                   "config/charts/epplib", "inference-extension")
# Google's API discovery documents (tools/engines/gcp-apis pins google.golang.org/api): the GCP half's inputs are
# judged against them offline (infra/offline/gcp_api.py), byte for byte as the module carries them.
GCP_API_WRAPPER = "gcp-apis"
GCP_API_MODULE = "google.golang.org/api"
GCP_API_DOCS = ("container/v1/container-api.json", "compute/v1/compute-api.json", "storage/v1/storage-api.json",
                "iam/v1/iam-api.json", "monitoring/v3/monitoring-api.json", "cloudkms/v1/cloudkms-api.json",
                "serviceusage/v1/serviceusage-api.json")
GCP_API_OUT = OUT / "gcp-api"


def module_dir(wrapper: str, module: str) -> Path:
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    proc = subprocess.run(["go", "mod", "download", "-json", module], cwd=HERE / wrapper, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"crds: go mod download {module} (pinned in tools/engines/{wrapper}) failed:\n{proc.stderr.strip()}")
    return Path(json.loads(proc.stdout)["Dir"])


def stamp() -> str:
    h = hashlib.sha256()
    h.update(repr(sorted(SOURCES.items())).encode())
    h.update(repr(sorted(GKE_SOURCES.items())).encode() + repr(INFERENCE_CHART).encode() + repr(GCP_API_DOCS).encode())
    for stand_in in GKE_STAND_INS:
        h.update(stand_in.read_bytes())
    for wrapper in sorted({w for w, *_ in (*SOURCES.values(), *GKE_SOURCES.values(), *extra_versions().values())} | {GCP_API_WRAPPER}):
        h.update((HERE / wrapper / "go.sum").read_bytes())
    return h.hexdigest()[:16]


def main() -> int:
    key = stamp()
    marker = OUT / ".stamp"
    if marker.exists() and marker.read_text() == key:
        return 0
    if not shutil.which("go"):
        raise SystemExit("crds: the upstream CRDs come from the pinned Go modules; install Go (https://go.dev/dl/, 1.26) and retry")
    print("==> fetching the JobSet, Kueue and LeaderWorkerSet CRDs and charts from their pinned Go modules (build/crds, "
          f"build/charts; also {', '.join(extra_versions())})", flush=True)
    releases = [(name, wrapper, module, directory, pattern, name) for name, (wrapper, module, directory, pattern) in SOURCES.items()]
    releases += [(key, *release) for key, release in extra_versions().items()]
    for key, wrapper, module, directory, pattern, name in releases:
        root = module_dir(wrapper, module)
        dest = OUT / key
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for crd in sorted((root / directory).glob(pattern)):
            shutil.copyfile(crd, dest / crd.name)
        chart = CHARTS / key
        shutil.rmtree(chart, ignore_errors=True)
        # the module cache is read-only: copy the files, not their modes
        shutil.copytree(root / "charts" / name, chart, copy_function=shutil.copyfile)
    shutil.rmtree(GKE_OUT, ignore_errors=True)
    GKE_OUT.mkdir(parents=True)
    for wrapper, module, directory, pattern in GKE_SOURCES.values():
        for crd in sorted((module_dir(wrapper, module) / directory).glob(pattern)):
            shutil.copyfile(crd, GKE_OUT / crd.name)
    for stand_in in GKE_STAND_INS:
        shutil.copyfile(stand_in, GKE_OUT / stand_in.name)
    copy_inference_chart()
    shutil.rmtree(GCP_API_OUT, ignore_errors=True)
    GCP_API_OUT.mkdir(parents=True)
    api_root = module_dir(GCP_API_WRAPPER, GCP_API_MODULE)
    for doc in GCP_API_DOCS:
        shutil.copyfile(api_root / doc, GCP_API_OUT / Path(doc).name)
    marker.write_text(key)
    return 0


def copy_inference_chart() -> None:
    wrapper, module, chart_path, library_path, library_name = INFERENCE_CHART
    info = json.loads(subprocess.run(["go", "list", "-m", "-json", module], cwd=HERE / wrapper, capture_output=True,
                                     text=True, check=True, env={**os.environ, "GOFLAGS": "-mod=readonly"}).stdout)
    root = module_dir(wrapper, module)
    dest = CHARTS / Path(chart_path).name
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(root / chart_path, dest, copy_function=shutil.copyfile)
    shutil.copytree(root / library_path, dest / "charts" / library_name, copy_function=shutil.copyfile)
    chart_yaml = dest / "Chart.yaml"
    text = chart_yaml.read_text()
    # the two lines the release's `helm package --version --app-version` rewrites
    for field in ("version", "appVersion"):
        text, n = re.subn(rf'(?m)^{field}: .*$', f'{field}: "{info["Version"]}"', text, count=1)
        if n != 1:
            raise SystemExit(f"crds: {chart_yaml} has no top-level {field}: the chart's layout changed")
    chart_yaml.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
