"""A cluster made elsewhere (xpk, Cluster Toolkit) taken as it is (#40 part 3, docs/from-xpk.md): pools selected by
GKE's node-pool label, the cluster's own Kueue ClusterQueue shared, the admission guards scoped. What a reviewer and
the cluster see: the rendered pods and Kueue objects, the guards' verdicts (evaluated as the API server evaluates
them), the plan's notices and the one-line refusals."""

from __future__ import annotations

import copy

import pytest

from components.constants import JOBSET
from components.manifests import guardrails
from components.model.config import load, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.errors import ConfigError
from infra.errors import InvalidStackConfig
from infra.offline import engine
from infra.offline.stackfile import flatten, raw_values
from tests.conftest import config_with, plan_of
from tests.test_security import ALICE, JOB_CONTROLLER, TPU, _admitted

POOL = "cloud.google.com/gke-nodepool"
LOCAL_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"

# A stack on an xpk cluster: xpk's pools (<cluster>-np-<i>, cpu-np), its Kueue and its ClusterQueue, its workloads in default.
XPK = config_with(
    cluster={"existing": {"kubeconfig": "kubeconfig"}},
    bucket={"name": "team-xpk-bucket"},
    headPool={"nodePool": "cpu-np"},
    slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "nodePools": ["team-np-0", "team-np-1"]}],
    kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"}, "guards": {"exemptNamespaces": ["default"], "acknowledgeExemptions": True}},
    pathwaysVersion="jax-0.9.0",
    workloads=[{"name": "train", "mode": "batch", "image": "example.com/trainer:1"}],
    runs={},
)


def xpk(**changes) -> dict:
    cfg = copy.deepcopy(XPK)
    for key, value in changes.items():
        if value is None:
            cfg.pop(f"pathways:{key}", None)
        else:
            cfg[f"pathways:{key}"] = value
    return cfg


def _pods(plan):
    js = plan.one(JOBSET).inputs
    return {rj["name"]: rj["template"]["spec"]["template"]["spec"] for rj in js["spec"]["replicatedJobs"]}


def problems(config: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        load(raw_values(flatten(config)[0]), "test")
    return str(err.value).splitlines()


def summary(config: dict) -> dict:
    return stack_summary(resolve(load(raw_values(flatten(config)[0]), "test")))


def test_pods_select_the_named_pools_by_gkes_label_and_need_no_label_of_ours():
    pods = _pods(plan_of(XPK))
    head, worker = pods["pathways-head"], pods["worker"]
    assert head["nodeSelector"] == {POOL: "cpu-np"}
    assert worker["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
    terms = worker["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": POOL, "operator": "In", "values": ["team-np-0", "team-np-1"]}]}]
    assert not any(k.startswith("pathways/") for pod in pods.values() for k in pod["nodeSelector"])


def test_a_shared_cluster_queue_gets_the_stacks_local_queues_and_no_flavor_or_queue_of_ours():
    plan = plan_of(XPK)
    assert plan.by_type(CLUSTER_QUEUE) == [] and plan.by_type(FLAVOR) == []
    queues = {r.inputs["metadata"]["name"]: r.inputs["spec"]["clusterQueue"] for r in plan.by_type(LOCAL_QUEUE)}
    assert queues == {"train": "cluster-queue", "runs-cluster-queue": "cluster-queue"}
    assert plan.outputs["kueue"]["clusterQueues"] == ["cluster-queue"]
    assert plan.outputs["kueue"].get("quotas") is None  # the owner's quota, which the stack does not know (a null output is dropped)


