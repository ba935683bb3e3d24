"""A reservation judged before anything is created (components/model/capacity/reservations.py): recorded `gcloud compute
reservations describe --format=json` documents (tests/fixtures/reservations) refused with one line each, the good ones
with the plan's free-VM line."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from components.model.capacity.reservations import ReservationRecordError, availability, free_vms, from_describe, problems
from components.model.capacity.tpu import from_name
from components.model.config import resolve
from components.model.cost.summary import stack_summary
from infra.offline.__main__ import main as offline_main
from infra.reservation_records import read_records
from tests.conftest import config_with, example_path, write_stack_file
from tests.test_storage import refusal

RECORDS = Path(__file__).parent / "fixtures" / "reservations"
V5P_32 = from_name("v5p-32")  # 4 hosts of ct5p-hightpu-4t
NEEDED = V5P_32.hosts * (2 + 1)  # two slices and a spare: 12 VMs


def record(name: str):
    return from_describe(json.loads((RECORDS / name).read_text()))


def judged(name: str, **kw) -> list[str]:
    args = {"project": "test-proj-123", "owner": "test-proj-123", "zone": "us-east5-a", **kw}
    return problems(record(name), V5P_32, NEEDED, **args)


def test_a_ready_reservation_with_room_passes_and_the_plan_says_how_much_is_free():
    assert judged("v5p-ready.json") == []
    assert availability(record("v5p-ready.json"), V5P_32) == "reservation train-v5p: 12 of 16 VMs free"


@pytest.mark.parametrize(("name", "kw", "line"), [
    ("v5p-creating.json", {}, "reservation train-v5p is CREATING, not READY: GKE cannot create nodes in it"),
    ("v6e-wrong-machine.json", {}, "reservation train-v5p reserves ct6e-standard-4t VMs, not ct5p-hightpu-4t (the group's v5p-32)"),
    ("v5p-too-small.json", {}, "reservation train-v5p has 4 of 16 ct5p-hightpu-4t VMs free; the group needs 12 (4 hosts x slices and "
                               "spares): lower count or spares, or grow the reservation"),
    ("v5p-expiring.json", {"needed_until": datetime(2027, 3, 1, tzinfo=timezone.utc)},
     "reservation train-v5p ends at 2027-01-15 00:00 UTC (calendar mode), before the group's neededUntil 2027-03-01: its nodes go with it"),
    ("v5p-shared-elsewhere.json", {"owner": "owner-proj-9"},
     "reservation train-v5p of project owner-proj-9 is not shared with test-proj-123 (shareType SPECIFIC_PROJECTS, projects other-proj-1)"),
    ("v5p-ready.json", {"zone": "us-east5-b"}, "reservation train-v5p is in us-east5-a, not gcp:zone us-east5-b: a node pool consumes a "
                                               "reservation of its own zone only"),
])
def test_a_reservation_that_cannot_hold_the_group_is_refused_with_one_line(name, kw, line):
    assert judged(name, **kw) == [line]


def test_the_vms_the_group_already_holds_count_as_its_own():
    # a running stack's nodes are in inUseCount: 4 free + the 8 it holds cover the 12 it needs
    assert judged("v5p-too-small.json", held_vms=8) == []


def test_a_reservation_shared_with_this_project_passes():
    assert judged("v5p-shared-with-us.json", owner="owner-proj-9") == []


def test_an_open_ended_use_of_an_ending_reservation_is_refused_until_the_group_says_how_long():
    (line,) = judged("v5p-expiring.json")
    assert "before an open-ended use (set neededUntil)" in line
    assert judged("v5p-expiring.json", needed_until=datetime(2027, 1, 1, tzinfo=timezone.utc)) == []


def test_an_aggregate_tpu_reservation_counts_chips_of_its_family():
    ironwood = from_name("tpu7x-128")  # 16 hosts of tpu7x-standard-4t
    state = record("tpu7x-aggregate.json")
    assert free_vms(state, ironwood) == (256 - 64) // 4
    assert availability(state, ironwood) == "reservation ironwood: 48 of 64 VMs free"
    assert problems(state, ironwood, ironwood.hosts * 3, project="test-proj-123", owner="test-proj-123", zone="us-east5-a") == []
    (line,) = problems(state, ironwood, ironwood.hosts * 4, project="test-proj-123", owner="test-proj-123", zone="us-east5-a")
    assert line.startswith("reservation ironwood has 48 of 64 tpu7x-standard-4t VMs free; the group needs 64")
    (wrong,) = problems(state, V5P_32, NEEDED, project="test-proj-123", owner="test-proj-123", zone="us-east5-a")
    assert wrong == "reservation ironwood reserves tpu7x accelerators, not ct5p (ct5p-hightpu-4t)"


@pytest.mark.parametrize("doc", [[], {"name": "x"}, {"name": "x", "status": "READY", "specificReservation": {"count": "many"}}])
def test_a_file_that_is_not_a_reservation_is_refused(doc):
    with pytest.raises(ReservationRecordError):
        from_describe(doc)


# --- the stack: slices[].reservationRecord -------------------------------------------------------


def stack_summary_of(name: str):
    from components.model.config import load
    from infra.offline.stackfile import load_config, raw_values

    config, secrets = load_config(example_path(name))
    cfg = load(raw_values(config), name, frozenset(secrets))
    return stack_summary(resolve(cfg), read_records(cfg))


def prod_with(**group_changes):
    cfg = yaml.safe_load(example_path("prod").read_text())["config"]
    cfg["pathways:slices"] = [{**g, **group_changes.get(g["name"], {})} for g in cfg["pathways:slices"]]
    return cfg


def test_prod_plans_with_its_recorded_reservations_free_vms(capsys):
    assert offline_main(["plan", "--config", str(example_path("prod"))]) == 0
    out = capsys.readouterr().out
    assert out.count("  reservation pathways-prod-v5p: 72 of 72 VMs free (recorded)\n") == 1
    assert stack_summary_of("prod")["sliceGroups"][0]["reservationFree"] == "reservation pathways-prod-v5p: 72 of 72 VMs free"


def test_groups_that_share_a_reservation_are_judged_together_with_one_line_before_anything_is_created(tmp_path, capsys):
    # train 5 x 16 hosts + explore 2: 82 VMs of the recorded 72
    path = write_stack_file(tmp_path, prod_with(train={"count": 5}), name="Pulumi.prod.yaml")
    assert offline_main(["plan", "--config", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: pathways:slices[0].reservation: reservation pathways-prod-v5p has 72 of 72 ct5p-hightpu-4t VMs free; groups train, "
        "explore need 82 (16 hosts x slices and spares): lower count or spares, or grow the reservation"]


@pytest.mark.parametrize(("record", "line"), [
    ("tests/fixtures/reservations/missing.json", "pathways:slices[0].reservationRecord: tests/fixtures/reservations/missing.json: cannot "
     "read it (No such file or directory); record it with: gcloud compute reservations describe pathways-prod-v5p --zone us-east5-a --format=json > "
     "tests/fixtures/reservations/missing.json"),
    ("tests/fixtures/reservations/not-json.json", None),  # gcloud's own chatter instead of --format=json
    ("tests/fixtures/reservations/v5p-ready.json", "pathways:slices[0].reservationRecord: records reservation 'train-v5p', not "
     "'pathways-prod-v5p'; record the group's own reservation"),
])
def test_a_record_that_cannot_be_read_or_is_another_reservations_is_refused(tmp_path, capsys, record, line):
    path = write_stack_file(tmp_path, prod_with(train={"reservationRecord": record}), name="Pulumi.prod.yaml")
    assert offline_main(["plan", "--config", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: pathways:slices[0].reservationRecord: ")
    if line:
        assert err == [f"error: {line}"]
    else:
        assert ": not JSON (" in err[0] and "record it with: gcloud compute reservations describe" in err[0]


def test_record_keys_need_a_reservation_and_a_json_file_under_the_project():
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservationRecord": "r.json"}])
    assert "reservationRecord, reservationBlockRecord, readReservation, futureReservation and neededUntil describe a reservation" in (refusal(cfg, "pathways:slices[0]") or "")
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "r", "reservationRecord": "../r.json"}])
    assert "is not a .json file under the project root" in (refusal(cfg, "pathways:slices[0]") or "")


# --- the stack: slices[].readReservation (a live read under pulumi preview/up) -----------------------------------------
# The program's own path, under the SDK's mocks: the offline engine's invoke hook answers get_reservation with
# recorded responses in the provider's output shape (pulumi-gcp 10.2 getReservation: specificReservations[] {count,
# inUseCount, instanceProperties[] {machineType}}, shareSettings[] {shareType, projectMaps[] {id, projectId}},
# deleteAtTime, status, zone), where a real preview asks Compute Engine.


def live(name: str, *, count: int = 72, in_use: int = 0, status: str = "READY", machine: str = "ct5p-hightpu-4t",
         share: dict | None = None, delete_at: str = "") -> dict:
    return {"name": name, "status": status, "zone": "us-east5-a", "deleteAtTime": delete_at,
            "specificReservations": [{"count": count, "inUseCount": in_use, "assuredCount": count,
                                      "instanceProperties": [{"machineType": machine}]}],
            "shareSettings": [share] if share else [], "specificReservationRequired": True}


def run_live(config: dict, reservations: dict[str, dict]):
    from infra.offline import engine, stackfile

    flat, secrets = stackfile.flatten(config)
    return engine.run(flat, "prod", secrets, reservations=reservations)


def live_prod(**both):
    cfg = prod_with(train={"readReservation": True, **both}, explore={"readReservation": True, **both})
    cfg["pathways:slices"] = [{k: v for k, v in g.items() if k != "reservationRecord"} for g in cfg["pathways:slices"]]
    return cfg


def refused_live(config: dict, reservations: dict[str, dict]) -> list[str]:
    from infra.errors import InvalidStackConfig

    with pytest.raises(InvalidStackConfig) as err:
        run_live(config, reservations)
    return str(err.value).splitlines()


def test_a_live_read_reservation_with_room_lets_the_program_register_its_pools():
    plan = run_live(live_prod(), {"pathways-prod-123/pathways-prod-v5p": live("pathways-prod-v5p", in_use=0)})
    assert len(plan.by_type("gcp:container/nodePool:NodePool")) > 2
    # a running stack's own VMs are in inUseCount, and a live read cannot tell them from others': the total is judged
    run_live(live_prod(), {"pathways-prod-123/pathways-prod-v5p": live("pathways-prod-v5p", in_use=66)})


@pytest.mark.parametrize(("response", "line"), [
    (dict(count=60), "reservation pathways-prod-v5p has 60 ct5p-hightpu-4t VMs in all; groups train, explore need 66"),
    (dict(status="CREATING"), "reservation pathways-prod-v5p is CREATING, not READY"),
    (dict(machine="ct6e-standard-4t"), "ct6e-standard-4t"),
    (dict(delete_at="2027-01-01T00:00:00Z"), "2027-01-01"),
])
def test_a_live_read_reservation_that_cannot_hold_the_groups_is_refused_before_any_resource(response, line):
    lines = refused_live(live_prod(), {"pathways-prod-123/pathways-prod-v5p": live("pathways-prod-v5p", **response)})
    assert len(lines) == 1 and lines[0].startswith("pathways:slices[0].reservation: ") and line in lines[0], lines


def test_a_shared_reservation_is_read_in_its_owners_project_and_must_be_shared_with_this_one():
    shared = {"shareType": "SPECIFIC_PROJECTS", "projectMaps": [{"id": "pathways-prod-123", "projectId": "pathways-prod-123"}]}
    path = "projects/capacity-owner-1/reservations/pathways-prod-v5p"
    run_live(live_prod(reservation=path), {"capacity-owner-1/pathways-prod-v5p": live("pathways-prod-v5p", share=shared)})
    other = {"shareType": "SPECIFIC_PROJECTS", "projectMaps": [{"id": "someone-else-1", "projectId": "someone-else-1"}]}
    lines = refused_live(live_prod(reservation=path), {"capacity-owner-1/pathways-prod-v5p": live("pathways-prod-v5p", share=other)})
    assert len(lines) == 1 and "shared" in lines[0], lines


def test_a_reservation_the_preview_cannot_read_is_one_line_naming_the_key():
    lines = refused_live(live_prod(), {})
    # (the mocks report the failure against the invoke's `name` argument, as a provider's check failure)
    assert lines == ["pathways:slices[0].reservation: pathways-prod-v5p: cannot read it (googleapi: Error 404: The resource "
                     "'projects/pathways-prod-123/zones/us-east5-a/reservations/pathways-prod-v5p' was not found, notFound (name)); the "
                     "preview identity needs compute.reservations.get on its project (the bootstrap grants it in its own: re-run it "
                     "once readReservation is on, as it is by default in a protected stack), or record it (reservationRecord) and "
                     "set readReservation: false"]


def test_the_offline_tools_make_no_live_read():
    # no recorded response: a read would fail; the offline plan judges the record instead (prod's own)
    from infra.offline import engine, stackfile

    cfg = prod_with(train={"readReservation": True})
    flat, secrets = stackfile.flatten(cfg)
    assert engine.run(flat, "prod", secrets).by_type("gcp:container/nodePool:NodePool")


# --- the stack: slices[].futureReservation (a calendar-mode request) ------------------------------------------------

CALENDAR = {"name": "cal", "tpu": "v6e-16", "count": 2, "reservation": "cal-v6e",
            "futureReservation": {"startTime": "2027-03-01T00:00:00Z", "endTime": "2027-03-31T00:00:00Z"}}


def calendar_plan(now: str = "2026-12-01T00:00:00+00:00", **group):
    from components.model.cluster import cluster as cluster_rules
    from infra.offline import engine, stackfile

    config = config_with(gcp_zone="us-east5-a", pathwaysVersion="jax-0.9.0", slices=[{**CALENDAR, **group}],
                         workloads=[{"name": "t", "image": "example.com/t:1"}])
    flat, secrets = stackfile.flatten(config)
    before = cluster_rules.now
    cluster_rules.now = lambda: datetime.fromisoformat(now)
    try:
        return engine.run(flat, "test", secrets)
    finally:
        cluster_rules.now = before


def test_a_calendar_request_is_submitted_protected_and_kept_and_the_pools_wait_for_its_delivery():
    plan = calendar_plan()
    (fr,) = plan.by_type("gcp:compute/futureReservation:FutureReservation")
    assert (fr.input("name"), fr.input("reservationName"), fr.input("zone")) == ("cal-v6e", "cal-v6e", "us-east5-a")
    assert (fr.input("reservationMode"), fr.input("planningStatus"), fr.input("specificReservationRequired")) == ("CALENDAR", "SUBMITTED", True)
    assert fr.input("timeWindow") == {"startTime": "2027-03-01T00:00:00Z", "endTime": "2027-03-31T00:00:00Z"}
    assert fr.input("aggregateReservation") == {
        "vmFamily": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E", "workloadType": "BATCH",
        "reservedResources": [{"accelerator": {"acceleratorCount": 32, "acceleratorType": "projects/test-proj-123/zones/us-east5-a/acceleratorTypes/ct6e"}}]}
    # Compute Engine lets no one cancel, change or delete a submitted request
    assert fr.options.get("protect") is True and fr.options.get("retainOnDelete") is True
    # before delivery: no pool (GKE would refuse one on a reservation that is not there), no queue quota
    assert not [r for r in plan.by_type("gcp:container/nodePool:NodePool") if r.input("name").startswith("tpu-cal")]
    cq = next(r for r in plan.resources if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
    tpu = next(f for f in cq.input("spec.resourceGroups")[0]["flavors"] if f["name"] == "tpu-cal")
    assert {q["name"]: q["nominalQuota"] for q in tpu["resources"]}["google.com/tpu"] == "0"
    # the first plan after its start has the pools, consuming the delivered reservation by name, and the quota
    later = calendar_plan(now="2027-03-01T00:05:00+00:00")
    pools = [r for r in later.by_type("gcp:container/nodePool:NodePool") if r.input("name").startswith("tpu-cal")]
    assert len(pools) == 2 and pools[0].input("nodeConfig.reservationAffinity.values") == ["cal-v6e"]


@pytest.mark.parametrize(("group", "key", "text"), [
    (dict(tpu="tpu7x-8", count=1), "pathways:slices[0].futureReservation", "calendar-mode requests reserve TPU v6e, v5p, v5e only"),
    (dict(count=3), "pathways:slices[0].futureReservation", "48 chips (3 slice(s) and spares of 16); a calendar-mode request reserves 1, 4"),
    (dict(futureReservation={"startTime": "2027-03-01T00:00:00Z", "endTime": "2027-07-01T00:00:00Z"}),
     "pathways:slices[0].futureReservation.endTime", "is 122 days after startTime; a calendar-mode request lasts 1 to 90 days"),
    (dict(futureReservation={"startTime": "2027-03-01T00:00:00Z", "endTime": "2027-03-01T06:00:00Z"}),
     "pathways:slices[0].futureReservation.endTime", "is 0.25 days after startTime"),
    (dict(futureReservation={"startTime": "2027-03-01T00:00:00", "endTime": "2027-03-02T00:00:00Z"}),
     "pathways:slices[0].futureReservation.startTime", "has no time zone"),
    (dict(reservation="projects/other-proj-1/reservations/cal"), "pathways:slices[0].reservation", "is another project's path"),
    (dict(neededUntil="2027-04-15"), "pathways:slices[0].neededUntil", "is after the future reservation's endTime 2027-03-31"),
    (dict(tpu="v5e-16", futureReservation={"startTime": "2027-03-01T00:00:00Z", "endTime": "2027-03-05T00:00:00Z", "workloadType": "SERVING"}),
     "pathways:slices[0].futureReservation.workloadType", "SERVING: calendar mode offers TPU v5e for it in us-central1-a, us-south1-a only"),
])
def test_a_calendar_request_compute_engine_would_refuse_is_one_line(group, key, text):
    cfg = config_with(gcp_zone="us-east5-a", slices=[{**CALENDAR, **group}])
    line = refusal(cfg, key)
    assert line and text in line, line


def test_the_policy_pack_refuses_an_unprotected_request_and_the_diff_any_change_to_one():
    import dataclasses

    from infra.offline.diff import diff, guard
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES

    plan = calendar_plan()
    assert not [v for v in run_policies(plan, ALL_POLICIES) if v.policy == "pathways-future-reservation-protected"]
    loose = dataclasses.replace(plan, resources=[dataclasses.replace(r, options={**r.options, "protect": False})
                                                 if r.type.endswith("FutureReservation") else r for r in plan.resources])
    found = [v for v in run_policies(loose, ALL_POLICIES) if v.policy == "pathways-future-reservation-protected"]
    assert len(found) == 1 and "set `protect`" in found[0].message
    moved = calendar_plan(futureReservation={"startTime": "2027-03-02T00:00:00Z", "endTime": "2027-03-31T00:00:00Z"})
    verdict = guard(diff(plan, moved), plan, moved, protected=False, allowed=[])
    assert len(verdict.refusals) == 1 and "cannot be changed, cancelled or deleted" in verdict.refusals[0], verdict.refusals


def test_the_request_uses_the_vm_families_and_workload_types_pulumi_gcp_documents():
    # Source: the installed pulumi-gcp SDK's FutureReservationAggregateReservationArgs ("Possible values are: ...")
    import inspect
    import re

    import pulumi_gcp as gcp

    from components.gcp.future_reservations import VM_FAMILIES
    from components.model.capacity.pools import FutureReservationRequest
    from components.model.capacity.pools_checks import CALENDAR_TPUS

    doc = inspect.getdoc(gcp.compute.FutureReservationAggregateReservationArgs.__init__) or ""
    documented = {field: set(re.findall(r"`([A-Z0-9_]+)`", text)) for field, text in
                  re.findall(r":param \S+ (vm_family|workload_type): .*?Possible values are: ([^\n]+)", doc, re.S)}
    assert set(VM_FAMILIES.values()) <= documented["vm_family"] and set(VM_FAMILIES) == set(CALENDAR_TPUS)
    assert set(FutureReservationRequest.model_fields["workload_type"].annotation.__args__) <= documented["workload_type"]


# --- a block or sub-block of a reservation (slices[].reservation .../reservationBlocks/<b>[/reservationSubBlocks/<s>]) --

BLOCK = "pathways-prod-v5p/reservationBlocks/prod-block-1"
SUB_BLOCK = f"{BLOCK}/reservationSubBlocks/prod-sub-2"


def on_block(reservation: str, record: str | None, **more) -> dict:
    """prod's train group (4 slices of 16 hosts) on one block of its reservation."""
    train = {"reservation": reservation, **more}
    if record:
        train["reservationBlockRecord"] = f"tests/fixtures/reservations/{record}"
    return one_slice_pretrain(prod_with(train=train)) if more.get("count") == 1 else prod_with(train=train)


