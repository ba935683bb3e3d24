"""Kueue: queues and quotas derived from the stack, gang admission, priorities, hot-swap spares.

Facts: Kueue v0.19.2's sources. The CRD schemas come from its Go module (make crds)."""

from __future__ import annotations

import pytest
import yaml

from components.manifests import admission
from components.manifests import kueue as kq
from components.model.capacity import machines
from components.model.config import resolve
from infra.offline.render import check_builtins, manifests
from infra.offline.stackfile import flatten, raw_values, stack_path
from tests.conftest import FLEET_MANAGERS, config_with, example_plan, plan_of, stack_plan

VERSION = "jax-0.9.0"
CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def objects(plan, kind):
    return [o for o in manifests(plan) if o["kind"] == kind]


def cq_quotas(plan) -> dict[str, dict[str, str]]:
    (cq,) = objects(plan, "ClusterQueue")
    (group,) = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "google.com/tpu"]
    return {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}


def expected_quotas(plan) -> dict[str, dict[str, str]]:
    """What the pools provide, from the plan's own pools and the catalog (not from the quota code)."""
    from components.model.capacity import tpu

    out = {}
    head = next(r for r in plan.by_type("gcp:container/nodePool:NodePool") if r.input("name") == "pathways-head")
    shape = machines.shape(head.input("nodeConfig.machineType"))
    n = head.input("nodeCount")
    if n is None:  # a head pool that scales to zero: its quota is what it can scale up to
        n = head.input("autoscaling.maxNodeCount")
    out["pathways-head"] = {"cpu": str(int(shape.allocatable_cpu) * n), "memory": f"{int(shape.allocatable_memory_gib) * n}Gi", "google.com/tpu": "0"}
    for domain in (plan.outputs.get("isolationDomains") or {}).values():  # each isolation domain's own head pool
        pool = next(r for r in plan.by_type("gcp:container/nodePool:NodePool") if r.input("name") == domain["headPool"])
        n = pool.input("autoscaling.maxNodeCount")
        out[domain["headPool"]] = {"cpu": str(int(shape.allocatable_cpu) * n), "memory": f"{int(shape.allocatable_memory_gib) * n}Gi",
                                   "google.com/tpu": "0"}
    for group, g in plan.outputs["sliceGroups"].items():
        hosts = g["slices"] * g["hosts"]  # spares are not quota
        vm = machines.tpu_vm_shape(g["machineType"])
        chips_per_vm = next(f.machine_types[g["machineType"]] for f in tpu.FAMILIES.values() if g["machineType"] in f.machine_types)
        out[f"tpu-{group}"] = {"cpu": str(int(vm.allocatable_cpu) * hosts), "memory": f"{int(vm.allocatable_memory_gib) * hosts}Gi",
                               "google.com/tpu": str(hosts * chips_per_vm)}
    return out


def _amounts(quotas: dict[str, dict[str, str]]) -> dict[str, dict[str, object]]:
    """Quantities as numbers: the form is the API server's (tests/test_quantities.py), the amount is what counts."""
    from components.model import quantity

    return {flavor: {r: quantity.parse(q) for r, q in rs.items()} for flavor, rs in quotas.items()}


def cohort_quotas(plan) -> dict[str, dict[str, object]]:
    """The nominal quotas of every ClusterQueue the stack makes, summed: the stack's own and its teams' (a team's
    owned slices leave the stack's queue), in the stack's queue's flavor order."""
    total: dict[str, dict[str, object]] = {}
    for cq in objects(plan, "ClusterQueue"):
        (group,) = cq["spec"]["resourceGroups"]
        for flavor, amounts in _amounts({f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}).items():
            for r, n in amounts.items():
                total.setdefault(flavor, {}).setdefault(r, 0)
                total[flavor][r] += n  # type: ignore[operator]
    return total