def test_own_queue_on_named_pools_selects_them_in_its_flavors():
    plan = plan_of(xpk(kubernetes={"installControllers": False}))
    flavors = {r.inputs["metadata"]["name"]: r.inputs["spec"]["nodeLabels"] for r in plan.by_type(FLAVOR)}
    assert flavors["pathways-head"] == {POOL: "cpu-np"}
    assert flavors["tpu-main"] == {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4"}
    assert len(plan.by_type(CLUSTER_QUEUE)) == 1


def test_the_plan_says_what_is_made_elsewhere_and_what_the_guards_let_through():
    s = summary(XPK)
    text = "\n".join(summary_text(s))
    assert "main: node pools team-np-0, team-np-1, made elsewhere" in text
    assert "queue: ClusterQueue cluster-queue, made elsewhere and shared" in text
    assert "head (cpu-np, made elsewhere)" in text
    notices = "\n".join(s["notices"])
    assert "admission guards exempt namespace(s) default" in notices
    assert "must select namespace(s) pathways" in notices
    # found by the real Kueue (tests_e2e/test_xpk.py): the stack's classes outrank all of xpk's, so its workloads preempt xpk's
    assert "rank 100,000 to 2,000,000 (pathways-* priority classes), above every PriorityClass xpk makes" in notices
    assert s["sharedClusterQueue"] == "cluster-queue" and s["headPool"]["nodePool"] == "cpu-np"
    assert s["sliceGroups"][0]["nodePools"] == ["team-np-0", "team-np-1"]
    # off: a warning that says what is lost
    off = summary(xpk(kubernetes={"installControllers": False, "guards": {"enabled": False}}))
    assert any(n.startswith("admission guards off") for n in off["notices"])
    # the cluster's own Kueue beside a queue of the stack's: the double admission is named, with the fix
    own = summary(xpk(kubernetes={"installControllers": False}))
    assert any("both admit work onto one slice: share it with kubernetes.kueue.clusterQueue" in n for n in own["notices"])


def test_guards_off_registers_no_guard():
    plan = plan_of(xpk(kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"}, "guards": {"enabled": False}}))
    assert plan.by_type(VAP) == []
    assert {r.inputs["metadata"]["name"] for r in plan_of(XPK).by_type(VAP)} == {guardrails.NODE_GUARD, guardrails.TEMPLATE_GUARD}


@pytest.mark.parametrize("namespace,pod,user,admitted", [
    ("default", {"tolerations": TPU, "hostNetwork": True}, JOB_CONTROLLER, True),  # xpk's workload pod
    ("default", {"tolerations": TPU, "hostNetwork": True}, ALICE, True),  # exempt: the guard does not judge it at all
    ("team-a", {"tolerations": TPU}, ALICE, False),  # every other namespace still is
    ("team-a", {"hostNetwork": True}, JOB_CONTROLLER, False),
    ("pathways", {"tolerations": TPU}, ALICE, False),  # the stack's own namespace keeps its rules
])
def test_an_exempt_namespace_is_let_through_and_no_other(namespace, pod, user, admitted):
    policy = next(r.inputs for r in plan_of(XPK).by_type(VAP) if r.inputs["metadata"]["name"] == guardrails.NODE_GUARD)
    request = {"namespace": namespace, "operation": "CREATE", "userInfo": {"username": user}}
    assert _admitted(policy, request, {"spec": pod}) == admitted


def test_a_template_selecting_a_named_pool_reaches_the_pathways_nodes():
    from tests.test_security import _job

    policy = next(r.inputs for r in plan_of(XPK).by_type(VAP) if r.inputs["metadata"]["name"] == guardrails.TEMPLATE_GUARD)
    request = {"namespace": "pathways", "operation": "CREATE", "userInfo": {"username": ALICE}, "resource": {"resource": "jobs"}}
    assert not _admitted(policy, request, _job({"nodeSelector": {POOL: "cpu-np"}}))
    assert _admitted(policy, request, _job({"nodeSelector": {POOL: "someone-elses-pool"}}))


@pytest.mark.parametrize("config,line", [
    (config_with(headPool={"nodePool": "cpu-np"}),
     "pathways:headPool.nodePool: only with cluster.existing: a pool the stack creates carries this project's labels"),
    (config_with(slices=[{"name": "main", "tpu": "v6e-16", "nodePools": ["np-0"]}]),
     "pathways:slices[0].nodePools: only with cluster.existing"),
    (xpk(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "nodePools": ["team-np-0"]}]),
     "pathways:slices[0].nodePools: names 1 pool(s), but slice group main has 2 slice(s) (count): a TPU slice is one GKE node pool"),
    (xpk(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "nodePools": ["cpu-np", "team-np-1"]}]),
     "pathways:slices[0].nodePools: names pool cpu-np, which headPool.nodePool names too"),
    (xpk(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "nodePools": ["team-np-0", "team-np-0"]}]),
     "pathways:slices[0].nodePools: names a pool twice (team-np-0)"),
    (xpk(kubernetes={"installControllers": False},
         slices=[{"name": "a", "tpu": "v6e-16", "nodePools": ["team-np-0"]}, {"name": "b", "tpu": "v6e-16", "nodePools": ["team-np-1"]}],
         workloads=[{"name": "train", "mode": "batch", "image": "example.com/trainer:1", "sliceGroup": "a"}]),
     "pathways:slices[1].nodePools: slice group b and a are both v6e-16 on named pools"),
    (xpk(kubernetes={"kueue": {"clusterQueue": "cluster-queue"}}),
     "pathways:kubernetes.kueue.clusterQueue: shares a ClusterQueue made elsewhere, so Kueue runs on the cluster already; set kubernetes.installControllers: false"),
    (config_with(kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"}}),
     "pathways:kubernetes.kueue.clusterQueue: only with cluster.existing"),
    (xpk(fleet={"role": "worker", "endpoint": "https://10.0.0.1"}),
     "pathways:kubernetes.kueue.clusterQueue: not in a fleet"),
    (xpk(fleet={"role": "worker", "endpoint": "https://10.0.0.1"}),
     "pathways:slices[0].nodePools: a fleet worker runs what its manager builds, whose pods select this project's labels"),
    (xpk(fleet={"role": "worker", "endpoint": "https://10.0.0.1"}),
     "pathways:headPool.nodePool: a fleet worker runs what its manager builds"),
    (xpk(kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"}, "guards": {"exemptNamespaces": ["pathways"], "acknowledgeExemptions": True}}),
     "pathways:kubernetes.guards.exemptNamespaces: pathways is a namespace of the stack's own workloads"),
    (xpk(kubernetes={"installControllers": False, "kueue": {"clusterQueue": "cluster-queue"},
                     "guards": {"enabled": False, "exemptNamespaces": ["default"]}}),
     "pathways:kubernetes.guards.exemptNamespaces: has no effect with kubernetes.guards.enabled: false"),
    (xpk(kubernetes={"installControllers": False, "guards": {"exemptNamespaces": ["kube-system"]}}),
     "pathways:kubernetes.guards.exemptNamespaces: 'kube-system' is a system namespace"),
    # security #58.2: exemptions are acknowledged; guards off only on a cluster made elsewhere, never when protected
    (xpk(kubernetes={"installControllers": False, "guards": {"exemptNamespaces": ["default"]}}),
     "pathways:kubernetes.guards.acknowledgeExemptions: required with exemptNamespaces (default): pods there may run on "
     "the Pathways nodes and the host network, as the Pathways node service account"),
    (xpk(kubernetes={"installControllers": False, "guards": {"acknowledgeExemptions": True}}),
     "pathways:kubernetes.guards.acknowledgeExemptions: true, but no namespace is exempt"),
    (config_with(kubernetes={"guards": {"enabled": False}}),
     "pathways:kubernetes.guards.enabled: false on a cluster the stack makes"),
    (xpk(protected=True, kubernetes={"installControllers": False, "guards": {"enabled": False}}),
     "pathways:kubernetes.guards.enabled: false in a protected stack"),
    (xpk(kubernetes={"installControllers": False},
         slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "nodePools": ["team-np-0", "team-np-1"], "ladder": ["spot"]},
                 {"name": "spot", "tpu": "v6e-16", "count": 1, "spot": True}]),
     "pathways:slices[0].ladder: mixes groups on named pools (main) with groups on this project's labels (spot): a workload's "
     "workers select every rung at once; name the pools of every rung, or of none"),
])
def test_refusals_name_the_key_and_the_fix(config, line):
    lines = problems(config)
    assert any(text.startswith(line) for text in lines), lines


