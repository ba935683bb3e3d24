"""Secure by default: private cluster that still deploys, Pathways ports closed to all but the
Pathways nodes, hardened pods, and a node guard keeping other namespaces off the Pathways nodes."""

from __future__ import annotations

import ipaddress

import pytest

from components.manifests import guardrails
from components.model.workloads.ports import PATHWAYS_PORTS
from infra.offline.render import manifests
from tests.conftest import config_with, example_plan, plan_of

FIREWALL = "gcp:compute/firewall:Firewall"
CLUSTER = "gcp:container/cluster:Cluster"
VERSION = "jax-0.9.0"


# --- network -------------------------------------------------------------------------------------


def test_defaults_are_private_with_nat_and_a_dns_endpoint():
    plan = plan_of(config_with())
    c = plan.one(CLUSTER)
    assert c.input("privateClusterConfig") == {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert c.input("controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic") is True
    nat = plan.one("gcp:compute/routerNat:RouterNat")
    router = plan.one("gcp:compute/router:Router")
    assert nat.input("router") == router.input("name") and nat.input("region") == "us-east5"
    assert nat.input("sourceSubnetworkIpRangesToNat") == "LIST_OF_SUBNETWORKS"
    subnet = plan.one("gcp:compute/subnetwork:Subnetwork")
    assert nat.input("subnetworks")[0]["sourceIpRangesToNats"] == ["ALL_IP_RANGES"]
    assert subnet.urn in nat.dependencies
    # the kubeconfig (and so the Kubernetes provider, CI, laptops) uses the DNS endpoint
    endpoint = plan.outputs["clusterEndpoint"]
    assert endpoint.endswith(".gke.goog")


def test_made_stacks_are_private_and_prod_has_nat_dns_and_firewall(made_stack):
    name, plan = made_stack
    c = plan.one(CLUSTER)
    assert c.input("privateClusterConfig.enablePrivateNodes") is True
    assert c.input("privateClusterConfig.enablePrivateEndpoint") is True
    assert c.input("controlPlaneEndpointsConfig.dnsEndpointConfig.allowExternalTraffic") is True
    assert plan.by_type("gcp:compute/routerNat:RouterNat")
    assert {r.input("name").rsplit("-", 1)[-1] for r in plan.by_type(FIREWALL)} >= {"allow", "deny"}
    for net in c.input("masterAuthorizedNetworksConfig.cidrBlocks") or []:
        assert ipaddress.ip_network(net["cidrBlock"]).prefixlen > 0


def test_public_endpoint_is_an_explicit_opt_in():
    plan = plan_of(config_with(cluster={"publicEndpoint": True, "privateNodes": False, "masterAuthorizedNetworks": [{"cidrBlock": "203.0.113.0/24"}]}))
    assert plan.one(CLUSTER).input("privateClusterConfig") == {"enablePrivateNodes": False, "enablePrivateEndpoint": False}
    assert plan.by_type("gcp:compute/routerNat:RouterNat") == []  # public nodes need no NAT


def test_existing_networks_get_nat_only_when_asked():
    net = {"existingNetwork": "shared", "existingSubnetwork": "tpu"}
    assert plan_of(config_with(network=net)).by_type("gcp:compute/routerNat:RouterNat") == []
    nat = plan_of(config_with(network={**net, "cloudNat": True})).one("gcp:compute/routerNat:RouterNat")
    assert nat.input("subnetworks")[0]["name"] == "tpu"


# A minimal model of VPC firewall evaluation (VPC docs, "Firewall rules": the highest priority =
# lowest number wins; at equal priority deny wins; the implied rule denies ingress) with GKE's
# automatically created allow rules (priority 1000, from the pod and node ranges, to every node).
def _gke_rules(plan):
    net = plan.one("gcp:compute/subnetwork:Subnetwork")
    ranges = [net.input("ipCidrRange")] + [r["ipCidrRange"] for r in net.input("secondaryIpRanges")]
    return [{"priority": 1000, "action": "allow", "ports": None, "sources": {"ranges": ranges}, "targets": None}]


def _our_rules(plan):
    rules = []
    for r in plan.by_type(FIREWALL):
        action = "allow" if r.input("allows") else "deny"
        ports = {int(p) for block in (r.input("allows") or r.input("denies")) for p in block["ports"]}
        rules.append({
            "priority": r.input("priority"), "action": action, "ports": ports,
            "sources": {"ranges": r.input("sourceRanges") or [], "sas": r.input("sourceServiceAccounts") or []},
            "targets": r.input("targetServiceAccounts"),
        })
    return rules


def _allowed(rules, source_ip, source_sa, target_sa, port) -> bool:
    def matches(rule):
        if rule["targets"] is not None and target_sa not in rule["targets"]:
            return False
        if rule["ports"] is not None and port not in rule["ports"]:
            return False
        src = rule["sources"]
        in_range = any(ipaddress.ip_address(source_ip) in ipaddress.ip_network(r) for r in src.get("ranges", []))
        return in_range or source_sa in src.get("sas", [])
    hits = sorted((r for r in rules if matches(r)), key=lambda r: (r["priority"], r["action"] != "deny"))
    return bool(hits) and hits[0]["action"] == "allow"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_pathways_ports_are_reachable_only_from_the_pathways_node_identity(stack):
    plan = example_plan(stack)
    rules = _gke_rules(plan) + _our_rules(plan)
    sas = plan.outputs["nodeServiceAccounts"]
    pathways, system = sas["pathways"], sas["system"]
    node_ip, pod_ip, internet = "10.0.0.5", "10.4.1.7", "203.0.113.9"
    for port in PATHWAYS_PORTS:
        assert _allowed(rules, node_ip, pathways, pathways, port), port  # head <-> workers
        assert not _allowed(rules, node_ip, system, pathways, port), port  # a system-pool VM
        assert not _allowed(rules, pod_ip, None, pathways, port), port  # any pod of the cluster
        assert not _allowed(rules, internet, None, pathways, port), port
    # everything else on the nodes is as GKE left it (kubelet from the control plane etc. untouched)
    assert _allowed(rules, pod_ip, None, pathways, 10250)
    assert _allowed(rules, node_ip, system, system, 29000)  # other nodes' ports are not ours to close


def test_deny_rule_outranks_gke_and_covers_profiler_ports():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "t", "image": "example.com/t:1", "profiling": {"port": 9100}}]))
    deny = next(r for r in plan.by_type(FIREWALL) if r.input("denies"))
    assert deny.input("priority") < 1000 and deny.input("sourceRanges") == ["0.0.0.0/0"]
    assert {"9100", "29000", "29001", "29005", "50051"} <= set(deny.input("denies")[0]["ports"])


