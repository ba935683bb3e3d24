"""The live preflight (issue #72.8), against recorded responses in the APIs' own shapes (the shapes themselves checked
against Google's discovery documents where they are pinned): what in a real project would stop the first `pulumi up`,
each in one line with its fix, and nothing where nothing would."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from components.model.cluster import identities
from infra.offline import gcp_api
from infra.offline.__main__ import main as offline_main
from infra.offline.preflight import PREFLIGHT_READS
from tests.conftest import example_config, example_path

# the dev example as written (a team may re-point its own dev: docs/adopting.md)
DEV = ("--config", str(example_path("dev")))

# a project where the dev example (v6e-4 Spot in us-east5-b, regular channel) deploys
SERVER_CONFIG = {"defaultClusterVersion": "1.35.7-gke.1000000", "validMasterVersions": ["1.36.4-gke.1200000", "1.35.7-gke.1000000"],
                 "channels": [{"channel": "RAPID", "defaultVersion": "1.36.4-gke.1200000", "validVersions": ["1.36.4-gke.1200000"]},
                              {"channel": "REGULAR", "defaultVersion": "1.35.7-gke.1000000",
                               "validVersions": ["1.35.7-gke.1000000", "1.34.9-gke.1100000"]}]}
MACHINES = [{"name": n, "zone": "us-east5-b", "guestCpus": c} for n, c in (("ct6e-standard-4t", 180), ("n2-standard-64", 64),
                                                                             ("e2-standard-4", 4), ("ct6e-standard-8t", 180))]
ALLOW_ALL = {"name": "projects/pathways-dev-123/policies/x", "spec": {"rules": [{"allowAll": True}]}}


def quota_info(quota_id: str, value: int, **dims) -> dict:
    """A Cloud Quotas QuotaInfo as `gcloud beta quotas info describe --format=json` prints it."""
    return {"name": f"projects/pathways-dev-123/locations/global/services/compute.googleapis.com/quotaInfos/{quota_id}",
            "quotaId": quota_id, "service": "compute.googleapis.com", "isPrecise": True,
            "dimensionsInfos": [{"dimensions": {"region": "us-east5", **dims}, "details": {"value": str(value)}, "applicableLocations": ["us-east5"]}]}


def recorded(tmp_path: Path, **changes) -> Path:
    """A project's answers to every read the dev stack's preflight makes, as gcloud --format=json prints them."""
    from tests.conftest import example_plan

    apis = identities.required_apis({r.type for r in example_plan("dev").resources})
    files = {
        "services": [{"name": f"projects/123456789012/services/{a}", "config": {"name": a}, "state": "ENABLED"} for a in apis],
        "quota-PREEMPTIBLE-TPU-V6E-per-project-region": quota_info("PREEMPTIBLE-TPU-V6E-per-project-region", 64),
        "quota-CPUS-per-project-region": quota_info("CPUS-per-project-region", 2400),
        "quota-N2-CPUS-per-project-region": quota_info("N2-CPUS-per-project-region", 1024),
        "machine-types": MACHINES,
        "server-config": SERVER_CONFIG,
        "org-policy-gcp.resourceLocations": ALLOW_ALL,
        "org-policy-compute.restrictNonConfidentialComputing": ALLOW_ALL,
        "org-policy-compute.restrictCloudNATUsage": ALLOW_ALL,
    }
    files.update(changes)
    out = tmp_path / "answers"
    out.mkdir(exist_ok=True)
    for name, body in files.items():
        if body is not None:
            (out / f"{name}.json").write_text(json.dumps(body))
    return out


def preflight(args: list[str], capsys) -> tuple[int, list[str]]:
    code = offline_main(["preflight", *args])
    return code, capsys.readouterr().out.splitlines()


def test_a_project_where_the_stack_deploys_passes(tmp_path, capsys):
    code, lines = preflight([*DEV, "--recorded", str(recorded(tmp_path))], capsys)
    assert code == 0, lines
    assert lines[-1] == "Verdict: OK - nothing found stops pulumi up"


def _stops(tmp_path, capsys, stack_args=None, **changes) -> list[str]:
    stack_args = DEV if stack_args is None else stack_args
    code, lines = preflight([*stack_args, "--recorded", str(recorded(tmp_path, **changes))], capsys)
    assert code == 3, lines
    return [ln.strip() for ln in lines if ln.strip().startswith("STOP ")]


def test_an_api_not_enabled_stops_it_with_the_command(tmp_path, capsys):
    services = [{"config": {"name": "compute.googleapis.com"}, "state": "ENABLED"}]
    [line] = _stops(tmp_path, capsys, services=services)
    assert line.startswith("STOP apis: ") and "container.googleapis.com" in line and "gcloud services enable" in line


def test_too_little_tpu_or_cpu_quota_stops_it(tmp_path, capsys):
    [tpu] = _stops(tmp_path, capsys, **{"quota-PREEMPTIBLE-TPU-V6E-per-project-region": quota_info("PREEMPTIBLE-TPU-V6E-per-project-region", 0)})
    assert tpu.startswith("STOP quota: slice group(s) dev need 4 v6e preemptible chips in us-east5")
    [cpu] = _stops(tmp_path, capsys, **{"quota-N2-CPUS-per-project-region": quota_info("N2-CPUS-per-project-region", 64)})
    assert "N2-CPUS-per-project-region allows 64" in cpu and "vCPUs" in cpu


def test_a_machine_type_the_zone_does_not_offer_stops_it(tmp_path, capsys):
    [line] = _stops(tmp_path, capsys, **{"machine-types": [m for m in MACHINES if m["name"] != "ct6e-standard-4t"]})
    assert line == ("STOP machine types: ct6e-standard-4t not offered in us-east5-b to pathways-dev-123: move gcp:zone to one that "
                    "offers them (docs/capacity.md, TPU zones)")


def _stack_file(tmp_path: Path, name: str, **changes) -> Path:
    config = copy.deepcopy(example_config("dev"))
    for key, value in changes.items():
        config[f"pathways:{key}"] = value
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}))
    return path


def test_a_channel_that_creates_below_the_tpu_floor_stops_it_with_a_version_that_does_not(tmp_path, capsys):
    # v6e needs GKE 1.31.1-gke.1146000; a (hypothetical) regular channel still on 1.30 creates the cluster below it
    old = copy.deepcopy(SERVER_CONFIG)
    old["channels"][1] = {"channel": "REGULAR", "defaultVersion": "1.30.9-gke.1000000",
                          "validVersions": ["1.31.6-gke.1000000", "1.30.9-gke.1000000"]}
    [line] = _stops(tmp_path, capsys, **{"server-config": old})
    assert line.startswith("STOP versions: the REGULAR channel creates the cluster at 1.30.9-gke.1000000, below 1.31.1-gke.1146000")
    assert line.endswith("set cluster.minMasterVersion: 1.31.6-gke.1000000")


def test_a_version_the_channel_does_not_offer_stops_it(tmp_path, capsys):
    cluster = {**example_config("dev")["pathways:cluster"], "minMasterVersion": "1.33"}
    path = _stack_file(tmp_path, "pinned", cluster=cluster)
    [line] = _stops(tmp_path, capsys, stack_args=("--config", str(path)))
    assert line.startswith("STOP versions: cluster.minMasterVersion 1.33 is not offered by the REGULAR channel in us-east5")


@pytest.mark.parametrize("policy,stops", [
    ({"spec": {"rules": [{"values": {"allowedValues": ["in:europe-locations"]}}]}}, True),
    ({"spec": {"rules": [{"values": {"allowedValues": ["in:us-locations"]}}]}}, False),
    ({"spec": {"rules": [{"values": {"deniedValues": ["us-east5"]}}]}}, True),
    ({"spec": {"rules": [{"values": {"allowedValues": ["us-east5"]}}]}}, False),
])
def test_resource_locations_that_refuse_the_region_stop_it(tmp_path, capsys, policy, stops):
    code, lines = preflight([*DEV, "--recorded", str(recorded(tmp_path, **{"org-policy-gcp.resourceLocations": policy}))], capsys)
    said = [ln for ln in lines if "gcp.resourceLocations" in ln]
    assert (code == 3) == stops and bool(said) == stops, lines
    if stops:
        assert "refuses the stack's region us-east5 and zone us-east5-b" in said[0]


def test_a_read_the_identity_may_not_make_stops_it_naming_the_permission(tmp_path, capsys):
    lines = _stops(tmp_path, capsys, **{"machine-types": None})
    assert any("compute.machineTypes.list" in ln for ln in lines), lines


def test_an_existing_subnet_too_small_for_the_pods_stops_it(tmp_path, capsys):
    path = _stack_file(tmp_path, "shared", network={"existingNetwork": "shared", "existingSubnetwork": "shared-us-east5"})
    subnet = {"name": "shared-us-east5", "ipCidrRange": "10.10.0.0/24", "region": "us-east5",
              "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.20.0.0/26"}, {"rangeName": "svc", "ipCidrRange": "10.30.0.0/24"}]}
    lines = _stops(tmp_path, capsys, stack_args=("--config", str(path)), subnetwork=subnet)
    assert any("has no secondary range 'services'" in ln for ln in lines), lines
    assert any("pods range 10.20.0.0/26 holds 64 pod addresses" in ln for ln in lines), lines


def test_the_preview_identity_is_granted_exactly_the_preflights_reads():
    # each read the module makes, with the permission its REST reference names (PREFLIGHT_READS), and no other
    assert sorted({permission for _, permission in PREFLIGHT_READS.values()}) == sorted(identities.PREFLIGHT_PERMISSIONS)


@pytest.mark.parametrize("name,doc,schema", [
    ("server-config", "container-api.json", "ServerConfig"),
    ("machine-types", "compute-api.json", "MachineType"),
    ("subnetwork", "compute-api.json", "Subnetwork"),
    ("services", "serviceusage-api.json", "GoogleApiServiceusageV1Service"),
])
def test_the_recorded_shapes_are_the_apis(tmp_path, name, doc, schema):
    # the recorded answers' fields are the API's own (Google's discovery documents, pinned): a read of the live
    # project answers in the same shape
    samples = {"server-config": SERVER_CONFIG, "machine-types": MACHINES[0],
               "subnetwork": {"name": "s", "ipCidrRange": "10.0.0.0/20", "region": "r", "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": "10.4.0.0/14"}]},
               "services": {"name": "projects/1/services/container.googleapis.com", "config": {"name": "container.googleapis.com"}, "state": "ENABLED"}}
    for path, _ in gcp_api._leaves(samples[name]):
        found, why = gcp_api.field_schema(doc, schema, path)
        assert found is not None, (path, why)


def test_a_reservation_that_cannot_hold_the_groups_stops_it(tmp_path, capsys):
    # prod consumes a specific reservation: read live in the preflight (whatever readReservation says), judged by the
    # plan's own rule; the recorded describe is the example's, then the same reservation not READY
    from tests.conftest import EXAMPLE_STACKS

    describe = json.loads((EXAMPLE_STACKS / "reservations" / "pathways-prod-v5p.json").read_text())
    machines = [{"name": n} for n in ("ct5p-hightpu-4t", "n2-standard-64", "e2-standard-8")]
    server = {"channels": [{"channel": "STABLE", "defaultVersion": "1.35.6-gke.1000000", "validVersions": ["1.35.6-gke.1000000"]}]}
    quotas = {f"quota-{q}": quota_info(q, 100000) for q in ("CPUS-per-project-region", "N2-CPUS-per-project-region")}
    base = {"machine-types": machines, "server-config": server, "reservation-pathways-prod-v5p": describe, **quotas}
    from components.model.config import load
    from infra.offline.stackfile import load_config, raw_values
    from tests.conftest import example_plan

    # the APIs its identities need: with the quota read a protected stack makes by default (#75.3)
    flat, secrets = load_config(EXAMPLE_STACKS / "Pulumi.prod.yaml")
    reads_quota = load(raw_values(flat), "prod", frozenset(secrets)).read_quota
    services = [{"config": {"name": a}, "state": "ENABLED"} for a in identities.required_apis(
        {r.type for r in example_plan("prod").resources}, read_quota=reads_quota)]
    (tmp_path / "ok").mkdir()
    ok = recorded(tmp_path / "ok", services=services, **base)
    code, lines = preflight(["--config", str(EXAMPLE_STACKS / "Pulumi.prod.yaml"), "--recorded", str(ok)], capsys)
    assert code == 0, lines
    (tmp_path / "bad").mkdir()
    creating = recorded(tmp_path / "bad", services=services, **{**base, "reservation-pathways-prod-v5p": {**describe, "status": "CREATING"}})
    code, lines = preflight(["--config", str(EXAMPLE_STACKS / "Pulumi.prod.yaml"), "--recorded", str(creating)], capsys)
    assert code == 3 and any(ln.strip().startswith("STOP reservations: pathways:slices[0].reservation") and "CREATING" in ln for ln in lines), lines
