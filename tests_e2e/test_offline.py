"""The real-engine tier runs with no network route off the machine (tools/cluster/offline.py, what `make e2e`
uses): every scenario beside this one passed without the network, so none of the engines, controllers, the
Pulumi CLI, its provider, the policy pack or Google's client needs it."""

from __future__ import annotations

import os

from tools.cluster.offline import DEVICE, MARKER, OUTER, PEER, PROBE, interfaces, reaches_off_machine


def test_the_tier_runs_with_no_route_off_the_machine():
    assert os.environ.get(MARKER) == "1", "run the tier through `make e2e` (python -m tools.cluster.offline -- pytest tests_e2e)"
    # this process is in a network namespace of its own, wired as offline.py wires it, and nothing gets out
    assert os.environ.get(OUTER, "").startswith("net:[") and os.readlink("/proc/self/ns/net") != os.environ[OUTER]
    assert interfaces() <= {"lo", DEVICE, PEER}
    assert os.environ.get("GOPROXY") == "off"
    assert not reaches_off_machine(timeout=1.0), f"{PROBE[0]}:{PROBE[1]} is reachable"
