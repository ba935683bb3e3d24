"""A real Kubernetes control plane on this machine: kube-apiserver, etcd, kube-controller-manager and
kube-scheduler (kwokctl's binary runtime, fake nodes played by kwok), with the JobSet, Kueue and LWS
controllers as local processes serving their real webhooks. All binaries come from
tools/engines/build.py (pinned Go modules); nothing is downloaded.

    with LocalCluster.start(workdir) as cluster:
        cluster.kubectl("get", "nodes")

The controllers run the way kwokctl wires them for its container runtimes (kwok v0.8.0
pkg/kwokctl/components/{jobset,kueue,lws}.go): leader election off, manifests from each module's
config/default through `kubectl kustomize`, webhook Services rewritten to ExternalName localhost and
webhook CA bundles set to kwok's CA, whose admin certificate names every webhook Service. Each
controller acts under the identity it has in a GKE install (a client certificate for its service
account's user name), so the admission policies that name those identities are tested as they run.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ENGINES = ROOT / "tools" / "engines"
BIN = ROOT / "build" / "engines" / "bin"
STAGES = HERE / "stages.yaml"


class ClusterError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def module_dir(wrapper: str, module: str) -> Path:
    """Where the Go module cache holds `module` at the version the wrapper pins."""
    out = subprocess.run(["go", "list", "-m", "-json", module], cwd=ENGINES / wrapper, capture_output=True, text=True,
                         env={**os.environ, "GOFLAGS": "-mod=mod"})
    if out.returncode != 0:
        raise ClusterError(f"go list {module} in tools/engines/{wrapper}: {out.stderr.strip()}")
    info = json.loads(out.stdout)
    if not info.get("Dir"):
        subprocess.run(["go", "mod", "download", module], cwd=ENGINES / wrapper, check=True, capture_output=True)
        return module_dir(wrapper, module)
    return Path(info["Dir"])


@dataclass(frozen=True)
class Controller:
    name: str
    wrapper: str
    module: str
    binary: str
    namespace: str
    webhook_port: int
    health_port: int
    metrics_port: int
    config_api: str
    user: str
    """The user name the controller has in a cluster the stack installs it into."""
    crds: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


# The identities follow the installs: the JobSet chart's service account (release "jobset": jobset-controller),
# Kueue's and LWS's release manifests (kueue-controller-manager, lws-controller-manager).
JOBSET = Controller("jobset", "jobset", "sigs.k8s.io/jobset", "jobset-controller", "jobset-system", 9443, 8081, 8443,
                    "config.jobset.x-k8s.io/v1alpha1", "system:serviceaccount:jobset-system:jobset-controller",
                    ("jobsets.jobset.x-k8s.io",))
KUEUE = Controller("kueue", "kueue", "sigs.k8s.io/kueue", "kueue", "kueue-system", 9444, 8091, 8453,
                   "config.kueue.x-k8s.io/v1beta2", "system:serviceaccount:kueue-system:kueue-controller-manager",
                   ("workloads.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "localqueues.kueue.x-k8s.io",
                    "resourceflavors.kueue.x-k8s.io", "workloadpriorityclasses.kueue.x-k8s.io", "cohorts.kueue.x-k8s.io"),
                   {"NAMESPACE": "kueue-system"})
LWS = Controller("lws", "lws", "sigs.k8s.io/lws", "lws-controller", "lws-system", 9445, 8101, 8463,
                 "config.lws.x-k8s.io/v1alpha1", "system:serviceaccount:lws-system:lws-controller-manager",
                 ("leaderworkersets.leaderworkerset.x-k8s.io",))
CONTROLLERS = (JOBSET, LWS, KUEUE)  # Kueue last: its integrations look for the other CRDs at start

# What the controllers do not need as local processes (they act with their own client certificate).
_DROP = {("apps/v1", "Deployment"), ("v1", "ServiceAccount"), ("rbac.authorization.k8s.io/v1", "Role"),
         ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
         ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")}


def local_manifests(raw: list[dict[str, Any]], ca_bundle: str, port: int, keep_secrets: bool) -> list[dict[str, Any]]:
    """Release manifests rewritten for a controller that runs on this machine (see the module doc)."""
    out = []
    for d in raw:
        key = (d["apiVersion"], d["kind"])
        if key in _DROP or (key == ("v1", "ConfigMap")) or (key == ("v1", "Secret") and not keep_secrets):
            continue
        if key == ("apiregistration.k8s.io/v1", "APIService"):
            continue  # Kueue's visibility API: its server is off (it would need certificates under /visibility)
        if d["kind"] == "CustomResourceDefinition":
            conversion = d["spec"].get("conversion") or {}
            if conversion.get("strategy") == "Webhook":
                conversion["webhook"]["clientConfig"].update(caBundle=ca_bundle)
                conversion["webhook"]["clientConfig"]["service"]["port"] = port
        elif key == ("v1", "Service"):
            d["spec"] = {"type": "ExternalName", "externalName": "localhost"}
        elif d["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for w in d.get("webhooks") or []:
                w["clientConfig"]["caBundle"] = ca_bundle
                w["clientConfig"]["service"]["port"] = port
        out.append(d)
    return out


class LocalCluster:
    def __init__(self, workdir: Path, name: str = "pathways-e2e"):
        self.workdir = workdir
        self.name = name
        self.kwok_workdir = workdir / "kwok"
        self.kubeconfig = workdir / "kubeconfig"
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {
            **os.environ,
            "KWOK_WORKDIR": str(self.kwok_workdir),
            "KWOK_KUBECTL_BINARY": str(BIN / "kubectl"),  # kwokctl would download one otherwise
            "KUBECACHEDIR": str(workdir / "kube-cache"),
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
    def start(cls, workdir: Optional[Path] = None, controllers: tuple[Controller, ...] = CONTROLLERS) -> Iterator["LocalCluster"]:
        own = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="pathways-e2e-"))
        cluster = cls(workdir)
        try:
            cluster.create()
            for c in controllers:
                cluster.start_controller(c)
            yield cluster
        finally:
            cluster.stop()
            if own:
                shutil.rmtree(workdir, ignore_errors=True)

    def create(self) -> None:
        missing = [b for b in ("kwokctl", "kwok", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kubectl")
                   if not (BIN / b).exists()]
        if missing:
            raise ClusterError(f"missing engines {', '.join(missing)} in {BIN}: run `make toolchain` first")
        self.workdir.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        log(f"creating control plane {self.name} (kwokctl --runtime binary) in {self.workdir}")
        cmd = [str(BIN / "kwokctl"), "create", "cluster", "--name", self.name, "--runtime", "binary",
               f"--kube-apiserver-binary={BIN / 'kube-apiserver'}",
               f"--kube-controller-manager-binary={BIN / 'kube-controller-manager'}",
               f"--kube-scheduler-binary={BIN / 'kube-scheduler'}",
               f"--kwok-controller-binary={BIN / 'kwok'}",
               f"--etcd-binary={BIN / 'etcd'}",
               f"--config={STAGES}",
               # Controllers act as their own service accounts, as on GKE (the job controller creates pods
               # as system:serviceaccount:kube-system:job-controller).
               "--extra-args=kube-controller-manager=use-service-account-credentials=true",
               "--disable-qps-limits",
               f"--kubeconfig={self.workdir / 'kwokctl-kubeconfig'}", "--quiet-pull", "--wait=3m"]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=300)
        if proc.returncode != 0:
            raise ClusterError(f"kwokctl create cluster failed: {proc.stderr[-2000:]}")
        kc = subprocess.run([str(BIN / "kwokctl"), "get", "kubeconfig", "--name", self.name],
                            capture_output=True, text=True, env=self.env, check=True)
        self.kubeconfig.write_text(kc.stdout)
        self.wait_for("the default service account", lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0)
        log(f"control plane up in {time.monotonic() - t0:.0f} s")

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

    def _wait_crd(self, name: str) -> None:
        def established() -> bool:
            proc = self.kubectl("get", "crd", name, "-o", "jsonpath={.status.conditions[?(@.type==\"Established\")].status}", check=False)
            return proc.stdout.strip() == "True"
        self.wait_for(f"CRD {name} established", established, timeout=60)

    def start_controller(self, c: Controller) -> None:
        t0 = time.monotonic()
        home = self.workdir / c.name
        certs = home / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        src = module_dir(c.wrapper, c.module) / "config" / "default"
        raw = self.kubectl("kustomize", str(src)).stdout
        objects = [d for d in yaml.safe_load_all(raw) if d]
        kueue_cert_rotation = c is KUEUE
        self.apply(local_manifests(objects, self.ca_bundle, c.webhook_port, keep_secrets=kueue_cert_rotation), field_manager=f"e2e-{c.name}")
        for crd in c.crds:
            self._wait_crd(crd)
        config: dict[str, Any] = {
            "apiVersion": c.config_api, "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "webhook": {"port": c.webhook_port, "host": "127.0.0.1", "certDir": str(certs)},
            "metrics": {"bindAddress": f"127.0.0.1:{c.metrics_port}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{c.health_port}"},
        }
        if c is KUEUE:
            # Kueue's own manager config (integrations: JobSet, LeaderWorkerSet, ...), as the release has it.
            cm = next(d for d in objects if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("manager-config"))
            config = {**yaml.safe_load(cm["data"]["controller_manager_config.yaml"]), **config, "namespace": c.namespace,
                      # With cert management off Kueue insists on a metrics certificate under /etc; with it on,
                      # it makes its own CA and certificates and injects the CA (the kubelet's part, mounting the
                      # Secret into certDir, is done below). The visibility server would need more files.
                      "internalCertManagement": {"enable": True},
                      "featureGates": {"VisibilityOnDemand": False}}
        else:
            config["internalCertManagement"] = {"enable": False}
            for name, src_name in (("ca.crt", "ca.crt"), ("tls.crt", "admin.crt"), ("tls.key", "admin.key")):
                target = certs / name
                if not target.exists():
                    target.symlink_to(self.pki / src_name)
        (home / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        kubeconfig = self.user_kubeconfig(c.user, ("system:masters",))
        logfile = open(home / "controller.log", "wb")
        self.processes[c.name] = subprocess.Popen(
            [str(BIN / c.binary), f"--config={home / 'config.yaml'}", f"--kubeconfig={kubeconfig}"],
            stdout=logfile, stderr=subprocess.STDOUT, env={**self.env, **c.env}, start_new_session=True,
        )
        if kueue_cert_rotation:
            self._mount_kueue_certs(certs)
        self.wait_for(f"{c.name} ready (127.0.0.1:{c.health_port}/readyz)", lambda: self._ready(c), timeout=120)
        log(f"{c.name} controller ready in {time.monotonic() - t0:.0f} s")

    def _mount_kueue_certs(self, certs: Path) -> None:
        def secret() -> Optional[dict[str, str]]:
            proc = self.kubectl("-n", KUEUE.namespace, "get", "secret", "kueue-webhook-server-cert", "-o", "json", check=False)
            data = (json.loads(proc.stdout).get("data") or {}) if proc.returncode == 0 else {}
            return data if data.get("tls.crt") else None
        data = self.wait_for("Kueue's webhook certificate", secret, timeout=90)
        for name in ("tls.crt", "tls.key", "ca.crt"):
            (certs / name).write_bytes(base64.b64decode(data[name]))

    def _ready(self, c: Controller) -> bool:
        proc = self.processes[c.name]
        if proc.poll() is not None:
            tail = (self.workdir / c.name / "controller.log").read_text(errors="replace")[-3000:]
            raise ClusterError(f"{c.name} controller exited ({proc.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{c.health_port}/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        for proc in self.processes.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.processes.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.processes.clear()
        if (self.kwok_workdir / "clusters" / self.name).exists():
            subprocess.run([str(BIN / "kwokctl"), "delete", "cluster", "--name", self.name,
                            f"--kubeconfig={self.workdir / 'kwokctl-kubeconfig'}"],
                           capture_output=True, text=True, env=self.env, timeout=120)
            log(f"control plane {self.name} deleted")


def leftover_processes(workdir: Path) -> list[str]:
    """Processes still running from a cluster's work directory (a clean teardown leaves none)."""
    proc = subprocess.run(["pgrep", "-a", "-f", str(workdir)], capture_output=True, text=True)
    return [line for line in proc.stdout.splitlines() if line and "pgrep" not in line]
