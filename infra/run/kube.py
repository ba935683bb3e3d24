"""The cluster side of `python -m infra.run`: kubectl with the user's kubeconfig (exec plugins such as GKE's
gke-gcloud-auth-plugin work as they do for kubectl itself). Every failure is one KubeError line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Any, Optional, Union

# kubectl's own wait for a deletion with --wait (its default is forever); a JobSet's pods end within their grace period
DELETE_TIMEOUT_SECONDS = 300
DELETE_TIMEOUT = f"{DELETE_TIMEOUT_SECONDS}s"


class KubeError(RuntimeError):
    """The cluster refused, or kubectl could not reach it."""


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no output"


class Kubectl:
    def __init__(self, kubeconfig: Optional[str] = None, context: Optional[str] = None):
        binary = os.environ.get("KUBECTL") or shutil.which("kubectl")
        if not binary:
            raise KubeError("kubectl not found on PATH; install it (gcloud components install kubectl) or set KUBECTL")
        self.base = [binary, *([f"--kubeconfig={kubeconfig}"] if kubeconfig else []), *([f"--context={context}"] if context else [])]

    def run(self, *args: str, stdin: Optional[str] = None, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        try:
            proc = subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise KubeError(f"kubectl {args[0]}: no answer from the cluster in {timeout:g} s") from None
        except OSError as e:
            raise KubeError(f"cannot run {self.base[0]}: {e.strerror}") from None
        if check and proc.returncode != 0:
            raise KubeError(f"kubectl {' '.join(args[:2])}: {_first_line(proc.stderr or proc.stdout)}")
        return proc

    @staticmethod
    def _json(text: str, what: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise KubeError(f"{what}: kubectl did not answer with JSON: {_first_line(text)}") from None

    def items(self, resource: str, namespace: str, selector: str = "") -> list[dict[str, Any]]:
        args = ["get", resource, "-n", namespace, "-o", "json", *([f"--selector={selector}"] if selector else [])]
        return self._json(self.run(*args).stdout, f"kubectl get {resource}").get("items") or []

    def cluster_items(self, resource: str) -> list[dict[str, Any]]:
        return self._json(self.run("get", resource, "-o", "json").stdout, f"kubectl get {resource}").get("items") or []

    def refusal(self, obj: dict[str, Any]) -> Optional[str]:
        """What the API server says to creating `obj`, without creating it (a server-side dry run: admission policies
        and Pod Security judge it as they would): None when it would be created, else the refusal."""
        proc = self.run("create", "--dry-run=server", "-o", "name", "-f", "-", stdin=json.dumps(obj), check=False)
        return None if proc.returncode == 0 else " ".join((proc.stderr or proc.stdout).split())

    def get_jobset(self, namespace: str, name: str) -> dict[str, Any]:
        proc = self.run("get", "jobsets.jobset.x-k8s.io", name, "-n", namespace, "-o", "json", check=False)
        if proc.returncode != 0:
            if "NotFound" in proc.stderr or "not found" in proc.stderr:
                raise KubeError(f"no run {name} in namespace {namespace}")
            raise KubeError(f"kubectl get jobset {name}: {_first_line(proc.stderr)}")
        return self._json(proc.stdout, f"kubectl get jobset {name}")

    def head_pod(self, namespace: str, run: str) -> Optional[dict[str, Any]]:
        """The run's head pod (the newest, a live one first), or None."""
        from components.manifests.jobset import HEAD_JOB

        pods = self.items("pods", namespace, selector=f"jobset.sigs.k8s.io/jobset-name={run},jobset.sigs.k8s.io/replicatedjob-name={HEAD_JOB}")
        live = [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
        return max(live or pods, key=lambda p: p["metadata"].get("creationTimestamp", ""), default=None)

    def get_node(self, name: str) -> Union[dict[str, Any], str]:
        proc = self.run("get", "node", name, "-o", "json", check=False)
        return self._json(proc.stdout, f"kubectl get node {name}") if proc.returncode == 0 else f"{name}: {_first_line(proc.stderr)}"

    def whoami(self) -> str:
        """Who the cluster says you are (SelfSubjectReview, GA since Kubernetes 1.28), for the run's annotation."""
        proc = self.run("auth", "whoami", "-o", "json", check=False)
        if proc.returncode != 0:
            return ""
        return str(((self._json(proc.stdout, "kubectl auth whoami").get("status") or {}).get("userInfo") or {}).get("username") or "")

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create, never overwrite: a run of the same name is an error, not an update. The object as stored."""
        proc = self.run("create", "-o", "json", "-f", "-", stdin=json.dumps(obj), check=False)
        if proc.returncode != 0:
            err = proc.stderr
            if ("AlreadyExists" in err or "already exists" in err) and obj["kind"] == "ConfigMap":
                raise KubeError(f"a ConfigMap named {obj['metadata']['name']} already exists in {obj['metadata']['namespace']}: "
                                "someone made it before submit could (a run's code is made by its own submit only)")
            if "AlreadyExists" in err or "already exists" in err:
                name = obj["metadata"]["name"]
                raise KubeError(f"a JobSet named {name} already exists in {obj['metadata']['namespace']}; delete it first "
                                f"(python -m infra.run delete) or choose another --name")
            if "exceeded quota" in err:  # runs.maxRuns / runs.maxWorkdirs (security #73.17)
                raise KubeError(f"{obj['metadata']['namespace']} holds as many runs (or --workdir codes) as the stack "
                                "allows (pathways:runs.maxRuns, maxWorkdirs): delete finished ones (python -m infra.run "
                                f"list, then delete), or ask the stack's owner to raise it ({_first_line(err)})")
            raise KubeError(f"the cluster refused {obj['kind']} {obj['metadata']['name']}: {_first_line(err)}")
        return self._json(proc.stdout, f"kubectl create {obj['kind']}")

    def delete_jobset(self, namespace: str, name: str) -> None:
        # foreground: the JobSet goes once its Jobs and their pods are gone, so the command returns after them;
        # kubectl gives up first and says so, and the deletion goes on in the cluster
        self.run("delete", "jobsets.jobset.x-k8s.io", name, "-n", namespace, "--cascade=foreground", "--wait=true",
                 f"--timeout={DELETE_TIMEOUT}", timeout=DELETE_TIMEOUT_SECONDS + 60)

    def pending_workloads(self, namespace: str, queue: str) -> Union[list[dict[str, Any]], str]:
        """Kueue's visibility API: the LocalQueue's pending workloads with their places, or why it did not answer."""
        path = f"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/{namespace}/localqueues/{queue}/pendingworkloads"
        proc = self.run("get", "--raw", path, check=False)
        if proc.returncode != 0:
            return _first_line(proc.stderr)
        try:
            return json.loads(proc.stdout).get("items") or []
        except json.JSONDecodeError:
            return f"not JSON: {_first_line(proc.stdout)}"

    def worker_pod(self, namespace: str, run: str, index: int, host: int) -> Optional[dict[str, Any]]:
        """Host `host` of the run's worker Job `index` (its slice), the newest attempt, or None."""
        pods = self.items("pods", namespace, selector=(f"jobset.sigs.k8s.io/jobset-name={run},jobset.sigs.k8s.io/replicatedjob-name!=pathways-head,"
                                                       f"jobset.sigs.k8s.io/job-index={index},batch.kubernetes.io/job-completion-index={host}"))
        return max(pods, key=lambda p: p["metadata"].get("creationTimestamp", ""), default=None)

    def stream_logs(self, namespace: str, pod: str, container: str, follow: bool, previous: bool = False) -> int:
        """The container's log to stdout as kubectl prints it (followed until it ends with --follow)."""
        sys.stdout.flush()
        proc = subprocess.run([*self.base, "logs", "-n", namespace, pod, "-c", container, *(["--follow"] if follow else []),
                               *(["--previous"] if previous else [])], stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise KubeError(f"kubectl logs {pod}: {_first_line(proc.stderr)}")
        return 0

    def start_port_forward(self, namespace: str, pod: str, local: int, remote: int) -> "subprocess.Popen[str]":
        """kubectl port-forward in the background, on this machine's loopback only; the caller stops it."""
        try:
            return subprocess.Popen([*self.base, "port-forward", "-n", namespace, "--address=127.0.0.1", f"pod/{pod}", f"{local}:{remote}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        except OSError as e:
            raise KubeError(f"cannot run {self.base[0]}: {e.strerror}") from None

    def port_forward(self, namespace: str, pod: str, local: int, remote: int) -> int:
        """kubectl port-forward in the foreground, on this machine's loopback only, until interrupted."""
        try:
            return subprocess.run([*self.base, "port-forward", "-n", namespace, "--address=127.0.0.1", f"pod/{pod}", f"{local}:{remote}"]).returncode
        except KeyboardInterrupt:
            return 0