def test_quotas_equal_what_the_pools_provide(made_stack):
    name, plan = made_stack
    if name in FLEET_MANAGERS:
        # a manager's quota is what its workers' pools provide, summed (read from their offline plans here)
        manager = yaml.safe_load(stack_path(name).read_text())["config"]["pathways:fleet"]
        workers = [stack_plan(w["stack"].rsplit("/", 1)[-1]) for w in manager["workers"]]
        summed: dict[str, dict[str, object]] = {}
        for w in workers:
            for flavor, amounts in _amounts(expected_quotas(w)).items():
                for r, n in amounts.items():
                    summed.setdefault(flavor, {}).setdefault(r, 0)
                    summed[flavor][r] += n  # type: ignore[operator]
        assert cohort_quotas(plan) == summed  # its own queue holds what its teams do not own
    else:
        assert cohort_quotas(plan) == _amounts(expected_quotas(plan))
    for cq in objects(plan, "ClusterQueue"):  # tried last in each queue: a waiting head's status names its quota
        assert cq["spec"]["resourceGroups"][0]["flavors"][-1]["name"].startswith("pathways-head")


def test_prod_quotas_written_out():
    # prod: 4 x v5p-128 (16 hosts of ct5p-hightpu-4t: 208 vCPU / 448 GB) + 1 x v5p-16 (2 hosts), 2 x n2-standard-64
    q = cq_quotas(example_plan("prod"))
    assert q["tpu-train"] == {"cpu": str(206 * 64), "memory": f"{430 * 64}Gi", "google.com/tpu": str(64 * 4)}
    assert q["tpu-explore"] == {"cpu": str(206 * 2), "memory": f"{430 * 2}Gi", "google.com/tpu": "8"}
    assert q["pathways-head"] == {"cpu": "124", "memory": "484Gi", "google.com/tpu": "0"}


def test_flavors_carry_the_node_labels_and_taints_of_their_pools():
    plan = plan_of(config_with(slices=[{"name": "s", "tpu": "v6e-16", "spot": True}]))
    flavors = {f["metadata"]["name"]: f["spec"] for f in objects(plan, "ResourceFlavor")}
    assert flavors["tpu-s"]["nodeLabels"] == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice", "cloud.google.com/gke-tpu-topology": "4x4", "pathways/slice-group": "s",
    }
    assert {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"} in flavors["tpu-s"]["tolerations"]
    assert {"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in flavors["tpu-s"]["tolerations"]
    assert flavors["pathways-head"] == {"nodeLabels": {"pathways/role": "head"},
                                        "tolerations": [{"key": "pathways/role", "operator": "Equal", "value": "head", "effect": "NoSchedule"}]}


def test_two_workloads_share_a_group_through_one_queue_with_their_priorities():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[
        {"name": "train", "image": "example.com/t:1", "slices": 2},
        {"name": "probe", "image": "example.com/t:1", "slices": 1, "priority": "experiment"},
    ]))
    labels = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects(plan, "JobSet")}
    # each workload its own LocalQueue (so that one can be held), all on the one ClusterQueue
    assert {n: l["kueue.x-k8s.io/queue-name"] for n, l in labels.items()} == {"train": "train", "probe": "probe"}
    assert {n: l["kueue.x-k8s.io/priority-class"] for n, l in labels.items()} == {"train": "pathways-training", "probe": "pathways-experiment"}
    assert sorted((lq["metadata"]["name"], lq["metadata"]["namespace"], lq["spec"]["clusterQueue"], lq["spec"]["stopPolicy"])
                  for lq in objects(plan, "LocalQueue")) == [("probe", "pathways", "pathways", "None"), ("train", "pathways", "pathways", "None")]
    (cq,) = objects(plan, "ClusterQueue")
    assert cq["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority"} and "cohortName" not in cq["spec"]
    # the flavor search stops where a PodSet fits or can preempt
    assert cq["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}
    assert cq["spec"]["namespaceSelector"] == {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["pathways"]}]}
    wpc = {o["metadata"]["name"]: o["value"] for o in objects(plan, "WorkloadPriorityClass")}
    pc = {o["metadata"]["name"]: o["value"] for o in objects(plan, "PriorityClass")}
    assert wpc == pc == {"pathways-serving": 2_000_000, "pathways-training": 1_000_000, "pathways-interactive": 500_000, "pathways-experiment": 100_000}


