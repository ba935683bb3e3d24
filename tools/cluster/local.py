"""A real Kubernetes control plane on this machine: kube-apiserver, etcd, kube-controller-manager and
kube-scheduler (kwokctl's binary runtime, fake nodes played by kwok). All binaries come from
tools/engines/build.py (pinned Go modules); nothing is downloaded.

    with LocalCluster.start(workdir) as cluster:
        cluster.kubectl("get", "nodes")

The JobSet, Kueue and LeaderWorkerSet controllers are not wired in here: the stack's own `pulumi up`
installs their charts, and the kubelet stand-in (tools/cluster/kubelet.py) runs the pinned controller
binaries for the pods those charts' Deployments get, under the charts' ServiceAccounts and RBAC, with the
charts' configs, certificates and webhooks. The API server calls webhooks and aggregated APIs at their
Services' endpoints (--enable-aggregator-routing): no kube-proxy runs here to serve ClusterIPs.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

from components.model.workloads import inference_gateway as igw
from tools.cluster.api import Api
from tools.cluster.cloud import LoadBalancerController, QueuedProvisioner
from tools.cluster.engine_prober import EngineProber
from tools.cluster.kubelet import ControllerKubelet, Engine
from tools.cluster.slices import SliceFormation

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENGINES = ROOT / "tools" / "engines"
BIN = ROOT / "build" / "engines" / "bin"
STAGES = HERE / "stages.yaml"
CONTROL_PLANE = "control-plane"  # the wrapper that pins Kubernetes, kwok and the three controllers


class ClusterError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def module_dir(module: str, wrapper: str = CONTROL_PLANE) -> Path:
    """Where the Go module cache holds `module` at the version the wrapper pins."""
    out = subprocess.run(["go", "list", "-m", "-json", module], cwd=ENGINES / wrapper, capture_output=True, text=True,
                         env={**os.environ, "GOFLAGS": "-mod=readonly"})
    if out.returncode != 0:
        raise ClusterError(f"go list {module} in tools/engines/{wrapper}: {out.stderr.strip()}")
    info = json.loads(out.stdout)
    if not info.get("Dir"):
        subprocess.run(["go", "mod", "download", module], cwd=ENGINES / wrapper, check=True, capture_output=True)
        return module_dir(module, wrapper)
    return Path(info["Dir"])


# The controllers' images (registry.k8s.io/<name>/<name>:v<version>) and the binaries built from the same
# versions: the kubelet stand-in runs a chart's pod only when its image is the pinned version.
CONTROLLER_IMAGES = {"jobset": "jobset-controller", "kueue": "kueue", "lws": "lws-controller"}


def controller_engines() -> dict[str, Engine]:
    spec = json.loads((ENGINES / CONTROL_PLANE / "engine.json").read_text())
    versions = spec["controllerVersions"]
    engines = {name: Engine(f"registry.k8s.io/{name}/{name}", versions[name], BIN / binary) for name, binary in CONTROLLER_IMAGES.items()}
    # the inference gateway's endpoint picker, built from the Go module of the version the stack pins (the image's
    # ENTRYPOINT is /epp: the module's Dockerfile)
    engines["epp"] = Engine(f"{igw.EPP_IMAGE_REGISTRY}/{igw.EPP_IMAGE_REPOSITORY}", igw.CHART_VERSION, BIN / "epp", entrypoint="/epp")
    return engines


def chart_dir(name: str) -> Path:
    """The chart of a controller, from its pinned Go module (charts/<name>), as `pulumi up` installs it."""
    versions = json.loads((ENGINES / CONTROL_PLANE / "engine.json").read_text())["controllerVersions"]
    path = module_dir(f"sigs.k8s.io/{name}") / "charts" / name
    chart = yaml.safe_load((path / "Chart.yaml").read_text())
    # the controller's version: the chart's appVersion where it has one (LWS's chart says version 0.1.0 until its
    # release rewrites it), else its version (JobSet's has no appVersion)
    found = str(chart.get("appVersion") or chart.get("version") or "").lstrip("v")
    if found != versions[name]:
        raise ClusterError(f"{path}: the chart is for {name} {found}, not the pinned {versions[name]}")
    return path


GKE_CRDS = Path(__file__).resolve().parents[2] / "build" / "crds" / "gke"
# The inference gateway's chart as its release packages it (tools/engines/crds.py copies it from the pinned module).
INFERENCE_POOL_CHART = Path(__file__).resolve().parents[2] / "build" / "charts" / "inferencepool"


class LocalCluster:
    def __init__(self, workdir: Path, name: str = "pathways-e2e", pod_cidr: Optional[str] = None):
        self.workdir = workdir
        self.name = name
        # its nodes' spec.podCIDR, from which kwok gives their pods addresses (else its default 10.0.0.0/24): control
        # planes that run at once each need their own, or the kubelet stand-in's routes to one's pods would take
        # another's (tools/cluster/kubelet.py; a KwokConfiguration of kwokctl's would replace all kwok's defaults)
        self.pod_cidr = pod_cidr
        self.kwok_workdir = workdir / "kwok"
        self.kubeconfig = workdir / "kubeconfig"
        self.api: Optional[Api] = None
        self.kubelet: Optional[ControllerKubelet] = None
        self.engine_prober: Optional[EngineProber] = None
        self.load_balancers: Optional[LoadBalancerController] = None
        self.provisioner: Optional[QueuedProvisioner] = None
        self.slices: Optional[SliceFormation] = None

        self.env = {
            **os.environ,
            "KWOK_WORKDIR": str(self.kwok_workdir),
            "KWOK_KUBECTL_BINARY": str(BIN / "kubectl"),  # kwokctl would download one otherwise
            "KUBECACHEDIR": str(workdir / "kube-cache"),
            "XDG_CONFIG_HOME": str(workdir / "config"),  # what the CLI keeps for its user (a notebook's password)
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    # --- kubectl ---------------------------------------------------------------------------------

    def kubectl(self, *args: str, stdin: Optional[str] = None, check: bool = True, kubeconfig: Optional[Path] = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(BIN / "kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig}", *args]
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError(f"kubectl {' '.join(args)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def apply(self, objects: list[dict[str, Any]], *, server_side: bool = True, kubeconfig: Optional[Path] = None,
              check: bool = True, field_manager: str = "pathways-e2e") -> subprocess.CompletedProcess[str]:
        """Apply objects the way Pulumi's provider does (server-side) with strict field validation: an
        unknown or duplicate field is an error, as the API server reports it."""
        text = yaml.safe_dump_all(objects, sort_keys=False)
        args = ["apply", "-f", "-", "--validate=strict"]
        if server_side:
            args += ["--server-side", f"--field-manager={field_manager}", "--force-conflicts"]
        return self.kubectl(*args, stdin=text, check=check, kubeconfig=kubeconfig)

    def wait_for(self, what: str, predicate, timeout: float = 60, interval: float = 0.5) -> Any:
        """Poll `predicate()` until it returns a truthy value; that value, or a ClusterError naming `what`."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = predicate()
            except ClusterError as e:
                last = e
            else:
                if last:
                    return last
            time.sleep(interval)
        raise ClusterError(f"timed out after {timeout:g} s waiting for {what} (last: {str(last)[:300]})")

    # --- lifecycle -------------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def start(cls, workdir: Optional[Path] = None) -> Iterator["LocalCluster"]:
        own = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="pathways-e2e-"))
        cluster = cls(workdir)
        try:
            cluster.create()
            cluster.start_kubelet()
            yield cluster
        finally:
            cluster.stop()
            if own:
                shutil.rmtree(workdir, ignore_errors=True)

    def create(self) -> None:
        missing = [b for b in ("kwokctl", "kwok", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kubectl",
                               *CONTROLLER_IMAGES.values())
                   if not (BIN / b).exists()]
        if missing:
            raise ClusterError(f"missing engines {', '.join(missing)} in {BIN}: run `make toolchain` first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        log(f"creating control plane {self.name} (kwokctl --runtime binary) in {self.workdir}")
        from tools.cluster.offline import ADDRESS

        # The controllers' pods reach the API server at this namespace's veth address (tools/cluster/kubelet.py):
        # its serving certificate must name it.
        options = self.workdir / "kwokctl-options.yaml"
        options.write_text(yaml.safe_dump({"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
                                           "options": {"kubeApiserverCertSANs": [ADDRESS.split("/")[0]]}}))
        cmd = [str(BIN / "kwokctl"), "create", "cluster", "--name", self.name, "--runtime", "binary",
               f"--kube-apiserver-binary={BIN / 'kube-apiserver'}",
               f"--kube-controller-manager-binary={BIN / 'kube-controller-manager'}",
               f"--kube-scheduler-binary={BIN / 'kube-scheduler'}",
               f"--kwok-controller-binary={BIN / 'kwok'}",
               f"--etcd-binary={BIN / 'etcd'}",
               f"--config={STAGES}", f"--config={options}",
               # Controllers act as their own service accounts, as on GKE (the job controller creates pods
               # as system:serviceaccount:kube-system:job-controller).
               "--extra-args=kube-controller-manager=use-service-account-credentials=true",
               # Webhooks and aggregated APIs at their Services' endpoints (pod IPs): no kube-proxy here.
               "--extra-args=kube-apiserver=enable-aggregator-routing=true",
               "--disable-qps-limits",
               # kwok's stand-in kubelet serves a container's log (kubectl logs, through the API server) from the file a
               # kwok.x-k8s.io Logs object names for that pod: a scenario writes a worker's log after its run ended
               "--enable-crds=Logs",
               f"--kubeconfig={self.workdir / 'kwokctl-kubeconfig'}", "--quiet-pull", "--wait=3m"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=300)
        if proc.returncode != 0:
            raise ClusterError(f"kwokctl create cluster failed: {proc.stderr[-2000:]}")
        kc = subprocess.run([str(BIN / "kwokctl"), "get", "kubeconfig", "--name", self.name],
                            capture_output=True, text=True, env=self.env, check=True)
        self.kubeconfig.write_text(kc.stdout)
        self.api = Api.from_kubeconfig(self.kubeconfig)
        self.wait_for("the default service account", lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0)
        self.install_gke_crds()
        log(f"control plane up in {time.monotonic() - t0:.0f} s")

    def install_gke_crds(self) -> None:
        """The CRDs a GKE cluster has before any stack runs (Managed Prometheus' PodMonitoring with managed
        collection on, the Inference Extension's InferencePool), byte for byte from their pinned modules
        (build/crds/gke, tools/engines/crds.py): the stack's objects of those kinds meet their real schemas."""
        files = sorted(GKE_CRDS.glob("*.yaml"))
        if not files:
            raise ClusterError(f"no GKE CRDs in {GKE_CRDS}: run `make crds`")
        for path in files:
            self.kubectl("apply", "--server-side", "-f", str(path))
        for path in files:
            name = yaml.safe_load(path.read_text())["metadata"]["name"]
            self.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")

    @property
    def apiserver_port(self) -> int:
        server = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        return int(server.rsplit(":", 1)[1])

    def start_kubelet(self) -> None:
        """The kubelet stand-in for the controllers' pods (tools/cluster/kubelet.py). Their network namespaces
        reach the API server at the address this namespace has on its veth (tools/cluster/offline.py)."""
        from tools.cluster.offline import ADDRESS, MARKER

        if os.environ.get(MARKER) != "1":
            raise ClusterError("the controllers' pods need the tier's network namespace: run under `python -m tools.cluster.offline`")
        assert self.api is not None, "create() first"
        self.kubelet = ControllerKubelet(self.api, self.workdir / "kubelet", controller_engines(), gateway=ADDRESS.split("/")[0],
                                         apiserver_port=self.apiserver_port)
        self.kubelet.start()
        self.engine_prober = EngineProber(self.api)
        self.engine_prober.start()
        self.load_balancers = LoadBalancerController(self.api)
        self.load_balancers.start()
        self.provisioner = QueuedProvisioner(self.api)
        self.provisioner.start()
        self.slices = SliceFormation(self.api)
        self.slices.install()
        self.slices.start()

    def offer_queued_pools(self, pools: dict[str, list[dict[str, Any]]]) -> None:
        """The deployed stack's queued-provisioning pools, for the stand-in of GKE's queued provisioning."""
        if self.provisioner is not None:
            self.provisioner.offer(pools)


    @property
    def pki(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name / "pki"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode((self.pki / "ca.crt").read_bytes()).decode()

    def user_kubeconfig(self, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig that authenticates as `user` (with `groups`) through a client certificate signed
        by the cluster's CA: the API server sees exactly that user name, as admission policies do."""
        safe = user.replace(":", "_").replace("/", "_").replace("@", "_")
        path = self.workdir / "users" / f"{safe}.kubeconfig"
        if path.exists():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        key, csr, crt = (path.with_suffix(s) for s in (".key", ".csr", ".crt"))
        subject = "/CN=" + user + "".join(f"/O={g}" for g in groups)
        subprocess.run(["openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                        "-subj", subject], check=True, capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(self.pki / "ca.crt"), "-CAkey", str(self.pki / "ca.key"),
                        "-CAcreateserial", "-out", str(crt), "-days", "2"], check=True, capture_output=True)
        admin = yaml.safe_load(self.kubeconfig.read_text())
        server = admin["clusters"][0]["cluster"]["server"]
        path.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "user",
            "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority-data": self.ca_bundle}}],
            "contexts": [{"name": "user", "context": {"cluster": "local", "user": "user"}}],
            "users": [{"name": "user", "user": {
                "client-certificate-data": base64.b64encode(crt.read_bytes()).decode(),
                "client-key-data": base64.b64encode(key.read_bytes()).decode()}}],
        }))
        return path

    def stop(self) -> None:
        if self.load_balancers is not None:
            self.load_balancers.stop()
        if self.provisioner is not None:
            self.provisioner.stop()
        if self.slices is not None:
            self.slices.stop()

        if self.kubelet is not None:
            self.kubelet.stop()
        if self.engine_prober is not None:
            self.engine_prober.stop()
        if (self.kwok_workdir / "clusters" / self.name).exists():
            subprocess.run([str(BIN / "kwokctl"), "delete", "cluster", "--name", self.name,
                            f"--kubeconfig={self.workdir / 'kwokctl-kubeconfig'}"],
                           capture_output=True, text=True, env=self.env, timeout=120)
            log(f"control plane {self.name} deleted")


def leftover_processes(workdir: Path) -> list[str]:
    """Processes still running from a cluster's work directory (a clean teardown leaves none)."""
    proc = subprocess.run(["pgrep", "-a", "-f", str(workdir)], capture_output=True, text=True)
    return [line for line in proc.stdout.splitlines() if line and "pgrep" not in line]
