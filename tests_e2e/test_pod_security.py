"""The offline Pod Security checks (components/manifests/pod_security.py, which `render` and the policy pack run)
decide as the real API server's PodSecurity admission does: every pod below is created with a server-side dry run
in a namespace enforcing `privileged`, `baseline` and `restricted` (latest), and the API server's verdict, the
reasons it names and its words must be the offline checks'.

The pods: the three controller charts' pods, with the stack's values and with the charts' own defaults (LWS's
without a seccomp profile is refused by `restricted`: issue #34); the Pathways head, worker and serve pods of the
committed stacks; and crafted pods that break each rule (tests/test_pod_security.py, where each is also written
out from the Go source)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from components.manifests import pod_security
from components.manifests.controller_charts import CHARTS
from infra.offline.charts import CHARTS as CHART_DIRS
from infra.offline.charts import render_chart
from infra.offline.render import manifests
from tests.conftest import STACKS, stack_model, stack_plan
from tests.test_pod_security import CRAFTED

LEVELS = ("privileged", "baseline", "restricted")
# Every forbidden reason of pod-security-admission v0.36.3's checks (policy/check_*.go ForbiddenReason).
REASONS = ("allowPrivilegeEscalation != false", "forbidden AppArmor profile", "forbidden AppArmor profiles", "non-default capabilities",
           "unrestricted capabilities", "host namespaces", "hostPath volumes", "hostPort", "probe or lifecycle host", "privileged",
           "procMount", "restricted volume types", "runAsNonRoot != true", "runAsUser=0", "seLinuxOptions", "seccompProfile",
           "forbidden sysctls", "hostProcess")
REFUSAL = re.compile(r'violates PodSecurity "(?P<level>[a-z]+):latest": (?P<detail>.*)$')


def _chart_cases() -> list[tuple[str, dict, dict]]:
    cases = []
    for chart in CHARTS.values():
        for label, values in (("stack-values", chart.values("0.0.0", "system")), ("chart-defaults", {})):
            for obj in render_chart(CHART_DIRS / chart.release, chart.release, chart.namespace, values):
                for _, meta, spec in pod_security.pod_templates(obj):
                    cases.append((f"chart-{chart.release}-{label}-{obj['metadata']['name']}", meta, spec))
    return cases


def _stack_cases() -> list[tuple[str, dict, dict]]:
    cases, seen = [], set()
    for name in STACKS:
        for obj in manifests(stack_plan(name)):
            for path, meta, spec in pod_security.pod_templates(obj):
                key = yaml.safe_dump([meta, spec], sort_keys=True)
                if key not in seen:  # the stacks share pods: each distinct one once
                    seen.add(key)
                    index = re.search(r"replicatedJobs\[([0-9]+)\]", path)
                    part = obj["spec"]["replicatedJobs"][int(index.group(1))]["name"] if index else path.rsplit(".", 1)[-1]
                    cases.append((f"stack-{name}-{obj['kind'].lower()}-{obj['metadata']['name']}-{part}", meta, spec))
    return cases


STACK_CASES = _stack_cases()  # each stack's own pods: they come and go with a team's stacks (every_stack)
CASES = [(case, meta, spec) for case, meta, spec, _, _ in CRAFTED] + _chart_cases() + STACK_CASES


def dry_run_pod(case: str, meta: dict[str, Any], spec: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A Pod of the template for a server-side dry run. What a namespace of its own lacks is left out, none of it a
    field PodSecurity reads: the priority class (the Priority admission plugin would refuse an unknown one) and the
    service account (ServiceAccount admission would refuse one that does not exist; `default` is used)."""
    name = re.sub(r"[^a-z0-9-]", "-", case.lower())[:50].strip("-")
    metadata = {"name": name, "namespace": namespace, **{k: meta[k] for k in ("labels", "annotations") if meta.get(k)}}
    dropped = ("priorityClassName", "priority", "serviceAccountName", "serviceAccount")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {k: v for k, v in spec.items() if k not in dropped}}


def reasons(detail: str) -> set[str]:
    """The forbidden reasons in the API server's detail: `reason (detail), reason (detail)`."""
    return {r for r in REASONS if re.search(rf"(?:^|, ){re.escape(r)}(?: \(|,|$)", detail)}


@pytest.fixture(scope="module")
def namespaces(cluster, stacks):
    """A namespace per level; deleted at the end of the module."""
    stacks.close()  # no stack's node guard (a ValidatingAdmissionPolicy on pods) or controller webhook answers first
    made = {}
    try:
        for level in LEVELS:
            ns = f"pod-security-{level}"
            cluster.kubectl("create", "namespace", ns)
            made[level] = ns
            cluster.kubectl("label", "namespace", ns, f"pod-security.kubernetes.io/enforce={level}",
                            "pod-security.kubernetes.io/enforce-version=latest")
            # ServiceAccount admission needs the namespace's `default` account before a pod can be created there
            cluster.wait_for(f"the default service account of {ns}",
                             lambda ns=ns: cluster.kubectl("get", "serviceaccount", "default", "-n", ns, check=False).returncode == 0)
        yield made
    finally:
        for ns in made.values():
            cluster.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def test_every_case_has_a_name_of_its_own():
    names = [case for case, _, _ in CASES]
    assert len(names) == len(set(names)) and len(CRAFTED) >= 15
    # the cases the issue asks for are among them
    assert any(n.startswith("chart-lws-chart-defaults-") for n in names)
    # a stack that serves brings its LeaderWorkerSet's templates
    if any(stack_model(s).serve_workloads for s in STACKS):
        assert any(n.startswith("stack-") and "-leaderworkerset-" in n for n in names)


@pytest.mark.parametrize("case,meta,spec", [pytest.param(*c, id=c[0], marks=[pytest.mark.every_stack] if c in STACK_CASES else [])
                                            for c in CASES])
def test_the_api_server_decides_as_the_offline_checks(cluster, namespaces, case, meta, spec):
    for level in LEVELS:
        pod = dry_run_pod(case, meta, spec, namespaces[level])
        offline = pod_security.check_pod(level, pod["metadata"], pod["spec"])
        proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(pod), check=False)
        said = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        if proc.returncode == 0:
            assert offline == [], f"{case} at {level}: the API server admitted it; offline: {pod_security.forbidden_detail(offline)}"
            continue
        refusal = next((m for line in said if (m := REFUSAL.search(line))), None)
        assert refusal is not None, f"{case} at {level}: refused for another reason than Pod Security: {said}"
        assert refusal.group("level") == level
        assert offline, f"{case} at {level}: the API server refused it ({refusal.group('detail')}); the offline checks admit it"
        assert reasons(refusal.group("detail")) == {v.reason for v in offline}, (case, level)
        assert refusal.group("detail") == pod_security.forbidden_detail(offline), (case, level)
