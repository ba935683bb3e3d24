"""The error paths and branches no test ran before the mutation run of issue #19 listed them: each
config check with the one line it prints, the plan summary and cost of a service stack, and the
policy and admission branches for inputs the stack itself never produces."""

from __future__ import annotations

import pytest

from tests.test_pinned_behaviour import error, model

SERVICE = {"name": "sps", "mode": "service"}
WORKLOAD = {"name": "train", "image": "example.com/t:1"}


# (config changes, the one line expected)
CONFIG_ERRORS = [
    (dict(network={"pathwaysClientRanges": ["10.0.0.0/8", "0.0.0.0/0"]}),
     "pathways:network.pathwaysClientRanges: 0.0.0.0/0 is the whole internet; list the ranges of the clients that need the proxy"),
    (dict(network={"existingNetwork": "shared-vpc"}),
     "pathways:network: set both existingNetwork and existingSubnetwork, or neither (a VPC is then created)"),
    (dict(network={"existingSubnetwork": "shared-subnet"}),
     "pathways:network: set both existingNetwork and existingSubnetwork, or neither (a VPC is then created)"),
    (dict(monitoring={"notificationChannels": ["projects/p/notificationChannels/1"]}),
     "pathways:monitoring.notificationChannels: 'projects/p/notificationChannels/1' is not a notification channel; "
     "use projects/<project>/notificationChannels/<id>"),
    (dict(workloads=[{**WORKLOAD, "service": {"maxClients": 2}}]),
     "pathways:workloads[0].service: only for mode: service; remove it or set mode: service"),
    (dict(workloads=[{"name": "nb", "mode": "interactive", "state": "finished"}]),
     "pathways:workloads[0].state: finished is for batch runs; an interactive workload is suspended (state: suspended) or removed"),
    (dict(workloads=[{"name": "nb", "mode": "interactive", "persistence": True}]),
     "pathways:workloads[0].mode: profiling and persistence configure the user container, which interactive workloads do not have"),
    (dict(workloads=[{**SERVICE, "service": {"proxyMachineType": "n9-standard-8"}}]),
     "pathways:workloads[0].service.proxyMachineType: 'n9-standard-8' is not a machine type this stack knows"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16"}, {"name": "main", "tpu": "v6e-16"}]),
     "pathways:slices[1].name: 'main' is already used by slices[0]; slice group names must be unique"),
    (dict(slices=[{"name": "a", "tpu": "v6e-16"}, {"name": "b", "tpu": "v6e-16"}], workloads=[WORKLOAD]),
     "pathways:workloads[0].sliceGroup: required when there are several slice groups; valid: a, b"),
    (dict(bucket={"name": "team-scratch", "artifactsName": "team-scratch"}),
     "pathways:bucket.artifactsName: must differ from bucket.name (its lifecycle rules would fight Pathways')"),
    (dict(cluster={"privateNodes": False}),
     "pathways:cluster.privateNodes: false needs cluster.publicEndpoint: true too"),
    (dict(slices=[{"name": "main", "tpu": {"family": "v6e", "topology": "4x4", "chips": 16}}]),
     "pathways:slices[0].tpu: give a TPU name (e.g. v6e-16) or {family, topology[, machineType]}"),
    (dict(slices=[{"name": "main", "tpu": {"family": "v6e"}}]),
     "pathways:slices[0].tpu: give a TPU name (e.g. v6e-16) or {family, topology[, machineType]}"),
    (dict(slices=[{"name": "main", "tpu": 16}]),
     "pathways:slices[0].tpu: 16 is not a TPU; give a name like v6e-16 or {family: v6e, topology: 4x4}"),
    (dict(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "My_Reservation"}]),
     "pathways:slices[0].reservation: 'My_Reservation' is not a reservation: give its name (lowercase letters, digits, '-') or, "
     "for a shared one, projects/<project>/reservations/<name>"),
    (dict(workloads=[{**WORKLOAD, "colocatedPython": {"image": "example.com/sc:20261101-python_3.12-jax_0.9.0", "cpu": "lots"}}]),
     "pathways:workloads[0].colocatedPython.cpu: 'lots' is not a Kubernetes quantity"),
    (dict(workloads=[{**WORKLOAD, "colocatedPython": {"image": "example.com/SC:20261101-python_3.12-jax_0.9.0"}}]),
     "pathways:workloads[0].colocatedPython.image: 'example.com/SC:20261101-python_3.12-jax_0.9.0' is not an image reference"),
    (dict(workloads=[{**WORKLOAD, "serverImage": "example.com/pw/server:latest"}]),
     "pathways:workloads[0].serverImage: 'example.com/pw/server:latest' is not pinned; give an explicit tag (not latest) or a @sha256 digest"),
    (dict(workloads=[{**WORKLOAD, "proxyImage": "example.com/pw/proxy_server"}]),
     "pathways:workloads[0].proxyImage: 'example.com/pw/proxy_server' is not pinned"),
    (dict(workloads=[{**WORKLOAD, "env": "RUN=1"}]),
     "pathways:workloads[0].env: 'RUN=1' is not valid: input should be a valid dictionary"),
]


