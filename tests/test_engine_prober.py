"""The real-engine tier's prober for the engines it does not run (tools/cluster/engine_prober.py): when the kubelet
would find a pod's probes passing, from the pod's own probes, once its engine answers."""

from __future__ import annotations

import pytest

from components.manifests import lws
from tests.conftest import plan_of
from tests.test_vllm import FOUR, WEIGHTS, containers, the_lws, vllm_config
from tools.cluster.engine_prober import ProbeSpec, probes_pass_at


def leader_engine(config: dict, name: str) -> dict:
    return containers(the_lws(plan_of(config))["spec"]["leaderWorkerTemplate"]["leaderTemplate"])[name]


def specs(container: dict) -> tuple[ProbeSpec, ProbeSpec]:
    return ProbeSpec.of(container["startupProbe"]), ProbeSpec.of(container["readinessProbe"])


def test_a_vllm_leader_is_ready_within_seconds_of_its_engine_answering():
    startup, readiness = specs(leader_engine(vllm_config(slices=FOUR, weights=WEIGHTS), "vllm"))
    # engine up 37 s after the container started: the startup tick at 40 s, readiness at its tick at 40 s
    assert probes_pass_at(0, 37, startup, readiness) == 40
    # a model that loads for 2 h 59 min is still waited for; one that takes longer restarts the container
    assert probes_pass_at(0, 179 * 60, startup, readiness) == 179 * 60
    assert probes_pass_at(0, 181 * 60, startup, readiness) is None


def test_a_jetstream_leader_is_first_probed_after_ten_minutes_as_googles_values_say():
    from tests.test_serving import serve_config

    startup, readiness = specs(leader_engine(serve_config(), "jax-tpu"))
    assert (startup.initial_delay, readiness.period) == (lws.STARTUP_DELAY_SECONDS, 60)
    assert probes_pass_at(0, 37, startup, readiness) == 600


@pytest.mark.parametrize("minutes, threshold", [(180, 1080), (30, 180), (5, 30)])
def test_the_load_timeout_sets_the_startup_probes_threshold(minutes, threshold):
    engine = leader_engine(vllm_config(slices=FOUR, weights=WEIGHTS, loadTimeoutMinutes=minutes), "vllm")
    assert engine["startupProbe"] == {"httpGet": {"path": "/health", "port": 8000}, "timeoutSeconds": 5, "periodSeconds": 10,
                                      "failureThreshold": threshold}
    assert engine["readinessProbe"]["periodSeconds"] == 5 and "initialDelaySeconds" not in engine["readinessProbe"]
    assert engine["livenessProbe"]["periodSeconds"] * engine["livenessProbe"]["failureThreshold"] == 300


def test_ticks_follow_the_period_from_the_containers_start_past_the_initial_delay():
    spec = ProbeSpec(initial_delay=15, period=10, failure_threshold=3)
    assert spec.first_tick_at_or_after(100, 100) == 120 and spec.first_tick_at_or_after(100, 121) == 130
    assert spec.first_tick_at_or_after(100, 130) == 130
    assert ProbeSpec.of({}) == ProbeSpec(0, 10, 3)  # Kubernetes' defaults
