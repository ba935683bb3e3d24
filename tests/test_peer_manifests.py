"""The offline admission checks decide the peers' JobSets (tests/peer_manifests.py) as the API server and JobSet's
controller do (tests_e2e/test_peer_manifests.py shows it there): google/pathways-job leaves the pods'
restartPolicy empty, which JobSet's webhook defaults, and xpk's passes as written."""

from __future__ import annotations

import pytest

from components.manifests import admission
from tests.peer_manifests import CASES, peer, variant


def test_the_peers_leave_what_jobsets_webhook_defaults():
    # the reason the checks default first: pathways-job's pods set no restartPolicy, xpk's set theirs
    def pods(js):
        return [rj["template"]["spec"]["template"]["spec"] for rj in js["spec"]["replicatedJobs"]]

    assert [p.get("restartPolicy") for p in pods(peer("pathways-job"))] == [None, None]
    assert [p.get("restartPolicy") for p in pods(peer("xpk"))] == ["Never", "OnFailure"]


@pytest.mark.parametrize("peer_name,v", CASES, ids=[f"{p}-{v[0]}" for p, v in CASES])
def test_the_offline_checks_decide_each_peer_variant(peer_name, v):
    report = admission.check_jobset(variant(peer_name, v))
    rules = sorted({x.rule for x in report.violations})
    assert rules == sorted(v[2] or ()), [str(x) for x in report.violations]