@pytest.mark.parametrize(("changes", "line"), CONFIG_ERRORS, ids=[c[1].split(":")[1] + "-" + str(i) for i, c in enumerate(CONFIG_ERRORS)])
def test_config_error_line(changes, line):
    msg = error(**changes)
    assert any(got.startswith(line) for got in msg.splitlines()), msg


def test_private_nodes_off_with_a_public_endpoint_is_an_explicit_opt_in():
    cfg = model(cluster={"privateNodes": False, "publicEndpoint": True, "masterAuthorizedNetworks": [{"cidrBlock": "203.0.113.0/24"}]})
    assert (cfg.cluster.private_nodes, cfg.cluster.public_endpoint) == (False, True)


def test_yaml_numbers_and_booleans_in_env_become_text():
    cfg = model(workloads=[{**WORKLOAD, "env": {"STEPS": 100, "DEBUG": True, "RATE": 0.5, "RUN": "r1"}}])
    assert cfg.workloads[0].env == {"STEPS": "100", "DEBUG": "true", "RATE": "0.5", "RUN": "r1"}


def test_config_key_of_the_whole_config():
    from components.model.config import config_key

    assert config_key(()) == "pathways:"
    assert config_key(("zone",)) == "gcp:zone"
    assert config_key(("slices", 0, "tpu")) == "pathways:slices[0].tpu"


def test_quantities_with_a_decimal_exponent():
    from decimal import Decimal

    from components.model import quantity

    # Kubernetes quantities take a decimal exponent: 1e3 = 1000, 5E2 = 500 (resource.Quantity)
    assert quantity.parse("1e3") == Decimal(1000)
    assert quantity.parse("5E2") == Decimal(500)
    assert quantity.parse("12e-1") == Decimal("1.2")


def test_a_catalog_topology_without_a_machine_type_is_an_error_not_an_index_error(monkeypatch):
    import dataclasses

    from components.model.capacity import tpu

    v5e = tpu.FAMILIES["v5e"]
    no_single_chip = dataclasses.replace(v5e, machine_types={m: c for m, c in v5e.machine_types.items() if c != 1})
    monkeypatch.setitem(tpu._FAMILY_BY_ALIAS, "v5e", no_single_chip)
    with pytest.raises(tpu.TpuError, match="topology 1x1 has no v5e machine type; valid: 1x1, 2x2"):
        tpu.resolve("v5e", "1x1")


@pytest.mark.parametrize(("image", "pinned"), [
    ("not an image!", False), ("example.com/t", False), ("example.com/t:latest", False), ("example.com/t:1", True),
    ("example.com/t@sha256:" + "a" * 64, True), ("example.com/t@sha256:abc", False),
])
def test_what_counts_as_pinned(image, pinned):
    from components.model.workloads.images import is_pinned

    assert is_pinned(image) is pinned


def test_a_nested_unknown_key_lists_its_own_section_keys():
    msg = error(cluster={"systemPool": {"machinetype": "e2-standard-8"}})
    assert msg.splitlines() == [
        "pathways:cluster.systemPool.machinetype: unknown key; valid keys: machineType, minNodes, maxNodes"]
    msg = error(workloads=[{"name": "w", "image": "example.com/t:1", "imge": "x"}])
    line = next(line for line in msg.splitlines() if line.startswith("pathways:workloads[0].imge: "))
    assert line.startswith("pathways:workloads[0].imge: unknown key; valid keys: name, mode, state, sliceGroup, team, slices, topology, image,")
    assert "--path" not in line


def test_workloads_sharing_a_group_within_its_slices_need_no_kueue():
    two = {"slices": [{"name": "main", "tpu": "v6e-16", "count": 2}], "kubernetes": {"kueue": {"enabled": False}}}
    wl = [{"name": "a", "mode": "interactive", "slices": 1}, {"name": "b", "mode": "interactive", "slices": 1}]
    assert [w.name for w in model(**two, workloads=wl).workloads] == ["a", "b"]
    wl[1]["slices"] = 2
    assert "pathways:kubernetes.kueue.enabled: false, but workloads a, b want 3 slices of group 'main', which has 2" in error(**two, workloads=wl)


def test_namespace_of_63_characters():
    assert model(kubernetes={"namespace": "n" * 63}).kubernetes.namespace == "n" * 63
    assert "pathways:kubernetes.namespace" in error(kubernetes={"namespace": "n" * 64})


