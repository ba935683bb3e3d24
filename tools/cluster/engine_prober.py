"""The kubelet's prober for the serving engines' pods, which the tier does not run (a vLLM or JetStream engine needs
a TPU): a scenario says when a pod's engine answers its health checks (the annotation ENGINE_ANSWERS), and this
decides when the kubelet would then find the pod's probes passing, from the pod's own startup and readiness probes,
as Kubernetes' prober workers schedule them (k8s pkg/kubelet/prober/worker.go):

- each probe's worker ticks every periodSeconds from the container's start; a tick before initialDelaySeconds
  have passed probes nothing (`doProbe`: "if int32(time.Since(c.State.Running.StartedAt.Time).Seconds()) <
  w.spec.InitialDelaySeconds { return true }");
- the startup probe succeeds at its first probing tick at which the engine answers; failureThreshold failing
  probes before it restart the container (recorded here as a failure: the pod never becomes ready);
- readiness is not probed until the container has started (`if c.Started != nil && !*c.Started`): the pod is
  ready at the first readiness tick at or after the startup success at which the engine answers.

At that moment this annotates the pod PROBES_PASSED, on which kwok's pod-ready stage makes it Ready
(tools/cluster/stages.yaml). Ticks are counted from the container's start, without the kubelet's random first-tick
jitter; the kubelet's workers start with the pod, and a kubelet may probe readiness at once when the startup probe
passes: so a time here may be later than the kubelet's by up to one readiness period, never earlier. A bound a
scenario asserts on these times errs on the safe side.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from tools.cluster.api import Api, ApiError
from tools.cluster.kubelet import PROBES_PASSED, log

ENGINE_ANSWERS = "e2e.pathways/engine-answers"
"""Set by a scenario on an engine pod: from now on its health endpoint answers (the model has loaded)."""
PROBED_AT = "e2e.pathways/probes-passed-after"
"""Written with PROBES_PASSED: seconds from the engine answering to the probes passing, as scheduled here."""


@dataclass(frozen=True)
class ProbeSpec:
    initial_delay: float
    period: float
    failure_threshold: int

    @classmethod
    def of(cls, probe: dict[str, Any]) -> "ProbeSpec":
        # Kubernetes' defaults (core/v1 Probe): period 10 s, failureThreshold 3, initialDelaySeconds 0
        return cls(float(probe.get("initialDelaySeconds") or 0), float(probe.get("periodSeconds") or 10),
                   int(probe.get("failureThreshold") or 3))

    def first_tick_at_or_after(self, start: float, t: float) -> float:
        """The first probing tick (a multiple of the period from `start`, past the initial delay) at or after t."""
        t = max(t, start + self.initial_delay)
        return start + math.ceil((t - start) / self.period - 1e-9) * self.period


def probes_pass_at(started: float, answers: float, startup: Optional[ProbeSpec], readiness: Optional[ProbeSpec]) -> Optional[float]:
    """When the kubelet would find the probes passing (None: the startup probe fails first, and the container restarts)."""
    started_ok = started
    if startup is not None:
        started_ok = startup.first_tick_at_or_after(started, answers)
        first = startup.first_tick_at_or_after(started, started)
        if round((started_ok - first) / startup.period) >= startup.failure_threshold:
            return None
    if readiness is None:
        return started_ok
    return readiness.first_tick_at_or_after(started, max(started_ok, answers))


def _timestamp(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


class EngineProber:
    def __init__(self, api: Api, poll_seconds: float = 0.5):
        self.api = api
        self.poll_seconds = poll_seconds
        self._answers: dict[str, float] = {}
        """Pod UID -> when this first saw its engine answer."""
        self._done: set[str] = set()
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                self._round(time.time())
            except Exception as e:  # the API server restarting: try again next round
                log(f"engine prober: {type(e).__name__}: {e}")

    def _round(self, now: float) -> None:
        for pod in self.api.get("/api/v1/pods", fieldSelector="status.phase=Running")["items"]:
            meta = pod["metadata"]
            annotations = meta.get("annotations") or {}
            uid = meta["uid"]
            if ENGINE_ANSWERS not in annotations or uid in self._done or PROBES_PASSED in annotations:
                continue
            answers = self._answers.setdefault(uid, now)
            due = self._due(pod, answers)
            where = f"{meta['namespace']}/{meta['name']}"
            if due is None:
                self._done.add(uid)
                self.failures.append(f"{where}: the startup probe fails before the engine answers: the container restarts")
                log(self.failures[-1])
                continue
            if now < due:
                continue
            try:
                self.api.merge_patch(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", {"metadata": {"annotations": {
                    PROBES_PASSED: "true", PROBED_AT: f"{due - answers:.1f}"}}})
            except ApiError as e:
                log(f"engine prober: {where}: {e}")
                continue
            self._done.add(uid)
            log(f"engine prober: {where}: probes pass {due - answers:.1f} s after its engine answered")

    @staticmethod
    def _due(pod: dict[str, Any], answers: float) -> Optional[float]:
        """When every probed container's probes pass (the latest of them)."""
        statuses = {s["name"]: s for s in pod.get("status", {}).get("containerStatuses") or []}
        due = answers
        for c in pod["spec"].get("containers", []):
            if not (c.get("startupProbe") or c.get("readinessProbe")):
                continue
            running = ((statuses.get(c["name"]) or {}).get("state") or {}).get("running") or {}
            started = _timestamp(running["startedAt"]) if running.get("startedAt") else answers
            at = probes_pass_at(started, answers, ProbeSpec.of(c["startupProbe"]) if c.get("startupProbe") else None,
                                ProbeSpec.of(c["readinessProbe"]) if c.get("readinessProbe") else None)
            if at is None:
                return None
            due = max(due, at)
        return due
