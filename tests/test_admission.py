"""Each admission rule, with a manifest that breaks it and the message it gets."""

from __future__ import annotations

import copy

import pytest

from components.manifests import admission
from infra.offline.__main__ import main as offline_main
from infra.offline.render import manifests, pool_facts
from tests.conftest import example_path, example_plan

PLAN = example_plan("staging")
POOLS = pool_facts(PLAN)
GOOD = {o["metadata"]["name"]: o for o in manifests(PLAN) if o["kind"] == "JobSet"}


def batch():
    return copy.deepcopy(GOOD["train-smoke"])


def head(js):
    return js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def worker(js):
    return js["spec"]["replicatedJobs"][1]["template"]["spec"]


def _unknown_field(js):
    js["spec"]["startupPolicy"]["order"] = "InOrder"


def _bad_enum(js):
    js["spec"]["startupPolicy"]["startupPolicyOrder"] = "Sequential"


def _job_schema(js):
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["completion"] = 1


def _restart_on_regular(js):
    head(js)["containers"][0]["restartPolicy"] = "Sometimes"


def _sidecar_restart_rules(js):
    head(js)["initContainers"][0]["restartPolicyRules"] = [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]


def _long_name(js):
    js["metadata"]["name"] = "a-very-long-jobset-name-x"


def _bad_name(js):
    head(js)["containers"][0]["name"] = "JAX_Program"


def _dup_container(js):
    head(js)["initContainers"][1]["name"] = "pathways-rm"


def _dup_port(js):
    head(js)["initContainers"][1]["ports"] = [{"containerPort": 29001, "protocol": "TCP"}]


def _dup_env(js):
    c = head(js)["containers"][0]
    c["env"].append(dict(c["env"][1]))


def _label_value(js):
    js["metadata"]["labels"]["pathways/workload"] = "x" * 64


def _quantity(js):
    head(js)["containers"][0]["resources"]["limits"]["memory"] = "100GB"


def _quantity_request(js):
    head(js)["containers"][0]["resources"]["requests"]["cpu"] = "two"