def test_monitoring_defaults():
    # the alert thresholds a stack gets without a monitoring section
    m = model().monitoring
    assert (m.duty_cycle_threshold, m.duty_cycle_minutes, m.restart_storm) == (10, 30, 5)


@pytest.mark.parametrize(("workload", "hint"), [
    ({"name": "n" * 23}, "use a name of at most 22 characters, or set workloads[0].subdomain to at most 21 characters"),
    ({"name": "n" * 43}, "use a name of at most 22 characters, or set workloads[0].subdomain to at most 1 characters"),
    ({"name": "n" * 44}, "use a shorter name or subdomain"),  # no room left for any subdomain
    ({"name": "n" * 10, "subdomain": "s" * 40}, "use a shorter name or subdomain"),
])
def test_coordinator_label_hint(workload, hint):
    msg = error(workloads=[{"mode": "interactive", **workload}])
    line = next(line for line in msg.splitlines() if "coordinator label" in line)
    assert line.endswith(hint), line


def test_elastic_may_lose_up_to_all_its_slices():
    def elastic(slices, missing):
        return {"workloads": [{"name": "w", "mode": "interactive", "slices": slices, "elastic": {"maxMissingSlices": missing}}]}

    assert model(**elastic(2, 2)).workloads[0].elastic.max_missing_slices == 2
    assert model(**elastic(1, 1)).workloads[0].elastic.max_missing_slices == 1  # elastic: {} on one slice
    assert ("pathways:workloads[0].elastic.maxMissingSlices: 3 is more than the workload's 2 slice(s) (it is how many slices "
            "the job may lose and keep running); use 1..2") in error(**elastic(2, 3))


def test_a_sidecar_may_take_exactly_half_of_the_vm():
    # ct6e-standard-4t allocatable (GKE reservations, then 1 vCPU / 2 GiB of DaemonSets): 178.48 vCPU
    # and 696.74234375 GiB; half: 89.24 vCPU and 348.371171875 GiB for sidecar memory + shm.
    def sidecar(cpu, shm):
        return {"workloads": [{"name": "j", "image": "example.com/t:1", "colocatedPython": {
            "image": "example.com/sc:20261101-python_3.12-jax_0.9.0", "cpu": cpu, "memory": "340Gi", "shmSize": shm}}]}

    model(**sidecar("89.24", "8.371171875Gi"))
    assert "leave the Pathways worker less than half" in error(**sidecar("89.241", "8.371171875Gi"))
    assert "leave the Pathways worker less than half" in error(**sidecar("89.24", "8.372Gi"))


def test_a_suspended_workload_does_not_hold_slices():
    wl = [{"name": "a", "mode": "interactive", "slices": 2}, {"name": "b", "mode": "interactive", "slices": 2, "state": "suspended"}]
    cfg = model(kubernetes={"kueue": {"enabled": False}}, workloads=wl)
    assert [w.state for w in cfg.workloads] == ["running", "suspended"]


def test_one_workload_over_its_group_gets_one_error():
    msg = error(kubernetes={"kueue": {"enabled": False}}, workloads=[{"name": "a", "mode": "interactive", "slices": 3}])
    assert msg.splitlines() == ["pathways:workloads[0].slices: 3 exceeds the 2 slice(s) of group 'main' (spares are not for "
                                "workloads); use 1..2 or raise slices[0].count"]


def test_derived_names_at_their_length_limits():
    from components.model.config import load
    from tests.test_pinned_behaviour import BASE

    # cluster name pathways-<stack>: a GKE cluster name holds 40 characters here
    assert load(dict(BASE), "s" * 31).cluster_name == "pathways-" + "s" * 31
    with pytest.raises(Exception, match="pathways:cluster.name: derived 'pathways-s{32}' is not a valid name"):
        load(dict(BASE), "s" * 32)
    # bucket name <project>-<stack>-pathways, cut to GCS's 63 characters
    cfg = load({**BASE, "cluster": {"name": "pathways-x"}}, "s" * 60)
    assert cfg.bucket_name == ("test-proj-123-" + "s" * 60)[:63]
    assert len(cfg.bucket_name) == 63
    # its artifacts bucket: the first 53 characters and -artifacts, again 63
    assert cfg.artifacts_bucket_name == ("test-proj-123-" + "s" * 60)[:53] + "-artifacts"
    # service account IDs: at most 30 characters (IAM), <cluster name cut>-<purpose>
    cfg = load({**BASE, "cluster": {"name": "c" * 40}}, "dev")
    assert cfg.service_account_id("sys") == "c" * 26 + "-sys"
    assert len(cfg.service_account_id("workloads")) == 30


def test_a_top_level_misspelt_key_gets_no_path_hint():
    [line] = error(slice=[]).splitlines()
    assert line.startswith("pathways:slice: unknown key; valid keys: protected, cluster,") and "--path" not in line


