"""The offline Pod Security checks (components/manifests/pod_security.py) against the rules as
k8s.io/pod-security-admission v0.36.3 writes them (policy/check_*.go), each expected message written out from
the Go source; the controller charts' pods and the Pathways pods at the levels their namespaces enforce; the
admission check render runs and the policy the plan runs. tests_e2e/test_pod_security.py puts the same pods
before the real API server and asserts it decides as these checks do."""

from __future__ import annotations

from typing import Mapping

import pytest

from components.manifests import admission, pod_security
from components.manifests.controller_charts import CHARTS, JOBSET, KUEUE, LWS
from components.manifests.guardrails import CONTROLLER_NAMESPACE_LEVEL, WORKLOAD_NAMESPACE_LEVEL, psa_labels
from components.model.workloads.teams import USAGE_NAMESPACE
from infra.offline.charts import CHARTS as CHART_DIRS
from infra.offline.charts import render_chart
from infra.offline.render import manifests
from tests.conftest import every_stack, stack_model, stack_plan

IMAGE = "registry.k8s.io/pause:3.10"
ANNOTATION = "container.apparmor.security.beta.kubernetes.io/app"


def ctr(name: str = "app", **security) -> dict:
    """A container `restricted` admits, its securityContext changed by `security` (None removes a key)."""
    sc = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, **security}
    return {"name": name, "image": IMAGE, "securityContext": {k: v for k, v in sc.items() if v is not None}}


def spec(*containers: dict, init: tuple[dict, ...] = (), security: dict | None = None, **fields) -> dict:
    """A pod spec `restricted` admits (runAsNonRoot, RuntimeDefault seccomp), changed by the arguments."""
    sc = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}, **(security or {})}
    out = {"securityContext": {k: v for k, v in sc.items() if v is not None}, "containers": list(containers) or [ctr()], **fields}
    if init:
        out["initContainers"] = list(init)
    return out