def one_slice_pretrain(cfg: dict) -> dict:
    """prod with its pretraining on one slice (a sub-block holds one v5p-128)."""
    cfg["pathways:workloads"] = [{**w, "slices": 1} if w["name"] == "pretrain" else w for w in cfg["pathways:workloads"]]
    return cfg


def plan_errors(tmp_path, capsys, cfg: dict) -> list[str]:
    path = write_stack_file(tmp_path, cfg, name="Pulumi.prod.yaml")
    code = offline_main(["plan", "--config", str(path)])
    err = capsys.readouterr().err.splitlines()
    assert (code == 0) == (err == []), err
    return err


def test_a_group_on_a_healthy_block_with_room_plans_and_its_pools_consume_that_block(tmp_path, capsys):
    assert plan_errors(tmp_path, capsys, on_block(BLOCK, "v5p-block-ready.json")) == []
    from infra.offline import engine, stackfile

    flat, secrets = stackfile.flatten(on_block(BLOCK, "v5p-block-ready.json"))
    pools = [p for p in engine.run(flat, "prod", secrets).by_type("gcp:container/nodePool:NodePool")
             if (p.inputs.get("nodeConfig") or {}).get("reservationAffinity", {}).get("values") == [BLOCK]]
    # GKE's reservationAffinity takes the block's path as gcloud's --reservation does (Cluster Toolkit gke-node-pool)
    assert len(pools) == 4 and all(p.inputs["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == "SPECIFIC_RESERVATION"
                                   for p in pools)


@pytest.mark.parametrize(("reservation", "record", "line"), [
    (BLOCK, "v5p-block-busy.json", "pathways:slices[0].reservation: block prod-block-1 of reservation pathways-prod-v5p has 48 of 64 "
     "hosts free; the groups on it need 64 (hosts x slices and spares): target a larger block, or lower count or spares"),
    (SUB_BLOCK, "v5p-sub-block-degraded.json", "pathways:slices[0].reservation: sub-block prod-sub-2 of reservation pathways-prod-v5p "
     "is DEGRADED, not HEALTHY: its hosts cannot be counted on (xpk places no slice on such a sub-block); target another block "
     "or wait for its repair"),
    (SUB_BLOCK, "v5p-block-ready.json", "pathways:slices[0].reservationBlockRecord: the recorded block is 'prod-block-1'; record "
     "the group's own sub-block prod-sub-2 of reservation pathways-prod-v5p"),
])
def test_a_block_that_cannot_hold_the_group_is_refused_with_one_line(tmp_path, capsys, reservation, record, line):
    err = plan_errors(tmp_path, capsys, on_block(reservation, record, count=1 if "sub" in record else 4))
    # (a degraded sub-block of 16 hosts is also too small for more than one v5p-128: one slice keeps one line)
    assert err == [f"error: {line}"]


def test_the_reservation_is_still_judged_for_every_group_on_any_of_its_blocks(tmp_path, capsys):
    # train on a block (64 hosts) and explore on the whole reservation: 66 of its 72 VMs, then 82 with a fifth slice
    assert plan_errors(tmp_path, capsys, on_block(BLOCK, None)) == []
    (line,) = plan_errors(tmp_path, capsys, on_block(BLOCK, None, count=5))
    assert "groups train, explore need 82" in line


def test_block_keys_are_refused_where_they_cannot_apply():
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "r", "reservationBlockRecord": "b.json"}])
    assert "reservationBlockRecord records a block of the reservation; name the block" in (refusal(cfg, "pathways:slices[0]") or "")
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "r/reservationSubBlocks/s"}])
    assert "is not a reservation" in (refusal(cfg, "pathways:slices[0].reservation") or "")
    cfg = config_with(slices=[{"name": "main", "tpu": "v6e-16", "reservation": "r/reservationBlocks/b", "futureReservation": {
        "startTime": "2027-03-01T00:00:00Z", "endTime": "2027-03-08T00:00:00Z"}}])
    assert "futureReservation requests a whole reservation" in (refusal(cfg, "pathways:slices[0]") or "")