def test_a_spare_slice_adds_a_pool_but_no_quota():
    base = config_with(pathwaysVersion=VERSION, workloads=[{"name": "t", "image": "example.com/t:1", "maxRestarts": 2}])
    spare = config_with(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "spares": 1}], pathwaysVersion=VERSION,
                        workloads=[{"name": "t", "image": "example.com/t:1", "maxRestarts": 2}])
    a, b = plan_of(base), plan_of(spare)
    pools = lambda p: sorted(r.input("name") for r in p.by_type("gcp:container/nodePool:NodePool") if r.input("name").startswith("tpu-"))
    assert pools(a) == ["tpu-main-0", "tpu-main-1"] and pools(b) == ["tpu-main-0", "tpu-main-1", "tpu-main-2"]
    assert cq_quotas(a)["tpu-main"] == cq_quotas(b)["tpu-main"] == {"cpu": str(178 * 8), "memory": f"{696 * 8}Gi", "google.com/tpu": "32"}
    # the workload still asks for its slices only
    (js,) = objects(b, "JobSet")
    assert js["spec"]["replicatedJobs"][1]["replicas"] == 2


@pytest.mark.parametrize("changes,key,text", [
    (dict(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "spares": 1}], workloads=[{"name": "t", "image": "example.com/t:1", "slices": 3, "maxRestarts": 1}]),
     "pathways:workloads[0].slices", "3 exceeds the 2 slice(s) of group 'main' (spares are not for workloads)"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16", "count": 2, "spares": 1}], workloads=[{"name": "t", "image": "example.com/t:1", "maxRestarts": 0}]),
     "pathways:workloads[0].maxRestarts", "0 with slice group 'main' keeping 1 spare slice(s)"),
    (dict(kubernetes={"kueue": {"enabled": False}}, workloads=[{"name": "a", "image": "example.com/t:1"}, {"name": "b", "image": "example.com/t:1"}]),
     "pathways:kubernetes.kueue.enabled", "workloads a, b want 4 slices of group 'main', which has 2"),
    (dict(kubernetes={"kueue": {"version": "v0.19"}}), "pathways:kubernetes.kueue.version", "'v0.19' is not a chart version"),
])
def test_config_errors(changes, key, text):
    from components.model.config import load
    from components.model.errors import ConfigError

    flat, _ = flatten(config_with(pathwaysVersion=VERSION, **changes))
    with pytest.raises(ConfigError) as err:
        load(raw_values(flat), "test")
    assert any(line.startswith(f"{key}: ") and text in line for line in str(err.value).splitlines()), str(err.value)


def test_without_kueue_there_are_no_queue_objects_or_labels():
    plan = plan_of(config_with(pathwaysVersion=VERSION, kubernetes={"kueue": {"enabled": False}}, workloads=[{"name": "t", "image": "example.com/t:1"}]))
    assert not [r for r in plan.resources if "kueue" in r.type or r.name.startswith("kueue")]
    (js,) = objects(plan, "JobSet")
    assert "kueue.x-k8s.io/queue-name" not in js["metadata"]["labels"]
    assert plan.outputs.get("kueue") is None