# (case, pod metadata, pod spec, what baseline says, what restricted says): "" is admitted, otherwise the
# forbidden detail the API server prints after `violates PodSecurity "<level>:latest": `.
CRAFTED = [
    ("restricted-pod", {}, spec(), "", ""),
    ("bare-container", {}, {"containers": [{"name": "app", "image": IMAGE}]}, "",
     'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), '
     'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), '
     'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), '
     'seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    ("host-namespaces", {}, spec(hostNetwork=True, hostPID=True, hostIPC=True),
     "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)", "host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)"),
    # SetDefaults_Pod: on the host network a container port is a host port too
    ("host-network-ports", {}, spec({**ctr(), "ports": [{"containerPort": 8080}, {"containerPort": 10000}]}, hostNetwork=True),
     'host namespaces (hostNetwork=true), hostPort (container "app" uses hostPorts 10000, 8080)',
     'host namespaces (hostNetwork=true), hostPort (container "app" uses hostPorts 10000, 8080)'),
    ("host-ports", {}, spec({**ctr(), "ports": [{"containerPort": 8080, "hostPort": 8080}]},
                            init=({**ctr("init"), "ports": [{"containerPort": 9000, "hostPort": 9000}]},)),
     'hostPort (containers "init", "app" use hostPorts 8080, 9000)', 'hostPort (containers "init", "app" use hostPorts 8080, 9000)'),
    ("privileged", {}, spec(ctr(privileged=True, allowPrivilegeEscalation=None)),
     'privileged (container "app" must not set securityContext.privileged=true)',
     'privileged (container "app" must not set securityContext.privileged=true), '
     'allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)'),
    ("capabilities-beyond-default", {}, spec(ctr(capabilities={"drop": ["ALL"], "add": ["NET_ADMIN", "CHOWN", "SYS_TIME"]})),
     'non-default capabilities (container "app" must not include "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add)',
     'unrestricted capabilities (container "app" must not include "CHOWN", "NET_ADMIN", "SYS_TIME" in securityContext.capabilities.add)'),
    ("capabilities-not-dropped", {}, spec(ctr(capabilities={"add": ["NET_BIND_SERVICE", "KILL"]})), "",
     'unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]; '
     'container "app" must not include "KILL" in securityContext.capabilities.add)'),
    ("volumes", {}, spec(volumes=[{"name": "host", "hostPath": {"path": "/var/log"}},
                                  {"name": "share", "nfs": {"server": "203.0.113.1", "path": "/exports"}},
                                  {"name": "scratch", "emptyDir": {}}, {"name": "token", "projected": {"sources": []}}]),
     'hostPath volumes (volume "host")', 'restricted volume types (volumes "host", "share" use restricted volume types "hostPath", "nfs")'),
    ("apparmor-field", {}, spec(security={"appArmorProfile": {"type": "Unconfined"}}),
     'forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")',
     'forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")'),
    # applyAppArmorVersionSkew: the API server copies the annotation into the container's field before admission;
    # the annotation is printed `%s=%q` and then quoted again unescaped (joinQuote)
    ("apparmor-annotation", {"annotations": {ANNOTATION: "unconfined"}}, spec(),
     f'forbidden AppArmor profiles (container "app" and annotation must not set AppArmor profile type to "Unconfined", '
     f'"{ANNOTATION}="unconfined"")',
     f'forbidden AppArmor profiles (container "app" and annotation must not set AppArmor profile type to "Unconfined", '
     f'"{ANNOTATION}="unconfined"")'),
    ("selinux", {}, spec(ctr(seLinuxOptions={"user": "system_u", "role": "system_r", "type": "container_t"}),
                         security={"seLinuxOptions": {"type": "spc_t"}}),
     'seLinuxOptions (pod and container "app" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; '
     'role may not be set)',
     'seLinuxOptions (pod and container "app" set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set; '
     'role may not be set)'),
    # In a user namespace baseline allows an unmasked /proc and restricted does not require runAsNonRoot; restricted
    # still refuses the unmasked /proc (procMount_restricted overrides procMount from 1.35).
    ("user-namespace", {}, spec(ctr(procMount="Unmasked"), security={"runAsNonRoot": None}, hostUsers=False), "",
     'procMount (container "app" must not set securityContext.procMount to "Unmasked")'),
    ("seccomp-unconfined", {}, spec(security={"seccompProfile": {"type": "Unconfined"}}),
     'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
     'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")'),
    ("seccomp-some-containers", {}, spec(ctr(seccompProfile={"type": "RuntimeDefault"}), init=(ctr("init"),), security={"seccompProfile": None}),
     "", 'seccompProfile (pod or container "init" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'),
    ("sysctls", {}, spec(security={"sysctls": [{"name": "kernel.msgmax", "value": "65536"}, {"name": "net.ipv4.tcp_syncookies", "value": "1"},
                                               {"name": "net.core.somaxconn", "value": "1024"}]}),
     "forbidden sysctls (kernel.msgmax, net.core.somaxconn)", "forbidden sysctls (kernel.msgmax, net.core.somaxconn)"),
    ("probe-hosts", {}, spec({**ctr(), "livenessProbe": {"httpGet": {"host": "203.0.113.5", "port": 8080}},
                              "readinessProbe": {"tcpSocket": {"host": "db.example.com", "port": 5432}},
                              "lifecycle": {"preStop": {"httpGet": {"host": "203.0.113.5", "port": 80}}}}),
     'probe or lifecycle host (container "app" uses probe or lifecycle hosts "203.0.113.5", "db.example.com")',
     'probe or lifecycle host (container "app" uses probe or lifecycle hosts "203.0.113.5", "db.example.com")'),
    ("root-user", {}, spec(ctr(runAsNonRoot=False), security={"runAsUser": 0}), "",
     'runAsNonRoot != true (container "app" must not set securityContext.runAsNonRoot=false), runAsUser=0 (pod must not set runAsUser=0)'),
    ("root-pod", {}, spec(ctr(runAsUser=0), security={"runAsNonRoot": False}), "",
     'runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false), runAsUser=0 (container "app" must not set runAsUser=0)'),
    ("windows-host-process", {}, {"os": {"name": "windows"}, "hostNetwork": True,
                                  "securityContext": {"windowsOptions": {"hostProcess": True, "runAsUserName": "NT AUTHORITY\\SYSTEM"}},
                                  "containers": [{"name": "app", "image": IMAGE}]},
     "host namespaces (hostNetwork=true), hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)",
     "host namespaces (hostNetwork=true), hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true), "
     'runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true)'),
    # the Linux-only restricted checks exempt a Windows pod (their 1.25 versions)
    ("windows", {}, {"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": True}, "containers": [{"name": "app", "image": IMAGE}]}, "", ""),
]