def _exit_code_zero(js):
    # a rule that would count a success as a failure: the API server refuses 0 with In
    rj = js["spec"]["replicatedJobs"][1]["template"]["spec"]
    rj["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 42]}}]}
    rj["template"]["spec"]["restartPolicy"] = "Never"


def _tpu_request(js):
    worker(js)["template"]["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"] = "8"


def _parallelism(js):
    worker(js)["parallelism"] = worker(js)["completions"] = 2


def _selector(js):
    worker(js)["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"


def _unknown_volume(js):
    head(js)["volumes"] = []


def _bad_jobset_name(js):
    js["metadata"]["name"] = "Bad_Name"


def _bad_replicated_job_name(js):
    js["spec"]["replicatedJobs"][1]["name"] = "Worker_1"


def _parallelism_not_completions(js):
    worker(js)["parallelism"] = worker(js)["completions"] + 1


def _head_tpu(js):
    head(js)["containers"][0]["resources"]["limits"]["google.com/tpu"] = "4"


def _head_restart_always(js):
    head(js)["restartPolicy"] = "Always"


RULES = [
    ("restart-policy", _head_restart_always, "'Always': a Job's pods restart Never or OnFailure"),
    ("jobset-schema", _unknown_field, "spec.startupPolicy.order: unknown field 'order'"),
    ("jobset-schema", _bad_enum, "'Sequential' is not one of ['AnyOrder', 'InOrder']"),
    ("job-schema", _job_schema, "'completion' was unexpected"),
    ("restart-policy", _restart_on_regular, "'Sometimes' is not supported; valid: Always, Never, OnFailure"),
    ("restart-policy", _sidecar_restart_rules, "restartPolicyRules are not allowed for init containers with restart policy Always"),
    ("coordinator-label", _long_name, "(69 > 63 characters)"),
    ("dns-1123", _bad_name, "'JAX_Program' is not a DNS-1123 label"),
    ("unique-names", _dup_container, "duplicate container name 'pathways-rm'"),
    ("unique-ports", _dup_port, "port 29001/TCP is used by another container of the pod"),
    ("unique-names", _dup_env, "duplicate env name 'JAX_PLATFORMS'"),
    ("label-value", _label_value, "is not a valid label value"),
    ("quantity", _quantity, "'100GB' is not a Kubernetes quantity"),
    ("quantity", _quantity_request, "resources.requests.cpu: 'two' is not a Kubernetes quantity"),
    ("pod-failure-policy", _exit_code_zero, "onExitCodes.values: must not be 0 for the In operator"),
    ("tpu-request", _tpu_request, "requests 8 google.com/tpu; pool tpu-v6e-0 has 4 chips per VM"),
    ("parallelism", _parallelism, "2 pods per slice; pool tpu-v6e-0 has 4 hosts"),
    ("node-selector", _selector, "matches no node pool the stack creates"),
    ("volumes", _unknown_volume, "mounts unknown volume 'dshm'"),
    ("dns-1123", _bad_jobset_name, "metadata.name: 'Bad_Name' is not a DNS-1123 label"),
    ("dns-1123", _bad_replicated_job_name, "spec.replicatedJobs[1].name: 'Worker_1' is not a DNS-1123 label"),
    ("parallelism", _parallelism_not_completions, "parallelism must equal completions (one pod per host)"),
    ("tpu-request", _head_tpu, "the head pod must not request TPUs"),
]


def test_good_manifests_pass():
    for js in GOOD.values():
        assert admission.check_jobset(js, POOLS).violations == []
        # a head pod never restarts in place (its Job's one completion is the run); a worker restarts on its host
        assert [rj["template"]["spec"]["template"]["spec"]["restartPolicy"] for rj in js["spec"]["replicatedJobs"]] == ["Never", "OnFailure"]


def test_containers_may_set_restart_policies_and_rules_as_kubernetes_1_35_allows():
    # ContainerRestartRules, beta and on by default from 1.35: a regular container restarts by its own policy and
    # rules, and a plain init container may retry on failure
    js = batch()
    head(js)["containers"][0].update(restartPolicy="Never", restartPolicyRules=[{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}])
    worker(js)["template"]["spec"]["containers"][0]["restartPolicy"] = "OnFailure"
    assert admission.check_jobset(js, POOLS).violations == []


def test_a_pod_with_no_restart_policy_is_checked_as_jobsets_webhook_defaults_it():
    # google/pathways-job leaves it empty; JobSet's webhook makes it OnFailure before the API server validates
    js = batch()
    del worker(js)["template"]["spec"]["restartPolicy"]
    assert admission.check_jobset(js, POOLS).violations == []
    defaulted = admission.jobset_webhook_defaults(js)
    assert defaulted["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert defaulted["spec"]["network"] == {**{"enableDNSHostnames": True, "publishNotReadyAddresses": True}, **js["spec"].get("network", {})}
    assert "restartPolicy" not in worker(js)["template"]["spec"]  # the caller's object is left as it was


@pytest.mark.parametrize("rule,breaker,message", RULES, ids=[f"{r[0]}-{r[1].__name__}" for r in RULES])
def test_rule_fires_with_its_message(rule, breaker, message):
    js = batch()
    breaker(js)
    found = [str(v) for v in admission.check_jobset(js, POOLS).violations if v.rule == rule]
    assert any(message in f for f in found), [str(v) for v in admission.check_jobset(js, POOLS).violations]


def test_the_upstream_schemas_come_from_the_pinned_modules():
    # make crds (tools/engines/crds.py) copies them from JobSet v0.12.0's and Kueue v0.19.2's Go modules:
    # nothing from outside the project, in CI, on GitHub Actions and on a laptop alike
    assert admission.JOBSET_SCHEMA.exists(), f"{admission.JOBSET_SCHEMA} missing: run `make crds`"
    assert admission.JOBSET_SCHEMA.is_relative_to(admission.PROJECT_ROOT) and "shared" not in admission.JOBSET_SCHEMA.parts
    assert admission._jobset_schema()["properties"]["spec"]["properties"]["replicatedJobs"]
    assert admission._kueue_validator("ClusterQueue", "v1beta2") is not None


def test_render_says_when_a_schema_layer_could_not_run(monkeypatch, tmp_path, capsys):
    from infra.offline.__main__ import main

    monkeypatch.setattr(admission, "JOBSET_SCHEMA", tmp_path / "absent.yaml")
    admission._jobset_schema.cache_clear()
    try:
        assert main(["render", "--config", str(example_path("dev")), "--out", str(tmp_path / "out")]) == 0
        out = capsys.readouterr().out
        assert "note: JobSet CRD schema not found at" in out and "run `make crds`" in out
    finally:
        admission._jobset_schema.cache_clear()


def test_missing_schema_is_skipped_with_a_notice(monkeypatch, tmp_path):
    monkeypatch.setattr(admission, "JOBSET_SCHEMA", tmp_path / "absent.yaml")
    admission._jobset_schema.cache_clear()
    try:
        report = admission.check_jobset(batch(), POOLS)
        assert report.violations == []
        assert report.notices and "schema check skipped" in report.notices[0]
    finally:
        admission._jobset_schema.cache_clear()


def test_render_refuses_to_write_an_invalid_manifest(monkeypatch, tmp_path, capsys):
    from components.manifests import jobset as builder

    real = builder.head_job

    def broken(stack, w):
        job = real(stack, w)
        job["template"]["spec"]["template"]["spec"]["containers"][0]["restartPolicy"] = "Sometimes"
        return job

    monkeypatch.setattr(builder, "head_job", broken)
    out = tmp_path / "out"
    assert offline_main(["render", "--config", str(example_path("dev")), "--out", str(out)]) == 2
    assert "[restart-policy]" in capsys.readouterr().err
    assert not out.exists()


def test_a_kind_without_a_kubernetes_schema_is_reported():
    report = admission.check_builtin({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    assert [str(v) for v in report.violations] == [f"[schema] .: no schema for example.com/v1 Widget in Kubernetes {admission.KUBERNETES_VERSION}"]


def test_a_kueue_flavor_with_a_topology_needs_node_labels():
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tpu-main"},
              "spec": {"topologyName": "tpu-topology"}}
    assert [str(v) for v in admission.check_kueue(flavor).violations] == [
        "[kueue-cel] spec: at least one nodeLabel is required when topologyName is set"]


def _rules(js):
    return {(v.rule, v.path) for v in admission.check_jobset(js, POOLS).violations}


def test_names_and_labels_of_exactly_63_characters_pass():
    js = batch()
    js["metadata"]["labels"]["pathways/workload"] = "x" * 63
    assert not any(rule == "label-value" for rule, _ in _rules(js))
    js["metadata"]["labels"]["pathways/workload"] = "x" * 64
    assert any(rule == "label-value" for rule, _ in _rules(js))
    # the coordinator label <name>-pathways-head-0-0.<subdomain> at exactly 63 characters
    js = batch()
    js["metadata"]["name"] = "n" * 22
    js["spec"].setdefault("network", {})["subdomain"] = "n" * 22
    assert not any(rule == "coordinator-label" for rule, _ in _rules(js))
    js["spec"]["network"]["subdomain"] = "n" * 23
    assert any(rule == "coordinator-label" for rule, _ in _rules(js))
    # a JobSet name is a DNS-1123 label: at most 63 characters
    js = batch()
    js["metadata"]["name"] = "n" * 63
    assert ("dns-1123", "metadata.name") not in _rules(js)
    js["metadata"]["name"] = "n" * 64
    assert ("dns-1123", "metadata.name") in _rules(js)


def _flavor(**spec):
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tpu-main"}, "spec": spec}


def test_kueue_names_and_node_labels_at_their_limits():
    ok = _flavor(topologyName="tpu-topology", nodeLabels={"pathways/slice-group": "g" * 63})
    assert [str(v) for v in admission.check_kueue(ok).violations] == []
    long_label = _flavor(nodeLabels={"pathways/slice-group": "g" * 64})
    assert [str(v) for v in admission.check_kueue(long_label).violations] == [
        f"[label] spec.nodeLabels.pathways/slice-group: {'g' * 64!r} is not a label value"]
    named = _flavor(nodeLabels={"a": "b"})
    named["metadata"]["name"] = "f" * 253  # a DNS-1123 subdomain: at most 253 characters
    assert admission.check_kueue(named).violations == []
    named["metadata"]["name"] = "f" * 254
    assert [(v.rule, v.path) for v in admission.check_kueue(named).violations] == [("name", "metadata.name")]


def test_the_node_guard_protects_the_tpu_and_head_taints():
    from components.manifests import guardrails

    assert guardrails.GUARDED_TAINT_KEYS == ("google.com/tpu", "pathways/role")


SKIPPED = "semantic checks skipped until the schema's type errors are fixed"


def test_schema_errors_name_the_field_and_a_wrong_type_stops_the_later_layers():
    js = batch()
    js["spec"]["startupPolicy"]["startupPolicyOrder"] = "Sequential"
    head(js)["volumes"] = 7
    report = admission.check_jobset(js, POOLS)
    assert [str(v) for v in report.violations] == [
        "[jobset-schema] spec.replicatedJobs[0].template.spec.template.spec.volumes: 7 is not of type 'array'",
        "[jobset-schema] spec.startupPolicy.startupPolicyOrder: 'Sequential' is not one of ['AnyOrder', 'InOrder']",
    ] and report.notices == [SKIPPED]
    js["spec"]["replicatedJobs"] = 5  # the job-template layer reads this list too
    report = admission.check_jobset(js, POOLS)
    assert [str(v) for v in report.violations][0] == "[jobset-schema] spec.replicatedJobs: 5 is not of type 'array'"
    assert report.notices == [SKIPPED]


def test_a_wrong_type_in_a_pod_template_stops_the_semantic_layer_without_the_jobset_schema(monkeypatch, tmp_path):
    monkeypatch.setattr(admission, "JOBSET_SCHEMA", tmp_path / "absent.yaml")
    admission._jobset_schema.cache_clear()
    try:
        js = batch()
        head(js)["volumes"] = 7
        report = admission.check_jobset(js, POOLS)
        assert [(v.rule, v.message) for v in report.violations] == [("job-schema", "7 is not of type 'array', 'null'")]
        assert report.notices[1:] == [SKIPPED]
    finally:
        admission._jobset_schema.cache_clear()


def test_kueue_schema_errors_name_the_field():
    flavor = _flavor(nodeLabels={"a": "b"}, tolerations=7)
    assert [str(v) for v in admission.check_kueue(flavor).violations] == [
        "[kueue-schema] spec.tolerations: 7 is not of type 'array'"]


# RBAC bindings as the API server validates them (kubernetes/kubernetes pkg/apis/rbac/validation/validation.go,
# after the defaults of pkg/apis/rbac/v1/defaults.go; admission.check_role_binding names the commits read)
def _binding(kind="RoleBinding", role_kind="Role", subjects=None, **role_ref):
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": "sps-client"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "sps-client", **role_ref},
           "subjects": subjects if subjects is not None else [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "g@example.com"}]}
    if kind == "RoleBinding":
        obj["metadata"]["namespace"] = "default"
    return obj


def _rbac(obj):
    return [str(v) for v in admission.check_builtin(obj).violations]


def test_rbac_subjects_that_the_api_server_accepts():
    assert _rbac(_binding()) == []
    assert _rbac(_binding(subjects=[
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ada@example.com"},
        {"kind": "User", "name": "bob@example.com"},  # an empty apiGroup defaults to rbac.authorization.k8s.io
        {"kind": "ServiceAccount", "name": "runner"},  # in a RoleBinding, the binding's namespace
        {"apiGroup": "", "kind": "ServiceAccount", "name": "runner", "namespace": "other"},
    ])) == []
    assert _rbac(_binding("ClusterRoleBinding", "ClusterRole", subjects=[{"kind": "ServiceAccount", "name": "r", "namespace": "ns"}])) == []
    assert _rbac(_binding(apiGroup="")) == []  # a roleRef's empty apiGroup is defaulted too


@pytest.mark.parametrize("obj,says", [
    (_binding(subjects=[{"apiGroup": "", "kind": "Group", "name": "g@example.com"}]), []),  # defaulted: accepted
    (_binding(subjects=[{"apiGroup": "rbac.authorization.k8s.io/v1", "kind": "Group", "name": "g@example.com"}]),
     ["[rbac] subjects[0].apiGroup: 'rbac.authorization.k8s.io/v1' is not supported for a Group; valid: 'rbac.authorization.k8s.io'"]),
    (_binding(subjects=[{"apiGroup": "iam.gke.io", "kind": "User", "name": "ada@example.com"}]),
     ["[rbac] subjects[0].apiGroup: 'iam.gke.io' is not supported for a User; valid: 'rbac.authorization.k8s.io'"]),
    (_binding(subjects=[{"apiGroup": "rbac.authorization.k8s.io", "kind": "ServiceAccount", "name": "runner"}]),
     ["[rbac] subjects[0].apiGroup: 'rbac.authorization.k8s.io' is not supported for a ServiceAccount; valid: '' (or none)"]),
    (_binding(subjects=[{"kind": "ServiceAccount", "name": "Runner_1"}]),
     ["[rbac] subjects[0].name: 'Runner_1' is not a service account name (a DNS-1123 subdomain)"]),
    (_binding("ClusterRoleBinding", "ClusterRole", subjects=[{"kind": "ServiceAccount", "name": "runner"}]),
     ["[rbac] subjects[0].namespace: is required for a ServiceAccount in a ClusterRoleBinding"]),
    (_binding(subjects=[{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": ""}]), ["[rbac] subjects[0].name: is required"]),
    (_binding(subjects=[{"apiGroup": "rbac.authorization.k8s.io", "kind": "Team", "name": "t"}]),
     ["[rbac] subjects[0].kind: 'Team' is not supported; valid: ServiceAccount, User, Group"]),
    (_binding(apiGroup="rbac.authorization.k8s.io/v1"),
     ["[rbac] roleRef.apiGroup: 'rbac.authorization.k8s.io/v1' is not supported; valid: 'rbac.authorization.k8s.io'"]),
    (_binding(role_kind="Roles"), ["[rbac] roleRef.kind: 'Roles' is not supported; valid: Role, ClusterRole"]),
    (_binding("ClusterRoleBinding", "Role"), ["[rbac] roleRef.kind: 'Role' is not supported; valid: ClusterRole"]),
    (_binding(name="a/b"), ["[rbac] roleRef.name: 'a/b' may not contain '/'"]),
    (_binding(name=""), ["[rbac] roleRef.name: is required"]),
], ids=lambda v: "" if isinstance(v, list) else None)
def test_rbac_bindings_the_api_server_refuses(obj, says):
    assert _rbac(obj) == says


def test_the_service_role_binding_with_a_wrong_subject_group_fails_render(monkeypatch, tmp_path, capsys):
    # what made every test and offline check pass while the API server would refuse the binding
    from components.manifests import service_access
    from tests.conftest import config_with, write_stack_file

    real = service_access.role_binding

    def wrong(w):
        obj = real(w)
        obj["subjects"] = [{**s, "apiGroup": ""} if s["kind"] == "Group" else {**s, "apiGroup": "rbac"} for s in obj["subjects"]]
        return obj

    monkeypatch.setattr(service_access, "role_binding", wrong)
    path = write_stack_file(tmp_path, config_with(pathwaysVersion="jax-0.9.0", cluster={"securityGroup": "gke-security-groups@example.com"}, workloads=[
        {"name": "sps", "mode": "service", "service": {"clients": [{"kind": "Group", "name": "g@example.com"},
                                                                   {"kind": "User", "name": "ada@example.com"}]}}]))
    assert offline_main(["render", "--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "RoleBinding/sps-client: [rbac] subjects[1].apiGroup: 'rbac' is not supported for a User; valid: 'rbac.authorization.k8s.io'" in err
    assert "subjects[0]" not in err  # a Group's empty apiGroup is defaulted


def test_a_leader_worker_set_larger_than_int32_is_refused_as_its_webhook_refuses_it():
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "llm", "namespace": "pathways"},
           "spec": {"replicas": 2**20, "leaderWorkerTemplate": {"size": 2**12, "workerTemplate": {"spec": {"containers": [
               {"name": "w", "image": "example.com/w:1"}]}}}}}
    found = [(v.rule, v.path, v.message) for v in admission.check_lws(lws).violations if v.rule == "lws-webhook"]
    assert found == [("lws-webhook", "spec.replicas", "the product of replicas and worker replicas must not exceed 2147483647")]
