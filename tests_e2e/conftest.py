"""The real-engine tier: one local control plane (real kube-apiserver, etcd, controller-manager and scheduler,
kwok's fake nodes built from GKE's facts) for the whole session. Every scenario deploys its stack the way a
user does, through the real `pulumi up` of the stack's program (existing-cluster mode), the JobSet, Kueue and
LeaderWorkerSet charts included: their controllers run as the pinned binaries under the charts'
ServiceAccounts, configs and webhooks (tools/cluster/kubelet.py). One stack runs at a time; a scenario that
asks for the stack that runs already reuses it, any other takes it down with `pulumi destroy` first.

Run with `make e2e` (it builds the engines first). A missing engine is a failure, never a skip."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest

from tools.cluster.deploy import Deployed, deploy_stack, pulumi_up, take_down, transition
from tools.cluster.local import ROOT, ClusterError, LocalCluster, leftover_processes, log
from tools.pulumi_real.run import Result


def pytest_configure(config: pytest.Config) -> None:
    # A CI timeout or a `kill` sends SIGTERM, which would end pytest before the session's teardown stops the
    # control plane, the controllers and the kubelets it started (they would outlive the run): take it as Ctrl-C,
    # whose teardown runs.
    signal.signal(signal.SIGTERM, signal.default_int_handler)


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    workdir = Path(os.environ.get("PATHWAYS_E2E_WORKDIR") or ROOT / "build" / "e2e" / time.strftime("%Y%m%d-%H%M%S"))
    with LocalCluster.start(workdir) as c:
        yield c
    time.sleep(3)  # stopped processes are reaped by init
    left = leftover_processes(workdir)
    assert not left, f"the teardown left processes behind: {left}"


class Stacks:
    """The one stack that runs on the control plane, deployed by the real `pulumi up`."""

    def __init__(self, cluster: LocalCluster, workdir: Path):
        self.cluster = cluster
        self.workdir = workdir
        self.current: Optional[Deployed] = None
        self._key: Optional[str] = None
        self._left_to_the_cluster = False

    def use(self, name: str, config: dict[str, Any], secrets: Optional[dict[str, str]] = None) -> Deployed:
        """The stack `name` with `config`, deployed (charts included) by a `pulumi up` of the running stack
        (tools/cluster/deploy.py transition) or, on an empty cluster, a first one; its second preview empty."""
        key = json.dumps([name, config, secrets], sort_keys=True)
        if self.current is not None and key == self._key:
            return self.current
        self._left_to_the_cluster = False
        if self.current is None:
            self.current = deploy_stack(self.cluster, name, config, self.workdir / f"{name}-{time.monotonic_ns()}", secrets)
        else:
            self.current = transition(self.cluster, self.current, name, config, secrets)
        self._key = key
        expect_no_changes(self.current)
        return self.current

    def changed(self) -> None:
        """A scenario changed the running stack itself: the next use() runs `pulumi up` whatever it asks for."""
        self._key = None

    def update(self, config: dict[str, Any]) -> Result:
        """`pulumi up` of the running stack with a changed config (its Kubernetes layer), as a user's next
        change; the next use() of the old config deploys it again."""
        assert self.current is not None
        from tools.cluster.deploy import existing_mode

        self.current.run.set_config(existing_mode(config, self.cluster))
        self.current.config = config
        self._key = None
        result = pulumi_up(self.cluster, self.current.run)
        if result.returncode != 0:
            raise ClusterError(f"pulumi up of the changed stack {self.current.name} failed:\n{result.output[-4000:]}")
        return result

    def leave_to_the_cluster(self) -> None:
        """The running stack is the session's last: the control plane, stopped after it, takes its objects and
        nodes along, and the session ends without its `pulumi destroy` (the scale stack's takes minutes, and
        what destroy leaves is test_pulumi's scenario). A later use() of another stack takes it down as usual."""
        self._left_to_the_cluster = True

    def close(self, at_session_end: bool = False) -> None:
        if at_session_end and self._left_to_the_cluster:
            log(f"stack {self.current.name if self.current else '-'}: left to the control plane, which stops now")
            return
        if self.current is not None:
            current, self.current, self._key = self.current, None, None
            take_down(self.cluster, current)


def expect_no_changes(deployed: Deployed) -> None:
    """The stack's second preview proposes nothing: every quantity and default as the API server stores it."""
    again = deployed.run.cli("preview", "--expect-no-changes", "--diff")
    assert again.returncode == 0, f"stack {deployed.name}: a second preview proposes changes:\n{again.output[-4000:]}"


@pytest.fixture(scope="session")
def stacks(cluster: LocalCluster) -> Iterator[Stacks]:
    s = Stacks(cluster, cluster.workdir / "stacks")
    yield s
    s.close(at_session_end=True)


# --- the tier's own report: every scenario ran (a skip fails the tier) -------------------------------------

_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.nodeid] = report.outcome if not hasattr(report, "wasxfail") else "xfail"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """build/e2e/report.json: every scenario and its outcome. A skipped or xfailed scenario fails the session:
    the tier never passes unproven."""
    counts: dict[str, int] = {}
    for outcome in _outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    out = ROOT / "build" / "e2e" / "report.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"collected": session.testscollected, "outcomes": counts, "scenarios": _outcomes}, indent=2) + "\n")
    if counts.get("skipped") or counts.get("xfail"):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# The order scenarios run in: those that need no stack first, then the stacks, each scenario reusing the stack
