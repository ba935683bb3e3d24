"""Every numeric bound of the stack config at both ends, and the checks behind the error paths the
mutation run found untested (issue #19). Bounds are written out from their sources (GCS soft delete
7-90 days, and so on), not read from the model, so a changed bound fails here."""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_pinned_behaviour import error, model


def _nested(path: tuple[str, ...], v: Any) -> Any:
    for p in reversed(path):
        v = {p: v}
    return v


def _section(section: str, *path: str):
    return lambda v: {section: _nested(path, v)}


def _workload(*path: str, **extra):
    def changes(v):
        w = {"name": "w", "image": "example.com/t:1", **extra}
        w.update(_nested(path, v))
        return {"workloads": [w], "pathwaysVersion": "jax-0.9.0"}
    return changes


def _slices(field: str):
    return lambda v: {"slices": [{"name": "main", "tpu": "v6e-16", field: v}], "cluster": {"nodePoolConcurrency": 50}}


# (key in the message, config for a value, smallest valid, largest valid); why each bound is what it is
BOUNDS = [
    ("bucket.softDeleteDays", _section("bucket", "softDeleteDays"), 7, 90),  # GCS soft delete: 7 to 90 days
    ("bucket.artifactsTtlDays", _section("bucket", "artifactsTtlDays"), 1, 36500),  # age 0 deletes at once; 100 years
    ("cluster.nodePoolConcurrency", _section("cluster", "nodePoolConcurrency"), 1, 1000),  # xpk runs 100; a lane per pool at most
    ("cluster.systemPool.minNodes", lambda v: {"cluster": {"systemPool": {"minNodes": v, "maxNodes": 1000}}}, 1, 1000),  # GKE: 1,000 nodes a pool and zone
    ("cluster.systemPool.maxNodes", lambda v: {"cluster": {"systemPool": {"minNodes": 1, "maxNodes": v}}}, 1, 1000),
    ("network.mtu", _section("network", "mtu"), 1300, 8896),  # VPC MTU: 1300 to 8896 bytes
    ("monitoring.dutyCycleMinutes", _section("monitoring", "dutyCycleMinutes"), 5, 1440),  # a day
    ("monitoring.dutyCycleThreshold", _section("monitoring", "dutyCycleThreshold"), 1, 100),  # a percentage
    ("monitoring.restartStorm", _section("monitoring", "restartStorm"), 1, 10_000),
    ("headPool.nodeCount", _section("headPool", "nodeCount"), 1, 1000),
    ("slices[0].count", _slices("count"), 1, 1000),
    ("slices[0].spares", _slices("spares"), 0, 1000),
    ("workloads[0].dataLoaderWorkers", _workload("dataLoaderWorkers"), 0, 1024),
    ("workloads[0].maxRestarts", _workload("maxRestarts"), 0, 10_000),
    ("workloads[0].workerRestartsPerHost", _workload("workerRestartsPerHost"), 1, 1_000_000),  # pathwaysutils' "unlimited"
    ("workloads[0].terminationGracePeriodSeconds", _workload("terminationGracePeriodSeconds"), 0, 86400),  # a day
    ("workloads[0].ttlSecondsAfterFinished", _workload("ttlSecondsAfterFinished"), 0, 2**31 - 1),  # Kubernetes int32
    ("workloads[0].profiling.port", _workload("profiling", "port"), 1024, 65535),  # unprivileged TCP ports
]


# other rules stop the largest value alone: 1,000 spares beside a slice make 1,001 pools (a stack holds
# 1,000); 1,024 data loaders need as many CPUs in the user container
LARGEST_NEEDS_MORE = {"slices[0].spares", "workloads[0].dataLoaderWorkers"}


@pytest.mark.parametrize(("key", "changes", "smallest", "largest"), BOUNDS, ids=[b[0] for b in BOUNDS])
def test_bounds_are_inclusive_at_both_ends(key, changes, smallest, largest):
    model(**changes(smallest))
    if key not in LARGEST_NEEDS_MORE:
        model(**changes(largest))
    assert f"pathways:{key}: {smallest - 1} is not valid" in error(**changes(smallest - 1))
    assert f"pathways:{key}: {largest + 1} is not valid" in error(**changes(largest + 1))


@pytest.mark.parametrize("prefix", ["/cache", "cache/", "Cache", "a//b", "-x", ""])
def test_bucket_prefixes_are_path_segments(prefix):
    assert f"pathways:bucket.cachePrefix: {prefix!r} is not a prefix; use path segments" in error(bucket={"cachePrefix": prefix})


