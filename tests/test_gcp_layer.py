"""The Google Cloud half of the stack under the mock runtime: resources, key properties, IAM, bucket
flags and lifecycle, and resource options."""

from __future__ import annotations

import pytest

from components.model.config import SCRATCH_PERMISSIONS
from tests.conftest import FLEET_MANAGERS, config_with, example_plan, in_zone_of, is_protected, plan_of, section, stack_config, stack_model

CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_IAM = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_IAM = "gcp:projects/iAMMember:IAMMember"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"


def tpu_pools(plan):
    return sorted((r for r in plan.by_type(POOL) if r.input("name", "").startswith("tpu-")), key=lambda r: r.input("name"))


def pool(plan, name):
    return next(r for r in plan.by_type(POOL) if r.input("name") == name)


# --- every committed stack -----------------------------------------------------------------


def test_cluster_settings(made_stack):
    name, plan = made_stack
    c = plan.one(CLUSTER)
    assert c.input("removeDefaultNodePool") is True
    assert c.input("datapathProvider") == "ADVANCED_DATAPATH"
    assert c.input("dnsConfig.clusterDns") == "CLOUD_DNS"
    assert c.input("workloadIdentityConfig.workloadPool") == f"{c.input('project')}.svc.id.goog"
    assert c.input("enableShieldedNodes") is True
    assert c.input("ipAllocationPolicy.clusterSecondaryRangeName") == "pods"
    # nodes only in the stack's one zone: zonal clusters imply it, regional ones pin it
    cfg = stack_config(name)
    zone, regional = cfg["gcp:zone"], bool(section(cfg, "cluster").get("regional"))
    assert c.input("location") == (cfg["gcp:region"] if regional else zone)
    for p in plan.by_type(POOL):
        assert p.input("location") == c.input("location")
        assert p.input("nodeLocations") == ([zone] if regional else None)
    assert c.input("nodeConfig.serviceAccount").endswith("-sys@" + c.input("project") + ".iam.gserviceaccount.com")