@pytest.mark.parametrize("case,metadata,pod,baseline,restricted", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_each_rule_reads_as_the_api_server_words_it(case, metadata, pod, baseline, restricted):
    for level, expected in (("baseline", baseline), ("restricted", restricted)):
        assert pod_security.forbidden_detail(pod_security.check_pod(level, metadata, pod)) == expected, (case, level)
    assert pod_security.check_pod("privileged", metadata, pod) == []


def test_the_refusal_message_is_the_api_servers():
    found = pod_security.check_pod("restricted", {}, spec(security={"seccompProfile": None}, containers=[ctr("manager")]))
    assert [(v.check, v.reason) for v in found] == [("seccompProfile_restricted", "seccompProfile")]
    assert pod_security.forbidden_message("restricted", found) == (
        'violates PodSecurity "restricted:latest": seccompProfile (pod or container "manager" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


def test_checks_run_in_the_evaluators_order():
    # registry.go populate: baseline IDs sorted (Go's byte order: "seLinuxOptions" before "seccompProfile_baseline"),
    # then restricted ones; at restricted the overridden baseline checks drop out
    assert [c for c, _ in pod_security.checks("baseline")] == [
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts", "hostProbesAndHostLifecycle",
        "privileged", "procMount", "seLinuxOptions", "seccompProfile_baseline", "sysctls", "windowsHostProcess"]
    assert [c for c, _ in pod_security.checks("restricted")] == [
        "appArmorProfile", "hostNamespaces", "hostPorts", "hostProbesAndHostLifecycle", "privileged", "seLinuxOptions", "sysctls",
        "windowsHostProcess", "allowPrivilegeEscalation", "capabilities_restricted", "procMount_restricted", "restrictedVolumes",
        "runAsNonRoot", "runAsUser", "seccompProfile_restricted"]
    assert pod_security.checks("privileged") == []
    with pytest.raises(ValueError, match="'strict' is not a Pod Security level; valid: privileged, baseline, restricted"):
        pod_security.checks("strict")


def test_a_template_is_judged_as_the_pods_made_from_it():
    # the template itself is left as written; the defaults apply to the pod the controller creates
    pod = spec({**ctr(), "ports": [{"containerPort": 8080}]}, hostNetwork=True)
    prepared = pod_security.as_created({}, pod)
    assert prepared["containers"][0]["ports"] == [{"containerPort": 8080, "hostPort": 8080}]
    assert pod["containers"][0]["ports"] == [{"containerPort": 8080}]
    # an annotation equal to the pod's own profile, or one naming no valid profile, is not copied
    same = pod_security.as_created({"annotations": {ANNOTATION: "unconfined"}}, spec(security={"appArmorProfile": {"type": "Unconfined"}}))
    assert "appArmorProfile" not in same["containers"][0]["securityContext"]
    odd = pod_security.as_created({"annotations": {ANNOTATION: "localhost/"}}, spec())
    assert "appArmorProfile" not in odd["containers"][0]["securityContext"]
    local = pod_security.as_created({"annotations": {ANNOTATION: "localhost/k8s-default"}}, spec())
    assert local["containers"][0]["securityContext"]["appArmorProfile"] == {"type": "Localhost", "localhostProfile": "k8s-default"}
    windows = pod_security.as_created({"annotations": {ANNOTATION: "unconfined"}}, {"os": {"name": "windows"}, "containers": [{"name": "app"}]})
    assert "securityContext" not in windows["containers"][0]


# --- the controllers' charts, as the stack installs them and as their own defaults would ----------------------

def _chart_pods(chart, values) -> list[tuple[str, Mapping, Mapping]]:
    objects = render_chart(CHART_DIRS / chart.release, chart.release, chart.namespace, values)
    return [(o["metadata"]["name"], m, s) for o in objects for _, m, s in pod_security.pod_templates(o)]


def test_the_lws_chart_with_its_own_values_is_refused_by_restricted():
    # issue #34: charts/lws/values.yaml sets podSecurityContext {runAsNonRoot: true} and no seccomp profile
    (name, meta, pod), = _chart_pods(LWS, {})
    assert name == "lws-controller-manager"
    assert pod_security.forbidden_message("restricted", pod_security.check_pod("restricted", meta, pod)) == (
        'violates PodSecurity "restricted:latest": seccompProfile (pod or container "manager" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')


@pytest.mark.parametrize("chart", list(CHARTS.values()), ids=list(CHARTS))
def test_each_chart_pod_passes_its_namespace_level_with_the_stacks_values(chart):
    pods = _chart_pods(chart, chart.values("0.0.0", "system"))
    assert len(pods) == 1  # one controller Deployment per chart
    for _, meta, pod in pods:
        assert pod_security.check_pod(chart.pod_security, meta, pod) == []


def test_the_controller_namespaces_enforce_restricted():
    # JobSet v0.12.0 and Kueue v0.19.2 pass it with their own values; LWS v0.9.0 with the stack's seccomp value.
    # Kueue's namespace was `baseline` until its chart's pod was checked.
    assert CONTROLLER_NAMESPACE_LEVEL == "restricted"
    assert {c.release: c.pod_security for c in CHARTS.values()} == {"jobset": "restricted", "kueue": "restricted", "lws": "restricted"}
    for chart in (JOBSET, KUEUE):
        for _, meta, pod in _chart_pods(chart, {}):
            assert pod_security.check_pod("restricted", meta, pod) == []


# --- the Pathways pods ----------------------------------------------------------------------------------

def _stack_pods(name: str) -> list[tuple[str, str, Mapping, Mapping]]:
    """The Pathways pods: every pod template but the teams' usage recorder's (restricted, tests/test_usage_record.py)."""
    return [(o["kind"], path, m, s) for o in manifests(stack_plan(name)) for path, m, s in pod_security.pod_templates(o)
            if o["metadata"].get("namespace") != USAGE_NAMESPACE]


@every_stack("name")
def test_pathways_pods_need_the_privileged_level_their_namespace_has(name):
    assert WORKLOAD_NAMESPACE_LEVEL == "privileged"
    pods = _stack_pods(name)
    assert bool(pods) is bool(stack_model(name).active_workloads)  # a fleet manager's runs run on its workers
    for kind, path, meta, pod in pods:
        assert pod_security.check_pod("privileged", meta, pod) == [], (kind, path)
        refused = {v.check for v in pod_security.check_pod("baseline", meta, pod)}
        if kind == "JobSet":  # head and workers: the host network, its ports host ports
            assert refused == {"hostNamespaces", "hostPorts"}, (kind, path)
        else:  # a serve workload's pods use the pod network
            assert refused == set(), (kind, path)


# --- which pods an object makes, and at which level -----------------------------------------------------

def test_pod_templates_of_each_kind():
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [ctr()]}}
    objects = {
        "Pod": {"kind": "Pod", "metadata": {"name": "p"}, "spec": template["spec"]},
        "Deployment": {"kind": "Deployment", "spec": {"template": template}},
        "StatefulSet": {"kind": "StatefulSet", "spec": {"template": template}},
        "Job": {"kind": "Job", "spec": {"template": template}},
        "CronJob": {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": template}}}},
        "JobSet": {"kind": "JobSet", "spec": {"replicatedJobs": [{"template": {"spec": {"template": template}}}] * 2}},
        "LeaderWorkerSet": {"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {"leaderTemplate": template, "workerTemplate": template}}},
    }
    paths = {kind: [p for p, _, _ in pod_security.pod_templates(obj)] for kind, obj in objects.items()}
    assert paths == {
        "Pod": [""], "Deployment": ["spec.template"], "StatefulSet": ["spec.template"], "Job": ["spec.template"],
        "CronJob": ["spec.jobTemplate.spec.template"],
        "JobSet": ["spec.replicatedJobs[0].template.spec.template", "spec.replicatedJobs[1].template.spec.template"],
        "LeaderWorkerSet": ["spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"],
    }
    # a LeaderWorkerSet without a leader template runs its workers' only; a ConfigMap makes no pod
    lws = {"kind": "LeaderWorkerSet", "spec": {"leaderWorkerTemplate": {"workerTemplate": template}}}
    assert [p for p, _, _ in pod_security.pod_templates(lws)] == ["spec.leaderWorkerTemplate.workerTemplate"]
    assert pod_security.pod_templates({"kind": "ConfigMap"}) == []


def test_namespace_levels_come_from_the_enforce_labels():
    objects = [
        {"kind": "Namespace", "metadata": {"name": "pathways", "labels": psa_labels("privileged")}},
        {"kind": "Namespace", "metadata": {"name": "lws-system", "labels": psa_labels("restricted")}},
        {"kind": "Namespace", "metadata": {"name": "odd", "labels": {"pod-security.kubernetes.io/enforce": "strict"}}},
        {"kind": "Namespace", "metadata": {"name": "plain"}},
    ]
    policies = pod_security.namespace_policies(objects)
    # an unknown level is enforced as restricted (api/helpers.go ParseLevel); no label, no entry (privileged)
    assert {n: (p.level, p.version) for n, p in policies.items()} == {
        "pathways": ("privileged", "latest"), "lws-system": ("restricted", "latest"), "odd": ("restricted", "latest")}


def test_admission_checks_each_pod_against_its_namespace():
    deployment = {"kind": "Deployment", "metadata": {"name": "d", "namespace": "lws-system"},
                  "spec": {"template": {"spec": {"containers": [{"name": "manager", "image": IMAGE}]}}}}
    policies = pod_security.namespace_policies([{"kind": "Namespace", "metadata": {"name": "lws-system", "labels": psa_labels("baseline")}}])
    assert admission.check_pod_security(deployment, policies).violations == []
    policies["lws-system"] = pod_security.NamespacePolicy("restricted", "latest")
    (v,) = admission.check_pod_security(deployment, policies).violations
    assert (v.rule, v.path) == ("pod-security", "spec.template")
    assert v.message.startswith('namespace lws-system: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false')
    # a namespace the stack does not label has Kubernetes' default, privileged
    assert admission.check_pod_security({**deployment, "metadata": {"name": "d", "namespace": "elsewhere"}}, policies).violations == []
    # a pinned version is checked at latest, and said
    policies["lws-system"] = pod_security.NamespacePolicy("baseline", "v1.29")
    assert admission.check_pod_security(deployment, policies).notices == [
        "namespace lws-system enforces Pod Security baseline:v1.29; checked at baseline:latest, the version the offline checks implement"]