def test_bucket_prefixes_may_nest_segments():
    assert model(bucket={"cachePrefix": "team/cache", "artifactsPrefix": "team/artifacts"}).bucket.cache_prefix == "team/cache"


@pytest.mark.parametrize(("cache", "artifacts"), [
    ("pathways-cache", "pathways-cache"),
    ("pathways-cache", "pathways-cache/artifacts"),  # artifacts inside the cache: the TTL deletes cache entries
    ("out/cache", "out"),  # the cache inside artifacts
])
def test_artifacts_and_cache_prefixes_must_not_overlap(cache, artifacts):
    msg = error(bucket={"cachePrefix": cache, "artifactsPrefix": artifacts})
    assert f"artifactsPrefix {artifacts!r} and cachePrefix {cache!r} overlap" in msg


def test_prefixes_sharing_only_a_name_start_do_not_overlap():
    cfg = model(bucket={"cachePrefix": "pathways-cache", "artifactsPrefix": "pathways-cache-artifacts"})
    assert cfg.bucket.artifacts_prefix == "pathways-cache-artifacts"


@pytest.mark.parametrize("field", ["startTime", "endTime"])
def test_a_bad_exclusion_time_names_its_own_key(field):
    exclusion = {"name": "freeze", "startTime": "2027-01-01T00:00:00Z", "endTime": "2027-01-10T00:00:00Z"}
    msg = error(cluster={"maintenance": {"exclusions": [{**exclusion, field: "2027-01-05 00:00"}]}})
    assert f"pathways:cluster.maintenance.exclusions[0].{field}: '2027-01-05 00:00' has no time zone" in msg
    msg = error(cluster={"maintenance": {"exclusions": [{**exclusion, field: "soon"}]}})
    assert f"pathways:cluster.maintenance.exclusions[0].{field}: 'soon' is not an RFC 3339 time" in msg


def test_gke_version_parts():
    from components.model.cluster.cluster import gke_version_key

    assert gke_version_key("1.35") == (1, 35)
    assert gke_version_key("1.35.1") == (1, 35, 1)
    assert gke_version_key("1.35.1-gke.1234000") == (1, 35, 1, 1234000)
    with pytest.raises(ValueError, match="'latest' is not a GKE version"):
        gke_version_key("latest")


def _exclusion(i: int) -> dict:
    return {"name": f"e{i}", "startTime": "2027-01-01T00:00:00Z", "endTime": "2027-01-02T00:00:00Z"}


N2_SIZES = (2, 4, 8, 16, 32, 48, 64, 80, 96)  # machine types for the price list below


def _machines(n: int) -> dict:
    names = [f"n2-{kind}-{size}" for kind in ("standard", "highmem", "highcpu") for size in N2_SIZES]
    names += [f"n2d-{kind}-{size}" for kind in ("standard", "highmem", "highcpu") for size in N2_SIZES]
    return {name: 1.0 for name in names[:n]}


# Caps on list, map and text lengths (hostile-input limits, each far above real use, and GKE's own
# where it has one): (key, config for a length, the largest allowed)
LENGTHS = [
    ("cluster.masterAuthorizedNetworks[0].displayName",
     lambda n: {"cluster": {"publicEndpoint": True, "masterAuthorizedNetworks": [{"cidrBlock": "203.0.113.0/24", "displayName": "a" * n}]}}, 100),
    ("cluster.maintenance.exclusions", lambda n: {"cluster": {"maintenance": {"exclusions": [_exclusion(i) for i in range(n)]}}}, 20),
    ("cluster.masterAuthorizedNetworks",  # GKE: at most 50 authorized networks with a public endpoint
     lambda n: {"cluster": {"publicEndpoint": True, "masterAuthorizedNetworks": [{"cidrBlock": f"203.0.{i}.0/24"} for i in range(n)]}}, 50),
    ("network.pathwaysClientRanges", lambda n: {"network": {"pathwaysClientRanges": [f"10.{i}.0.0/16" for i in range(n)]}}, 20),
    ("monitoring.notificationChannels",
     lambda n: {"monitoring": {"notificationChannels": [f"projects/test-proj-123/notificationChannels/{i}" for i in range(n)]}}, 10),
    ("slices", lambda n: {"slices": [{"name": f"g{i}", "tpu": "v6e-1"} for i in range(n)], "cluster": {"nodePoolConcurrency": 50}}, 100),
    ("workloads", lambda n: {"workloads": [{"name": f"w{i}", "mode": "interactive"} for i in range(n)]}, 100),
    ("allowDisruption", lambda n: {"allowDisruption": [f"slices-main-{i}" for i in range(n)]}, 200),
    ("prices.machineHour", lambda n: {"prices": {"machineHour": _machines(n)}}, 50),
    ("workloads[0].service.clients",
     lambda n: {"workloads": [{"name": "sps", "mode": "service", "service": {"clients": [{"kind": "User", "name": f"u{i}@example.com"} for i in range(n)]}}]}, 50),
]