def test_kueue_chart_install():
    plan = example_plan("dev")
    chart = plan.one("kubernetes:helm.sh/v4:Chart", "kueue")
    assert chart.input("chart") == "oci://registry.k8s.io/kueue/charts/kueue" and chart.input("version") == "0.19.2"
    assert chart.input("namespace") == "kueue-system" and chart.input("skipCrds") is False
    assert chart.input("values.controllerManager.nodeSelector") == {"pathways/role": "system"}
    out = plan.outputs["kueue"]
    assert out["localQueues"] == {"notebook": "pathways/notebook"} and out["clusterQueues"] == ["pathways"]
    assert out["quotas"]["tpu-dev"]["google.com/tpu"] == "4"
    assert out["quotas"]["tpu-dev"]["memory"].endswith("Gi") and out["quotas"]["pathways-head"]["memory"] == "484Gi"  # units, as Kueue reads them (the notebook's head node and the runs')


def test_every_kueue_object_passes_the_upstream_crd_schema(committed_stack):
    _, plan = committed_stack
    reports = {k: r for k, r in check_builtins(plan).items() if k.split("/")[0] in ("ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass")}
    assert len(reports) >= 6
    assert {k: [str(v) for v in r.violations] + r.notices for k, r in reports.items() if r.violations or r.notices} == {}


@pytest.mark.parametrize("mutate,rule,text", [
    (lambda cq: cq["spec"].__setitem__("cohort", "x"), "kueue-schema", "unknown field 'cohort'"),  # the v1beta1 name
    (lambda cq: cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop(), "kueue-cel", "must match coveredResources"),
    (lambda cq: cq["spec"].__setitem__("queueingStrategy", "Random"), "kueue-schema", "'Random' is not one of"),
])
def test_kueue_admission_catches_what_the_api_server_would_refuse(mutate, rule, text):
    (cq,) = kq.cluster_queues(resolve(plan_cfg()))
    mutate(cq)
    report = admission.check_kueue(cq)
    assert any(v.rule == rule and text in v.message for v in report.violations), [str(v) for v in report.violations]


def plan_cfg():
    from components.model.config import load

    flat, _ = flatten(config_with())
    return load(raw_values(flat), "test")


def test_a_suspended_workload_is_held_by_its_queue_not_by_spec_suspend():
    # Kueue un-suspends every job it admits (v0.19.2 jobframework/reconciler.go): the workload's own
    # LocalQueue holds it (stopPolicy HoldAndDrain evicts it if admitted and admits nothing meanwhile)
    plan = plan_of(config_with(pathwaysVersion=VERSION, headPool={"nodeCount": 2}, workloads=[
        {"name": "train", "image": "example.com/t:1", "slices": 1},
        {"name": "paused", "image": "example.com/t:1", "slices": 1, "state": "suspended"},
    ]))
    stops = {lq["metadata"]["name"]: lq["spec"]["stopPolicy"] for lq in objects(plan, "LocalQueue")}
    assert stops == {"train": "None", "paused": "HoldAndDrain"}
    js = {o["metadata"]["name"]: o for o in objects(plan, "JobSet")}
    assert "suspend" not in js["paused"]["spec"] and js["paused"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "paused"
    # without Kueue the JobSet's own spec.suspend holds it
    plain = plan_of(config_with(pathwaysVersion=VERSION, kubernetes={"kueue": {"enabled": False}},
                                workloads=[{"name": "paused", "image": "example.com/t:1", "state": "suspended"}]))
    (js,) = objects(plain, "JobSet")
    assert js["spec"]["suspend"] is True


def test_more_slice_groups_than_a_resource_group_holds_share_a_cohort():
    # a resource group holds at most 64 flavors (v1beta2 CRD): 64 groups + the head flavor would be 65
    groups = [{"name": f"g{i}", "tpu": "v6e-4"} for i in range(64)]
    plan = plan_of(config_with(slices=groups, pathwaysVersion=VERSION,
                               workloads=[{"name": "last", "image": "example.com/t:1", "sliceGroup": "g63"}]))
    cqs = objects(plan, "ClusterQueue")
    assert [cq["metadata"]["name"] for cq in cqs] == ["pathways-0", "pathways-1"]
    flavors = [[f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]] for cq in cqs]
    assert [len(f) for f in flavors] == [64, 2] and flavors[1] == ["tpu-g63", "pathways-head"]
    assert all(len(f) <= kq.MAX_FLAVORS_PER_RESOURCE_GROUP for f in flavors)
    # the head pool's quota is lent by the first queue and borrowed by the others, in one cohort
    head = [{r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][-1]["resources"]} for cq in cqs]
    assert head[0]["cpu"] != "0" and head[1] == {"cpu": "0", "memory": "0", "google.com/tpu": "0"}  # "0": the API server stores a zero quantity that way (tests/test_quantities.py)
    assert {cq["spec"]["cohortName"] for cq in cqs} == {"pathways"}
    assert cqs[1]["spec"]["preemption"] == {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                            "borrowWithinCohort": {"policy": "LowerPriority"}}
    (lq,) = objects(plan, "LocalQueue")
    assert lq["spec"]["clusterQueue"] == "pathways-1"
    assert plan.outputs["kueue"]["clusterQueues"] == ["pathways-0", "pathways-1"]


