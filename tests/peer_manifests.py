"""The JobSets the peers generate for a Pathways batch workload (tests/fixtures/peers: google/pathways-job v0.1.4
and xpk v1.13.1, each written out from its source, every field's origin named in the file) and variants of them
that break one rule of the API server's Job validation. (Not among them: a sidecar with restartPolicyRules,
which Kubernetes 1.35, what GKE runs and the offline checks follow, refuses and 1.36, the tier's control plane,
admits: RestartAllContainersOnContainerExits turned beta.) The offline admission checks
(components/manifests/admission.py) must decide each as the real API server and JobSet's controller do:
tests/test_peer_manifests.py holds the offline verdicts, tests_e2e/test_peer_manifests.py the real ones."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import yaml

PEERS_DIR = Path(__file__).resolve().parent / "fixtures" / "peers"
PEERS = {"pathways-job": "pathways-job-jobset.yaml", "xpk": "xpk-jobset.yaml"}


def peer(name: str) -> dict[str, Any]:
    return yaml.safe_load((PEERS_DIR / PEERS[name]).read_text())


def _pods(js: dict[str, Any]) -> list[dict[str, Any]]:
    return [rj["template"]["spec"]["template"]["spec"] for rj in js["spec"]["replicatedJobs"]]


def _pod_restarts_always(js):
    for pod in _pods(js):
        pod["restartPolicy"] = "Always"


def _container_restarts_on_failure(js):
    for pod in _pods(js):
        pod["containers"][0]["restartPolicy"] = "OnFailure"


def _container_restart_policy_unknown(js):
    for pod in _pods(js):
        pod["containers"][0]["restartPolicy"] = "Sometimes"


def _restart_rule_without_exit_codes(js):
    for pod in _pods(js):
        pod["containers"][0].update(restartPolicy="Never", restartPolicyRules=[{"action": "Restart"}])


def _duplicate_container_name(js):
    for pod in _pods(js):
        first = pod["containers"][0]
        pod["containers"].append({"name": first["name"], "image": first["image"]})


# (name, change, the rules the offline checks must name, or None where the API server admits it)
Variant = tuple[str, Optional[Callable[[dict[str, Any]], None]], Optional[tuple[str, ...]]]
VARIANTS: list[Variant] = [
    ("as-generated", None, None),
    ("pod-restarts-always", _pod_restarts_always, ("restart-policy",)),
    ("container-restarts-on-failure", _container_restarts_on_failure, None),  # ContainerRestartRules, beta from 1.35
    ("container-restart-policy-unknown", _container_restart_policy_unknown, ("restart-policy",)),
    ("restart-rule-without-exit-codes", _restart_rule_without_exit_codes, ("restart-policy",)),
    # the JobSet CRD's containers list is a map keyed by name (the schema layer) and Kubernetes wants names unique
    # across containers and init containers (the semantic layer): both say it
    ("duplicate-container-name", _duplicate_container_name, ("jobset-schema", "unique-names")),
]
CASES = [(p, v) for p in PEERS for v in VARIANTS]


def variant(peer_name: str, v: Variant) -> dict[str, Any]:
    js = copy.deepcopy(peer(peer_name))
    if v[1] is not None:
        v[1](js)
    return js
