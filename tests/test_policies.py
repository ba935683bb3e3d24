"""Each policy with a resource or config that violates it; committed stacks pass every rule."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
import yaml

import infra.offline.__main__ as offline_cli
from infra.offline.engine import Plan, Registration
from infra.offline.policy_runner import PolicyConfigError, run_policies
from policies.rules import ALL_POLICIES
from tests.conftest import config_with, example_config, example_path, example_plan, in_zone_of, plan_of

VERSION = "jax-0.9.0"


def violations(plan, config=None):
    return run_policies(plan, ALL_POLICIES, config)


def names(plan, config=None):
    return {v.policy for v in violations(plan, config)}


def _set(d, path, value):
    parts = path.split(".")
    for p in parts[:-1]:
        d = d[int(p)] if isinstance(d, list) else d.setdefault(p, {})
    if isinstance(d, list):
        d[int(parts[-1])] = value
    else:
        d[parts[-1]] = value


def mutate(plan: Plan, type_: str, name: str, path: str = "", value=None, **options) -> Plan:
    """A copy of the plan with one registration's input (dotted path) or options changed."""
    out = []
    for r in plan.resources:
        if r.type == type_ and r.name == name:
            inputs = copy.deepcopy(r.inputs)
            if path:
                _set(inputs, path, value)
            r = dataclasses.replace(r, inputs=inputs, options={**r.options, **options})
        out.append(r)
    return Plan(plan.stack, out, plan.outputs)


def add(plan: Plan, type_: str, name: str, inputs: dict, **fields) -> Plan:
    urn = f"urn:pulumi:{plan.stack}::pathways::{type_}::{name}"
    options = {"protect": False, "deleteBeforeReplace": False, "replaceOnChanges": [], "ignoreChanges": [], "customTimeouts": {}, "provider": ""}
    reg = Registration(urn, type_, name, "", True, inputs, tuple(fields.get("dependencies", ())), options)
    return Plan(plan.stack, plan.resources + [reg], plan.outputs)


BATCH = plan_of(config_with(
    pathwaysVersion=VERSION,
    workloads=[{"name": "train", "image": "example.com/t:1", "colocatedPython": {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}},
               {"name": "nb", "mode": "interactive"}],
))
TPU7X = plan_of(config_with(slices=[{"name": "main", "tpu": "tpu7x-128", "count": 2}], **in_zone_of("tpu7x")))
NO_WORKLOADS = plan_of(config_with())
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
POOL = "gcp:container/nodePool:NodePool"
HEAD_C = "spec.replicatedJobs.0.template.spec.template.spec"


def test_committed_stacks_pass_every_rule(committed_stack):
    _, plan = committed_stack
    assert violations(plan) == []


def test_pack_has_twenty_rules_with_descriptions():
    assert len(ALL_POLICIES) == 20 and len({p.name for p in ALL_POLICIES}) == 20
    assert all(p.description and p.enforcement_level is not None for p in ALL_POLICIES)


def test_base_plan_is_clean():
    assert violations(BATCH) == []
    assert violations(TPU7X) == []