def test_a_proxy_machine_too_small_for_a_client_proxy():
    msg = error(workloads=[{"name": "sps", "mode": "service", "service": {"proxyMachineType": "n2-standard-8"}}])
    assert ("pathways:workloads[0].service.proxyMachineType: n2-standard-8 (6.91 vCPU, 26.3 GiB allocatable) cannot hold a client "
            "proxy (16 CPU, 100G: pathwaysutils' pw-proxy.yaml); use n2-standard-32 or larger") in msg


# Kubernetes resource.Quantity suffixes (k8s.io/apimachinery/pkg/api/resource/quantity.go)
QUANTITIES = {
    "1": 1, "1n": "0.000000001", "1u": "0.000001", "1m": "0.001", "1k": 1000, "1M": 1000**2, "1G": 1000**3, "1T": 1000**4,
    "1P": 1000**5, "1E": 1000**6, "1Ki": 1024, "1Mi": 1024**2, "1Gi": 1024**3, "1Ti": 1024**4, "1Pi": 1024**5, "1Ei": 1024**6,
}


@pytest.mark.parametrize("text", list(QUANTITIES))
def test_every_quantity_suffix(text):
    from decimal import Decimal

    from components.model import quantity

    assert quantity.parse(text) == Decimal(QUANTITIES[text])


def test_an_image_reference_of_512_characters_is_the_longest():
    image = "example.com/" + "a" * (512 - len("example.com/") - len(":1")) + ":1"
    assert len(image) == 512
    assert model(workloads=[{**WORKLOAD, "image": image}]).workloads[0].image == image
    longer = image.replace(":1", "a:1")
    assert f"pathways:workloads[0].image: {longer[:80]!r} is not an image reference" in error(workloads=[{**WORKLOAD, "image": longer}])


def test_profiler_port_defaults_to_9999():
    cfg = model(workloads=[{**WORKLOAD, "profiling": {}}])
    assert cfg.workloads[0].profiling.port == 9999


def test_service_and_loader_defaults_and_bounds():
    cfg = model(workloads=[{"name": "sps", "mode": "service"}])
    assert cfg.workloads[0].service_settings.max_clients == 4  # four client proxies, one node each
    assert cfg.proxy_nodes == 4
    assert model(workloads=[{"name": "sps", "mode": "service", "service": {"maxClients": 1}}]).proxy_nodes == 1
    assert "pathways:workloads[0].service.maxClients: 0 is not valid" in error(workloads=[{"name": "sps", "mode": "service", "service": {"maxClients": 0}}])
    ns = "n" * 63
    assert f"pathways:workloads[0].service.namespace: {ns!r}: pathwaysutils' client looks for the service JobSet in 'default'" in error(
        kubernetes={"namespace": ns}, workloads=[{"name": "sps", "mode": "service", "service": {"namespace": ns}}])
    assert f"pathways:workloads[0].service.namespace: {ns + 'n'!r} is not a valid name" in error(
        workloads=[{"name": "sps", "mode": "service", "service": {"namespace": ns + "n"}}])
    assert model(workloads=[WORKLOAD]).workloads[0].data_loader_workers == 4


def test_workload_name_checks_in_order():
    # a name over 63 characters is no DNS label; at 63 it is one, but its coordinator label is too long
    assert "pathways:workloads[0].name: " + repr("n" * 64) + " is not a valid name" in error(workloads=[{"name": "n" * 64, "mode": "interactive"}])
    msg = error(workloads=[{"name": "n" * 63, "mode": "interactive", "subdomain": "s"}])
    assert "is not a valid name" not in msg and "the coordinator label" in msg
    assert model(workloads=[WORKLOAD]).workloads[0].termination_grace_period_seconds == 30


def test_a_subdomain_over_63_characters_is_no_dns_label():
    msg = error(workloads=[{"name": "w", "mode": "interactive", "subdomain": "s" * 64}])
    assert f"pathways:workloads[0].subdomain: {'s' * 64!r} is not a valid name" in msg


def test_every_bucket_name_derived_from_a_stack_named_google_is_refused_with_its_own_key():
    # GCS refuses names containing "google": a stack named after it derives three such buckets, each its own line
    from components.model.config import load
    from components.model.errors import ConfigError
    from tests.test_pinned_behaviour import BASE

    with pytest.raises(ConfigError) as e:
        load({**BASE, "resilience": {"mtc": {"inMemoryVolumeSize": "64Gi"}}}, "google")
    lines = str(e.value).splitlines()
    for key, name in (("bucket.name", "test-proj-123-google-pathways"), ("bucket.artifactsName", "test-proj-123-google-pathways-artifacts"),
                      ("resilience.mtc.bucket", "test-proj-123-google-pathways-checkpoints")):
        assert any(line.startswith(f"pathways:{key}: derived {name!r} is not a valid bucket name;") and line.endswith("; set it explicitly")
                   for line in lines), (key, lines)