@pytest.mark.parametrize(("key", "changes", "largest"), LENGTHS, ids=[c[0] for c in LENGTHS])
def test_length_caps_are_inclusive(key, changes, largest):
    model(**changes(largest))
    msg = error(**changes(largest + 1))
    assert any(line.startswith(f"pathways:{key}: ") and f"at most {largest}" in line for line in msg.splitlines()), msg


def test_system_pool_max_below_min():
    assert "pathways:cluster.systemPool: maxNodes 2 is below minNodes 3; set maxNodes >= minNodes" in error(
        cluster={"systemPool": {"minNodes": 3, "maxNodes": 2}})
    model(cluster={"systemPool": {"minNodes": 3, "maxNodes": 3}})


def test_maintenance_window_of_exactly_four_hours():
    # GKE: a recurring window must allow at least 4 hours per occurrence (daily: 31 x 4 h leaves >= 48 h a month)
    window = {"startTime": "2027-01-02T02:00:00Z", "recurrence": "FREQ=DAILY"}
    model(cluster={"maintenance": {"window": {**window, "endTime": "2027-01-02T06:00:00Z"}}})
    assert "window of 3.99972 h; GKE needs at least 4 hours per occurrence" in error(
        cluster={"maintenance": {"window": {**window, "endTime": "2027-01-02T05:59:59Z"}}})


def test_exclusion_span_limits():
    def exclusion(end, scope="NO_UPGRADES"):
        return {"cluster": {"maintenance": {"exclusions": [{"name": "freeze", "scope": scope, "startTime": "2027-01-01T00:00:00Z", "endTime": end}]}}}

    assert "endTime 2027-01-01T00:00:00Z is not after startTime 2027-01-01T00:00:00Z" in error(**exclusion("2027-01-01T00:00:00Z"))
    model(**exclusion("2027-01-01T00:00:01Z"))
    # GKE: a NO_UPGRADES exclusion lasts at most 30 days, counted to the second (not in whole days)
    model(**exclusion("2027-01-31T00:00:00Z"))
    assert "a NO_UPGRADES exclusion lasts at most 30 days (GKE); this one lasts 30.00;" in error(**exclusion("2027-01-31T00:00:01Z"))
    assert "this one lasts 31.00" in error(**exclusion("2027-02-01T00:00:00Z"))
    model(**exclusion("2027-04-01T00:00:00Z", scope="NO_MINOR_OR_NODE_UPGRADES"))


def test_exclusion_names_are_dns_labels_of_at_most_63():
    def named(name):
        return {"cluster": {"maintenance": {"exclusions": [{**_exclusion(0), "name": name}]}}}

    model(**named("e" * 63))
    assert "pathways:cluster.maintenance.exclusions[0].name" in error(**named("e" * 64))


def test_cluster_names_are_dns_labels_of_at_most_40():
    # 40 leaves room for the suffixes GKE and the stack add (node pool and service account names)
    model(cluster={"name": "c" * 40})
    # refused as given, not as "derived" (the derived-name check would also catch it, with a wrong hint)
    assert error(cluster={"name": "c" * 41}).splitlines() == [
        f"pathways:cluster.name: {'c' * 41!r} is not a valid name; use lowercase letters, digits and '-', start with a letter, "
        "end with a letter or digit, at most 40 characters"]


