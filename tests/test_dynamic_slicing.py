"""Pool sets (tpu7x dynamic slicing, docs/dynamic-slicing.md): the refusals before deploy, what the stack makes (one
pool per sub-block under a provision-only policy, GKE's slice controller, the Kueue Topology and slice check), the
worker templates' request for their slice, and the placement the plan predicts (Kueue v0.19.2's BestFit)."""

from __future__ import annotations

import copy

import pytest

from components.constants import NODE_POOL
from components.manifests import jobset as jobset_manifest
from components.manifests import kueue as kueue_manifest
from components.manifests.admission import check_jobset
from components.model.capacity import dynamic_slicing as ds
from components.model.capacity.slice_placement import PoolSet
from components.model.config import ConfigError, as_run, load, load_run, resolve
from components.model.cost.summary import stack_summary, summary_text
from infra.offline.render import pool_facts
from tests.conftest import config_with, in_zone_of, plan_of

IMAGE = "us-docker.pkg.dev/acme/train@sha256:" + "0" * 64
POOL_SET = {"name": "ironwood", "tpu": "tpu7x-128", "reservation": "golden/reservationBlocks/block-a",
            "subBlocks": ["sub-0", "sub-1", "sub-2", "sub-3"]}
WORKLOADS = [
    {"name": "pretrain", "mode": "batch", "topology": "4x4x8", "image": IMAGE, "command": ["python", "train.py"]},
    {"name": "notebook", "mode": "interactive", "topology": "2x2x2", "slices": 2},
]


def config(slices=None, workloads=None, **changes) -> dict:
    changes = {"cluster": {"releaseChannel": "RAPID"}, **changes}
    return config_with(slices=slices or [POOL_SET], workloads=WORKLOADS if workloads is None else workloads,
                       pathwaysVersion="jax-0.9.0", **in_zone_of("tpu7x-128"), **changes)


def model(**kw):
    raw = config(**kw)
    cfg = {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("pathways:")}
    return load({**cfg, "project": raw["gcp:project"], "region": raw["gcp:region"], "zone": raw["gcp:zone"]}, "test")


def refused(**kw) -> list[str]:
    with pytest.raises(ConfigError) as e:
        model(**kw)
    return [str(p) for p in e.value.problems]


def with_group(**changes) -> list[dict]:
    return [{**copy.deepcopy(POOL_SET), **changes}]


# --- the platform's facts, in one table -------------------------------------------------------------------------


def test_legal_topologies_are_the_sub_slices_and_whole_cube_super_slices():
    for t in ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "4x4x12"):
        assert ds.parse(t, sub_slicing=True, cubes=144).topology == t
    for t, nearest in (("4x4x6", "4x4x4"), ("8x4x4", "4x4x8"), ("2x4x2", "2x2x4"), ("3x3x3", "2x4x4")):
        with pytest.raises(ds.TopologyError, match=f"nearest legal: {nearest}"):
            ds.parse(t, sub_slicing=True, cubes=4)
    with pytest.raises(ds.TopologyError, match="subSlicing off"):
        ds.parse("2x2x2", sub_slicing=False, cubes=4)
    assert ds.SliceShape("4x4x8").cubes == 2 and ds.SliceShape("4x4x8").piece_hosts == 16
    assert ds.SliceShape("2x4x4").hosts == 8 and ds.SliceShape("2x4x4").partition == "2x4x4"


def test_the_topology_levels_follow_sub_slicing():
    assert ds.topology_levels(False) == [ds.BLOCK_LABEL, "cloud.google.com/gke-tpu-partition-4x4x4-id", "kubernetes.io/hostname"]
    assert ds.topology_levels(True)[1:-1] == [f"cloud.google.com/gke-tpu-partition-{s}-id"
                                              for s in ("4x4x4", "2x4x4", "2x2x4", "2x2x2", "2x2x1")]


# --- placement: Kueue v0.19.2 BestFit -----------------------------------------------------------------------------


def test_a_sub_slice_goes_to_the_fullest_cube_that_still_holds_it():
    pool = PoolSet(3, True)
    big = pool.place("a", "4x4x4", 1)
    assert big.slices[0].cubes == (0,)
    first = pool.place("b", "2x2x2", 1)
    assert first.slices[0].hosts == ((1, 0), (1, 1))  # cubes 1 and 2 tie: the first by label value
    second = pool.place("c", "2x4x4", 1)
    assert second.slices[0].hosts == tuple((1, h) for h in range(8, 16))  # best fit: cube 1's free half, not cube 2
    assert pool.free_hosts == 48 - 16 - 2 - 8