# that runs where it can (a transition to another stack is a `pulumi up` of a minute or two): the guards', the
# peers' and test_stacks' dev, the committed stacks with serving last, then test_serving on it; last those that
# take the stack down (destroy, a failed deploy). A new module must be placed here.
ORDER = ("test_offline.py", "test_bootstrap_state.py", "test_pod_security.py",
         "test_guards.py", "test_guard_updates.py", "test_kueue_outage.py", "test_peer_manifests.py", "test_stacks.py", "test_dynamic_slicing.py", "test_serving.py",
         "test_service_client.py", "test_queues.py", "test_runs.py", "test_verify.py", "test_why.py", "test_teams.py", "test_day_two.py", "test_storage.py", "test_capacity.py", "test_fleet.py", "test_xpk.py", "test_restarts.py", "test_failures.py", "test_secrets.py",
         "test_pulumi.py", "test_charts.py", "test_scale.py")  # scale last: its 1,024 nodes go with the cluster
# test_stacks' order: prod before staging (a workload admitted while the previous stack's heads still hold the
# head flavor's quota: once given a TPU flavor, its head never ran), and serving, the stack test_serving starts
# from, last. Teams before a stack without serve workloads: the `pulumi up` to serving makes the custom metrics
# APIService, whose adapter does not run here, and Kubernetes' namespace controller finishes no namespace deletion
# (the teams' namespaces) while an aggregated API fails discovery (NamespaceDeletionDiscoveryFailure).
STACK_ORDER = ("dev", "prod", "teams", "staging", "serving")
# test_dynamic_slicing starts from the ironwood stack test_stacks deploys among a team's own stacks (at serving - 0.5)
RIDES_ON = {"test_dynamic_slicing.py": STACK_ORDER.index("serving") - 0.4}


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    unplaced = sorted({i.path.name for i in items} - set(ORDER))
    if unplaced:
        raise pytest.UsageError(f"tests_e2e/conftest.py ORDER does not place {', '.join(unplaced)}")

    def rank(item: pytest.Item) -> tuple[int, float]:
        if item.path.name in RIDES_ON:  # scenarios that start from a stack test_stacks leaves running
            return (ORDER.index("test_stacks.py"), RIDES_ON[item.path.name])
        params = getattr(item, "callspec", None)
        stack = params.params.get("name") if params is not None and item.path.name == "test_stacks.py" else None
        # a team's own stacks between the examples and serving, which test_serving starts from
        where = STACK_ORDER.index(stack) if stack in STACK_ORDER else STACK_ORDER.index("serving") - 0.5
        return (ORDER.index(item.path.name), where)
    items.sort(key=rank)  # stable: within a module, the collection order
