"""Shared Pathways Service (mode: service) against pathwaysutils 0.1.13's contract
(experimental/shared_pathways_service: deploy_pathways_service.py, isc_pathways.py, gke_utils.py,
run_workload.py, yamls/pw-proxy.yaml)."""

from __future__ import annotations

import pytest

from components.manifests.service_access import ROLE_RULES
from infra.offline.render import check_builtins, check_plan, manifests
from infra.offline.stackfile import flatten, raw_values
from tests.conftest import GROUPS_RBAC, config_with, plan_of

VERSION = "jax-0.9.0"
CLIENTS = [{"kind": "Group", "name": "pathways-users@example.com"}, {"kind": "User", "name": "ada@example.com"}]


def service_plan(**service):
    return plan_of(config_with(pathwaysVersion=VERSION, cluster=GROUPS_RBAC, workloads=[
        {"name": "sps", "mode": "service", "service": {"maxClients": 3, "clients": CLIENTS, **service}},
    ]))


PLAN = service_plan()


def objects(plan, kind):
    return [o for o in manifests(plan) if o["kind"] == kind]


def test_the_service_jobset_passes_every_admission_layer():
    assert check_plan(PLAN)["sps"].violations == []
    assert {k: [str(v) for v in r.violations] for k, r in check_builtins(PLAN).items() if r.violations} == {}


def test_rm_only_head_and_long_lived_workers_in_the_clients_namespace():
    (js,) = objects(PLAN, "JobSet")
    # the client reads the service JobSet from namespace "default" (gke_utils.get_pathways_service_images)
    assert js["metadata"]["namespace"] == "default"
    head, worker = (rj["template"]["spec"] for rj in js["spec"]["replicatedJobs"])
    assert [c["name"] for c in head["template"]["spec"]["containers"]] == ["pathways-rm"]  # each client brings its proxy
    assert "initContainers" not in head["template"]["spec"] and "successPolicy" not in js["spec"]
    rm = head["template"]["spec"]["containers"][0]
    assert "--server_port=29001" in rm["args"] and "--instance_count=2" in rm["args"] and "--instance_type=tpuv6e:4x4" in rm["args"]
    # long-lived: deploy_pathways_service's max_restarts 30 and max_slice_restarts 1_000_000
    assert js["spec"]["failurePolicy"] == {"maxRestarts": 30}
    assert worker["backoffLimit"] == 4 * 1_000_000
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "sps"  # the queue applies to its workers too
    lqs = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects(PLAN, "LocalQueue")}
    assert lqs == {("default", "sps")}


def test_proxy_capacity_fits_the_clients_contract():
    pool = next(r for r in PLAN.by_type("gcp:container/nodePool:NodePool") if r.input("name") == "pathways-proxy")
    assert pool.input("nodeCount") == 3  # one proxy per node: it takes host port 29000
    assert pool.input("nodeConfig.machineType") == "n2-standard-32"
    assert not pool.input("nodeConfig.taints")  # pw-proxy.yaml sets no tolerations
    assert pool.input("nodeConfig.serviceAccount") == PLAN.outputs["nodeServiceAccounts"]["pathways"]  # bucket + firewall identity


def test_the_role_grants_exactly_the_clients_verbs():
    (role,) = objects(PLAN, "Role")
    assert role["metadata"] == {"name": "sps-client", "namespace": "default"}
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert granted == {
        ("batch", "jobs", "create"), ("batch", "jobs", "delete"), ("batch", "jobs", "get"),
        ("", "pods", "get"), ("", "pods", "list"), ("", "pods", "watch"), ("", "pods/log", "get"),
        ("", "pods/portforward", "create"), ("jobset.x-k8s.io", "jobsets", "get"),
    }
    assert role["rules"] == [dict(r) for r in ROLE_RULES]
    (binding,) = objects(PLAN, "RoleBinding")
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("Group", "pathways-users@example.com"), ("User", "ada@example.com")]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "sps-client"}