CASES = [
    ("pathways-single-zone", lambda p: mutate(p, POOL, "slices-main-1", "location", "us-east5-c"), "not the cluster's zone us-east5-b"),
    ("pathways-single-zone", lambda p: mutate(p, "gcp:storage/bucket:Bucket", "scratch", "location", "US"), "put it in the TPUs' region"),
    ("pathways-head-machine-fits", lambda p: mutate(p, POOL, "head-pool", "nodeConfig.machineType", "n2-standard-32"), "n2-standard-32 cannot hold JobSet train"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(p, POOL, "slices-main-0", "nodeCount", 3), "has 4 hosts, not 3 nodes"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(p, POOL, "slices-main-0", "placementPolicy", None), "without placement_policy"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(mutate(p, POOL, "slices-main-0", "nodeCount", None), POOL, "slices-main-0", "autoscaling", {"totalMinNodeCount": 0, "totalMaxNodeCount": 4, "locationPolicy": "ANY"}), "sets only total node limits"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(TPU7X, POOL, "slices-main-0", "placementPolicy.type", "COMPACT"), "GKE stores none, so every update would replace the slice"),
    ("pathways-images-pinned", lambda p: mutate(p, JOBSET, "workload-train", f"{HEAD_C}.containers.0.image", "example.com/t:latest"), "uses 'example.com/t:latest'"),
    ("pathways-images-pinned", lambda p: mutate(p, JOBSET, "workload-nb", f"{HEAD_C}.containers.0.image", "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.6.0"), "use one jax-<version> everywhere"),
    ("pathways-images-pinned", lambda p: mutate(p, JOBSET, "workload-train", "spec.replicatedJobs.1.template.spec.template.spec.initContainers.0.image", "example.com/sc:20261101-python_3.12-jax_0.6.0"), "does not match Pathways jax-0.9.0"),
    ("pathways-one-cache-location", lambda p: mutate(p, JOBSET, "workload-nb", f"{HEAD_C}.containers.0.args.4", "--gcs_scratch_location=gs://other/cache"), "use the stack's one cacheLocation"),
    ("pathways-bucket-hardening", lambda p: mutate(p, "gcp:storage/bucket:Bucket", "scratch-artifacts", "lifecycleRules.0.condition.age", 0), "a Delete rule with age 0 empties the bucket"),
    ("pathways-bucket-hardening", lambda p: mutate(p, "gcp:storage/bucket:Bucket", "scratch", "forceDestroy", True), "force_destroy"),
    ("pathways-bucket-hardening", lambda p: mutate(p, "gcp:storage/bucket:Bucket", "scratch", "publicAccessPrevention", "inherited"), "public_access_prevention"),
    ("pathways-storage-iam-least-privilege", lambda p: add(p, "gcp:projects/iAMMember:IAMMember", "wide", {"role": "roles/storage.objectAdmin", "member": "serviceAccount:x@y.iam.gserviceaccount.com", "project": "p"}), "granted project-wide"),
    # security #73.1: storage.editor project-wide holds storage.hmacKeys.* (a key for any service account)
    ("pathways-storage-iam-least-privilege", lambda p: add(p, "gcp:projects/iAMMember:IAMMember", "editor", {"role": "roles/storage.editor", "member": "serviceAccount:x@y.iam.gserviceaccount.com", "project": "p"}), "It holds storage.hmacKeys.*"),
    ("pathways-storage-iam-least-privilege", lambda p: add(p, "gcp:projects/iAMMember:IAMMember", "owner", {"role": "roles/owner", "member": "user:a@example.com", "project": "p"}), "primitive role roles/owner"),
    ("pathways-storage-iam-least-privilege", lambda p: add(p, "gcp:storage/bucketIAMMember:BucketIAMMember", "public", {"role": "roles/storage.objectViewer", "member": "allUsers", "bucket": "b"}), "allUsers is granted"),
    ("pathways-storage-iam-least-privilege", lambda p: add(p, "gcp:projects/iAMCustomRole:IAMCustomRole", "scratch-role", {"roleId": "r", "permissions": ["storage.buckets.get", "storage.objects.delete"]}), "extra: ['storage.objects.delete']"),
    ("pathways-node-identity", lambda p: mutate(p, POOL, "head-pool", "nodeConfig.serviceAccount", "123-compute@developer.gserviceaccount.com"), "Compute default service account"),
    ("pathways-node-identity", lambda p: mutate(p, POOL, "slices-main-0", "nodeConfig.shieldedInstanceConfig.enableSecureBoot", False), "secure boot"),
    ("pathways-cluster-hardening", lambda p: mutate(p, "gcp:container/cluster:Cluster", "cluster", "workloadIdentityConfig", None), "enable Workload Identity"),
    ("pathways-jobset-lifecycle", lambda p: mutate(p, JOBSET, "workload-train", deleteBeforeReplace=False), "set delete_before_replace"),
    ("pathways-tpu-pool-delete-before-replace", lambda p: mutate(p, POOL, "slices-main-0", deleteBeforeReplace=False), "TPU pool tpu-main-0: set delete_before_replace"),
    ("pathways-network-exposure", lambda p: mutate(p, "gcp:compute/firewall:Firewall", "pathways-ports-allow", "sourceRanges", ["0.0.0.0/0"]), "opens Pathways ports [8080, 8471, 29000, 29001, 29002, 29005, 29006, 50051] to the internet"),
    ("pathways-network-exposure", lambda p: mutate(p, "gcp:container/cluster:Cluster", "cluster", "masterAuthorizedNetworksConfig", {"cidrBlocks": [{"cidrBlock": "0.0.0.0/0"}]}), "is the whole internet"),
    ("pathways-network-exposure", lambda p: Plan(p.stack, [r for r in p.resources if r.type != "gcp:compute/routerNat:RouterNat"], p.outputs), "private nodes in a VPC without Cloud NAT"),
    ("pathways-kueue-quota", lambda p: mutate(p, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "kueue-clusterqueue-pathways", "spec.resourceGroups.0.flavors.0.resources.2.nominalQuota", "9999"), "has a google.com/tpu quota of 9999, but its pools hold 32 chips"),
    ("pathways-kueue-quota", lambda p: mutate(p, JOBSET, "workload-train", "metadata.labels", {"pathways/workload": "train"}), "JobSet train is not queued"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(TPU7X, POOL, "slices-main-0", "placementPolicy.policyName", None), "multi-host tpu7x slice without a workload policy"),
    ("pathways-cluster-hardening", lambda p: mutate(p, "gcp:container/cluster:Cluster", "cluster", "enableShieldedNodes", False), "enable shielded nodes"),
    ("pathways-head-machine-fits", lambda p: mutate(NO_WORKLOADS, POOL, "head-pool", "nodeConfig.machineType", "n2-standard-8"), "n2-standard-8 cannot hold a default batch head pod"),
    ("pathways-coordinator-label-length", lambda p: mutate(p, JOBSET, "workload-nb", "metadata.name", "n" * 30), "is 79 characters (> 63)"),
    # #76.2: one object, two owners (any kind, any version of its group)
    ("pathways-unique-kubernetes-objects", lambda p: add(p, "kubernetes:kueue.x-k8s.io/v1beta1:LocalQueue", "again", {"metadata": {"name": "train", "namespace": "pathways"}}),
     "LocalQueue train in namespace pathways (kueue.x-k8s.io) is made by two resources, urn:pulumi:test::pathways::pathways:k8s:Kueue$kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::kueue-localqueue-pathways-train and "),
    ("pathways-unique-kubernetes-objects", lambda p: add(p, "kubernetes:core/v1:Namespace", "twice", {"metadata": {"name": "pathways"}}), "Namespace pathways (core) is made by two resources"),
]