def test_the_refusal_is_the_same_under_the_program():
    config = xpk(kubernetes={"kueue": {"clusterQueue": "cluster-queue"}})
    with pytest.raises(InvalidStackConfig) as err:
        engine.run(flatten(config)[0], "test")
    assert "pathways:kubernetes.kueue.clusterQueue: shares a ClusterQueue made elsewhere" in str(err.value)


def test_render_checks_placement_against_the_pools_the_cluster_must_have():
    # before clusterPools, `render` of any stack on a cluster made elsewhere refused every JobSet ("matches no node pool
    # the stack creates": it has none to create)
    from components.manifests.admission import check_jobset
    from infra.offline.render import check_plan, manifests, pool_facts

    plain = config_with(cluster={"existing": {"kubeconfig": "kubeconfig"}}, bucket={"name": "b-cache"}, pathwaysVersion="jax-0.9.0",
                        workloads=[{"name": "train", "mode": "batch", "image": "example.com/trainer:1"}])
    for config in (plain, XPK):
        assert [v for r in check_plan(plan_of(config)).values() for v in r.violations] == []
    pools = {p.name: p.labels for p in pool_facts(plan_of(XPK))}
    assert pools["cpu-np"] == {POOL: "cpu-np"} and pools["team-np-1"][POOL] == "team-np-1"
    assert sorted(pool_facts(plan_of(plain))[i].name for i in range(3)) == ["head", "main-0", "main-1"]
    # and the check still bites: the xpk stack's JobSet against the plain stack's pools selects none of them
    jobset = next(m for m in manifests(plan_of(XPK)) if m.get("kind") == "JobSet")
    report = check_jobset(jobset, pool_facts(plan_of(plain)))
    assert any(v.rule == "node-selector" for v in report.violations)