LONG = "x" * 300
# A long bad value is cut in its one-line message: (key, config, characters shown)
CUT = [
    ("cluster.maintenance.window.startTime", {"cluster": {"maintenance": {"window": {"startTime": LONG, "endTime": "2027-01-02T06:00:00Z"}}}}, 40),
    ("cluster.maintenance.window.recurrence", {"cluster": {"maintenance": {"window": {
        "startTime": "2027-01-02T02:00:00Z", "endTime": "2027-01-02T06:00:00Z", "recurrence": LONG}}}}, 60),
    ("network.existingNetwork", {"network": {"existingNetwork": LONG, "existingSubnetwork": "s"}}, 80),
    ("network.nodesCidr", {"network": {"nodesCidr": LONG}}, 60),
    ("monitoring.notificationChannels", {"monitoring": {"notificationChannels": [LONG]}}, 80),
    ("allowDisruption", {"allowDisruption": [LONG]}, 60),
    ("headPool.machineType", {"headPool": {"machineType": LONG}}, 80),
    ("workloads[0].image", {"workloads": [{"name": "w", "image": LONG + "!"}]}, 80),
    ("workloads[0].service.clients[0].name", {"workloads": [{"name": "sps", "mode": "service", "service": {"clients": [{"kind": "User", "name": LONG}]}}]}, 80),
]


@pytest.mark.parametrize(("key", "changes", "shown"), CUT, ids=[c[0] for c in CUT])
def test_long_bad_values_are_cut_in_the_message(key, changes, shown):
    line = next(line for line in error(**changes).splitlines() if line.startswith(f"pathways:{key}"))
    assert repr(LONG[:shown]) in line and repr(LONG[:shown + 1]) not in line, line


def test_scratch_role_id_fits_iam_64_characters():
    # IAM custom role IDs: at most 64 characters of letters, digits, '_' and '.'
    from components.model.config import load
    from tests.test_pinned_behaviour import BASE

    stack = "team-" + "s" * 100
    cfg = load({**BASE, "cluster": {"name": "pathways-team"}}, stack)
    assert cfg.scratch_role_id == "pathwaysScratch_" + ("team_" + "s" * 100)[:48]
    assert len(cfg.scratch_role_id) == 64
    # the reservation-read role (readReservation), within the same 64 characters
    assert cfg.reservation_read_role_id == "pathwaysReservationRead_" + ("team_" + "s" * 100)[:40]
    assert cfg.reservation_read_role_name == f"projects/{cfg.project}/roles/{cfg.reservation_read_role_id}"


def test_coordinator_label_of_exactly_63_characters_is_accepted():
    # <name>-pathways-head-0-0.<name>: a label value holds at most 63 characters (Kubernetes)
    cfg = model(workloads=[{"name": "n" * 22, "mode": "interactive"}])
    assert cfg.workloads[0].name == "n" * 22
    msg = error(workloads=[{"name": "n" * 23, "mode": "interactive"}])
    assert "pathways:workloads[0].name: the coordinator label" in msg and "would be 65 characters" in msg
    model(workloads=[{"name": "n" * 30, "mode": "interactive", "subdomain": "s" * 14}])  # 30 + 19 + 14 = 63
    assert "would be 64 characters" in error(workloads=[{"name": "n" * 30, "mode": "interactive", "subdomain": "s" * 15}])


def test_cluster_node_limit_is_inclusive():
    # GKE Standard: at most 15,000 nodes a cluster. 58 x v5p-2048 (8x8x16, 256 hosts) = 14,848 TPU
    # nodes, plus 1 head node and the system pool's maximum.
    # The ranges that hold them (tests/test_address_space.py): a /18 of nodes, a /13 of pods at a /27 a TPU node.
    def stack(system_max):
        return {"slices": [{"name": "big", "tpu": "v5p-2048", "count": 58}], "cluster": {"systemPool": {"maxNodes": system_max}},
                "network": {"nodesCidr": "10.0.0.0/18", "podsCidr": "10.64.0.0/13", "servicesCidr": "10.128.0.0/20"}}

    model(**stack(151))
    assert ("pathways:slices: 15001 nodes in all (TPU hosts, head and system pools), over GKE's 15000 per Standard cluster"
            in error(**stack(152)))


def test_user_container_limits_are_inclusive():
    def batch(**w):
        return {"workloads": [{"name": "w", "image": "example.com/t:1", "cpu": "24", "memory": "100Gi", **w}]}

    model(**batch(dataLoaderWorkers=24))
    assert "pathways:workloads[0].dataLoaderWorkers: 25 exceeds the user container's CPU limit of 24" in error(**batch(dataLoaderWorkers=25))
    model(**batch(shmSize="100Gi"))
    assert "pathways:workloads[0].shmSize: 101Gi exceeds the user container's memory limit 100Gi" in error(**batch(shmSize="101Gi"))