def test_each_job_of_a_multislice_takes_its_own_run_of_cubes():
    pool = PoolSet(4, False)
    p = pool.place("train", "4x4x8", 2)
    assert [s.cubes for s in p.slices] == [(0, 1), (2, 3)]
    assert all(len(s.hosts) == 32 for s in p.slices)


def test_what_does_not_fit_beside_the_others_waits_with_kueues_reason():
    pool = PoolSet(2, True, "slices-ironwood", "tpu-ironwood")
    pool.place("a", "2x2x1", 1)  # one host of cube 0: 124 chips left
    p = pool.place("b", "4x4x8", 1)
    # Kueue checks the flavor's quota (the pool set's chips) first
    assert p.waits == "insufficient unused quota for google.com/tpu in flavor tpu-ironwood, 4 more needed" and not p.slices
    assert pool.place("c", "4x4x4", 1).slices[0].cubes == (1,)
    # enough chips, but no two whole cubes: topology-aware scheduling's own reason
    pool = PoolSet(3, True, "slices-ironwood", "tpu-ironwood")
    pool.used |= {(0, 0), (2, 0)}
    assert pool.place("d", "4x4x8", 1).waits == 'topology "slices-ironwood" allows to fit only 1 out of 2 slice(s)'
    assert pool.place("e", "2x2x4", 2).waits is None


# --- refusals before anything is created --------------------------------------------------------------------------


def test_a_pool_set_is_tpu7x_cubes_of_one_reservation_block():
    assert any("tpu is tpu7x-128" in p for p in refused(slices=with_group(tpu="tpu7x-256")))
    assert any("<reservation>/reservationBlocks/<block>" in p
               for p in refused(slices=with_group(reservation="golden/reservationBlocks/b/reservationSubBlocks/s")))
    assert any("count 3 disagrees with the 4 subBlocks" in p for p in refused(slices=with_group(count=3)))
    assert any("names a sub-block twice (sub-0)" in p for p in refused(slices=with_group(subBlocks=["sub-0", "sub-0"])))
    assert any("spares cannot be set on a pool set" in p for p in refused(slices=with_group(spares=1)))
    assert "pathways:slices[0].reservation: required with subBlocks" in refused(slices=with_group(reservation=None))[0]


def test_two_pool_sets_may_not_share_a_sub_block():
    # #76: one 16-VM sub-block cannot back two 16-node pools
    other = {**POOL_SET, "name": "second", "subBlocks": ["sub-4", "sub-1"]}
    wl = [{**WORKLOADS[0], "sliceGroup": "ironwood"}]
    assert refused(slices=[POOL_SET, other], workloads=wl) == [
        "pathways:slices[1].subBlocks[1]: 'sub-1' of golden/reservationBlocks/block-a is pool set ironwood's too: a "
        "sub-block is one 16-VM cube, which holds one pool; give each pool set sub-blocks of its own"]
    # the same sub-block name in another block is another cube
    model(slices=[POOL_SET, {**other, "reservation": "golden/reservationBlocks/block-b"}], workloads=wl)


def test_workloads_on_a_pool_set_name_a_topology_that_can_ever_fit():
    problems = refused(workloads=[{"name": "a", "mode": "interactive"}])
    assert problems == ["pathways:workloads[0].topology: required on pool set 'ironwood': the topology of the slice GKE forms "
                        f"for it; legal: {ds.legal_text(True)}"]
    (p,) = refused(workloads=[{"name": "a", "mode": "interactive", "topology": "8x8x8"}])
    assert p.startswith("pathways:workloads[0].topology: 8x8x8 x 1 needs 8 cubes and pool set 'ironwood' has 4 sub-blocks")
    assert p.endswith("nearest legal that fits: 4x8x8, or add sub-blocks")
    (p,) = refused(workloads=[{"name": "a", "mode": "interactive", "topology": "2x4x4", "slices": 9}])
    assert p == ("pathways:workloads[0].slices: 9 slices of 2x4x4 never fit pool set 'ironwood': its 4 sub-blocks hold 8; "
                 "ask for at most 8, or add sub-blocks")
    (p,) = refused(workloads=[{"name": "a", "mode": "interactive", "topology": "4x4x6"}])
    assert p.startswith("pathways:workloads[0].topology: 4x4x6 is not a slice dynamic slicing forms; nearest legal: 4x4x4")
    (p,) = refused(slices=with_group(subSlicing=False), workloads=[{"name": "a", "mode": "interactive", "topology": "2x2x2"}])
    assert "subSlicing off" in p