@pytest.mark.parametrize("policy,breaker,message", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_policy_fires(policy, breaker, message):
    found = [v for v in violations(breaker(BATCH)) if v.policy == policy]
    assert any(message in v.message for v in found), [f"{v.policy}: {v.message}" for v in violations(breaker(BATCH))]


def test_patches_components_and_unnamed_objects_are_no_second_owner():
    plan = add(BATCH, "kubernetes:core/v1:NamespacePatch", "label", {"metadata": {"name": "pathways"}})
    plan = add(plan, "kubernetes:core/v1:ConfigMap", "auto", {"metadata": {"namespace": "pathways"}})
    plan = add(plan, "kubernetes:core/v1:ConfigMap", "auto2", {"metadata": {"namespace": "pathways"}})
    assert "pathways-unique-kubernetes-objects" not in names(plan)
    # the same name in another namespace is another object
    assert "pathways-unique-kubernetes-objects" not in names(add(BATCH, "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue", "x",
                                                              {"metadata": {"name": "train", "namespace": "elsewhere"}}))


def test_jobset_must_depend_on_the_controller():
    plan = BATCH
    js = plan.one(JOBSET, "workload-train")
    release = plan.one("kubernetes:helm.sh/v4:Chart", "jobset").urn
    broken = Plan(plan.stack, [dataclasses.replace(r, dependencies=tuple(d for d in r.dependencies if d != release)) if r is js else r for r in plan.resources], plan.outputs)
    found = [v for v in violations(broken) if v.policy == "pathways-jobset-lifecycle"]
    assert [v.urn for v in found] == [js.urn] and "does not depend on the JobSet controller" in found[0].message


@pytest.mark.parametrize("breaker,message", [
    (lambda p: mutate(p, "gcp:container/cluster:Cluster", "cluster", "privateClusterConfig", {"enablePrivateNodes": False, "enablePrivateEndpoint": False}), "public node IPs"),
    (lambda p: mutate(mutate(p, "gcp:container/cluster:Cluster", "cluster", "privateClusterConfig.enablePrivateEndpoint", False),
                      "gcp:container/cluster:Cluster", "cluster", "masterAuthorizedNetworksConfig", None), "control plane open to the internet"),
    (lambda p: Plan(p.stack, [r for r in p.resources if r.name != "pathways-ports-deny"], p.outputs), "are not closed to other sources"),
])
def test_protected_stacks_must_be_private_with_closed_pathways_ports(breaker, message):
    prod = example_plan("prod")
    assert not [v for v in violations(prod) if v.policy == "pathways-network-exposure"]
    found = [v.message for v in violations(breaker(prod)) if v.policy == "pathways-network-exposure"]
    assert any(message in m for m in found), found
    # the same change in an unprotected stack is allowed (dev may open its endpoint on purpose)
    dev = example_plan("dev")
    if "public" in message or "open to the internet" in message:
        assert not [v for v in violations(breaker(dev)) if v.policy == "pathways-network-exposure" and message in v.message]


def test_protected_stacks_need_protect_and_deletion_protection():
    prod = example_plan("prod")
    unprotected = mutate(mutate(prod, "gcp:container/cluster:Cluster", "cluster", "deletionProtection", False, protect=False),
                         "gcp:storage/bucket:Bucket", "scratch", protect=False)
    found = {(v.policy, v.message.split(" ")[0]) for v in violations(unprotected)}
    assert ("pathways-cluster-hardening", "cluster") in found and ("pathways-bucket-hardening", "bucket") in found
    cluster_name = prod.one("gcp:container/cluster:Cluster").input("name")
    assert sorted(v.message for v in violations(unprotected) if v.policy == "pathways-cluster-hardening") == [
        f"cluster {cluster_name} is in a protected stack without `protect`; set pathways:protected: true",
        f"cluster {cluster_name} is in a protected stack without deletion_protection; set pathways:protected: true",
    ]


def test_protection_follows_the_stacks_own_flag_not_its_name():
    # pathways:protected: true on a stack not called prod turns the protected-stack rules on ...
    staging = example_config("staging")  # the example as written (a team may have removed its own staging)
    flagged = plan_of({**staging, "pathways:protected": True}, "staging")
    assert flagged.one("gcp:container/cluster:Cluster").input("resourceLabels") == {"pathways-protected": "true"}
    opened = mutate(flagged, "gcp:container/cluster:Cluster", "cluster", "privateClusterConfig.enablePrivateNodes", False)
    assert [v.message for v in violations(opened) if v.policy == "pathways-network-exposure" and "public node IPs" in v.message]
    # ... and without the flag the same change in the same stack is its own business
    plain = mutate(plan_of(staging, "staging"), "gcp:container/cluster:Cluster", "cluster", "privateClusterConfig.enablePrivateNodes", False)
    assert not [v for v in violations(plain) if v.policy == "pathways-network-exposure" and "public node IPs" in v.message]
    # a stack the pack config lists as protected must set the flag (a guard, not a second source of truth)
    prod = example_config("prod")
    forgot = plan_of({**prod, "pathways:protected": False, "pathways:cluster": {**prod["pathways:cluster"], "deletionProtection": True}}, "prod")
    assert [v.message for v in violations(forgot) if v.policy == "pathways-cluster-hardening"] == [
        "stack prod must be protected (policy config protectedStacks) but pathways:protected is not true; "
        "set pathways:protected: true in its stack file"]
    assert not [v for v in violations(forgot, {"pathways-cluster-hardening": {"protectedStacks": []}}) if v.policy == "pathways-cluster-hardening"]


def test_an_exclusion_that_has_ended_protects_nothing(monkeypatch):
    rule = __import__("importlib").import_module("policies.rules.disruption_policy")

    prod = example_plan("prod")
    assert not [v for v in violations(prod) if v.policy == "pathways-disruption-policy"]
    monkeypatch.setattr(rule, "now", lambda: __import__("datetime").datetime(2027, 4, 11, tzinfo=__import__("datetime").timezone.utc))
    found = [v.message for v in violations(prod) if v.policy == "pathways-disruption-policy"]
    assert len(found) == 5 and all("can be upgraded (its slice recreated) at any time" in m for m in found)


def test_enforcement_levels_can_be_overridden():
    bad = CASES[0][1](BATCH)
    advisory = violations(bad, {"pathways-single-zone": "advisory"})
    assert {v.enforcement for v in advisory if v.policy == "pathways-single-zone"} == {"advisory"}
    assert not [v for v in violations(bad, {"pathways-single-zone": {"enforcementLevel": "disabled"}}) if v.policy == "pathways-single-zone"]
    with pytest.raises(PolicyConfigError, match="unknown policies in config: no-such-rule"):
        violations(bad, {"no-such-rule": "advisory"})


@pytest.mark.parametrize("policy", ["pathways-images-pinned", "pathways-storage-iam-least-privilege", "pathways-bucket-hardening", "pathways-single-zone"])
def test_unsafe_plan_exits_nonzero_naming_rule_and_resource(monkeypatch, capsys, tmp_path, policy):
    breaker = next(c[1] for c in CASES if c[0] == policy)
    real_run = offline_cli.run
    monkeypatch.setattr(offline_cli, "run", lambda *a, **k: breaker(real_run(*a, **k)))
    path = tmp_path / "Pulumi.unsafe.yaml"

    path.write_text(yaml.safe_dump({"config": config_with(
        pathwaysVersion=VERSION,
        workloads=[{"name": "train", "image": "example.com/t:1", "colocatedPython": {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0"}},
                   {"name": "nb", "mode": "interactive"}])}))
    assert offline_cli.main(["plan", "--config", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"[mandatory] {policy}" in out
    assert offline_cli.main(["plan", "--config", str(path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    hits = [v for v in doc["policyViolations"] if v["policy"] == policy]
    assert hits and all(set(v) == {"policy", "enforcement", "urn", "message"} for v in hits)
    advisory = tmp_path / "advisory.json"
    advisory.write_text(json.dumps({policy: "advisory"}))
    assert offline_cli.main(["plan", "--config", str(path), "--policy-config", str(advisory)]) == 0


def test_a_stack_overrides_levels_with_its_own_config_file(monkeypatch, capsys, tmp_path):
    import infra.offline.policy_runner as runner

    real_run = offline_cli.run
    monkeypatch.setattr(offline_cli, "run", lambda *a, **k: CASES[0][1](real_run(*a, **k)))
    path = tmp_path / "Pulumi.unsafe.yaml"

    path.write_text(yaml.safe_dump({"config": config_with(pathwaysVersion=VERSION, workloads=[{"name": "nb", "mode": "interactive"}])}))
    monkeypatch.setattr(runner, "POLICY_CONFIG_DIR", tmp_path)
    assert offline_cli.main(["plan", "--config", str(path)]) == 1
    (tmp_path / "config.unsafe.json").write_text(json.dumps({"pathways-single-zone": "advisory"}))
    assert offline_cli.main(["plan", "--config", str(path)]) == 0
    assert "[advisory] pathways-single-zone" in capsys.readouterr().out


def test_pack_entry_point_only_builds_the_pack(monkeypatch):
    """policies/__main__.py as the policy host runs it: builds one PolicyPack with every rule."""
    import runpy
    from pathlib import Path

    import pulumi_policy

    built = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kw: built.append(kw))
    runpy.run_path(str(Path(__file__).resolve().parents[1] / "policies"), run_name="__main__")
    assert len(built) == 1
    assert built[0]["name"] == "pathways-gke" and built[0]["policies"] == ALL_POLICIES


def test_the_runner_takes_a_list_of_validate_functions_like_the_sdk():
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

    seen = []
    policy = ResourceValidationPolicy(
        name="two-checks", description="two validate functions", enforcement_level=EnforcementLevel.ADVISORY,
        validate=[lambda args, report: seen.append("a"), lambda args, report: report("b fired")],
    )
    found = run_policies(BATCH, [policy])
    # both functions ran for every resource: one append and one report each
    assert seen and len(seen) == len(found)
    assert {v.message for v in found} == {"b fired"}


def test_cache_locations_per_bucket_limit_is_inclusive():
    bucket = BATCH.outputs["bucketUrl"]  # gs://<scratch bucket>
    two = mutate(BATCH, JOBSET, "workload-nb", f"{HEAD_C}.containers.0.args.4", f"--gcs_scratch_location={bucket}/other-cache")
    name = bucket.removeprefix("gs://")
    found = [v.message for v in violations(two, {"pathways-one-cache-location": {"maxLocationsPerBucket": 2}}) if "cache locations;" in v.message]
    assert found == [f"bucket {name} has 2 cache locations; Pathways allows fewer than 2"]
    assert not [v for v in violations(two, {"pathways-one-cache-location": {"maxLocationsPerBucket": 3}}) if "cache locations;" in v.message]


def test_policy_property_lookup():
    from policies.rules.common import get

    props = {"a": {"b": {"c": 0}}, "l": [1]}
    assert get(props, "a.b.c", 7) == 0  # a falsy value is a value
    assert get(props, "a.x.c", 7) == 7 and get(props, "l.0", "d") == "d" and get(props, "a.b.c.d") is None


def test_coordinator_label_of_exactly_63_characters_passes():
    def with_subdomain(k: int):
        return mutate(mutate(BATCH, JOBSET, "workload-nb", "metadata.name", "nb"), JOBSET, "workload-nb", "spec.network.subdomain", "s" * k)

    fired = lambda plan: [v for v in violations(plan) if v.policy == "pathways-coordinator-label-length"]
    assert fired(with_subdomain(42)) == []  # "nb-pathways-head-0-0." (21) + 42 = 63: a label value's limit
    assert [v.message.split(" is ")[1] for v in fired(with_subdomain(43))] == ["64 characters (> 63); shorten the name or set network.subdomain"]


def test_cluster_default_pool_identity():
    cluster = "gcp:container/cluster:Cluster"
    fired = lambda plan: [v.message for v in violations(plan) if v.policy == "pathways-node-identity" and "(default pool)" in v.message]
    assert fired(mutate(BATCH, cluster, "cluster", "nodeConfig", None)) == []  # nothing to check without a node config
    name = BATCH.one(cluster).input("name")
    assert fired(mutate(BATCH, cluster, "cluster", "nodeConfig.serviceAccount", "default")) == [
        f"cluster {name} (default pool) runs as the Compute default service account; set node_config.service_account to the stack's node SA"]


def test_pathways_images_are_tagged_by_jax_version():
    image = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:2026-11-01"
    found = [v.message for v in violations(mutate(BATCH, JOBSET, "workload-nb", f"{HEAD_C}.containers.0.image", image))
             if v.policy == "pathways-images-pinned"]
    assert f"JobSet nb uses Pathways image {image!r}; tag it jax-<version> matching the program's JAX" in found


# --- Boundaries and branches the mutation run found unpinned (issue #19) ---

def _only(plan, policy_name):
    return [v.message for v in violations(plan) if v.policy == policy_name]


def test_head_pod_of_exactly_the_allocatable_fits():
    # GKE node allocatable for n2-standard-64 (64 vCPU, 256 GiB), from GKE's "Standard cluster
    # architecture / node allocatable" tables: CPU reserves 6% of core 1, 1% of core 2, 0.5% of cores
    # 3-4, 0.25% of the 60 above = 0.23; memory reserves 25%/20%/10%/6%/2% of 4/4/8/112/128 GiB =
    # 11.88 GiB plus the 100 MiB eviction threshold; our DaemonSets take 1 vCPU and 2 GiB more.
    cpu, memory_gib = "62.77", "242.02234375"
    head = {"containers": [{"name": "pathways-rm", "image": "example.com/t:1",
                            "resources": {"requests": {"cpu": cpu, "memory": f"{memory_gib}Gi"}}}]}
    exact = mutate(BATCH, JOBSET, "workload-train", HEAD_C, head)
    assert _only(exact, "pathways-head-machine-fits") == []
    over_cpu = mutate(exact, JOBSET, "workload-train", f"{HEAD_C}.containers.0.resources.requests.cpu", "62.771")
    assert _only(over_cpu, "pathways-head-machine-fits") == [
        "n2-standard-64 cannot hold JobSet train (62.771 vCPU, 242.0 GiB); use n2-standard-80 or larger"]
    over_memory = mutate(exact, JOBSET, "workload-train", f"{HEAD_C}.containers.0.resources.requests.memory", "242.0224Gi")
    assert len(_only(over_memory, "pathways-head-machine-fits")) == 1


def test_jobset_may_depend_on_the_crd_instead_of_the_chart():
    js = BATCH.one(JOBSET, "workload-train")

    def depending_on_crd(crd_name):
        plan = add(BATCH, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "jobset-crd", {"metadata": {"name": crd_name}})
        crd = plan.one("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "jobset-crd").urn
        return Plan(plan.stack, [dataclasses.replace(r, dependencies=(crd,)) if r.urn == js.urn else r for r in plan.resources], plan.outputs)

    assert _only(depending_on_crd("jobsets.jobset.x-k8s.io"), "pathways-jobset-lifecycle") == []
    assert _only(depending_on_crd("jobs.batch.example.com"), "pathways-jobset-lifecycle") == [
        "JobSet train does not depend on the JobSet controller; add depends_on the JobSet chart"]


def test_kueue_quota_of_a_flavor_without_pools():
    queue = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
    # the head flavor has no slice-group label: it holds no TPU chips
    head_tpu = mutate(BATCH, queue, "kueue-clusterqueue-pathways", "spec.resourceGroups.0.flavors.1.resources.2.nominalQuota", "1")
    assert _only(head_tpu, "pathways-kueue-quota") == [
        "ClusterQueue pathways: flavor pathways-head has a google.com/tpu quota of 1, but its pools hold 0 chips; derive quotas from the pools"]
    # a flavor naming a slice group that has no pools
    ghost = mutate(BATCH, "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor", "kueue-resourceflavor-tpu-main", "spec.nodeLabels.pathways/slice-group", "ghost")
    assert _only(ghost, "pathways-kueue-quota") == [
        "ClusterQueue pathways: flavor tpu-main has a google.com/tpu quota of 32, but its pools hold 0 chips; derive quotas from the pools"]


def test_custom_role_message_names_extra_and_missing_permissions():
    plan = add(BATCH, "gcp:projects/iAMCustomRole:IAMCustomRole", "scratch-role", {"roleId": "r", "permissions": ["storage.buckets.get", "storage.objects.delete"]})
    [message] = _only(plan, "pathways-storage-iam-least-privilege")
    # the five permissions of PLATFORM-FACTS §IAM, less the one kept
    assert message.endswith("extra: ['storage.objects.delete'], missing: ['storage.buckets.update', 'storage.objects.create', "
                            "'storage.objects.get', 'storage.objects.list']"), message


def test_two_host_tpu_pool_needs_compact_placement_with_topology():
    # v5p-16: 8 chips on ct5p-hightpu-4t (4 chips a VM) = 2 hosts, topology 2x2x2 (GKE's TPU v5p table)
    plan = plan_of(config_with(slices=[{"name": "main", "tpu": "v5p-16", "count": 1}]))
    assert _only(plan, "pathways-tpu-pool-matches-catalog") == []
    no_placement = mutate(plan, POOL, "slices-main-0", "placementPolicy", None)
    assert any("is multi-host (2 x ct5p-hightpu-4t) without placement_policy" in m for m in _only(no_placement, "pathways-tpu-pool-matches-catalog"))
    no_topology = mutate(plan, POOL, "slices-main-0", "placementPolicy.tpuTopology", None)
    assert any("is multi-host (2 x ct5p-hightpu-4t) without placement_policy" in m for m in _only(no_topology, "pathways-tpu-pool-matches-catalog"))


CLUSTER_T = "gcp:container/cluster:Cluster"
BUCKET_T = "gcp:storage/bucket:Bucket"


@pytest.mark.parametrize(("policy", "breaker", "expected"), [
    ("pathways-single-zone", lambda p: mutate(mutate(p, CLUSTER_T, "cluster", "location", "us-east5"), CLUSTER_T, "cluster", "nodeLocations", None),
     "cluster pathways-test spreads nodes over every zone of us-east5; set node_locations to the stack's one zone"),
    ("pathways-single-zone", lambda p: mutate(p, CLUSTER_T, "cluster", "nodeLocations", ["us-east5-a", "us-east5-b"]),
     "cluster pathways-test spreads nodes over ['us-east5-a', 'us-east5-b']; set node_locations to the stack's one zone"),
    ("pathways-bucket-hardening", lambda p: mutate(p, BUCKET_T, "scratch", "uniformBucketLevelAccess", False),
     "bucket test-proj-123-test-pathways: set uniform_bucket_level_access = true"),
    ("pathways-head-machine-fits", lambda p: mutate(p, POOL, "head-pool", "nodeConfig.machineType", "n9-standard-64"),
     "'n9-standard-64' is not a machine type this stack knows"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(plan_of(config_with(slices=[{"name": "main", "tpu": "v6e-4"}])), POOL, "slices-main-0", "placementPolicy", {"type": "COMPACT", "tpuTopology": "2x2"}),
     "pool tpu-main-0 is single-host (ct6e-standard-4t) but sets tpu_topology 2x2; remove it"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(p, POOL, "slices-main-0", "nodeCount", 0),
     "pool tpu-main-0 has no node count; set node_count to the slice's hosts"),
    ("pathways-tpu-pool-matches-catalog", lambda p: mutate(p, POOL, "slices-main-0", "placementPolicy.tpuTopology", "4x5"),
     "pool tpu-main-0: topology 4x5 is not a v6e topology"),
])
def test_policy_message(policy, breaker, expected):
    found = _only(breaker(BATCH), policy)
    assert any(m.startswith(expected) for m in found), found


def test_a_source_range_that_is_no_cidr_is_not_the_internet():
    plan = mutate(BATCH, "gcp:compute/firewall:Firewall", "pathways-ports-allow", "sourceRanges", ["not-a-cidr"])
    assert _only(plan, "pathways-network-exposure") == []


def test_cache_locations_per_bucket_default_limit_is_50():
    # the schema default, filled in by the runner as Pulumi's engine does (ReconcilePolicyPackConfig)
    bucket = BATCH.outputs["bucketUrl"]
    base = BATCH.one(JOBSET, "workload-nb").input(f"{HEAD_C}.containers.0.args")

    def with_locations(n: int):
        extra = [f"--gcs_scratch_location={bucket}/cache-{i}" for i in range(n - 1)]
        return mutate(BATCH, JOBSET, "workload-nb", f"{HEAD_C}.containers.0.args", [*base, *extra])

    def limit_messages(plan):
        return [v.message for v in violations(plan) if "cache locations;" in v.message]

    assert limit_messages(with_locations(49)) == []
    assert limit_messages(with_locations(50)) == [f"bucket {bucket.removeprefix('gs://')} has 50 cache locations; Pathways allows fewer than 50"]


def test_kueue_quota_counts_a_pool_without_a_size_as_empty_and_a_flavor_without_tpus_as_no_quota():
    queue, pool = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "gcp:container/nodePool:NodePool"
    # a TPU pool with neither nodeCount nor autoscaling holds no chips: its group's quota is over by that pool
    unsized = mutate(BATCH, pool, "slices-main-1", "nodeCount", None)
    assert _only(unsized, "pathways-kueue-quota") == [
        "ClusterQueue pathways: flavor tpu-main has a google.com/tpu quota of 32, but its pools hold 16 chips; derive quotas from the pools"]
    # a flavor that lists no google.com/tpu resource asks for no chips
    cpu_only = mutate(BATCH, queue, "kueue-clusterqueue-pathways", "spec.resourceGroups.0.flavors.1.resources",
                      [{"name": "cpu", "nominalQuota": "124"}, {"name": "memory", "nominalQuota": "484Gi"}])
    assert _only(cpu_only, "pathways-kueue-quota") == []


FIREWALL_T = "gcp:compute/firewall:Firewall"


def _network_messages(plan) -> list[str]:
    return _only(plan, "pathways-network-exposure")


def test_port_ranges_end_where_they_say():
    # "29003-29004" and "28990-28999" sit between and below Pathways ports (29000-29002, 29005): inclusive ends, no more
    prod = example_plan("prod")
    for ports, opened in ((["29003-29004"], None), (["28990-28999"], None), (["28990-29000"], "[29000]")):
        wide = add(prod, FIREWALL_T, "wide-open", {"name": "wide-open", "sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp", "ports": ports}]})
        found = [m for m in _network_messages(wide) if "wide-open" in m]
        assert found == ([f"firewall wide-open opens Pathways ports {opened} to the internet; allow them from the Pathways node "
                          "service account only"] if opened else []), ports


def test_an_existing_vpc_is_not_asked_for_cloud_nat():
    # the stack creates no Network when it uses pathways:network.existingNetwork: egress is the VPC owner's
    prod = example_plan("prod")
    no_nat = Plan(prod.stack, [r for r in prod.resources if r.type != "gcp:compute/routerNat:RouterNat"], prod.outputs)
    assert any("without Cloud NAT" in m for m in _network_messages(no_nat))
    existing = Plan(prod.stack, [r for r in no_nat.resources if r.type != "gcp:compute/network:Network"], prod.outputs)
    assert not any("without Cloud NAT" in m for m in _network_messages(existing))


def test_a_protected_control_plane_needs_a_private_endpoint_or_authorized_networks_not_both():
    prod = example_plan("prod")
    public_with_networks = mutate(prod, CLUSTER_T, "cluster", "privateClusterConfig.enablePrivateEndpoint", False)
    private_without_networks = mutate(prod, CLUSTER_T, "cluster", "masterAuthorizedNetworksConfig", None)
    for plan in (public_with_networks, private_without_networks):
        assert not any("control plane open to the internet" in m for m in _network_messages(plan))
    neither = mutate(public_with_networks, CLUSTER_T, "cluster", "masterAuthorizedNetworksConfig", None)
    assert any("control plane open to the internet" in m for m in _network_messages(neither))


def test_a_deny_from_part_of_the_internet_does_not_close_the_pathways_ports():
    prod = example_plan("prod")
    partial = mutate(prod, FIREWALL_T, "pathways-ports-deny", "sourceRanges", ["10.0.0.0/8"])
    assert any("are not closed to other sources" in m for m in _network_messages(partial))


def test_an_autoscaled_tpu_pool_with_a_per_zone_maximum_may_also_set_totals():
    both = mutate(BATCH, POOL, "slices-main-0", "autoscaling", {"minNodeCount": 0, "maxNodeCount": 4, "totalMaxNodeCount": 4})
    both = mutate(both, POOL, "slices-main-0", "nodeCount", None)
    assert _only(both, "pathways-tpu-pool-matches-catalog") == []
    only_total = mutate(both, POOL, "slices-main-0", "autoscaling", {"totalMinNodeCount": 0, "totalMaxNodeCount": 4})
    assert any("sets only total node limits" in m for m in _only(only_total, "pathways-tpu-pool-matches-catalog"))


def test_a_stack_on_an_existing_cluster_passes_the_pack():
    # found by the real engine (tests_e2e/test_pulumi.py): on a cluster that runs JobSet and Kueue already, no
    # JobSet has a controller to depend on and no pool holds the Kueue quota's chips
    cfg = config_with(cluster={"existing": {"kubeconfig": "kubeconfig"}}, bucket={"name": "team-cache"}, pathwaysVersion=VERSION,
                      kubernetes={"installControllers": False}, workloads=[{"name": "train", "image": "example.com/t:1"}])
    assert violations(plan_of(cfg)) == []


def test_the_pack_describes_each_policy_for_the_reviewer():
    # `pulumi preview` prints these beside each violation; the pack's README table mirrors them
    from policies.rules import ALL_POLICIES

    descriptions = {p.name: p.description for p in ALL_POLICIES}
    assert descriptions["pathways-tpu-pool-delete-before-replace"] == "TPU node pools use delete_before_replace."
    assert all(d and d.endswith(".") for d in descriptions.values()), descriptions


@pytest.mark.parametrize("content,says", [
    # an enforcement level the policy engine does not have is refused, never ignored (pulumi_policy.EnforcementLevel)
    (json.dumps({"pathways-single-zone": "warn"}), "pathways-single-zone.enforcementLevel: 'warn'; valid: advisory, mandatory, disabled"),
    (json.dumps({"pathways-single-zone": {"enforcementLevel": "warn"}}),
     "pathways-single-zone.enforcementLevel: 'warn'; valid: advisory, mandatory, disabled"),
    (json.dumps({"pathways-single-zone": 3}),
     "pathways-single-zone: 3; valid: an enforcement level (advisory, mandatory, disabled), or an object with enforcementLevel and "
     "the policy's settings"),
    # a setting of the wrong type, as the Pulumi engine refuses it against the rule's schema (tests_e2e/test_pulumi.py)
    (json.dumps({"pathways-cluster-hardening": {"protectedStacks": "prod"}}),
     "pathways-cluster-hardening.protectedStacks: 'prod'; valid: a list of strings"),
    (json.dumps({"pathways-guards-in-force": {"protectedStacks": ["prod", 3]}}),
     "pathways-guards-in-force.protectedStacks: ['prod', 3]; valid: a list of strings"),
    (json.dumps({"pathways-one-cache-location": {"enforcementLevel": "advisory", "maxLocationsPerBucket": "fifty"}}),
     "pathways-one-cache-location.maxLocationsPerBucket: 'fifty'; valid: an integer"),
    ('{"pathways-single-zone": ', "{path}: not valid JSON (Expecting value at line 1, column 26); a policy config is a JSON object "
                                  'keyed by policy name, e.g. {{"pathways-single-zone": "advisory"}}'),
    ("[]", '{path}: a JSON list; a policy config is a JSON object keyed by policy name, e.g. {{"pathways-single-zone": "advisory"}}'),
    (b"\xff\xfe", "{path}: not UTF-8 text (byte 0xff at offset 0); a policy config is a JSON object keyed by policy name, e.g. "
                  '{{"pathways-single-zone": "advisory"}}'),
])
def test_a_bad_policy_config_is_a_one_line_error(tmp_path, capsys, content, says):
    path = tmp_path / "policy-config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert offline_cli.main(["plan", "--config", str(example_path("dev")), "--policy-config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [f"error: {says.format(path=path)}"] and "Traceback" not in out + err


VAP = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
VAPB = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"


def _without(plan: Plan, type_: str, policy_name: str) -> Plan:
    key = "metadata.name" if type_ == VAP else "spec.policyName"
    return Plan(plan.stack, [r for r in plan.resources if not (r.type == type_ and r.input(key) == policy_name)], plan.outputs)


@pytest.mark.parametrize(("breaker", "message"), [
    (lambda p: _without(p, VAP, "pathways-nodes-reserved"), "has no admission guard pathways-nodes-reserved"),
    (lambda p: _without(p, VAP, "pathways-workload-templates"), "has no admission guard pathways-workload-templates"),
    (lambda p: _without(p, VAPB, "pathways-nodes-reserved"), "the admission guard pathways-nodes-reserved has no binding"),
    (lambda p: mutate(p, VAPB, "guardrails-template-guard", "spec.validationActions", ["Audit"]), "the binding of pathways-workload-templates does not deny"),
])
def test_security_58_2_a_protected_stack_keeps_both_guards_and_their_bindings(breaker, message):
    """Each guard or binding taken out of a protected stack's plan is refused; the same in an unprotected stack is not."""
    prod = example_plan("prod")
    found = [v.message for v in violations(breaker(prod)) if v.policy == "pathways-guards-in-force"]
    assert len(found) == 1 and message in found[0], found
    dev = example_plan("dev")
    assert not [v for v in violations(breaker(dev)) if v.policy == "pathways-guards-in-force"]


def test_security_58_2_a_stack_the_pack_config_lists_as_protected_keeps_its_guards_too():
    dev = example_plan("dev")
    broken = _without(dev, VAP, "pathways-nodes-reserved")
    found = [v.message for v in violations(broken, {"pathways-guards-in-force": {"protectedStacks": [dev.stack]}})
             if v.policy == "pathways-guards-in-force"]
    assert found and "has no admission guard pathways-nodes-reserved" in found[0]


def test_a_leader_worker_set_may_depend_on_a_helm_release_of_the_lws_chart():
    # a stack that installs LWS with a helm.v3 Release (a custom resource the analyzer lists, unlike a v4 Chart): the
    # Release of the `lws` chart counts as the controller, a Release of another chart does not (sampled mutation, #57)
    from components.constants import HELM_RELEASE

    lws = {"metadata": {"name": "llm", "namespace": "pathways"}, "spec": {}}

    def depending_on(release_name: str) -> Plan:
        plan = add(add(add(BATCH, HELM_RELEASE, "lws-release", {"chart": "oci://registry.k8s.io/lws/charts/lws", "namespace": "lws-system"}),
                       HELM_RELEASE, "other-release", {"chart": "oci://example.com/charts/other", "namespace": "other"}),
                   "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "llm", lws)
        release = plan.one(HELM_RELEASE, release_name).urn
        return Plan(plan.stack, [dataclasses.replace(r, dependencies=(release,)) if r.name == "llm" else r for r in plan.resources],
                    plan.outputs)

    assert _only(depending_on("lws-release"), "pathways-jobset-lifecycle") == []
    assert _only(depending_on("other-release"), "pathways-jobset-lifecycle") == [
        "LeaderWorkerSet llm does not depend on the LeaderWorkerSet controller; add depends_on the LeaderWorkerSet chart"]