def test_a_lane_of_exactly_250_pools_is_accepted():
    # 248 slices + system + head pools = 250 pools, all in one lane at concurrency 1
    def stack(slices):
        return {"slices": [{"name": "g", "tpu": "v6e-1", "count": slices}], "cluster": {"nodePoolConcurrency": 1}}

    model(**stack(248))
    assert ("pathways:cluster.nodePoolConcurrency: 1 puts 251 of the stack's 251 node pools in one lane; at most 250"
            in error(**stack(249)))


def test_slice_group_names_are_dns_labels_of_at_most_20():
    model(slices=[{"name": "g" * 20, "tpu": "v6e-16"}])
    assert "pathways:slices[0].name" in error(slices=[{"name": "g" * 21, "tpu": "v6e-16"}])


# Ports the head node already serves (Kubernetes "Ports and Protocols": kubelet 10248, 10250, 10255;
# kube-proxy 10249, 10256; PLATFORM-FACTS §1: proxy 29000, RM 29001 and 29002): no profiler there.
HEAD_PORTS = {10248: "the kubelet", 10250: "the kubelet", 10255: "the kubelet", 10249: "kube-proxy", 10256: "kube-proxy",
              29000: "the IFRT proxy", 29001: "the resource manager", 29002: "the resource manager"}


@pytest.mark.parametrize("port", sorted(HEAD_PORTS))
def test_profiler_port_must_be_free_on_the_head_node(port):
    msg = error(workloads=[{"name": "w", "image": "example.com/t:1", "profiling": {"port": port}}])
    assert f"pathways:workloads[0].profiling.port: {port} is taken on the head node by {HEAD_PORTS[port]}; use another port" in msg


def test_pathways_ports_from_platform_facts():
    from components.model.workloads import ports

    # PLATFORM-FACTS §1: proxy 29000, RM 29001 (+29002), worker 29005 (+29006, 8471, 8080), sidecar 50051
    assert ports.PATHWAYS_PORTS == (29000, 29001, 29002, 29005, 29006, 8471, 8080, 50051)
    assert (ports.PROXY_PORT, ports.RM_PORT, ports.RM_EXTRA_PORT, ports.WORKER_PORT, ports.SIDECAR_PORT) == (29000, 29001, 29002, 29005, 50051)


@pytest.mark.parametrize("price", [0, 0.0, 10_000])
def test_prices_between_0_and_10000_are_accepted(price):
    cfg = model(prices={"machineHour": {"n2-standard-64": price}, "tpuChipHour": {"v6e": {"spot": price}}})
    assert cfg.prices.machine_hour["n2-standard-64"] == price


@pytest.mark.parametrize("price", [-0.01, 10_000.01, "nan", "inf"])
def test_prices_outside_0_to_10000_are_refused(price):
    msg = error(prices={"machineHour": {"n2-standard-64": price}})
    assert f"pathways:prices.machineHour: n2-standard-64: {float(price)} is not a price per hour; use 0..10000 (USD)" in msg
    msg = error(prices={"tpuChipHour": {"v6e": {"spot": price}}})
    assert f"pathways:prices.tpuChipHour: v6e.spot: {float(price)} is not a price per hour; use 0..10000 (USD)" in msg


def test_cluster_fee_bounds_and_price_table_size():
    model(prices={"clusterHour": 1000})
    assert "pathways:prices.clusterHour: 1001" in error(prices={"clusterHour": 1001})
    model(prices={"clusterHour": 0})
    many = {f"fam{i}": {} for i in range(21)}
    assert "pathways:prices.tpuChipHour" in error(prices={"tpuChipHour": many}) and "at most 20" in error(prices={"tpuChipHour": many})


def test_a_head_pod_of_exactly_the_head_machines_allocatable_fits():
    # n2-standard-64 allocatable (see test_machine_facts): 62.77 vCPU, 242.02234375 GiB. The RM (8 / 32Gi)
    # and the IFRT proxy (16 / 100Gi) leave the user container 38.77 vCPU and 110.02234375 GiB.
    def head(cpu, memory):
        return {"workloads": [{"name": "w", "image": "example.com/t:1", "cpu": cpu, "memory": memory}]}

    model(**head("38.77", "110.02234375Gi"))
    assert "pathways:headPool.machineType: n2-standard-64 (62.77 vCPU, 242.0 GiB allocatable) cannot hold" in error(**head("38.77", "110.0224Gi"))
    assert "pathways:headPool.machineType: n2-standard-64 (62.77 vCPU, 242.0 GiB allocatable) cannot hold" in error(**head("38.771", "110.02234375Gi"))