def test_a_topology_on_fixed_slices_and_what_pool_sets_do_not_take_are_refused():
    fixed = [{"name": "fixed", "tpu": "tpu7x-128"}]
    (p,) = refused(slices=fixed, workloads=[{"name": "a", "mode": "interactive", "topology": "4x4x4"}])
    assert p.startswith("pathways:workloads[0].topology: '4x4x4': a topology is formed on a pool set only")
    problems = refused(cluster={"releaseChannel": "REGULAR"})
    assert any(p.startswith("pathways:cluster.releaseChannel: REGULAR: dynamic slicing") for p in problems)
    assert any("subSlicing is a setting of dynamic slicing" in p for p in refused(slices=[{"name": "f", "tpu": "tpu7x-128", "subSlicing": True}]))


def test_the_gke_floor_includes_dynamic_slicing():
    m = model()
    assert m.gke_version_needs["dynamic slicing"] == ds.SUPER_SLICING_MIN_GKE
    assert m.gke_version_needs["dynamic sub-slices"] == ds.SUB_SLICING_MIN_GKE
    assert "dynamic sub-slices" not in model(slices=with_group(subSlicing=False), workloads=WORKLOADS[:1]).gke_version_needs


# --- what the stack makes -----------------------------------------------------------------------------------------


def test_one_pool_per_sub_block_under_a_provision_only_policy_and_the_slice_controller_on():
    plan = plan_of(config())
    pools = sorted((r for r in plan.by_type(NODE_POOL) if "tpu7x" in str(r.input("nodeConfig.machineType"))), key=lambda r: r.name)
    assert [r.input("nodeConfig.reservationAffinity.values") for r in pools] == [
        [f"golden/reservationBlocks/block-a/reservationSubBlocks/{s}"] for s in POOL_SET["subBlocks"]]
    assert {r.input("nodeCount") for r in pools} == {ds.CUBE_HOSTS}
    (policy,) = plan.by_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.input("workloadPolicy") == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4", "acceleratorTopologyMode": "PROVISION_ONLY"}
    (cluster,) = plan.by_type("gcp:container/cluster:Cluster")
    assert cluster.input("addonsConfig.sliceControllerConfig") == {"enabled": True}


def test_the_tiers_cubes_are_numbered_as_the_sub_blocks_are_declared_past_ten():
    # found by the superpod benchmark (tools/superpod.py): numbered in the plan's URN order, the real-engine tier put
    # sub-block 10 between 1 and 2, and Kueue, ordering equally free cubes by their IDs, placed a slice where the
    # plan's placement (declared order) did not
    from tools.cluster.gke_nodes import cubes

    plan = plan_of(config(slices=with_group(subBlocks=[f"sub-{i}" for i in range(12)])))
    assert cubes(plan) == {f"tpu-ironwood-{i}": ("block-a", i) for i in range(12)}