def test_outputs_are_complete_and_use_the_stacks_names():
    out = PLAN.outputs["services"]["sps"]
    assert out["address"] == "sps-pathways-head-0-0.sps:29001"  # <jobset>-pathways-head-0-0.<subdomain>:29001
    assert out["instanceType"] == "tpuv6e:4x4" and out["maxVirtualSlices"] == 2 and out["namespace"] == "default"
    assert out["proxyImage"] == f"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:{VERSION}"
    cache = PLAN.outputs["cacheLocation"]
    assert out["gcsScratchLocation"] == cache
    # run_workload's required flags: --cluster --project --region --gcs_bucket --pathways_service --command
    for flag in (f"--cluster={PLAN.outputs['clusterName']}", "--project=test-proj-123", "--region=us-east5-b",
                 f"--gcs_bucket={cache}", "--pathways_service=sps-pathways-head-0-0.sps:29001", "--tpu_type=tpuv6e:4x4", "--command="):
        assert flag in out["runWorkload"]
    assert out["connect"].startswith("isc_pathways.connect(cluster='pathways-test'")


def test_the_guards_treat_the_service_namespace_as_a_pathways_namespace():
    policies = {p["metadata"]["name"]: p for p in objects(PLAN, "ValidatingAdmissionPolicy")}
    assert "['pathways', 'default']" in policies["pathways-nodes-reserved"]["spec"]["validations"][0]["expression"]
    assert policies["pathways-workload-templates"]["spec"]["matchConditions"][0]["expression"] == "(request.namespace in ['pathways', 'default'])"


def test_default_gets_the_workload_namespaces_pod_security_labels():
    (patch,) = PLAN.by_type("kubernetes:core/v1:NamespacePatch")
    assert patch.input("metadata.name") == "default"
    assert patch.input("metadata.labels") == {
        "pod-security.kubernetes.io/enforce": "privileged", "pod-security.kubernetes.io/enforce-version": "latest",
        "pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted",
        "pathways/kueue-managed": "true"}  # the service's JobSet runs there: Kueue manages it


@pytest.mark.parametrize("tpu", ["v4-16", {"family": "v6e", "topology": "2x4"}, "v6e-1"])
def test_a_service_needs_a_tpu_the_client_can_use(tpu):
    # pathwaysutils 0.1.13: validators accept tpu(v5e|v5|v6e|7x):<topology>; tpu_specs counts 4 chips per VM
    from tests.test_pinned_behaviour import error

    msg = error(slices=[{"name": "main", "tpu": tpu}], workloads=[{"name": "sps", "mode": "service"}])
    assert "pathways:workloads[0].sliceGroup: 'main' is " in msg and "which pathwaysutils' client cannot use" in msg


@pytest.mark.parametrize("workload,key,text", [
    ({"service": {"namespace": "team-a"}}, "pathways:workloads[0].service.namespace", "looks for the service JobSet in 'default' only"),
    ({"service": {"namespace": "pathways"}}, "pathways:workloads[0].service.namespace", "use 'default' or remove the key"),
    ({"service": {"proxyMachineType": "n2-standard-16"}}, "pathways:workloads[0].service.proxyMachineType", "cannot hold a client proxy"),
    ({"profiling": {}}, "pathways:workloads[0].profiling", "which a service's clients bring themselves"),
    ({"image": "example.com/t:1"}, "pathways:workloads[0].mode", "service workloads run no user container"),
    ({"state": "finished"}, "pathways:workloads[0].state", "finished is for batch runs"),
    ({"service": {"clients": [{"name": "not an email"}]}}, "pathways:workloads[0].service.clients[0].name", "is not a Google account or group email"),
])
def test_service_config_errors(workload, key, text):
    from components.model.config import load
    from components.model.errors import ConfigError

    flat, _ = flatten(config_with(pathwaysVersion=VERSION, workloads=[{"name": "sps", "mode": "service", **workload}]))
    with pytest.raises(ConfigError) as err:
        load(raw_values(flat), "test")
    assert any(line.startswith(f"{key}: ") and text in line for line in str(err.value).splitlines()), str(err.value)


def test_policy_refuses_wider_roles_and_open_bindings():
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES
    from tests.test_policies import mutate

    assert [v for v in run_policies(PLAN, ALL_POLICIES) if v.policy == "pathways-service-access"] == []
    wider = mutate(PLAN, "kubernetes:rbac.authorization.k8s.io/v1:Role", "service-sps-role", "rules.1.verbs", ["get", "list", "watch", "delete"])
    assert any("grants delete pods" in v.message for v in run_policies(wider, ALL_POLICIES) if v.policy == "pathways-service-access")
    opened = mutate(PLAN, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "service-sps-role-binding", "subjects.0.name", "system:authenticated")
    assert [v.message for v in run_policies(opened, ALL_POLICIES) if v.policy == "pathways-service-access"] == [
        "RoleBinding sps-client binds system:authenticated: everyone could run programs on the stack's TPUs; "
        "bind named users or groups"]
