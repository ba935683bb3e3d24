"""The peers' JobSets (google/pathways-job's and xpk's, tests/peer_manifests.py) and variants breaking one rule of
Job validation, created in the real API server with JobSet's controller and webhooks running, judged by what JobSet's
controller did: it created the JobSet's first Job, or the API server refused that Job and the controller said so
(a JobCreationFailed event naming the field). The offline admission checks must reach the same verdict on the same
field (issue #34.3: they had refused pathways-job's JobSet, whose pods leave restartPolicy to JobSet's webhook).

The JobSets are created suspended, so their Jobs make no pods; the xpk one without its Kueue queue label (no such
LocalQueue here, and Kueue's admission is not what is compared)."""

from __future__ import annotations

import re

import pytest

from components.manifests import admission
from tests.peer_manifests import CASES, VARIANTS, variant
from tests_e2e.test_stacks import example_stack_config

NAMESPACE = "peer-manifests"


@pytest.fixture(scope="module")
def peers_namespace(cluster, stacks):
    if stacks.current is None:  # any stack: each installs JobSet's chart (its controller and webhooks)
        stacks.use("dev", example_stack_config("dev"))
    cluster.kubectl("create", "namespace", NAMESPACE)
    yield NAMESPACE
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=true", check=False)


def _verdict(cluster, name: str):
    """('created', job) once JobSet's controller made a Job of the JobSet, ('refused', message) once it reported a
    refused Job create, else None."""
    jobs = [j for j in cluster.get("jobs", "-n", NAMESPACE, "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"]]
    if jobs:
        return ("created", jobs[0]["metadata"]["name"])
    events = cluster.get("events", "-n", NAMESPACE, "--field-selector", f"involvedObject.name={name},reason=JobCreationFailed")["items"]
    return ("refused", events[0]["message"]) if events else None


# a field path in the API server's words: the JobSet's (its schema refused it) or the Job's (JobSet's controller
# could not create it), made the Job's
_PATH = re.compile(r"((?:spec\.replicatedJobs\[\d+\]\.template\.)?spec\.template\.spec\.[A-Za-z0-9_.\[\]]+?):")
_IN_JOBSET = re.compile(r"^spec\.replicatedJobs\[\d+\]\.template\.")


@pytest.mark.parametrize("peer_name,v", CASES, ids=[f"{p}-{v[0]}" for p, v in CASES])
def test_the_api_server_and_jobset_decide_as_the_offline_checks(cluster, peers_namespace, peer_name, v):
    js = variant(peer_name, v)
    # short: the coordinator label JobSet derives from the names must stay within 63 characters
    name = f"{peer_name[:3]}-{[x[0] for x in VARIANTS].index(v[0])}"
    js["metadata"] = {"name": name, "namespace": peers_namespace}  # and no Kueue queue label
    js["spec"]["suspend"] = True
    created = cluster.apply([js], server_side=False, check=False)
    if created.returncode != 0:
        outcome, detail = "refused", created.stderr  # the JobSet itself, by its schema or JobSet's webhook
    else:
        outcome, detail = cluster.wait_for(f"JobSet's controller to create or fail a Job of {name}", lambda: _verdict(cluster, name), timeout=60)
    offline = admission.check_jobset(variant(peer_name, v)).violations
    if outcome == "created":
        assert offline == [], f"{name}: JobSet's controller created {detail}; offline: {[str(x) for x in offline]}"
        assert v[2] is None
        return
    assert offline, f"{name}: the API server refused it ({detail}); the offline checks admit it"
    # the field the API server names is one the offline checks name (or holds it: a duplicate's item, its name)
    said = {_IN_JOBSET.sub("", p) for p in _PATH.findall(detail)}
    ours = {_IN_JOBSET.sub("", x.path) for x in offline}
    assert any(o.startswith(a) or a.startswith(o) for a in said for o in ours), f"{name}: the API server named {said}; offline {ours}"
    assert {x.rule for x in offline} == set(v[2] or ())
