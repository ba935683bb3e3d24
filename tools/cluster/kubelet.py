"""The kubelet's part for the controllers' pods that the charts create: where the real scheduler binds a pod
of the JobSet, Kueue or LeaderWorkerSet Deployment, or of an inference gateway's endpoint picker (the
inferencepool chart), to a (kwok) node, this runs the pinned binary as that pod would run it:

- in a sandbox of its own (tools/cluster/sandbox.py): a network namespace with the pod IP kwok gave it
  (a veth pair, routed from the host), and a root of its own with the pod's volumes at their mount paths:
  the chart's ConfigMap (its controller config, unchanged), the webhook certificate Secret (kept in sync, as
  the kubelet does, so the controller's own certificate rotation works), emptyDirs, and the service account
  token the API server's ServiceAccount admission projected into the pod (a TokenRequest bound to the pod);
- with the container's command, args and environment (downward API fields resolved), and the in-cluster
  variables KUBERNETES_SERVICE_HOST/PORT pointing at the API server: the controller acts as the chart's
  ServiceAccount, under the chart's RBAC;
- its readiness probe (httpGet; gRPC health for the picker) polled as the kubelet would; once it passes, the pod's status says Ready (the kubelet's
  write to pods/status; kwok's `pod-running` stage left a probed pod unready), so the Deployment becomes
  available only when the real controller is (Pulumi's await depends on it); a controller that exits is restarted in its sandbox
  after a back-off, as the kubelet does for restartPolicy Always (Kueue, started before its CRDs are
  established, exits once and comes up on the restart, as on GKE); each exit is recorded in `exits`, and a
  crash loop (CRASH_LOOP restarts) fails the deploy.

An image this cannot run (not the pinned controller version) is recorded in `errors` and its pod never becomes
ready: the chart would run a different controller than the one the tier tests, and the deploy fails at once.

Routing (written down in docs/real-engines.md): the API server is started with --enable-aggregator-routing,
so it calls webhooks and aggregated APIs at their Services' ready endpoints (the pod IPs) rather than at
ClusterIPs that no kube-proxy serves here; and the controller's in-cluster config gets the API server's own
address instead of the `kubernetes` Service's ClusterIP, for the same reason."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from tools.cluster.api import Api, ApiError

HERE = Path(__file__).resolve().parent
PROBES_PASSED = "e2e.pathways/probes-passed"  # the kwok stage pod-ready reads it (a scenario's engine that answers)
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
CRASH_LOOP = 3
"""Restarts of one controller pod that fail the deploy: it is not coming up."""


@dataclass(frozen=True)
class Probe:
    """A readiness probe the stand-in runs: httpGet (a path) or grpc (the gRPC health service's name)."""
    kind: str
    port: int
    target: str


@dataclass(frozen=True)
class Engine:
    repository: str
    version: str
    """The controller version built from the pinned Go module: the image tag must be v<version>."""
    binary: Path
    entrypoint: str = "/manager"


class VolumeNotReady(RuntimeError):
    """A ConfigMap or Secret the pod mounts does not exist yet: the kubelet waits for it (ContainerCreating)."""


@dataclass
class PodProcess:
    uid: str
    namespace: str
    name: str
    ip: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path
    probe: Optional["Probe"]
    secrets: dict[str, Path] = field(default_factory=dict)
    """Secret name -> the directory its keys are written to (kept in sync)."""
    secret_versions: dict[str, str] = field(default_factory=dict)
    spec_file: Optional[Path] = None
    ready: bool = False
    restarts: int = 0
    restart_at: float = 0.0


def _grpc_serving(ip: str, port: int, service: str) -> bool:
    """The gRPC health protocol's Check, as the kubelet's grpc probe sends it: true when the answer is SERVING.
    The two messages are encoded by hand (grpc.health.v1 HealthCheckRequest{service = 1}, HealthCheckResponse
    {status = 1}, SERVING = 1): grpcio is here (Pulumi's SDK needs it), its health protos are not."""
    import grpc  # only the gRPC probe needs it

    name = service.encode()
    assert len(name) < 128, service  # one varint byte
    request = (b"\x0a" + bytes([len(name)]) + name) if name else b""
    try:
        with grpc.insecure_channel(f"{ip}:{port}", options=[("grpc.enable_http_proxy", 0)]) as channel:
            check = channel.unary_unary("/grpc.health.v1.Health/Check")
            return check(request, timeout=1) == b"\x08\x01"
    except grpc.RpcError:
        return False


def log(msg: str) -> None:
    print(f"[kubelet {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _expand(value: str, env: dict[str, str]) -> str:
    """$(VAR) references in command, args and env values, as the kubelet expands them ($$ escapes)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)), value)


def _write_keys(directory: Path, data: dict[str, bytes], items: Optional[list[dict[str, Any]]]) -> None:
    """A ConfigMap's or Secret's keys as files (only `items` when the volume names them), replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = {i["key"]: i.get("path", i["key"]) for i in items} if items else {k: k for k in data}
    for key, rel in wanted.items():
        if key not in data:
            continue
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_bytes(data[key])
        os.replace(tmp, target)


class ControllerKubelet:
    def __init__(self, api: Api, workdir: Path, engines: dict[str, Engine], gateway: str, apiserver_port: int):
        self.api = api
        self.workdir = workdir
        self.engines = engines
        self.gateway = gateway
        self.apiserver_port = apiserver_port
        self.pods: dict[str, PodProcess] = {}
        self.errors: list[str] = []
        """Pods this cannot run (an unpinned image, an unsupported volume): each fails the deploy at once."""
        self.exits: list[str] = []
        """Every time a controller exited, with its log's tail (restarted as the kubelet does)."""
        self._handled: set[str] = set()
        self._starting: set[str] = set()  # pods being started now (_on_pod)
        self._waiting: dict[str, dict[str, Any]] = {}
        """Pods whose volumes' ConfigMaps or Secrets do not exist yet, by uid: tried again every second."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> None:
        for target in (self._watch_loop, self._probe_loop):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            pods = list(self.pods.values())
            self.pods.clear()
        for p in pods:
            self._kill(p)

    # --- which pods are ours --------------------------------------------------------------------------

    def _engine_container(self, pod: dict[str, Any]) -> Optional[tuple[dict[str, Any], str]]:
        for c in pod["spec"].get("containers", []):
            repository, _, tag = c["image"].rpartition(":")
            for key in self.engines:
                if repository == self.engines[key].repository or repository.endswith(f"/{key}/{key}"):
                    return c, key
        return None

    def _watch_loop(self) -> None:
        while not self._stop.is_set():
            try:
                listing = self.api.get("/api/v1/pods", fieldSelector="spec.nodeName!=")
                for pod in listing["items"]:
                    self._on_pod("MODIFIED", pod)
                self._on_listing({p["metadata"]["uid"] for p in listing["items"]})
                for event in self.api.watch("/api/v1/pods", timeout_seconds=60, fieldSelector="spec.nodeName!=",
                                            resourceVersion=listing["metadata"]["resourceVersion"]):
                    if self._stop.is_set():
                        return
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self._on_pod(event["type"], event["object"])
            except Exception as e:  # the API server restarting, a watch expiring: list again
                if not self._stop.is_set():
                    log(f"watch: {type(e).__name__}: {e}; listing again")
                    time.sleep(1)

    def _on_listing(self, uids: set[str]) -> None:
        with self._lock:
            gone = [p for uid, p in self.pods.items() if uid not in uids]
            for p in gone:
                del self.pods[p.uid]
        for p in gone:
            self._kill(p)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        if kind == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            self._waiting.pop(uid, None)
            with self._lock:
                p = self.pods.pop(uid, None)
            if p:
                self._kill(p)
            return
        found = self._engine_container(pod)
        if not found or not pod.get("status", {}).get("podIP") or pod["status"].get("phase") != "Running":
            return
        container, key = found
        # the pod watch and the retry of waiting pods both come here: one start a pod (a second would plug a second
        # veth of the same name, "File exists", under load with several control planes)
        with self._lock:
            if uid in self._handled or uid in self._starting:
                return
            self._starting.add(uid)
        try:
            self._run(pod, container, self.engines[key])
            self._handled.add(uid)
            self._waiting.pop(uid, None)
        except VolumeNotReady:
            self._waiting[uid] = pod  # tried again every second, as the kubelet does (ContainerCreating)
        except Exception as e:  # anything else: the pod cannot run, and the deploy fails at once
            self._handled.add(uid)
            self._waiting.pop(uid, None)
            message = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}: cannot run {container['image']}: {e}"
            log(message)
            self.errors.append(message)  # the pod stays unready, as one whose image cannot be pulled
        finally:
            with self._lock:
                self._starting.discard(uid)

    # --- running a pod ------------------------------------------------------------------------------

    def _run(self, pod: dict[str, Any], container: dict[str, Any], engine: Engine) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        tag = container["image"].rpartition(":")[2]
        if container["image"] != f"{engine.repository}:v{engine.version}":
            raise RuntimeError(f"the tier runs {engine.repository}:v{engine.version} (built from the pinned Go module); "
                               f"the chart asks for tag {tag!r}")
        command = container.get("command") or [engine.entrypoint]
        if command[0] != engine.entrypoint:
            raise RuntimeError(f"command {command[0]!r} is not the image's entrypoint {engine.entrypoint}")
        home = self.workdir / "pods" / f"{ns}_{name}_{uid[:8]}"
        shutil.rmtree(home, ignore_errors=True)
        root, volumes = home / "root", home / "volumes"
        root.mkdir(parents=True)
        mounts: list[list[Any]] = [[str(engine.binary), engine.entrypoint, True]]
        secrets: dict[str, Path] = {}
        versions: dict[str, str] = {}
        by_name = {v["name"]: v for v in spec.get("volumes", [])}
        for vm in container.get("volumeMounts", []):
            vol = by_name[vm["name"]]
            src = volumes / vm["name"]
            if "configMap" in vol:
                cm = self._object(f"/api/v1/namespaces/{ns}/configmaps/{vol['configMap']['name']}")
                _write_keys(src, {k: v.encode() for k, v in (cm.get("data") or {}).items()}, vol["configMap"].get("items"))
            elif "secret" in vol:
                self._object(f"/api/v1/namespaces/{ns}/secrets/{vol['secret']['secretName']}")  # the kubelet waits for it
                secrets[vol["secret"]["secretName"]] = src
                version = self._sync_secret(ns, vol["secret"]["secretName"], src, vol["secret"].get("items"))
                if version:
                    versions[vol["secret"]["secretName"]] = version
            elif "emptyDir" in vol:
                src.mkdir(parents=True, exist_ok=True)
            elif "projected" in vol:
                self._projected(pod, vol["projected"], src)
            else:
                raise RuntimeError(f"volume {vm['name']}: only configMap, secret, emptyDir and projected volumes are run here")
            source = src / vm["subPath"] if vm.get("subPath") else src
            mounts.append([str(source), vm["mountPath"], bool(vm.get("readOnly"))])
        env = self._environment(pod, container)
        argv = [_expand(a, env) for a in [*command, *container.get("args", [])]]
        spec_file = home / "sandbox.json"
        spec_file.write_text(json.dumps({"root": str(root), "ip": pod["status"]["podIP"], "gateway": self.gateway,
                                         "mounts": mounts, "argv": argv, "env": env, "cwd": container.get("workingDir") or "/"}))
        logfile = home / "container.log"
        proc = self._start(spec_file, logfile, uid, pod["status"]["podIP"])
        probe = self._probe_target(container)
        with self._lock:
            self.pods[uid] = PodProcess(uid, ns, name, pod["status"]["podIP"], root, proc, logfile, probe, secrets, versions, spec_file=spec_file)
        log(f"{ns}/{name}: running {engine.binary.name} {engine.version} at {pod['status']['podIP']} as "
            f"system:serviceaccount:{ns}:{spec.get('serviceAccountName', 'default')}")

    def _start(self, spec_file: Path, logfile: Path, uid: str, ip: str) -> subprocess.Popen[bytes]:
        """The container's process in a new sandbox (network and mount namespaces), plugged into the host."""
        proc = subprocess.Popen(["unshare", "-n", "-m", "--propagation", "private", sys.executable, str(HERE / "sandbox.py"), str(spec_file)],
                                stdin=subprocess.PIPE, stdout=logfile.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)
        assert proc.stdin is not None
        try:
            self._plug(proc.pid, f"vp{uid.replace('-', '')[:10]}", ip)
            proc.stdin.write(b"net\n")
        finally:
            proc.stdin.close()
        return proc

    def _object(self, path: str) -> dict[str, Any]:
        try:
            return self.api.get(path)
        except ApiError as e:
            if e.status == 404:
                raise VolumeNotReady(path) from None
            raise

    def _plug(self, pid: int, host_end: str, ip: str) -> None:
        """A veth pair: eth0 in the sandbox's network namespace, the other end here with a route to the pod IP."""
        deadline = time.monotonic() + 10
        while True:  # unshare has made the namespace once the child's net namespace differs from ours
            try:
                if os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net"):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the sandbox did not start")
            time.sleep(0.02)
        for args in (["link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", str(pid)],
                     ["link", "set", host_end, "up"], ["route", "replace", f"{ip}/32", "dev", host_end]):
            subprocess.run(["ip", *args], check=True, capture_output=True)

    def _environment(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        meta, spec, status = pod["metadata"], pod["spec"], pod["status"]
        fields = {"metadata.name": meta["name"], "metadata.namespace": meta["namespace"], "metadata.uid": meta["uid"],
                  "spec.nodeName": spec.get("nodeName", ""), "spec.serviceAccountName": spec.get("serviceAccountName", ""),
                  "status.podIP": status.get("podIP", ""), "status.hostIP": status.get("hostIP", "")}
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": meta["name"],
               # what the kubelet sets from the `kubernetes` Service; here the API server's own address (module doc)
               "KUBERNETES_SERVICE_HOST": self.gateway, "KUBERNETES_SERVICE_PORT": str(self.apiserver_port)}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = _expand(e["value"], env)
            elif "fieldRef" in (e.get("valueFrom") or {}):
                path = e["valueFrom"]["fieldRef"]["fieldPath"]
                if path not in fields:
                    raise RuntimeError(f"env {e['name']}: field {path} is not resolved here")
                env[e["name"]] = fields[path]
            elif e.get("valueFrom"):
                raise RuntimeError(f"env {e['name']}: only values and fieldRefs are resolved here")
        if container.get("envFrom"):
            raise RuntimeError("envFrom is not resolved here")
        return env

    def _projected(self, pod: dict[str, Any], projected: dict[str, Any], directory: Path) -> None:
        """The service account volume the API server's ServiceAccount admission adds: a token bound to this pod,
        the cluster CA (kube-root-ca.crt) and the namespace."""
        meta = pod["metadata"]
        directory.mkdir(parents=True, exist_ok=True)
        for source in projected["sources"]:
            if "serviceAccountToken" in source:
                sa = pod["spec"].get("serviceAccountName") or "default"
                token = self.api.create(f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{sa}/token", {
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": source["serviceAccountToken"].get("expirationSeconds", 3607),
                             "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}})
                _write_keys(directory, {source["serviceAccountToken"]["path"]: token["status"]["token"].encode()}, None)
            elif "configMap" in source:
                cm = self._object(f"/api/v1/namespaces/{meta['namespace']}/configmaps/{source['configMap']['name']}")
                _write_keys(directory, {k: v.encode() for k, v in (cm.get("data") or {}).items()}, source["configMap"].get("items"))
            elif "downwardAPI" in source:
                for item in source["downwardAPI"].get("items", []):
                    if item.get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                        _write_keys(directory, {item["path"]: meta["namespace"].encode()}, None)

    def _sync_secret(self, namespace: str, name: str, directory: Path, items: Optional[list[dict[str, Any]]] = None,
                     known: Optional[str] = None) -> Optional[str]:
        """The Secret's keys as files, rewritten only when the Secret changed (resourceVersion `known` is what
        the files hold): a rewrite is a file event the controller's certificate watcher reloads on."""
        try:
            secret = self.api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        except ApiError as e:
            if e.status == 404:  # the kubelet waits for it; so does the controller's certificate rotation
                directory.mkdir(parents=True, exist_ok=True)
                return None
            raise
        version = secret["metadata"]["resourceVersion"]
        if version != known:
            _write_keys(directory, {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}, items)
        return version

    # --- probes and secret volumes ------------------------------------------------------------------

    @staticmethod
    def _probe_target(container: dict[str, Any]) -> Optional[Probe]:
        probe = container.get("readinessProbe") or {}
        if probe.get("grpc"):
            # the kubelet's gRPC probe: grpc.health.v1.Health/Check for the named service (the picker's)
            return Probe("grpc", int(probe["grpc"]["port"]), str(probe["grpc"].get("service") or ""))
        get = probe.get("httpGet")
        if not get:
            return None
        port = get["port"]
        if isinstance(port, str):
            port = next(p["containerPort"] for p in container.get("ports", []) if p.get("name") == port)
        return Probe("http", int(port), get.get("path", "/"))

    def _probe_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._probe_round()
            except Exception as e:
                import traceback

                log(f"probe round failed: {type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}")

    def _probe_round(self) -> None:
        for pod in list(self._waiting.values()):
            self._on_pod("MODIFIED", pod)
        with self._lock:
            pods = list(self.pods.values())
        if True:
            for p in pods:
                for secret, directory in p.secrets.items():
                    try:
                        version = self._sync_secret(p.namespace, secret, directory, known=p.secret_versions.get(secret))
                        if version:
                            p.secret_versions[secret] = version
                    except Exception as e:
                        log(f"{p.namespace}/{p.name}: secret {secret}: {e}")
                if p.process.poll() is not None:
                    self._restart(p)
                    continue
                if not p.ready and self._probe(p):
                    self._set_ready(p)
                    p.ready = True
                    log(f"{p.namespace}/{p.name}: readiness probe passed")

    def _restart(self, p: PodProcess) -> None:
        """restartPolicy Always, as the kubelet does it: the container again, after a back-off that doubles
        (10 s, 20 s, ... 5 min). Each exit is recorded: a controller that crashes fails the tier."""
        now = time.monotonic()
        if p.restart_at == 0.0:
            tail = p.log.read_text(errors="replace")[-2000:]
            message = f"{p.namespace}/{p.name}: the controller exited ({p.process.returncode}):\n{tail}"
            log(message.splitlines()[0] + " " + (tail.strip().splitlines() or [""])[-1][:300])
            self.exits.append(message)
            p.restart_at = now + min(10 * 2 ** p.restarts, 300)
            p.ready = False
            return
        if now < p.restart_at or p.spec_file is None:
            return
        p.restarts += 1
        p.restart_at = 0.0
        p.process = self._start(p.spec_file, p.log, p.uid, p.ip)
        log(f"{p.namespace}/{p.name}: restarted ({p.restarts})")

    @staticmethod
    def _probe(p: PodProcess) -> bool:
        if p.probe is None:
            return True
        if p.probe.kind == "grpc":
            return _grpc_serving(p.ip, p.probe.port, p.probe.target)
        try:
            with urllib.request.urlopen(f"http://{p.ip}:{p.probe.port}{p.probe.target}", timeout=1) as r:
                return 200 <= r.status < 400
        except OSError:
            return False

    def _set_ready(self, p: PodProcess) -> None:
        """What the kubelet writes when a readiness probe passes: the pod's Ready and ContainersReady conditions
        and its containers' ready flags, through the pods/status subresource (no admission webhook judges it)."""
        pod = self.api.get(f"/api/v1/namespaces/{p.namespace}/pods/{p.name}")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.api.strategic_patch(f"/api/v1/namespaces/{p.namespace}/pods/{p.name}/status", {"status": {
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": now} for t in ("Ready", "ContainersReady")],
            "containerStatuses": [{**c, "ready": True, "started": True} for c in pod["status"].get("containerStatuses", [])],
        }})

    def _kill(self, p: PodProcess) -> None:
        if p.process.poll() is None:
            try:
                os.killpg(p.process.pid, signal.SIGTERM)
                p.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.process.pid, signal.SIGKILL)
                p.process.wait(timeout=10)
            except ProcessLookupError:
                pass
        log(f"{p.namespace}/{p.name}: stopped")

    def crash_loops(self) -> list[str]:
        with self._lock:
            return [f"{p.namespace}/{p.name} restarted {p.restarts} times; last exit:\n{self._last_exit(p)}"
                    for p in self.pods.values() if p.restarts >= CRASH_LOOP]

    def _last_exit(self, p: PodProcess) -> str:
        return next((e for e in reversed(self.exits) if e.startswith(f"{p.namespace}/{p.name}:")), "")[-1500:]

    def running(self) -> list[str]:
        with self._lock:
            return [f"{p.namespace}/{p.name}" for p in self.pods.values() if p.process.poll() is None]