def test_client_ranges_open_only_the_proxy_port():
    plan = plan_of(config_with(network={"pathwaysClientRanges": ["198.51.100.0/24"]}))
    rules = _gke_rules(plan) + _our_rules(plan)
    sa = plan.outputs["nodeServiceAccounts"]["pathways"]
    assert _allowed(rules, "198.51.100.7", None, sa, 29000)
    assert not _allowed(rules, "198.51.100.7", None, sa, 29001)


# --- pods and namespaces -----------------------------------------------------------------------------


def _objects(plan, kind):
    return [o for o in manifests(plan) if o["kind"] == kind]


def _pods(js):
    return [rj["template"]["spec"]["template"]["spec"] for rj in js["spec"]["replicatedJobs"]]


def test_namespaces_carry_pod_security_labels(committed_stack):
    _, plan = committed_stack
    ns = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in _objects(plan, "Namespace")}
    # hostNetwork needs `privileged` (Pod Security Standards: baseline forbids host namespaces)
    assert ns["pathways"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert ns["pathways"]["pod-security.kubernetes.io/warn"] == "restricted"
    if plan.by_type("kubernetes:helm.sh/v4:Chart"):  # the controllers' namespaces, where the stack installs them
        assert ns["jobset-system"]["pod-security.kubernetes.io/enforce"] == "restricted"
    else:
        assert "jobset-system" not in ns


WORKLOADS = [
    {"name": "train", "image": "example.com/t:1", "profiling": {}, "colocatedPython": {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}},
    {"name": "nb", "mode": "interactive", "priority": "experiment"},
]


def test_no_pod_mounts_a_token_and_every_container_is_hardened():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=WORKLOADS))
    for js in _objects(plan, "JobSet"):
        for pod in _pods(js):
            assert pod["automountServiceAccountToken"] is False
            # the runtime's default seccomp profile for every Pathways pod
            assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
            for c in pod.get("initContainers", []) + pod["containers"]:
                assert c["securityContext"]["allowPrivilegeEscalation"] is False, c["name"]
                if c["name"] in ("pathways-proxy", "jax-program", "colocated-python-sidecar", "pathways-rm"):
                    assert c["securityContext"]["capabilities"] == {"drop": ["ALL"]}, c["name"]
                    assert c["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
                elif c["name"] == "pathways-worker":
                    # root in Google's server image: keeps file-ownership capabilities, loses NET_RAW and the rest
                    assert c["securityContext"]["capabilities"] == {"drop": [
                        "AUDIT_WRITE", "KILL", "MKNOD", "NET_BIND_SERVICE", "NET_RAW", "SETFCAP", "SETPCAP", "SYS_CHROOT"]}
                else:
                    raise AssertionError(f"unknown container {c['name']}")
            proxy = [c for c in pod.get("initContainers", []) + pod["containers"] if c["name"] == "pathways-proxy"]
            for c in proxy:  # as pathwaysutils runs its proxy (shared_pathways_service/yamls/pw-proxy.yaml)
                assert (c["securityContext"]["runAsNonRoot"], c["securityContext"]["runAsUser"], c["securityContext"]["runAsGroup"]) == (True, 1000, 1000)


def test_priority_classes_exist_and_pods_name_them():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=WORKLOADS))
    classes = {o["metadata"]["name"]: o["value"] for o in _objects(plan, "PriorityClass")}
    assert classes == {"pathways-serving": 2_000_000, "pathways-training": 1_000_000, "pathways-interactive": 500_000, "pathways-experiment": 100_000}
    assert max(classes.values()) < 1_000_000_000  # below the system classes
    names = {js["metadata"]["name"]: {p["priorityClassName"] for p in _pods(js)} for js in _objects(plan, "JobSet")}
    assert names == {"train": {"pathways-training"}, "nb": {"pathways-experiment"}}
    train = plan.one("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "workload-train")
    assert any(plan.get(d).name == "guardrails-pathways-training" for d in train.dependencies)


# --- the node guard ------------------------------------------------------------------------------------


def _evaluate(expression, activation):
    import celpy

    env = celpy.Environment()
    return bool(env.program(env.compile(expression)).evaluate({k: celpy.json_to_cel(v) for k, v in activation.items()}))


TPU = [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
JOB_CONTROLLER = "system:serviceaccount:kube-system:job-controller"
STATEFULSET_CONTROLLER = "system:serviceaccount:kube-system:statefulset-controller"
LWS_CONTROLLER = "system:serviceaccount:lws-system:lws-controller-manager"
ALICE = "alice@example.com"


def _admitted(policy, request, obj, old=None):
    """As the API server evaluates a ValidatingAdmissionPolicy: `old` is oldObject (null on CREATE)."""
    spec = policy["spec"]
    applies = all(_evaluate(m["expression"], {"request": request}) for m in spec["matchConditions"])
    return not applies or all(_evaluate(v["expression"], {"object": obj, "oldObject": old, "request": request}) for v in spec["validations"])


@pytest.mark.parametrize("namespace,pod,user,admitted", [
    ("team-a", {}, ALICE, True),
    ("team-a", {"tolerations": TPU}, ALICE, False),
    ("team-a", {"tolerations": [{"key": "pathways/role", "operator": "Equal", "value": "head", "effect": "NoSchedule"}]}, ALICE, False),
    ("team-a", {"tolerations": [{"operator": "Exists"}]}, ALICE, False),  # tolerates every taint
    ("team-a", {"tolerations": [{"key": "", "operator": "Exists"}]}, ALICE, False),  # the same, as the API server keeps it
    ("team-a", {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}, ALICE, True),
    ("team-a", {"hostNetwork": True}, ALICE, False),  # the node's identity, wherever it lands
    ("team-a", {"hostNetwork": True}, JOB_CONTROLLER, False),  # a Job elsewhere gains nothing either
    ("team-a", {"nodeName": "gke-tpu-node-1"}, ALICE, False),  # NoSchedule taints do not stop a bound pod
    ("pathways", {"nodeName": "gke-tpu-node-1", "tolerations": TPU}, JOB_CONTROLLER, False),
    ("team-a", {"nodeName": "gke-node-1"}, "system:node:gke-node-1", True),  # a kubelet's mirror pod
    ("pathways", {"tolerations": TPU, "hostNetwork": True}, JOB_CONTROLLER, True),  # a Pathways worker, from its Job
    ("pathways", {"tolerations": TPU, "hostNetwork": True}, "system:kube-controller-manager", True),
    ("pathways", {"tolerations": TPU}, STATEFULSET_CONTROLLER, True),  # a serve workload's pod, from its LWS's StatefulSet
    ("team-a", {"tolerations": TPU}, STATEFULSET_CONTROLLER, False),  # a StatefulSet elsewhere gains nothing
    ("pathways", {"tolerations": TPU}, ALICE, False),  # a bare pod, even in the workload namespace
    ("pathways", {"hostNetwork": True}, ALICE, False),
    ("pathways", {}, ALICE, True),
    ("default", {"hostNetwork": True}, JOB_CONTROLLER, True),  # a service's namespace, when it has one
    ("default", {"hostNetwork": True}, ALICE, False),
    ("kube-system", {"tolerations": [{"operator": "Exists"}], "hostNetwork": True}, ALICE, True),  # GKE's DaemonSets
    ("gke-managed-system", {"tolerations": [{"operator": "Exists"}]}, ALICE, True),
    ("gmp-system", {"tolerations": [{"operator": "Exists"}]}, ALICE, True),
    # security #58.7: by exact name; a namespace anyone names gke-/gmp- something is judged like any other
    ("gke-anything", {"tolerations": [{"operator": "Exists"}], "hostNetwork": True}, ALICE, False),
    ("gmp-mine", {"tolerations": TPU}, ALICE, False),
    ("gke-managed-checkpointing", {"tolerations": [{"operator": "Exists"}], "hostNetwork": True}, ALICE, True),
])
def test_node_guard_keeps_pods_off_pathways_nodes_and_the_host_network(namespace, pod, user, admitted):
    policy = guardrails.node_guard_policy("pathways", ("default",))
    request = {"namespace": namespace, "operation": "CREATE", "userInfo": {"username": user}}
    assert _admitted(policy, request, {"spec": pod}) == admitted
    # updates by anyone that leave the pod's tolerations as they were are judged by where it runs, not by who changes it
    if namespace == "pathways" and "tolerations" in pod and "nodeName" not in pod:
        assert _admitted(policy, {**request, "operation": "UPDATE"}, {"spec": pod}, {"spec": pod})


def _job(pod: dict) -> dict:
    return {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1"}], **pod}}}}


JOBSET_CONTROLLER = "system:serviceaccount:jobset-system:jobset-controller"
PROXY_JOB = {"hostNetwork": True, "containers": [{"name": "pathways-proxy", "image": "x:1", "securityContext": {
    "runAsUser": 1000, "capabilities": {"drop": ["ALL"]}, "allowPrivilegeEscalation": False}}]}


@pytest.mark.parametrize("namespace,pod,user,admitted", [
    ("pathways", {"tolerations": TPU, "hostNetwork": True}, JOBSET_CONTROLLER, True),  # a JobSet's worker Job
    ("pathways", {"tolerations": TPU}, ALICE, False),  # a hand-made Job onto the TPU nodes
    ("default", PROXY_JOB, ALICE, True),  # pathwaysutils' client proxy (pw-proxy.yaml), by a listed client
    ("default", PROXY_JOB, "bob@example.com", False),  # the same Job by someone who may edit `default` but is no client
    ("pathways", PROXY_JOB, ALICE, False),  # a client's proxy belongs in the service's namespace only
    ("default", {**PROXY_JOB, "tolerations": TPU}, ALICE, False),  # a "proxy" that also reaches the TPU nodes
    ("default", {"containers": [{"name": "c", "image": "x:1", "securityContext": {"privileged": True}}]}, ALICE, False),
    ("default", {"containers": [{"name": "c", "image": "x:1", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}, ALICE, False),
    ("default", {"initContainers": [{"name": "i", "image": "x:1", "securityContext": {"privileged": True}}]}, ALICE, False),
    ("default", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, ALICE, False),
    ("default", {"hostPID": True}, ALICE, False),
    ("default", {"hostIPC": True}, ALICE, False),
    ("team-a", {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, ALICE, True),  # not ours to judge
])
def test_template_guard_limits_what_jobs_in_the_pathways_namespaces_may_do(namespace, pod, user, admitted):
    policy = guardrails.template_guard_policy("pathways", ("default",), proxy_namespace="default", proxy_clients=(("User", ALICE),))
    request = {"namespace": namespace, "operation": "CREATE", "userInfo": {"username": user}, "resource": JOBS}
    assert _admitted(policy, request, _job(pod)) == admitted


JOBS = {"group": "batch", "version": "v1", "resource": "jobs"}
STATEFULSETS = {"group": "apps", "version": "v1", "resource": "statefulsets"}


@pytest.mark.parametrize("resource,pod,user,admitted", [
    (STATEFULSETS, {"tolerations": TPU}, LWS_CONTROLLER, True),  # a serve workload's leaders or workers
    (STATEFULSETS, {"tolerations": TPU}, ALICE, False),  # a hand-made StatefulSet onto the TPU nodes
    (STATEFULSETS, {"tolerations": TPU}, "system:serviceaccount:jobset-system:jobset-controller", False),
    (JOBS, {"tolerations": TPU}, LWS_CONTROLLER, False),  # each controller only its own kind
    (STATEFULSETS, {}, ALICE, True),  # an ordinary StatefulSet
    (STATEFULSETS, {"containers": [{"name": "c", "image": "x:1", "securityContext": {"privileged": True}}]}, LWS_CONTROLLER, False),
    (STATEFULSETS, {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}, ALICE, False),
])
def test_template_guard_keeps_statefulsets_to_the_lws_controller(resource, pod, user, admitted):
    policy = guardrails.template_guard_policy("pathways")
    request = {"namespace": "pathways", "operation": "CREATE", "userInfo": {"username": user}, "resource": resource}
    assert _admitted(policy, request, _job(pod)) == admitted
    assert {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["statefulsets"]} in \
        policy["spec"]["matchConstraints"]["resourceRules"]


# --- issue #36.4: the template guard checks who acts on UPDATE too -----------------------------------------

TPU_SELECTOR = {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
# What an editor of the workload namespace adds to an ordinary StatefulSet or a suspended Job (Kubernetes lets a
# suspended Job's nodeSelector, tolerations and affinity change: "mutable scheduling directives").
REACHING = {
    "toleration": {"tolerations": TPU},
    "node selector": {"nodeSelector": TPU_SELECTOR},
    "head node selector": {"nodeSelector": {"pathways/role": "head"}},
    "host network": {"hostNetwork": True},
}
# Not a TPU request alone: the real API server's type check finds no `requests` in a StatefulSet's container
# resources (guardrails._reaches_pathways), and without the TPU toleration such a pod never lands on a TPU node.


@pytest.mark.parametrize("resource", [STATEFULSETS, JOBS], ids=["statefulset", "suspended job"])
@pytest.mark.parametrize("change", sorted(REACHING))
def test_finding_4_an_editor_cannot_update_a_workload_onto_the_pathways_nodes(resource, change):
    policy = guardrails.template_guard_policy("pathways")
    request = {"namespace": "pathways", "operation": "UPDATE", "userInfo": {"username": ALICE}, "resource": resource}
    ordinary = _job({})
    edited = _job(REACHING[change])
    if resource is JOBS:
        ordinary["spec"]["suspend"] = edited["spec"]["suspend"] = True
    assert _admitted(policy, {**request, "operation": "CREATE"}, ordinary)  # the ordinary object is created
    assert not _admitted(policy, request, edited, ordinary)  # the edit that reaches the Pathways nodes is not
    messages = [v["message"] for v in policy["spec"]["validations"] if not _evaluate(
        v["expression"], {"object": edited, "oldObject": ordinary, "request": request})]
    assert messages == [guardrails.TEMPLATE_MESSAGE]
    # an update that leaves the template alone passes (labels, replicas, the garbage collector's finalizers)
    relabelled = {**edited, "metadata": {"labels": {"team": "a"}}}
    assert _admitted(policy, request, relabelled, edited)
    assert _admitted(policy, request, {**ordinary, "spec": {**ordinary["spec"], "replicas": 3}}, ordinary)


@pytest.mark.parametrize("resource,controller", [(STATEFULSETS, LWS_CONTROLLER), (JOBS, JOBSET_CONTROLLER)])
def test_finding_4_the_controllers_still_change_their_own_workloads(resource, controller):
    policy = guardrails.template_guard_policy("pathways")
    request = {"namespace": "pathways", "operation": "UPDATE", "userInfo": {"username": controller}, "resource": resource}
    before, after = _job({"tolerations": TPU}), _job({"tolerations": TPU, "nodeSelector": TPU_SELECTOR})
    assert _admitted(policy, request, after, before)  # JobSet resuming a Job, LWS rolling an update
    # an editor may not change a controller's template either (their image on the TPU nodes)
    changed = _job({"tolerations": TPU})
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "evil.example.com/x:1"
    assert not _admitted(policy, {**request, "userInfo": {"username": ALICE}}, changed, before)


def test_finding_4_kueue_cannot_hand_a_plain_job_its_tpu_flavor():
    # Kueue's batch/job integration (on in the pinned chart's default config) merges the chosen flavor's
    # tolerations and nodeLabels into an admitted Job's template, as kueue-controller-manager, by UPDATE
    policy = guardrails.template_guard_policy("pathways")
    kueue = "system:serviceaccount:kueue-system:kueue-controller-manager"
    request = {"namespace": "pathways", "operation": "UPDATE", "userInfo": {"username": kueue}, "resource": JOBS}
    assert not _admitted(policy, request, _job({"tolerations": TPU, "nodeSelector": TPU_SELECTOR}), _job({}))


@pytest.mark.parametrize("namespace,user", [("pathways", ALICE), ("pathways", "system:serviceaccount:kueue-system:kueue-controller-manager"),
                                            ("team-a", ALICE)])
def test_finding_4_no_update_makes_a_pod_tolerate_the_pathways_taints(namespace, user):
    # a pending pod (or one Kueue's pod integration holds gated) updated to tolerate the TPU taint would be
    # scheduled there; Kubernetes allows adding tolerations to a pod by update
    policy = guardrails.node_guard_policy("pathways")
    request = {"namespace": namespace, "operation": "UPDATE", "userInfo": {"username": user}}
    assert not _admitted(policy, request, {"spec": {"tolerations": TPU}}, {"spec": {}})
    # a pod that tolerated them from its creation (a Pathways pod) may be updated, even gain a toleration
    spot = [*TPU, {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    if namespace == "pathways":
        assert _admitted(policy, request, {"spec": {"tolerations": spot}}, {"spec": {"tolerations": TPU}})


def test_a_pod_of_a_namespace_the_stack_dropped_can_still_lose_its_finalizer():
    # The service stack ran a JobSet in `default`; the next stack names only `pathways`. Its pods, deleted,
    # wait for the Job controller to remove batch.kubernetes.io/job-tracking by update (found by the
    # real-engine tier: refused, the pods stayed Terminating and `pulumi up` timed out deleting the JobSet).
    policy = guardrails.node_guard_policy("pathways")
    worker = {"metadata": {"finalizers": ["batch.kubernetes.io/job-tracking"], "deletionTimestamp": "2026-12-02T10:19:07Z"},
              "spec": {"tolerations": TPU, "hostNetwork": True, "nodeName": "gke-tpu-main-0-0"}}
    released = {**worker, "metadata": {"deletionTimestamp": "2026-12-02T10:19:07Z"}}
    request = {"namespace": "default", "operation": "UPDATE", "userInfo": {"username": JOB_CONTROLLER}}
    assert _admitted(policy, request, released, worker)
    # creating such a pod there is refused as before, and so is an update that adds the toleration
    assert not _admitted(policy, {**request, "operation": "CREATE"}, {"spec": {"tolerations": TPU}})
    assert not _admitted(policy, request, {"spec": {"tolerations": TPU}}, {"spec": {}})


def test_guards_are_bound_and_deny():
    plan = example_plan("dev")
    policies = {p["metadata"]["name"]: p for p in _objects(plan, "ValidatingAdmissionPolicy")}
    bindings = {b["metadata"]["name"]: b for b in _objects(plan, "ValidatingAdmissionPolicyBinding")}
    assert sorted(policies) == sorted(bindings) == [
        "pathways-ci-preview-dry-run-only", "pathways-nodes-reserved", "pathways-runs-only", "pathways-workload-templates"]
    for name, binding in bindings.items():
        scope = binding["spec"].pop("matchResources", None)
        assert binding["spec"] == {"policyName": name, "validationActions": ["Deny"]}
        assert policies[name]["spec"]["failurePolicy"] == "Fail"
        # the guards hold cluster-wide; the runs policy where runs live (runs.submitters may be bound nowhere else)
        assert scope == (None if name != "pathways-runs-only" else {"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["pathways"]}]}})


def test_every_built_in_object_passes_the_strict_kubernetes_schema(committed_stack):
    from infra.offline.render import check_builtins

    _, plan = committed_stack
    reports = check_builtins(plan)
    assert {k.split("/")[0] for k in reports} >= {"Namespace", "PriorityClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    assert {k: [str(v) for v in r.violations] for k, r in reports.items() if r.violations} == {}


def test_priority_classes_order_serving_over_training_over_interactive_over_experiments():
    # below system-cluster-critical (2,000,000,000); a higher value wins a node and may preempt
    plan = example_plan("staging")
    values = {r.inputs["metadata"]["name"]: r.inputs["value"] for r in plan.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")}
    assert values == {"pathways-serving": 2_000_000, "pathways-training": 1_000_000, "pathways-interactive": 500_000, "pathways-experiment": 100_000}


def test_rootless_containers_run_as_uid_and_gid_1000():
    # pathwaysutils' client proxy (yamls/pw-proxy.yaml) runs as user 1000; our IFRT proxy container matches
    js = next(o for o in manifests(example_plan("staging")) if o["kind"] == "JobSet")
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    proxy = next(c for c in head.get("initContainers", []) + head["containers"] if c["name"] == "pathways-proxy")
    sc = proxy["securityContext"]
    assert (sc["runAsNonRoot"], sc["runAsUser"], sc["runAsGroup"], sc["allowPrivilegeEscalation"]) == (True, 1000, 1000, False)


# --- secrets never in error messages --------------------------------------------------------------------

TOKEN = "PLAINTEXT-hf_4f8a9d2c1b7e"


@pytest.mark.parametrize("workloads", [
    {"train": {"image": "example.com/t:1", "env": {"TOKEN": TOKEN}}},  # written as a mapping
    [{"name": f"w{i}", "image": "example.com/t:1", "env": {"TOKEN": TOKEN}} for i in range(101)],  # too many
    [{"name": "train", "image": "example.com/t:1", "env": {"TOKEN": TOKEN, "N": ["not", "text"]}}],  # a non-string env value
    [["name", "train", {"env": {"TOKEN": TOKEN}}]],  # an entry that is a list
    [{"name": "train", "mode": "interactive", "env": {"TOKEN": TOKEN}}],  # env where no container takes it
    [{"name": "train", "image": "example.com/t:1", "env": {"BAD NAME": TOKEN}}],
])
def test_no_error_prints_a_secret_value(workloads):
    # `pulumi config set --secret --path 'pathways:workloads[0].env.TOKEN'` makes the whole key secret, and
    # under `pulumi preview` the program sees it decrypted
    from components.model.config import load
    from components.model.errors import ConfigError

    raw = {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b", "pathwaysVersion": "jax-0.9.0",
           "slices": [{"name": "main", "tpu": "v6e-16"}], "workloads": workloads}
    with pytest.raises(ConfigError) as err:
        load(raw, "test", frozenset({"pathways:workloads"}))
    text = str(err.value)
    assert TOKEN not in text and "hf_4f8a9d2c1b7e" not in text, text
    assert text.startswith("pathways:workloads"), text


# The serve Service selects a LeaderWorkerSet's leaders by LWS's own labels (lws.py leader_selector); a pod that
# copied them would receive the endpoint's prompts. Only the LWS controller's StatefulSets make such pods.
LWS_LABELS = {"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"}


@pytest.mark.parametrize("namespace,operation,labels,old_labels,user,admitted", [
    ("pathways", "CREATE", LWS_LABELS, None, STATEFULSET_CONTROLLER, True),  # a leader, from its StatefulSet
    ("pathways", "CREATE", LWS_LABELS, None, "system:kube-controller-manager", True),  # the same without per-controller credentials
    ("pathways", "CREATE", LWS_LABELS, None, ALICE, False),  # a bare pod posing as a leader
    ("pathways", "CREATE", LWS_LABELS, None, JOB_CONTROLLER, False),  # a Job's pod posing as one
    ("pathways", "CREATE", {"app": "chat"}, None, ALICE, True),  # other labels are not the guard's business
    ("team-a", "CREATE", LWS_LABELS, None, ALICE, True),  # the Service selects in its own namespace only
    ("pathways", "UPDATE", LWS_LABELS, {}, ALICE, False),  # `kubectl label` onto a running pod
    ("pathways", "UPDATE", {**LWS_LABELS, "leaderworkerset.sigs.k8s.io/name": "other"}, LWS_LABELS, ALICE, False),
    ("pathways", "UPDATE", {**LWS_LABELS, "extra": "x"}, LWS_LABELS, ALICE, True),  # the label kept as it was
    ("pathways", "UPDATE", {"a": "b"}, {}, ALICE, True),
])
def test_only_lws_statefulsets_make_pods_the_serve_service_selects(namespace, operation, labels, old_labels, user, admitted):
    policy = guardrails.node_guard_policy("pathways")
    request = {"namespace": namespace, "operation": operation, "userInfo": {"username": user}}
    old = None if old_labels is None else {"metadata": {"labels": old_labels}, "spec": {}}
    assert _admitted(policy, request, {"metadata": {"labels": labels}, "spec": {}}, old) == admitted


@pytest.mark.parametrize("resource,operation,user,admitted", [
    (STATEFULSETS, "CREATE", LWS_CONTROLLER, True),
    (STATEFULSETS, "CREATE", ALICE, False),  # an ordinary StatefulSet whose pods would join the endpoint
    (JOBS, "CREATE", JOBSET_CONTROLLER, False),  # a JobSet's Job whose pods would
    (STATEFULSETS, "UPDATE", ALICE, True),  # the garbage collector's metadata update: the template as it was
])
def test_only_the_lws_controller_makes_workloads_whose_pods_the_serve_service_selects(resource, operation, user, admitted):
    policy = guardrails.template_guard_policy("pathways")
    sts = {"spec": {"template": {"metadata": {"labels": LWS_LABELS}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}
    request = {"namespace": "pathways", "operation": operation, "userInfo": {"username": user}, "resource": resource}
    assert _admitted(policy, request, sts, sts if operation == "UPDATE" else None) == admitted


def test_the_node_guard_judges_pod_creates_and_updates_and_leaves_each_platform_namespace_alone():
    """Its match (pods, CREATE and UPDATE), and every namespace it leaves to the platform, written out: a namespace
    dropped from the table would have its DaemonSets refused on the Pathways nodes."""
    policy = guardrails.node_guard_policy("pathways")
    assert policy["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]
    daemon = {"tolerations": [{"operator": "Exists"}], "hostNetwork": True}
    for namespace in ("kube-system", "kube-public", "kube-node-lease", "gmp-system", "gmp-public", "gke-gmp-system",
                      "gke-managed-system", "gke-managed-cim", "gke-managed-dpv2-observability", "gke-managed-filestorecsi",
                      "gke-managed-parallelstorecsi", "gke-managed-lustrecsi", "gke-managed-checkpointing", "gke-managed-volumepopulator"):
        request = {"namespace": namespace, "operation": "CREATE", "userInfo": {"username": "system:serviceaccount:kube-system:daemon-set-controller"}}
        assert _admitted(policy, request, {"spec": daemon}), namespace


def test_the_run_submitters_role_reads_their_queue_positions():
    from components.manifests.runs import ROLE_RULES

    assert {"apiGroups": ["visibility.kueue.x-k8s.io"], "resources": ["localqueues/pendingworkloads"], "verbs": ["get"]} in ROLE_RULES