def test_each_queue_depends_on_what_it_names_so_pulumi_deletes_it_first(committed_stack):
    # Kueue holds a ResourceFlavor's deletion while a ClusterQueue names it (finalizer resource-in-use): Pulumi must
    # delete the queue before its flavors, which it does for dependents only (a stack that drops a slice group)
    _, plan = committed_stack
    kueue_objects = [r for r in plan.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    by_ref = {(r.inputs["kind"], r.inputs["metadata"]["name"]): r.urn for r in kueue_objects}
    queues = [r for r in kueue_objects if r.inputs["kind"] in ("ClusterQueue", "LocalQueue")]
    assert queues
    shared = (plan.outputs["kueue"]["clusterQueues"] if not any(q.inputs["kind"] == "ClusterQueue" for q in queues) else [])
    for q in queues:
        named = [n for n in kq.references(q.inputs) if n[1] not in shared]  # a shared ClusterQueue is made elsewhere
        assert named or shared, (q.name, named)
        assert {by_ref[n] for n in named} <= set(q.dependencies), (q.name, named)
    if shared:
        return
    for cq in (q for q in queues if q.inputs["kind"] == "ClusterQueue"):  # the stack's own, and a team's each
        spec = cq.inputs["spec"]
        assert {n for _, n in kq.references(cq.inputs)} == {f["name"] for rg in spec["resourceGroups"] for f in rg["flavors"]} | {
            c["name"] for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []} | (
            {spec["cohortName"]} if spec.get("cohortName", kq.COHORT) != kq.COHORT else set())


def _kueue_flavor_matches(pod: dict, flavor: dict) -> bool:
    """Kueue v0.19.2's flavor check for a PodSet (pkg/scheduler/flavorassigner/flavorassigner.go, flavorSelector):
    the pod's nodeSelector and required node affinity, restricted to the keys of the flavor's own nodeLabels,
    matched against a node carrying just those labels (a term left empty matches any flavor)."""
    labels = flavor.get("nodeLabels", {})
    if any(k in labels and labels[k] != v for k, v in pod.get("nodeSelector", {}).items()):
        return False
    terms = pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms")
    if not terms:
        return True

    def holds(e: dict) -> bool:
        present, value = e["key"] in labels, labels.get(e["key"])
        return {"In": present and value in e.get("values", []), "NotIn": not present or value not in e.get("values", []),
                "Exists": present, "DoesNotExist": not present}[e["operator"]]
    kept = [[e for e in t.get("matchExpressions", []) if e["key"] in labels] for t in terms]
    return any(not t for t in kept) or any(all(holds(e) for e in t) for t in kept)


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_a_head_podset_fits_only_the_head_flavor_and_a_worker_only_its_slice_group(stack):
    # Found by the real-engine tier (prod -> staging): while the head flavor's quota was held, Kueue gave a
    # head PodSet a TPU flavor whose cpu and memory quota it fitted, and that head never ran.
    plan = example_plan(stack)
    flavors = {f["metadata"]["name"]: f["spec"] for f in objects(plan, "ResourceFlavor")}
    checked = 0
    for js in objects(plan, "JobSet"):
        for rj in js["spec"]["replicatedJobs"]:
            pod = rj["template"]["spec"]["template"]["spec"]
            fits = {name for name, f in flavors.items() if _kueue_flavor_matches(pod, f)}
            if "tolerations" in pod and any(t["key"] == "google.com/tpu" for t in pod["tolerations"]):
                # one group, or a capacity ladder's rungs as a set (staging's)
                terms = pod.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", [])
                groups = [pod["nodeSelector"]["pathways/slice-group"]] if "pathways/slice-group" in pod["nodeSelector"] else [
                    v for t in terms for e in t["matchExpressions"] if e["key"] == "pathways/slice-group" for v in e["values"]]
                assert groups
                assert fits - {kq.HEAD_FLAVOR} == {f"tpu-{g}" for g in groups}, (js["metadata"]["name"], rj["name"])  # the head flavor has no TPU quota
            else:
                assert fits == {kq.HEAD_FLAVOR}, (js["metadata"]["name"], rj["name"], fits)
            checked += 1
    assert checked >= 4


QUEUED = {"name": "main", "tpu": "v6e-16", "count": 2, "flexStart": True, "queuedProvisioning": True}


def test_a_queued_provisioning_group_is_admitted_through_kueues_provisioning_check_on_its_flavor_alone():
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=[QUEUED, {"name": "spot", "tpu": "v6e-16", "spot": True}],
                               workloads=[{"name": "t", "image": "example.com/t:1", "sliceGroup": "main"}]))
    (config,) = objects(plan, "ProvisioningRequestConfig")
    (check,) = objects(plan, "AdmissionCheck")
    # GKE's class; only the TPU workers are in a request (the CPU head is not GKE's to queue); Kueue's retry defaults,
    # written out
    assert config["spec"] == {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["google.com/tpu"],
                              "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}}
    assert check["metadata"]["name"] == config["metadata"]["name"] == "queued-main"
    assert check["spec"] == {"controllerName": "kueue.x-k8s.io/provisioning-request",
                             "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "queued-main"}}
    (cq,) = objects(plan, "ClusterQueue")
    # the spot group and the head flavor are admitted on quota alone
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "queued-main", "onFlavors": ["tpu-main"]}]}
    flavor = next(f for f in objects(plan, "ResourceFlavor") if f["metadata"]["name"] == "tpu-main")
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in flavor["spec"]["tolerations"]
    assert not any(t["key"] == "cloud.google.com/gke-queued" for f in objects(plan, "ResourceFlavor") if f["metadata"]["name"] != "tpu-main"
                   for t in f["spec"]["tolerations"])
    # Pulumi makes the config before the check and the check before the queue (and deletes them the other way round)
    deps = {(r.inputs["kind"], r.inputs["metadata"]["name"]): r for r in plan.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")}
    assert deps[("ProvisioningRequestConfig", "queued-main")].urn in deps[("AdmissionCheck", "queued-main")].dependencies
    assert deps[("AdmissionCheck", "queued-main")].urn in deps[("ClusterQueue", "pathways")].dependencies
    reports = {k: r for k, r in check_builtins(plan).items() if k.split("/")[0] in ("ClusterQueue", "AdmissionCheck", "ProvisioningRequestConfig")}
    assert len(reports) == 3 and all(not r.violations for r in reports.values()), {k: [str(v) for v in r.violations] for k, r in reports.items()}


def test_without_queued_provisioning_there_is_no_admission_check():
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=[{**QUEUED, "queuedProvisioning": False}]))
    assert not objects(plan, "AdmissionCheck") and not objects(plan, "ProvisioningRequestConfig")
    (cq,) = objects(plan, "ClusterQueue")
    assert "admissionChecksStrategy" not in cq["spec"]