def live_block(name: str, *, count: int = 64, in_use: int = 0, health: str = "HEALTHY", sub: bool = False) -> dict:
    """pulumi-gcp 10.2's getReservationBlock / getReservationSubBlock outputs (blockCount or subBlockCount, inUseCount,
    healthInfos[] {healthStatus}, status)."""
    return {"name": name, "status": "READY", "zone": "us-east5-a", "inUseCount": in_use, ("subBlockCount" if sub else "blockCount"): count,
            "healthInfos": [{"healthStatus": health}]}


def test_a_live_read_judges_the_block_and_its_reservation_from_the_providers_reads():
    cfg = one_slice_pretrain(live_prod(reservation=SUB_BLOCK))
    cfg["pathways:slices"][0]["count"] = 1
    cfg["pathways:slices"][1]["reservation"] = "pathways-prod-v5p"
    reservation = {"pathways-prod-123/pathways-prod-v5p": live("pathways-prod-v5p")}
    sub = "pathways-prod-123/pathways-prod-v5p/prod-block-1/prod-sub-2"
    run_live(cfg, {**reservation, sub: live_block("prod-sub-2", count=16, sub=True)})
    lines = refused_live(cfg, {**reservation, sub: live_block("prod-sub-2", count=16, sub=True, health="DEGRADED")})
    assert lines == ["pathways:slices[0].reservation: sub-block prod-sub-2 of reservation pathways-prod-v5p is DEGRADED, not HEALTHY: its "
                     "hosts cannot be counted on (xpk places no slice on such a sub-block); target another block or wait for its repair"]
    (missing,) = refused_live(cfg, reservation)
    assert missing.startswith("pathways:slices[0].reservation: pathways-prod-v5p/reservationBlocks/prod-block-1/reservationSubBlocks/"
                              "prod-sub-2: cannot read it (googleapi: Error 404: The resource 'projects/pathways-prod-123/zones/us-east5-a/"
                              "reservations/pathways-prod-v5p/reservationBlocks/prod-block-1/reservationSubBlocks/prod-sub-2' was not found")