def test_all_pools_share_the_zone_and_node_defaults(made_stack):
    name, plan = made_stack
    serve_groups = {w.group.name for w in stack_model(name).serve_workloads}
    for p in plan.by_type(POOL):
        nc = p.input("nodeConfig")
        assert nc["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
        assert nc["shieldedInstanceConfig"]["enableSecureBoot"] is True
        # Workload Identity everywhere but the slices of serve workloads, which Google's JetStream-on-Pathways
        # tutorial runs on the node's identity (PLATFORM-FACTS §7)
        serving = (p.input("nodeConfig.labels") or {}).get("pathways/slice-group") in serve_groups
        assert nc["workloadMetadataConfig"]["mode"] == ("GCE_METADATA" if serving else "GKE_METADATA")
        assert nc["gvnic"]["enabled"] is True
        assert "compute@developer.gserviceaccount.com" not in nc["serviceAccount"]


def test_tpu_pools_options(made_stack):
    name, plan = made_stack
    assert bool(tpu_pools(plan)) is (name not in FLEET_MANAGERS)  # a fleet manager's slices are its workers'
    for p in tpu_pools(plan):
        assert p.options["deleteBeforeReplace"] is True
        assert p.options["customTimeouts"]["create"] == "180m"
        assert {"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"} in p.input("nodeConfig.taints")
        assert p.input("nodeConfig.labels")["pathways/slice-group"]


def test_head_pool(made_stack):
    name, plan = made_stack
    head = pool(plan, "pathways-head")
    assert head.input("nodeConfig.machineType") == "n2-standard-64"
    assert head.input("nodeConfig.labels") == {"pathways/role": "head"}
    assert head.input("nodeConfig.taints") == [{"key": "pathways/role", "value": "head", "effect": "NO_SCHEDULE"}]
    head_config = section(stack_config(name), "headPool")
    if head_config.get("scaleToZero"):  # the autoscaler owns the count, up to one node per head workload and runs.headNodes
        assert head.input("nodeCount") is None and head.input("initialNodeCount") == 0
        assert head.input("autoscaling")["minNodeCount"] == 0 and head.input("autoscaling")["maxNodeCount"] >= 1
        assert sorted(head.options["ignoreChanges"]) == ["initialNodeCount", "maxPodsPerNode", "nodeCount"]
        return
    assert head.input("autoscaling") is None
    if "nodeCount" in head_config:
        assert head.input("nodeCount") == head_config["nodeCount"]


@pytest.mark.parametrize("name,count", [("dev", None), ("fleet-east", None), ("fleet-central", None),
                                        ("staging", 2), ("prod", 2), ("serving", 0), ("fleet-manager", 0)])
def test_head_pool_size_of_each_example(name, count):
    # the size the model gives each example: serve leaders sit on their slices, a fleet manager runs no Pathways pod
    head = pool(example_plan(name), "pathways-head")
    if count is None:
        assert head.input("autoscaling") == {"minNodeCount": 0, "maxNodeCount": 2}
    else:
        assert head.input("nodeCount") == count and head.input("autoscaling") is None


def test_node_sa_has_only_logging_monitoring_and_registry_roles(made_stack):
    # the bootstrap grants them (bootstrap/program.py, tests/test_bootstrap.py): the stack grants no project role
    from components.model.cluster.identities import NODE_ROLES

    _, plan = made_stack
    assert plan.by_type(PROJECT_IAM) == []
    assert set(NODE_ROLES) == {
        "roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/monitoring.viewer",
        "roles/stackdriver.resourceMetadata.writer", "roles/autoscaling.metricsWriter", "roles/artifactregistry.reader",
    }
    assert not any("storage" in role for role in NODE_ROLES)  # data access only on the bucket
    # the pools run as the accounts the bootstrap makes, named after the cluster
    project, cluster = plan.one("gcp:container/cluster:Cluster").input("project"), plan.one("gcp:container/cluster:Cluster").input("name")
    assert plan.outputs["nodeServiceAccounts"] == {"pathways": f"{cluster[:24].rstrip('-')}-nodes@{project}.iam.gserviceaccount.com",
                                                   "system": f"{cluster[:26].rstrip('-')}-sys@{project}.iam.gserviceaccount.com"}


def _bootstrap_scratch_role(stack: str):
    """The scratch role the bootstrap makes for a main stack: the bootstrap config of the stack's project that lists it
    (bootstrap/), or one written for it alone (and a fleet manager's workers), over the team's stack files."""
    import json
    from pathlib import Path

    from bootstrap import program as bootstrap
    from infra.bucket_allowlist import bootstrap_config
    from infra.offline import engine, stackfile

    config, _ = stackfile.load_config(stackfile.stack_path(stack))
    found = bootstrap_config(config["gcp:project"], stack)
    if found is not None:
        flat, _ = stackfile.load_config(found[0])
    else:
        fleet = json.loads(config.get("pathways:fleet", "null")) or {}
        workers = [w["stack"].rsplit("/", 1)[-1] for w in fleet.get("workers") or []]
        # the buckets the stack file mounts but does not make, allowed as that file asks (the bootstrap refuses others)
        from components.model.cluster.bucket_grants import external_grants
        from components.model.config import load

        external = {g.bucket: "write" if g.write else "read" for g in external_grants(load(stackfile.raw_values(config), stack))}
        flat = {"gcp:project": config["gcp:project"], "pathways-bootstrap:repository": "example-org/pathways-gke",
                "pathways-bootstrap:repositoryId": "812345678", "pathways-bootstrap:repositoryOwnerId": "91234567",
                "pathways-bootstrap:projectNumber": "123456789012", "pathways-bootstrap:stacks": json.dumps([*workers, stack]),
                **({"pathways-bootstrap:externalBuckets": json.dumps({stack: external})} if external else {})}
    plan = engine.run(flat, "b", program_dir=Path(bootstrap.__file__).parent)
    return plan.one(ROLE, f"{stack}-scratch-role")


def test_scratch_role_and_bucket_members(made_stack):
    name, plan = made_stack
    # security #58.14: the bootstrap makes the custom role; the stack makes none, so its deploy identity needs no
    # role administration, and grants the bootstrap's role by name
    assert plan.by_type(ROLE) == []
    role = _bootstrap_scratch_role(name)
    assert sorted(role.input("permissions")) == sorted(SCRATCH_PERMISSIONS)
    assert len(SCRATCH_PERMISSIONS) == 5
    # the seed's list, written out: comparing only to the constant the code uses could not fail
    assert set(role.input("permissions")) == {
        "storage.buckets.get", "storage.buckets.update", "storage.objects.list", "storage.objects.create", "storage.objects.get",
    }
    scratch_bucket = plan.one(BUCKET, "scratch").input("name")
    grants = [r for r in plan.by_type(BUCKET_IAM) if r.input("bucket") == scratch_bucket]
    node_sa = plan.outputs["nodeServiceAccounts"]["pathways"]
    assert {g.input("member") for g in grants} == {f"serviceAccount:{node_sa}"}
    assert {g.input("role") for g in grants} == {f"projects/{role.input('project')}/roles/{role.input('roleId')}"}
    # the TPU and head pools run as exactly that SA, an isolation domain's as its own (granted its own bucket only)
    domains = plan.outputs.get("isolationDomains") or {}
    isolated = {p: d["nodeServiceAccount"] for d in domains.values() for p in [d["headPool"], *(x for ps in d["slicePools"].values() for x in ps)]}
    for p in tpu_pools(plan) + [pool(plan, "pathways-head"), *(pool(plan, d["headPool"]) for d in domains.values())]:
        assert p.input("nodeConfig.serviceAccount") == isolated.get(p.input("name"), node_sa)
    for d in domains.values():
        bucket = d["cacheLocation"].removeprefix("gs://").split("/")[0]
        assert {g.input("member") for g in plan.by_type(BUCKET_IAM) if g.input("bucket") == bucket} == {f"serviceAccount:{d['nodeServiceAccount']}"}
        assert d["nodeServiceAccount"] != node_sa


# GCS's minimum and default soft delete (7 days) and the artifacts' TTL, unless the stack file sets them
DEFAULT_SOFT_DELETE_DAYS, DEFAULT_ARTIFACTS_TTL_DAYS = 7, 30


def test_bucket_flags_and_lifecycle(made_stack):
    name, plan = made_stack
    bucket = section(stack_config(name), "bucket")
    soft_delete_days = bucket.get("softDeleteDays", DEFAULT_SOFT_DELETE_DAYS)
    ttl_days = bucket.get("artifactsTtlDays", DEFAULT_ARTIFACTS_TTL_DAYS)
    protected = is_protected(name)
    scratch, artifacts = plan.one(BUCKET, "scratch"), plan.one(BUCKET, "scratch-artifacts")
    for b in (scratch, artifacts):
        assert b.input("location") == plan.one(CLUSTER).input("location").rsplit("-", 1)[0] or b.input("location") == plan.one(CLUSTER).input("location")
        assert b.input("uniformBucketLevelAccess") is True
        assert b.input("publicAccessPrevention") == "enforced"
        assert b.input("forceDestroy") is False
        assert b.input("softDeletePolicy") == {"retentionDurationSeconds": soft_delete_days * 86400}
        assert b.input("labels") == {"pathways-stack": name, **({"pathways-protected": "true"} if protected else {})}
    # Pathways owns the scratch bucket's lifecycle rules: we set none and never diff them.
    assert scratch.input("lifecycleRules") in (None, [])
    assert scratch.options["ignoreChanges"] == ["lifecycleRules"]
    rules = artifacts.input("lifecycleRules")
    assert artifacts.options["ignoreChanges"] == []
    cache_prefix = plan.outputs["cacheLocation"].split("/", 3)[3]
    # delete artifacts after the TTL; abort multipart uploads left incomplete for a day
    assert rules == [
        {"condition": {"age": ttl_days, "matchesPrefixes": ["artifacts/"]}, "action": {"type": "Delete"}},
        {"condition": {"age": 1, "matchesPrefixes": ["artifacts/"]}, "action": {"type": "AbortIncompleteMultipartUpload"}},
    ]
    assert not cache_prefix.startswith("artifacts")


def test_protection_follows_the_stack_setting(made_stack):
    name, plan = made_stack
    protected = is_protected(name)
    assert plan.one(CLUSTER).options["protect"] is protected
    assert plan.one(BUCKET, "scratch").options["protect"] is protected
    assert plan.one(BUCKET, "scratch-artifacts").options["protect"] is protected
    # GKE's deletion protection is on unless the stack file turns it off
    assert plan.one(CLUSTER).input("deletionProtection") is section(stack_config(name), "cluster").get("deletionProtection", True)


def test_example_protection_as_written():
    assert [n for n in ("dev", "staging", "prod", "serving") if example_plan(n).one(CLUSTER).options["protect"]] == ["prod"]
    assert [n for n in ("dev", "staging", "prod", "serving") if not example_plan(n).one(CLUSTER).input("deletionProtection")] == ["dev", "serving"]


def test_outputs(made_stack):
    name, plan = made_stack
    o = plan.outputs
    assert o["kubeconfig"] == "[secret]"
    assert o["cacheLocation"] == f"{o['bucketUrl']}/pathways-cache"
    assert set(o["nodeServiceAccounts"]) == {"pathways", "system"}
    # one pool per slice, tpu-<group>-<index>; a fleet manager's slices are its workers'
    cfg = stack_config(name)
    expected = {} if name in FLEET_MANAGERS else {
        s["name"]: [f"tpu-{s['name']}-{i}" for i in range(s.get("count", len(s.get("subBlocks") or []) or 1))]
        for s in cfg.get("pathways:slices", [])}  # a pool set: one pool per sub-block
    assert o["slicePools"] == expected


@pytest.mark.parametrize("name,zone,location", [("dev", "us-east5-b", "us-east5-b"), ("prod", "us-east5-a", "us-east5"),
                                                ("fleet-central", "us-central1-b", "us-central1-b")])
def test_example_cluster_locations(name, zone, location):
    plan = example_plan(name)
    assert plan.one(CLUSTER).input("location") == location
    assert {tuple(p.input("nodeLocations") or [location]) for p in plan.by_type(POOL)} == {(zone,)}


def test_example_slice_pools():
    assert example_plan("staging").outputs["slicePools"] == {"v6e": ["tpu-v6e-0", "tpu-v6e-1"], "v6e-spot": ["tpu-v6e-spot-0"]}
    assert example_plan("prod").outputs["slicePools"] == {"train": [f"tpu-train-{i}" for i in range(4)], "explore": ["tpu-explore-0"]}
    assert example_plan("fleet-manager").outputs["slicePools"] == {}


def test_example_bucket_days():
    for name, days in {"dev": 7, "prod": 30}.items():
        assert example_plan(name).one(BUCKET, "scratch").input("softDeleteDays") is None
        assert example_plan(name).one(BUCKET, "scratch").input("softDeletePolicy") == {"retentionDurationSeconds": days * 86400}
    assert example_plan("prod").one(BUCKET, "scratch-artifacts").input("lifecycleRules")[0]["condition"]["age"] == 14


def test_the_serving_examples_slices_run_on_the_node_identity():
    modes = {p.input("name"): p.input("nodeConfig.workloadMetadataConfig.mode") for p in example_plan("serving").by_type(POOL)}
    assert modes == {"system": "GKE_METADATA", "pathways-head": "GKE_METADATA", "tpu-serve-0": "GCE_METADATA", "tpu-serve-1": "GCE_METADATA"}


def test_prod_private_regional_cluster():
    c = example_plan("prod").one(CLUSTER)
    assert c.input("location") == "us-east5" and c.input("nodeLocations") == ["us-east5-a"]
    assert c.input("privateClusterConfig.enablePrivateNodes") is True
    assert c.input("masterAuthorizedNetworksConfig.cidrBlocks") == [{"cidrBlock": "10.200.0.0/16", "displayName": "corp-vpn"}]
    assert c.input("releaseChannel.channel") == "STABLE"
    for p in tpu_pools(example_plan("prod")):
        assert p.input("nodeConfig.reservationAffinity") == {
            "consumeReservationType": "SPECIFIC_RESERVATION",
            "key": "compute.googleapis.com/reservation-name",
            "values": ["pathways-prod-v5p"],
        }


# --- TPU families x single/multi-host, and capacity kinds -----------------------------------

FAMILY_CASES = {
    # tpu: (machine type, nodes, placement policy or None)
    "v5e-4": ("ct5lp-hightpu-4t", 1, None),
    "v5e-16": ("ct5lp-hightpu-4t", 4, {"type": "COMPACT", "tpuTopology": "4x4"}),
    "v5p-8": ("ct5p-hightpu-4t", 1, None),
    "v5p-128": ("ct5p-hightpu-4t", 16, {"type": "COMPACT", "tpuTopology": "4x4x4"}),
    "v6e-8": ("ct6e-standard-8t", 1, None),
    "v6e-256": ("ct6e-standard-4t", 64, {"type": "COMPACT", "tpuTopology": "16x16"}),
    "tpu7x-8": ("tpu7x-standard-4t", 1, None),
    "tpu7x-128": ("tpu7x-standard-4t", 16, "workload-policy"),
}


@pytest.mark.parametrize("tpu", sorted(FAMILY_CASES))
def test_slice_pool_shape_per_family(tpu):
    machine, nodes, placement = FAMILY_CASES[tpu]
    where = in_zone_of(tpu)
    zone = where["gcp_zone"]
    plan = plan_of(config_with(slices=[{"name": "g", "tpu": tpu, "count": 2}], **where))
    pools = tpu_pools(plan)
    assert [p.input("name") for p in pools] == ["tpu-g-0", "tpu-g-1"]
    for p in pools:
        assert p.input("nodeConfig.machineType") == machine
        assert p.input("nodeCount") == nodes
        assert p.input("location") == zone
        if placement is None:
            assert p.input("placementPolicy") is None  # single-host: never tpu_topology
        elif placement == "workload-policy":
            policy = plan.one(POLICY)
            assert policy.input("name") == "pathways-test-g-4x4x4-wp"  # project+region scoped: the cluster, group and shape
            assert policy.input("region") == where["gcp_region"]
            assert policy.input("workloadPolicy") == {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"}
            # What GKE stores for a named policy: no type (see components.gcp.tpu_slices.placement_policy
            # for the sources); sending COMPACT too would diff, and replace the slice, on every up.
            assert p.input("placementPolicy") == {"type": "", "policyName": policy.input("name"), "tpuTopology": "4x4x4"}
        else:
            assert p.input("placementPolicy") == placement
    if placement != "workload-policy":
        assert plan.by_type(POLICY) == []
    # The family's minimum is a floor, never a version to request: the release channel picks one
    # GKE offers (the provider creates the cluster *at* min_master_version; GKE refuses retired ones).
    assert plan.one(CLUSTER).input("minMasterVersion") is None


def test_made_stacks_request_no_gke_version(made_stack):
    name, plan = made_stack
    assert plan.one(CLUSTER).input("minMasterVersion") is None
    chosen = (stack_config(name).get("pathways:cluster") or {}).get("releaseChannel")  # e.g. RAPID, which dynamic slicing needs
    assert plan.one(CLUSTER).input("releaseChannel.channel") in ({chosen} if chosen else {"REGULAR", "STABLE"})
    for p in plan.by_type(POOL):
        assert p.input("version") is None  # pools follow the control plane


@pytest.mark.parametrize("version", ["1.35", "1.34", "1.34.1", "1.34.0-gke.2201000", "1.36.2-gke.1000"])
def test_explicit_gke_version_is_passed_through_when_it_meets_the_floor(version):
    plan = plan_of(config_with(slices=[{"name": "g", "tpu": "tpu7x-128"}], cluster={"minMasterVersion": version}, **in_zone_of("tpu7x")))
    assert plan.one(CLUSTER).input("minMasterVersion") == version


def test_spot_pools():
    p = tpu_pools(plan_of(config_with(slices=[{"name": "g", "tpu": "v6e-16", "spot": True}])))[0]
    assert p.input("nodeConfig.spot") is True and p.input("nodeCount") == 4
    assert p.options["ignoreChanges"] == ["maxPodsPerNode"]  # a pool made before keeps GKE's default (address_space.py)


@pytest.mark.parametrize("tpu,hosts,placement", [
    ("v5p-128", 16, {"type": "COMPACT", "tpuTopology": "4x4x4"}),
    ("v6e-16", 4, {"type": "COMPACT", "tpuTopology": "4x4"}),
    ("tpu7x-16", 2, {"type": "", "policyName": "pathways-test-g-2x2x2-wp", "tpuTopology": "2x2x2"}),
    ("v6e-4", 1, None),
])
def test_flex_start_pools_autoscale_from_zero_without_diffs(tpu, hosts, placement):
    p = tpu_pools(plan_of(config_with(slices=[{"name": "g", "tpu": tpu, "flexStart": True}], **in_zone_of(tpu))))[0]
    assert p.input("nodeCount") is None and p.input("initialNodeCount") == 0
    # Per-zone limits: GKE checks a multi-host slice against the per-zone maximum, which is 0 with
    # total limits only ("Maximum node count 0 is not a valid size of TPU pod slice",
    # vllm-project/ci-infra #545; cluster-toolkit #5111). The pool has one zone, so they equal the slice.
    assert p.input("autoscaling") == {"minNodeCount": 0, "maxNodeCount": hosts, "locationPolicy": "ANY"}
    assert p.input("management.autoRepair") is False
    assert p.input("nodeConfig.flexStart") is True
    assert p.input("nodeConfig.reservationAffinity") == {"consumeReservationType": "NO_RESERVATION"}
    assert p.options["ignoreChanges"] == ["initialNodeCount", "maxPodsPerNode", "nodeCount"]
    assert p.input("placementPolicy") == placement


def test_on_demand_pools_have_no_capacity_flags():
    p = tpu_pools(plan_of(config_with()))[0]
    nc = p.input("nodeConfig")
    assert "spot" not in nc and "flexStart" not in nc and "reservationAffinity" not in nc


def test_pools_depend_only_on_the_cluster_and_node_sa():
    plan = plan_of(config_with(slices=[{"name": "g", "tpu": "v6e-16", "count": 3}]))
    pool_urns = {p.urn for p in plan.by_type(POOL)}
    for p in tpu_pools(plan):
        assert not (set(p.dependencies) & pool_urns), p.dependencies


def test_existing_network_creates_no_vpc():
    plan = plan_of(config_with(network={"existingNetwork": "shared-vpc", "existingSubnetwork": "shared-subnet"}))
    assert plan.by_type("gcp:compute/network:Network") == []
    c = plan.one(CLUSTER)
    assert (c.input("network"), c.input("subnetwork")) == ("shared-vpc", "shared-subnet")


def test_created_network():
    plan = plan_of(config_with(network={"mtu": 1460}))
    vpc = plan.one("gcp:compute/network:Network")
    subnet = plan.one("gcp:compute/subnetwork:Subnetwork")
    assert vpc.input("mtu") == 1460 and vpc.input("autoCreateSubnetworks") is False
    assert subnet.input("privateIpGoogleAccess") is True
    assert {r["rangeName"] for r in subnet.input("secondaryIpRanges")} == {"pods", "services"}


def test_system_pool_autoscales_without_diffs():
    p = pool(plan_of(config_with()), "system")
    assert p.input("autoscaling") == {"minNodeCount": 1, "maxNodeCount": 3}
    assert p.input("nodeCount") is None
    assert p.options["ignoreChanges"] == ["initialNodeCount", "nodeCount"]


def test_kubeconfig_uses_the_auth_plugin_and_no_static_credentials():
    from components.gcp.cluster import kubeconfig

    text = kubeconfig("p-123456", "us-east5-b", "pathways-dev", "gke-abc.us-east5-b.gke.goog")
    assert "command: gke-gcloud-auth-plugin" in text and "server: https://gke-abc.us-east5-b.gke.goog" in text
    # the DNS endpoint serves a publicly trusted certificate (as `get-credentials --dns-endpoint` writes it)
    assert "certificate-authority-data" not in text
    assert "token" not in text and "password" not in text


def test_queued_provisioning_pools_are_flex_start_pools_gke_fills_only_on_request():
    # GKE "flex-start with queued provisioning": --flex-start --enable-queued-provisioning (Cluster Toolkit's
    # gke-node-pool: queued_provisioning { enabled = true } beside flex-start's autoscaling from 0)
    p = tpu_pools(plan_of(config_with(slices=[{"name": "g", "tpu": "v6e-16", "flexStart": True, "queuedProvisioning": True}])))[0]
    assert p.input("queuedProvisioning") == {"enabled": True}
    assert p.input("nodeConfig.flexStart") is True and p.input("initialNodeCount") == 0
    assert p.input("nodeConfig.reservationAffinity") == {"consumeReservationType": "NO_RESERVATION"}
    plain = tpu_pools(plan_of(config_with(slices=[{"name": "g", "tpu": "v6e-16", "flexStart": True}])))[0]
    assert plain.input("queuedProvisioning") is None