@pytest.mark.parametrize("changes,key,text", [
    (dict(slices=[{**QUEUED, "flexStart": False}]), "pathways:slices[0]", "queuedProvisioning is a mode of flex-start capacity"),
    (dict(slices=[QUEUED], kubernetes={"kueue": {"enabled": False}}), "pathways:slices[0].queuedProvisioning", "needs Kueue"),
    (dict(slices=[{**QUEUED, "spares": 1}], workloads=[{"name": "t", "image": "example.com/t:1", "maxRestarts": 1}]),
     "pathways:slices[0].spares", "1 with queuedProvisioning: its pools hold no node outside a workload's request"),
    (dict(slices=[QUEUED], workloads=[{"name": "svc", "mode": "service"}]),
     "pathways:workloads[0].sliceGroup", "'main' has queuedProvisioning, whose slices GKE takes back when a run ends"),
])
def test_queued_provisioning_errors(changes, key, text):
    test_config_errors(changes, key, text)


LADDER = [
    {"name": "res", "tpu": "v6e-16", "count": 1, "reservation": "r1", "ladder": ["flex", "spot"]},
    {"name": "spot", "tpu": "v6e-16", "count": 1, "spot": True, "scaleToZero": True},
    {"name": "flex", "tpu": "v6e-16", "count": 2, "flexStart": True, "queuedProvisioning": True},
]