def test_the_plan_shows_what_the_recorded_block_can_give(tmp_path, capsys):
    path = write_stack_file(tmp_path, on_block(BLOCK, "v5p-block-ready.json"), name="Pulumi.prod.yaml")
    assert offline_main(["plan", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "  block prod-block-1 of reservation pathways-prod-v5p: 64 of 64 hosts free (recorded)\n" in out
    assert "  reservation pathways-prod-v5p: 72 of 72 VMs free (recorded)\n" in out


# --- #75.3: a protected stack reads live by default -------------------------------------------------------------------

def _model(config: dict):
    from components.model.config import load
    from infra.offline import stackfile

    flat, secrets = stackfile.flatten(config)
    return load(stackfile.raw_values(flat), "prod", frozenset(secrets))


def test_a_protected_stack_reads_its_quota_and_own_reservations_live_unless_it_says_not():
    prod = _model(prod_with())  # the committed example: protected, a reservation of its own project, no read key
    assert prod.protected and prod.read_quota and all(g.read_reservation for g in prod.slices)
    opted_out = _model({**prod_with(train={"readReservation": False}), "pathways:readQuota": False})
    assert not opted_out.read_quota and [g.read_reservation for g in opted_out.slices] == [False, True]
    unprotected = _model({**prod_with(), "pathways:protected": False})
    assert not unprotected.read_quota and not any(g.read_reservation for g in unprotected.slices)
    # another project's reservation: the bootstrap cannot grant its read, so it is left to an explicit key
    shared = _model(prod_with(train={"reservation": "projects/capacity-owner-1/reservations/pathways-prod-v5p"},
                              explore={"reservation": "projects/capacity-owner-1/reservations/pathways-prod-v5p"}))
    assert not any(g.read_reservation for g in shared.slices) and shared.read_quota
    own = _model(prod_with(train={"reservation": "projects/pathways-prod-123/reservations/pathways-prod-v5p"}))
    assert own.slices[0].read_reservation  # its own project, written as a path
    # a pool set, however its keys are spelt, is left alone (readReservation cannot be set on one)
    for key in ("subBlocks", "sub_blocks"):
        ironwood = _model({**prod_with(), "gcp:zone": "us-central1-c", "gcp:region": "us-central1",
                           "pathways:cluster": {"releaseChannel": "RAPID"}, "pathways:workloads": [],
                           "pathways:slices": [{"name": "cubes", "tpu": "tpu7x-128", "reservation": "r/reservationBlocks/b", key: ["s0"]}]})
        assert not ironwood.slices[0].read_reservation and ironwood.protected, key


def test_a_protected_stacks_default_read_of_an_aggregate_reservation_falls_back_to_its_record():
    # pulumi-gcp's get_reservation returns no aggregate fields: read live, an aggregate reservation has nothing to judge;
    # the group's record judges it (as the offline plan does) instead of refusing a valid stack
    aggregate = {"name": "pathways-prod-v5p", "status": "READY", "zone": "us-east5-a", "deleteAtTime": "",
                 "specificReservations": [], "shareSettings": [], "specificReservationRequired": True}
    plan = run_live(prod_with(), {"pathways-prod-123/pathways-prod-v5p": aggregate})
    assert len(plan.by_type("gcp:container/nodePool:NodePool")) > 2
    without_record = prod_with()
    without_record["pathways:slices"] = [{k: v for k, v in g.items() if k != "reservationRecord"} for g in without_record["pathways:slices"]]
    # nothing else judges it: refused, naming the fix (once for the reservation both groups consume)
    lines = refused_live(without_record, {"pathways-prod-123/pathways-prod-v5p": aggregate})
    assert lines and all("holds no specific VMs, as an aggregate reservation reads" in ln and "reservationRecord" in ln
                         and "readReservation: false" in ln for ln in lines), lines
