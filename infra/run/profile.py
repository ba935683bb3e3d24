"""`python -m infra.run profile RUN --duration 10s`: capture a profile of a running run the way pathwaysutils'
`collect_profile` does, into the stack's artifacts bucket, and say where to open it.

pathwaysutils (0.1.13, profiling.py `start_server`): the program calls `jax.profiler.start_server(port)` after
`pathwaysutils.initialize()`, which serves `POST /profiling` with `{"duration_ms": N, "repository_path": "gs://..."}`;
the server refuses a path outside `PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS` (a prefix), checks a bearer token against
`PATHWAYS_PROFILING_AUTH_TOKEN` when that is set, listens on `PATHWAYS_PROFILING_SERVER_HOST`, traces the client
and the Pathways servers together for the duration, and answers `{"response": "profiling completed"}`. A capture
is by duration: the server has no notion of steps (the issue's `--steps N` is a program-side counter pathwaysutils
does not offer). The stack's builder (components/manifests/jobset.py) sets the port (`PROFILER_PORT`), the allowed
directory (`PROFILE_TRACE_DIR`, `<artifacts>/<workload>/profiles/`) and, for an ad-hoc run, which holds no Secret,
the loopback host: this command reaches it through `kubectl port-forward`, which the API server authorizes.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any, Optional

from infra.run.kube import Kubectl, KubeError
from infra.run.stack_args import again

FORWARD_WAIT_SECONDS = 15


def profiler_of(pod: dict[str, Any], container: str) -> tuple[int, str]:
    """(port, trace directory) of the pod's profiler server, from the container's env the builder wrote."""
    program = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container), None)
    env = {e.get("name"): e.get("value") for e in (program or {}).get("env") or []}
    port, directory = env.get("PROFILER_PORT"), env.get("PROFILE_TRACE_DIR")
    if not port or not directory or not str(port).isdigit():
        raise KubeError("it serves no profiler: give the run `profiling: {}` in its --spec (or the workload in the stack file), and "
                        "have the program call jax.profiler.start_server(int(os.environ['PROFILER_PORT'])) after pathwaysutils.initialize()")
    return int(port), str(directory)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_open(port: int, forward: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + FORWARD_WAIT_SECONDS
    while time.monotonic() < deadline:
        if forward.poll() is not None:
            raise KubeError(f"kubectl port-forward ended: {(forward.stderr.read() if forward.stderr else '').strip()[:300] or 'no reason given'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise KubeError(f"kubectl port-forward did not open 127.0.0.1:{port} in {FORWARD_WAIT_SECONDS} s")


def capture(kube: Kubectl, namespace: str, pod: str, remote: int, directory: str, duration_ms: int, token: Optional[str],
            stamp: Optional[str] = None) -> str:
    """Forward a local port to the head's profiler server, ask it for a trace of `duration_ms` into a new directory
    under `directory`, and return that directory."""
    target = f"{directory.rstrip('/')}/{stamp or time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}/"
    local = _free_port()
    forward = kube.start_port_forward(namespace, pod, local, remote)
    try:
        _wait_open(local, forward)
        body = json.dumps({"duration_ms": duration_ms, "repository_path": target}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{local}/profiling", data=body, method="POST",
                                         headers={"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})})
        try:
            with urllib.request.urlopen(request, timeout=duration_ms / 1000 + 120) as answer:
                said = json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")[:300]
            if e.code == 401:
                raise KubeError("the profiler server wants its token: give --token-file with the workload's "
                                "<name>-profiling-token Secret's token (a declared workload's server checks it)") from None
            raise KubeError(f"the profiler server answered {e.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            raise KubeError(f"the profiler server did not answer: {getattr(e, 'reason', e)}; is the program serving "
                            "jax.profiler.start_server(int(os.environ['PROFILER_PORT']))?") from None
        if said.get("response") != "profiling completed":
            raise KubeError(f"the profiler server said: {json.dumps(said)[:300]}")
        return target
    finally:
        forward.terminate()
        try:
            forward.wait(timeout=10)
        except subprocess.TimeoutExpired:
            forward.kill()


def profile_run(kube: Kubectl, namespace: str, stack: str, run: str, seconds: int, token: Optional[str]) -> int:
    """`profile`: the run's head running, its profiler server found in its pod, a capture, and where it is."""
    from components.manifests.jobset import USER_CONTAINER

    kube.get_jobset(namespace, run)
    pod = kube.head_pod(namespace, run)
    if pod is None or (pod.get("status") or {}).get("phase") != "Running":
        raise KubeError(f"run {run}'s head is not running; `{again('why', stack)} {run}` says why")
    try:
        port, directory = profiler_of(pod, USER_CONTAINER)
    except KubeError as e:
        raise KubeError(f"run {run}: {e}") from None
    print(f"tracing {run} for {seconds} s (the client and the Pathways servers) ...", flush=True)
    where = capture(kube, namespace, pod["metadata"]["name"], port, directory, seconds * 1000, token)
    print(f"profile of {run} in {where}")
    print(f"  open it: xprof --logdir={where} (or tensorboard --logdir={where}), with read access to the artifacts bucket")
    return 0