def test_a_ladder_orders_kueues_flavors_and_lets_the_workers_fit_any_rung():
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=LADDER, workloads=[{"name": "t", "image": "example.com/t:1", "sliceGroup": "res"}]))
    (cq,) = objects(plan, "ClusterQueue")
    # Kueue tries a ClusterQueue's flavors in order: the ladder's, whatever order the groups are listed in
    assert [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]] == ["tpu-res", "tpu-flex", "tpu-spot", "pathways-head"]
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "queued-flex", "onFlavors": ["tpu-flex"]}]}
    (js,) = objects(plan, "JobSet")
    worker = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    # the rung is Kueue's to pick: the group as a set (Kueue writes the chosen flavor's label in on admission)
    assert "pathways/slice-group" not in worker["nodeSelector"]
    assert worker["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "pathways/slice-group", "operator": "In", "values": ["res", "flex", "spot"]}]}]
    flavors = {f["metadata"]["name"]: f["spec"] for f in objects(plan, "ResourceFlavor")}
    # the three rungs (and the head flavor, whose TPU quota is 0: tests above), never another group
    assert {name for name, f in flavors.items() if _kueue_flavor_matches(worker, f)} == {"pathways-head", "tpu-res", "tpu-spot", "tpu-flex"}
    # a workload on a rung itself stays on that rung
    plan = plan_of(config_with(pathwaysVersion=VERSION, slices=LADDER, workloads=[{"name": "t", "image": "example.com/t:1", "sliceGroup": "spot"}]))
    (js,) = objects(plan, "JobSet")
    worker = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    assert worker["nodeSelector"]["pathways/slice-group"] == "spot" and "affinity" not in worker


def test_the_plan_shows_each_rung_and_what_the_ladder_costs_idle_and_full():
    from components.model.config import load
    from components.model.cost.summary import stack_summary, summary_text

    flat, _ = flatten(config_with(pathwaysVersion=VERSION, slices=LADDER, prices={"tpuChipHour": {"v6e": {
        "reservation": 1.5, "flex-start": 2.0, "spot": 1.0}}}))
    s = stack_summary(resolve(load(raw_values(flat), "test")))
    (ladder,) = s["ladders"]
    assert [(r["group"], r["chips"], r["hourly"], r["scalesToZero"]) for r in ladder["rungs"]] == [
        ("res", 16, 24.0, False), ("flex", 32, 64.0, True), ("spot", 16, 16.0, True)]
    assert (ladder["idleHourly"], ladder["fullHourly"]) == (24.0, 104.0)
    assert ("  ladder res: res (reservation, 16 chips, $24.00/h) -> flex (flex-start, queued, 32 chips, $64.00/h when used) -> "
            "spot (spot, 16 chips, $16.00/h when used); $24.00/h idle, $104.00/h with every rung full") in summary_text(s)


@pytest.mark.parametrize("slices,workloads,key,text", [
    ([{**LADDER[0], "ladder": ["flex", "nope"]}, *LADDER[1:]], [], "pathways:slices[0].ladder[1]", "'nope' is not a slice group"),
    ([{**LADDER[0], "ladder": ["flex", "flex"]}, *LADDER[1:]], [], "pathways:slices[0].ladder[1]", "'flex' is already on this ladder"),
    ([LADDER[0], {**LADDER[1], "tpu": "v6e-8"}, LADDER[2]], [], "pathways:slices[0].ladder[1]", "'spot' has v6e-8 slices"),
    ([LADDER[0], {**LADDER[1], "ladder": ["flex"]}, LADDER[2]], [], "pathways:slices[0].ladder[1]", "'spot' has a ladder of its own"),
    (LADDER, [{"name": "t", "image": "example.com/t:1", "sliceGroup": "res", "slices": 3}], "pathways:workloads[0].slices",
     "3 exceeds the 2 slice(s) of the largest rung of group 'res''s ladder"),
    (LADDER, [{"name": "svc", "mode": "service", "sliceGroup": "res"}], "pathways:workloads[0].sliceGroup", "'res' has a capacity ladder"),
    ([{**LADDER[0], "ladder": ["res"]}, *LADDER[1:]], [], "pathways:slices[0].ladder[0]", "'res' is already on this ladder"),
])
def test_ladder_errors(slices, workloads, key, text):
    test_config_errors(dict(slices=slices, workloads=workloads or None), key, text)


def test_a_ladder_needs_kueue():
    test_config_errors(dict(slices=LADDER, kubernetes={"kueue": {"enabled": False}}), "pathways:slices[0].ladder", "needs Kueue")


def test_two_ladders_in_opposite_orders_are_refused():
    test_config_errors(dict(slices=[
        {"name": "a", "tpu": "v6e-16", "ladder": ["x", "y"]}, {"name": "b", "tpu": "v6e-16", "ladder": ["y", "x"]},
        {"name": "x", "tpu": "v6e-16", "spot": True}, {"name": "y", "tpu": "v6e-16", "spot": True}]),
        "pathways:slices", "two ladders put the same slice groups in opposite orders")


def test_the_retry_strategy_written_out_is_kueues_own_default():
    # Source: Kueue v0.19.2's ProvisioningRequestConfig CRD (its pinned Go module, make crds): retryStrategy's default
    import yaml

    crd = yaml.safe_load((admission.CRDS / "kueue" / "kueue.x-k8s.io_provisioningrequestconfigs.yaml").read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == kq.API_VERSION.split("/")[1]]
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["retryStrategy"]["default"] == kq.PROVISIONING_RETRY


def test_kueue_runs_with_the_unadmitted_workload_reasons_why_reads():
    # Kueue v0.19.2 pkg/features/kube_features.go: both gates Beta and off by default; pkg/config/validation.go: the
    # second needs the first. The pinned chart (templates/_helpers.tpl kueue.featureGates) renders them as one flag.
    from infra.offline.charts import chart_objects

    (manager,) = [c.obj for c in chart_objects(example_plan("dev")) if c.obj["kind"] == "Deployment" and c.release == "kueue"]
    args = manager["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--feature-gates=UnadmittedWorkloadsObservability=true,UnadmittedWorkloadsExplicitStatus=true" in args, args