def test_kueue_places_and_forms_the_slices_of_a_pool_set():
    stack = resolve(model())
    objs = {(o["kind"], o["metadata"]["name"]): o for o in kueue_manifest.objects(stack)}
    topo = objs[("Topology", "slices-ironwood")]
    assert [lv["nodeLabel"] for lv in topo["spec"]["levels"]] == ds.topology_levels(True)
    flavor = objs[("ResourceFlavor", "tpu-ironwood")]["spec"]
    assert flavor["topologyName"] == "slices-ironwood"
    assert flavor["nodeLabels"] == {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "pathways/slice-group": "ironwood"}
    assert objs[("AdmissionCheck", "slices-ironwood")]["spec"] == {"controllerName": "accelerator.gke.io/slice"}
    queue = objs[("ClusterQueue", stack.workloads[0].cluster_queue)]
    assert {"name": "slices-ironwood", "onFlavors": ["tpu-ironwood"]} in queue["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert ("Topology", "slices-ironwood") in kueue_manifest.references(objs[("ResourceFlavor", "tpu-ironwood")])


@pytest.mark.parametrize("name,topology,slices,hosts,level,size", [
    ("pretrain", "4x4x8", 1, 32, "4x4x4", 16),
    ("notebook", "2x2x2", 2, 2, "2x2x2", 2),
])
def test_each_worker_template_asks_for_its_slice(name, topology, slices, hosts, level, size):
    stack = resolve(model())
    w = next(w for w in stack.workloads if w.name == name)
    js = jobset_manifest.jobset(stack, w)
    head, worker = js["spec"]["replicatedJobs"]
    assert f"--instance_type=tpu7x:{topology}" in str(head) and f"--instance_count={slices}" in str(head)
    assert worker["replicas"] == slices and worker["template"]["spec"]["parallelism"] == hosts
    assert "metadata" not in worker["template"]  # no exclusive node pool: slices share the cubes' pools
    pod = worker["template"]["spec"]["template"]
    assert {k: v for k, v in pod["metadata"]["annotations"].items() if not k.startswith("cluster-autoscaler")} == {
        "cloud.google.com/gke-tpu-slice-topology": topology,
        "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block",
        "kueue.x-k8s.io/podset-slice-required-topology": f"cloud.google.com/gke-tpu-partition-{level}-id",
        "kueue.x-k8s.io/podset-slice-size": str(size),
    }
    assert pod["spec"]["nodeSelector"] == {"cloud.google.com/gke-tpu-accelerator": "tpu7x", "pathways/slice-group": "ironwood"}
    (term,) = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == {"matchExpressions": [{"key": f"cloud.google.com/gke-tpu-partition-{level}-state", "operator": "In",
                                          "values": ["HEALTHY", "DEGRADED"]}]}
    assert pod["spec"]["containers"][0]["resources"]["limits"]["google.com/tpu"] == "4"  # x slice size = the piece's chips


# --- the plan -----------------------------------------------------------------------------------------------------


def test_the_plan_shows_where_each_slice_lands_and_the_reshape_time():
    stack = resolve(model(workloads=[*WORKLOADS, {"name": "big", "mode": "interactive", "topology": "4x4x8"}]))
    (ps,) = stack_summary(stack)["poolSets"]
    assert ps["block"] == "block-a" and ps["hosts"] == 64 and ps["freeHosts"] == 28
    placed = {p["workload"]: p for p in ps["placements"]}
    assert placed["pretrain"]["slices"] == [{"subBlocks": ["sub-0", "sub-1"], "hosts": [{"subBlock": "sub-0", "hosts": "0-15"},
                                                                                      {"subBlock": "sub-1", "hosts": "0-15"}]}]
    assert [s["hosts"] for s in placed["notebook"]["slices"]] == [[{"subBlock": "sub-2", "hosts": "0-1"}], [{"subBlock": "sub-2", "hosts": "2-3"}]]
    assert placed["big"]["waits"] == "insufficient unused quota for google.com/tpu in flavor tpu-ironwood, 16 more needed"
    assert (ps["reshapeMinutes"], ps["nodePoolMinutes"]) == (2.0, 10.0)
    text = "\n".join(summary_text(stack_summary(stack)))
    assert "a reshape takes ~2 min, a new node pool ~10 min" in text
    assert "notebook  2x2x2 x2  1      sub-2: 2-3" in text


def test_changing_a_topology_replaces_the_jobset_and_no_node_pool():
    before, after = plan_of(config()), plan_of(config(workloads=[{**WORKLOADS[0], "topology": "4x8x8"}, WORKLOADS[1]]))
    pools = lambda p: {r.urn: r.inputs for r in p.by_type(NODE_POOL)}
    assert pools(before) == pools(after)
    js = lambda p: {r.name: r.inputs for r in p.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")}
    assert js(before)["workload-pretrain"] != js(after)["workload-pretrain"]
    assert js(before)["workload-notebook"] == js(after)["workload-notebook"]


def test_the_offline_admission_refuses_what_the_slice_webhook_would():
    stack, plan = resolve(model()), plan_of(config())
    pools = pool_facts(plan)
    js = jobset_manifest.jobset(stack, stack.workloads[0])
    assert check_jobset(js, pools).violations == []
    pod = js["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]
    pod["metadata"]["annotations"]["kueue.x-k8s.io/podset-slice-size"] = "32"
    pod["metadata"]["annotations"]["cloud.google.com/gke-tpu-slice-topology"] = "4x4x6"
    found = [str(v) for v in check_jobset(js, pools).violations if v.rule == "formed-slice"]
    assert len(found) == 1 and "4x4x6 is not a slice dynamic slicing forms" in found[0]
    pod["metadata"]["annotations"]["cloud.google.com/gke-tpu-slice-topology"] = "4x4x8"
    found = [str(v) for v in check_jobset(js, pools).violations if v.rule == "formed-slice"]
    assert len(found) == 1 and "'32': a 4x4x8 slice is formed of pieces of 16 hosts" in found[0]


def test_a_run_on_a_pool_set_asks_for_its_topology():
    cfg = model(runs={"submitters": [{"kind": "User", "name": "r@example.com"}]})
    with pytest.raises(ConfigError) as e:
        load_run(cfg, {"name": "exp", "image": IMAGE})
    assert [str(p) for p in e.value.problems] == [
        f"run.topology: required on pool set 'ironwood': the topology of the slice GKE forms for it; legal: {ds.legal_text(True)}"]
    stack = resolve(load_run(cfg, {"name": "exp", "image": IMAGE, "topology": "2x2x4", "slices": 2}))
    run = as_run(stack, stack.workloads[-1])
    worker = jobset_manifest.jobset(stack, run)["spec"]["replicatedJobs"][1]
    assert worker["replicas"] == 2 and worker["template"]["spec"]["parallelism"] == 4
    assert worker["template"]["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-slice-required-topology"] == \
        "cloud.google.com/gke-tpu-partition-2x2x4-id"


def test_the_plan_tells_what_the_stack_does_not_install_and_counts_no_fixed_slices():
    notices = stack_summary(resolve(model()))["notices"]
    assert any(n.startswith("pool set ironwood: install the Kueue slice controller") and "AdmissionCheck slices-ironwood stays inactive" in n
               for n in notices), notices
    assert not any("running workloads want" in n for n in notices)  # slices of any size: the pool sets table says what waits


def test_the_review_says_what_kueue_will_not_change_in_place():
    from infra.offline.diff import diff

    changes = diff(plan_of(config()), plan_of(config(slices=with_group(subSlicing=False), workloads=WORKLOADS[:1])))
    topology = next(c for c in changes if c.type.endswith(":Topology"))
    assert any(n.startswith("the real `pulumi up` fails on this change (spec.levels") and "needs a new slice-group name" in n
               for n in topology.notes), topology.notes
    fixed = diff(plan_of(config()), plan_of(config(slices=[{**{k: v for k, v in POOL_SET.items() if k != "subBlocks"}, "count": 4}],
                                                   workloads=[{"name": "a", "mode": "interactive"}])))
    flavor = next(c for c in fixed if c.type.endswith(":ResourceFlavor"))
    assert any("spec.topologyName" in n and "Kueue v0.19.2 makes" in n for n in flavor.notes), flavor.notes


def test_a_topology_is_a_short_string_said_in_one_line():
    problems = refused(workloads=[{"name": "a", "mode": "interactive", "topology": "4x" * 20 + "4"}])
    assert problems == ["pathways:workloads[0].topology: '" + "4x" * 20 + "4' is not valid: string should have at most 20 characters"]


def test_a_pool_set_has_a_cluster_queue_of_its_own_so_its_check_holds_nothing_else():
    # Kueue makes a ClusterQueue with an inactive admission check inactive as a whole (v0.19.2
    # pkg/cache/scheduler/clusterqueue.go): the pool set's check (its slice controller) is on its own queue only
    config = config_with(slices=[{"name": "fixed", "tpu": "tpu7x-128", "count": 1},
                                 {"name": "cubes", "tpu": "tpu7x-128", "reservation": "r/reservationBlocks/b", "subBlocks": ["s0", "s1"]}],
                         cluster={"releaseChannel": "RAPID"}, pathwaysVersion="jax-0.9.0", **in_zone_of("tpu7x"),
                         workloads=[{"name": "a", "mode": "interactive", "sliceGroup": "cubes", "topology": "2x2x2"},
                                    {"name": "b", "mode": "interactive", "sliceGroup": "cubes", "topology": "2x2x4"},
                                    {"name": "c", "mode": "interactive", "sliceGroup": "fixed"}])
    plan = plan_of(config)
    queues = {r.input("metadata.name"): r.input("spec") for r in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")}
    assert set(queues) == {"pathways", "slices-cubes"}
    assert "admissionChecksStrategy" not in queues["pathways"]
    assert queues["slices-cubes"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "slices-cubes", "onFlavors": ["tpu-cubes"]}]}
    assert queues["pathways"]["cohortName"] == queues["slices-cubes"]["cohortName"]  # the head pool's quota, borrowed
    head = {f["name"]: f for f in queues["slices-cubes"]["resourceGroups"][0]["flavors"]}["pathways-head"]
    assert {r["name"]: r["nominalQuota"] for r in head["resources"]}["cpu"] == "0"
    local = {r.input("metadata.name"): r.input("spec.clusterQueue") for r in plan.by_type("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")}
    assert local["c"] == "pathways" and local["a"] == local["b"] == "slices-cubes"
    # the pool set's JobSets one after another, in the stack file's order (Kueue admits equal priorities oldest first)
    jobsets = {r.input("metadata.name"): r for r in plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")}
    assert jobsets["a"].urn in jobsets["b"].dependencies and jobsets["b"].urn not in jobsets["a"].dependencies
    assert not any(j.urn in jobsets["c"].dependencies for j in jobsets.values())
