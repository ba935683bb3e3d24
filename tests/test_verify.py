"""`python -m infra.offline verify` (infra/verify/): drift from Pulumi's refresh preview, each benign rule, the audit of
the live objects by the policy pack, the command's output and exit status. The fixture is what the real CLI v3.274.1
and pulumi-kubernetes v4.25.0 printed for `pulumi refresh --preview-only --json` on the local control plane after
three out-of-band edits (a ClusterQueue patched, a guard binding deleted, a namespace's Pod Security label lowered),
trimmed to the resources it is about; tests_e2e/test_verify.py makes the same edits on the real engines."""

from __future__ import annotations

import copy
import datetime
import json
from pathlib import Path

import pytest

from infra.offline.__main__ import main as offline_main
from infra.verify import audit, drift
from infra.verify.findings import Finding, text
from policies.rules import ALL_POLICIES
from tests.conftest import GROUPS_RBAC, config_with, write_stack_file

FIXTURE = Path(__file__).parent / "fixtures" / "verify" / "refresh-preview-edited.json"
EDITED = json.loads(FIXTURE.read_text())


def test_each_out_of_band_edit_is_a_finding_with_old_new_who_and_the_fix():
    found, filtered = drift.findings(EDITED, "drift")
    by_subject = {f.subject: f for f in found}
    assert set(by_subject) == {"ClusterQueue kueue-clusterqueue-pathways", "ValidatingAdmissionPolicyBinding guardrails-node-guard",
                               "Namespace workloads"}
    cq = by_subject["ClusterQueue kueue-clusterqueue-pathways"]
    assert cq.severity == "medium"
    assert cq.what.startswith("spec.queueingStrategy: BestEffortFIFO -> StrictFIFO, by kubectl-patch (update at 2026-12-06T")
    assert ("`pulumi up --refresh --stack drift --target 'urn:pulumi:drift::pathways::pathways:k8s:Kueue$kubernetes:kueue.x-k8s.io"
            "/v1beta2:ClusterQueue::kueue-clusterqueue-pathways'` puts back BestEffortFIFO") in cq.fix and "field conflict" in cq.fix
    binding = by_subject["ValidatingAdmissionPolicyBinding guardrails-node-guard"]
    assert binding.severity == "high" and binding.what == "deleted outside the stack (the refresh finds it gone)"
    ns = by_subject["Namespace workloads"]
    assert ns.severity == "high" and 'pod-security.kubernetes.io/enforce"]: privileged -> baseline, by kubectl-label' in ns.what
    # the JobSet controller filled its webhook certificate (deployed before as_applied): known, filtered, counted
    assert filtered == {"controller-filled-webhook-cert": 4}


def test_an_untouched_stack_has_no_drift():
    quiet = copy.deepcopy(EDITED)
    quiet["steps"] = [s for s in quiet["steps"] if s["op"] == "refresh"]
    assert drift.findings(quiet, "drift") == ([], {})


def _step(type_: str, name: str, path: str, old: dict, new: dict, inputs: dict | None = None, op: str = "update") -> dict:
    return {"op": op, "urn": f"urn:pulumi:s::pathways::{type_}::{name}", "detailedDiff": {path: {"kind": "update"}} if path else {},
            "oldState": {"type": type_, "outputs": old, "inputs": inputs or old}, "newState": {"type": type_, "outputs": new}}


LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"


@pytest.mark.parametrize("rule,steps,kept", [
    # a serve workload's replicas are its autoscaler's; without one they are drift
    ("autoscaler-owned-replicas", [_step(LWS, "serve-chat", "spec.replicas", {"metadata": {"name": "chat"}, "spec": {"replicas": 1}},
                                         {"metadata": {"name": "chat"}, "spec": {"replicas": 3}}),
                                   _step(HPA, "serve-chat-hpa", "", {"spec": {"scaleTargetRef": {"name": "chat"}}}, {}, op="refresh")], False),
    ("autoscaler-owned-replicas", [_step(LWS, "serve-chat", "spec.replicas", {"metadata": {"name": "chat"}, "spec": {"replicas": 1}},
                                         {"metadata": {"name": "chat"}, "spec": {"replicas": 3}})], True),
    ("cluster-autoscaler-node-count", [_step("gcp:container/nodePool:NodePool", "head", "nodeCount", {"nodeCount": 0}, {"nodeCount": 2},
                                             {"autoscaling": {"minNodeCount": 0, "maxNodeCount": 4}})], False),
    ("cluster-autoscaler-node-count", [_step("gcp:container/nodePool:NodePool", "head", "nodeCount", {"nodeCount": 2}, {"nodeCount": 1})], True),
    ("release-channel-version", [_step("gcp:container/cluster:Cluster", "cluster", "masterVersion", {"masterVersion": "1.34.1"},
                                       {"masterVersion": "1.34.2"}, {"releaseChannel": {"channel": "REGULAR"}})], False),
    ("release-channel-version", [_step("gcp:container/nodePool:NodePool", "slices-main-0", "version", {"version": "1.34.1"},
                                       {"version": "1.34.2"}, {"management": {"autoUpgrade": False}})], True),
    ("finished-jobset", [_step("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "workload-train", "",
                               {"spec": {"ttlSecondsAfterFinished": 600}}, {}, op="delete")], False),
    ("finished-jobset", [_step("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "workload-train", "", {"spec": {}}, {}, op="delete")], True),
])
def test_each_benign_rule_filters_what_it_names_and_nothing_else(rule, steps, kept):
    found, filtered = drift.findings({"steps": steps}, "s")
    assert bool(found) is kept, (found, filtered)
    assert filtered == ({} if kept else {rule: 1})


def test_the_audit_judges_the_live_objects_with_the_pack():
    # the namespace's label lowered to baseline: the live JobSet's hostNetwork pods would now be refused
    found = audit.findings(EDITED, "drift", ALL_POLICIES)
    pod_security = [f for f in found if "pathways-pod-security" in f.what]
    assert pod_security and all(f.severity == "high" and f.subject == "workload-train" for f in pod_security)
    assert 'violates PodSecurity "baseline:latest": host namespaces' in pod_security[0].what
    # untouched (the label as deployed), the same live objects pass it
    quiet = copy.deepcopy(EDITED)
    for s in quiet["steps"]:
        if s["urn"].endswith("::workloads"):
            s["newState"]["outputs"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
    assert not [f for f in audit.findings(quiet, "drift", ALL_POLICIES) if "pathways-pod-security" in f.what]


def test_the_report_orders_by_severity_and_counts():
    found = [Finding("low", "drift", "b", "x", "y"), Finding("high", "audit", "a", "x", "y")]
    out = text(found, "s", ["drift"])
    assert out.index("HIGH") < out.index("LOW") and out.rstrip().endswith("1 high, 1 low")
    assert text([], "s", ["drift"]).splitlines()[1] == "no findings"


def test_the_command_reads_a_refresh_preview_and_exits_3_on_findings(tmp_path, capsys):
    stack_file = write_stack_file(tmp_path, config_with(pathwaysVersion="jax-0.9.0", cluster=GROUPS_RBAC,
                                                        runs={"submitters": [{"name": "r@example.com"}]},
                                                        workloads=[{"name": "train", "image": "example.com/t:1", "slices": 1}]),
                                  name="Pulumi.drift.yaml")
    argv = ["verify", "--stack", "drift", "--config", str(stack_file), "--refresh-json", str(FIXTURE)]
    assert offline_main(argv) == 3
    out = capsys.readouterr().out
    assert "HIGH   (CRITICAL) drift: ValidatingAdmissionPolicyBinding guardrails-node-guard: deleted outside the stack" in out
    assert "filtered: 4 change(s) by rule controller-filled-webhook-cert" in out
    # the options the program declares are the plan's: no rule about them fires on the live objects
    assert "pathways-jobset-lifecycle" not in out
    assert offline_main([*argv, "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["stack"] == "drift" and doc["filtered"] == {"controller-filled-webhook-cert": 4}
    assert {f["area"] for f in doc["findings"]} == {"drift", "audit"}
    broken = tmp_path / "broken.json"
    broken.write_text("{\"steps\": 3}")
    assert offline_main(["verify", "--stack", "drift", "--config", str(stack_file), "--refresh-json", str(broken)]) == 2
    assert "no steps; give the output of `pulumi refresh --preview-only --json`" in capsys.readouterr().err


def test_a_finding_a_reviewer_accepted_is_silenced_until_its_date(tmp_path):
    from infra.verify.command import acknowledged

    (tmp_path / "verify.s.json").write_text(json.dumps([
        {"subject": "ClusterQueue pathways", "why": "a StrictFIFO trial", "until": "2026-12-31"},
        {"subject": "Namespace workloads", "why": "old", "until": "2026-11-30"}]))
    assert [a["subject"] for a in acknowledged("s", "2026-12-06", tmp_path)] == ["ClusterQueue pathways"]
    assert acknowledged("other", "2026-12-06", tmp_path) == []
    (tmp_path / "verify.s.json").write_text(json.dumps([{"subject": "x"}]))
    with pytest.raises(Exception, match="a list of {subject, why, until: YYYY-MM-DD}"):
        acknowledged("s", "2026-12-06", tmp_path)


def _registry(answers: dict[str, str]):
    def fetch(url: str):
        for suffix, body in answers.items():
            if url.endswith(suffix):
                return body
        return None
    return fetch


def test_upstream_lists_each_pin_behind_its_newest_release_and_what_the_registry_says_of_it():
    from components.model.config import load
    from infra.verify import upstream

    cfg = load({k.split(":", 1)[1]: v for k, v in config_with(pathwaysVersion="jax-0.9.0").items() if k.startswith("pathways:")}
               | {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "s")
    pins = {p.name: p for p in upstream.pins(cfg)}
    assert pins["Kueue"].version == cfg.kubernetes.kueue.version and pins["Kueue"].package == "sigs.k8s.io/kueue"
    assert "LeaderWorkerSet" not in pins  # no serve workload: the stack installs no LWS
    assert pins["pulumi-kubernetes SDK"].version == "4.25.0"  # requirements.lock
    fetch = _registry({
        "sigs.k8s.io/kueue/@v/list": "v0.19.2\nv0.21.1\nv0.20.0\nv0.22.0-rc.1\n",
        "sigs.k8s.io/kueue/@v/v0.21.1.mod": "module sigs.k8s.io/kueue\n",
        "sigs.k8s.io/jobset/@v/list": "v0.11.0\n",  # a partial mirror: older than the pin
        "github.com/pulumi/pulumi/pkg/v3/@v/list": f"{pins['pulumi CLI'].version}\n",
        f"github.com/pulumi/pulumi/pkg/v3/@v/{pins['pulumi CLI'].version}.mod": "// Deprecated: use github.com/pulumi/pulumi/pkg/v4\nmodule x\n",
        "pypi/pulumi-kubernetes/json": json.dumps({"info": {"version": "4.25.0", "classifiers": []},
                                                   "releases": {"4.25.0": [{"yanked": True}]}}),
        "pypi/pulumi/json": json.dumps({"info": {"version": "4.0.0", "classifiers": []}, "releases": {}}),
    })
    found = {f.subject: f for f in upstream.findings(cfg, fetch)}
    kueue = found[f"Kueue {cfg.kubernetes.kueue.version}"]
    assert kueue.severity == "medium" and kueue.what == "sigs.k8s.io/kueue 0.21.1 is out (2 minor release(s) ahead)"  # no rc
    assert "pathways:kubernetes.kueue.version" in kueue.fix
    assert found["JobSet 0.12.0"].severity == "info" and "older than the pin" in found["JobSet 0.12.0"].what
    assert found["pulumi-kubernetes SDK 4.25.0"].what == "4.25.0 is yanked on PyPI" and found["pulumi-kubernetes SDK 4.25.0"].severity == "high"
    # on the newest release, but deprecated: said, high
    (cli,) = [f for s, f in found.items() if s.startswith("pulumi CLI")]
    assert cli.severity == "high" and "the module is deprecated: use github.com/pulumi/pulumi/pkg/v4" in cli.what
    assert "GKE version" not in found  # the cloud's, checked apart (gke_findings)


# --- reservation and maintenance health (infra/verify/reservations.py) ----------------------------------------------

RESERVATIONS = Path(__file__).parent / "fixtures" / "reservations"


def _reserved_model(window=None, future=None):
    from components.model.config import load

    # a future reservation requests a whole reservation (no block path)
    reservation = "pathways-prod-v5p" if future else "pathways-prod-v5p/reservationBlocks/prod-block-1"
    group = {"name": "train", "tpu": "v5p-128", "count": 1, "reservation": reservation, **({"futureReservation": future} if future else {})}
    cluster = {**GROUPS_RBAC, **({"maintenance": {"window": window}} if window else {})}
    raw = config_with(pathwaysVersion="jax-0.9.0", slices=[group], cluster=cluster, gcp_zone="us-east5-a")
    return load({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("pathways:")}
                | {"project": "pathways-prod-123", "region": "us-east5", "zone": "us-east5-a"}, "prod")


def _block(**changes):
    doc = json.loads((RESERVATIONS / "v5p-block-ready.json").read_text())
    return {**doc, **changes}


WEEKEND = {"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
NOW = datetime.datetime(2026, 12, 6, 12, tzinfo=datetime.timezone.utc)


def _maintenance(start: str, can_reschedule: bool = True) -> dict:
    # the Compute API's GroupMaintenanceInfo with an UpcomingMaintenance (v1 reference), as a block's describe holds it
    return {"reservationMaintenance": {"maintenancePendingCount": 16, "maintenanceOngoingCount": 0, "schedulingType": "GROUPED",
                                       "upcomingGroupMaintenance": {"type": "SCHEDULED", "maintenanceStatus": "PENDING",
                                                                    "canReschedule": can_reschedule, "windowStartTime": start,
                                                                    "windowEndTime": start.replace("T0", "T1")}}}


def test_a_healthy_block_with_maintenance_inside_the_window_is_quiet():
    from infra.verify import reservations

    model = _reserved_model(WEEKEND)
    read = lambda group, what: _block(**_maintenance("2026-12-12T03:00:00Z")) if what == "block" else None  # a Saturday, 03:00
    assert reservations.findings(model, read, NOW) == []


@pytest.mark.parametrize("doc,severity,text", [
    (_block(healthInfo={"healthStatus": "DEGRADED"}), "high", "is DEGRADED, not HEALTHY"),
    (_block(status="CREATING"), "high", "is CREATING, not READY"),
    (_block(count="8"), "high", "has 8 hosts in all; the groups on it need 16"),
    # a Wednesday 03:00: outside SA,SU 02:00-10:00
    (_block(**_maintenance("2026-12-09T03:00:00Z")), "medium", "SCHEDULED pending from 2026-12-09 03:00 UTC, outside the stack's maintenance window"),
])
def test_what_a_reservation_block_says_of_the_stacks_slices_is_a_finding(doc, severity, text):
    from infra.verify import reservations

    found = reservations.findings(_reserved_model(WEEKEND), lambda group, what: doc if what == "block" else None, NOW)
    assert [f.severity for f in found] == [severity], found
    assert text in found[0].what, found[0].what


def test_maintenance_that_can_move_says_how_and_one_that_cannot_says_to_checkpoint():
    from infra.verify import reservations

    (movable,) = reservations.findings(_reserved_model(WEEKEND), lambda g, w: _block(**_maintenance("2026-12-09T03:00:00Z")), NOW)
    assert "gcloud compute reservations blocks perform-maintenance pathways-prod-v5p --block-name prod-block-1 --zone us-east5-a" in movable.fix
    (fixed,) = reservations.findings(_reserved_model(WEEKEND), lambda g, w: _block(**_maintenance("2026-12-09T03:00:00Z", False)), NOW)
    assert "cannot be moved" in fixed.fix


@pytest.mark.parametrize("status,start,finding", [
    ("PENDING_APPROVAL", "2026-12-10T00:00:00Z", "is PENDING_APPROVAL, 3 day(s) before its start 2026-12-10"),
    ("PENDING_APPROVAL", "2027-01-20T00:00:00Z", None),  # weeks ahead: not yet a concern
    ("APPROVED", "2026-12-10T00:00:00Z", None),
    ("DECLINED", "2027-01-20T00:00:00Z", "is DECLINED: no TPUs come at 2027-01-20"),
])
def test_a_future_reservation_not_approved_near_its_start_or_declined_is_a_finding(status, start, finding):
    from infra.verify import reservations

    begins = datetime.datetime.fromisoformat(start.replace("Z", "+00:00"))
    future = {"startTime": start, "endTime": (begins + datetime.timedelta(days=14)).isoformat().replace("+00:00", "Z")}
    model = _reserved_model(WEEKEND, future)
    # the Compute API's FutureReservation, as `gcloud compute future-reservations describe` prints it
    doc = {"kind": "compute#futureReservation", "name": "pathways-prod-v5p", "status": {"procurementStatus": status},
           "timeWindow": {"startTime": start, "endTime": future["endTime"]}}
    found = reservations.findings(model, lambda g, w: doc if w == "future" else None, NOW)
    assert [f.what for f in found if "future reservation" in f.what] == ([] if finding is None else [f"its future reservation {finding}"])


def test_the_window_check_follows_the_rrule():
    from infra.verify.reservations import in_window

    def at(s: str) -> datetime.datetime:
        return datetime.datetime.fromisoformat(s).replace(tzinfo=datetime.timezone.utc)
    args = (WEEKEND["startTime"], WEEKEND["endTime"], WEEKEND["recurrence"])
    assert in_window(at("2026-12-13T09:59:00"), *args) and not in_window(at("2026-12-13T10:00:00"), *args)
    assert not in_window(at("2026-12-10T03:00:00"), *args)
    assert in_window(at("2026-12-10T03:00:00"), "2026-12-05T02:00:00Z", "2026-12-05T06:00:00Z", "FREQ=DAILY")
    assert in_window(at("2026-12-10T03:00:00"), "2026-12-05T02:00:00Z", "2026-12-05T06:00:00Z", "FREQ=MONTHLY;BYDAY=1SA") is None


def test_the_release_channel_is_judged_against_what_gke_offers_today():
    from components.model.cluster.cluster import CHANNEL_DEFAULT_MINOR
    from components.model.config import load
    from infra.verify import upstream

    cfg = load({k.split(":", 1)[1]: v for k, v in config_with(pathwaysVersion="jax-0.9.0").items() if k.startswith("pathways:")}
               | {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "s")
    channel = cfg.cluster.release_channel.value
    (unread,) = upstream.gke_findings(cfg, None)
    assert unread.severity == "info" and "gcloud container get-server-config --location us-east5" in unread.fix
    # the API's ServerConfig (GKE v1 reference: channels[] of channel, defaultVersion, validVersions)
    same = {"channels": [{"channel": channel, "defaultVersion": f"{CHANNEL_DEFAULT_MINOR[channel]}.7-gke.1200000", "validVersions": []}]}
    assert upstream.gke_findings(cfg, same) == []
    moved = {"channels": [{"channel": channel, "defaultVersion": "1.99.1-gke.100", "validVersions": []}]}
    (news,) = upstream.gke_findings(cfg, moved)
    assert news.severity == "low" and f"the model's table says {CHANNEL_DEFAULT_MINOR[channel]}" in news.what
    (gone,) = upstream.gke_findings(cfg, {"channels": []})
    assert gone.severity == "high"


def test_the_audit_judges_the_gcp_half_from_its_live_outputs():
    # A bucket made public outside the stack: pulumi-gcp's refresh reads the Bucket's live properties into its outputs
    # (storage.Bucket: publicAccessPrevention "inherited" when no longer enforced, uniformBucketLevelAccess; the
    # provider's schema and the Cloud Storage JSON API's iamConfiguration), and the pack's bucket rule judges them.
    urn = "urn:pulumi:prod::pathways::pathways:gcp:ScratchBucket$gcp:storage/bucket:Bucket::scratch"
    live = {"name": "pathways-prod-123-prod-pathways", "location": "US-EAST5", "uniformBucketLevelAccess": True,
            "publicAccessPrevention": "inherited", "forceDestroy": False, "lifecycleRules": []}
    preview = {"steps": [{"op": "update", "urn": urn, "detailedDiff": {"publicAccessPrevention": {"kind": "update"}},
                          "oldState": {"type": "gcp:storage/bucket:Bucket", "urn": urn, "custom": True,
                                       "outputs": {**live, "publicAccessPrevention": "enforced"}, "inputs": {}},
                          "newState": {"type": "gcp:storage/bucket:Bucket", "urn": urn, "custom": True, "outputs": live}}]}
    found = audit.findings(preview, "prod", ALL_POLICIES)
    assert [(f.severity, f.subject, f.what) for f in found if "pathways-bucket-hardening" in f.what] == [
        ("high", "scratch", 'pathways-bucket-hardening (mandatory): bucket pathways-prod-123-prod-pathways: set public_access_prevention = "enforced"')]
    (change,) = drift.findings(preview, "prod")[0]
    assert change.severity == "high" and change.what == "publicAccessPrevention: enforced -> inherited"


def test_what_verify_cannot_read_is_one_line_not_a_traceback(tmp_path, capsys):
    (tmp_path / "train.block.json").write_text("{not json")
    stack_file = write_stack_file(tmp_path, config_with(pathwaysVersion="jax-0.9.0"), name="Pulumi.drift.yaml")
    # no group of this stack is on a reservation: the broken file is never read
    assert offline_main(["verify", "--stack", "drift", "--config", str(stack_file), "--reservations", str(tmp_path)]) == 0
    assert offline_main(["verify", "--stack", "../etc", "--upstream"]) == 2
    assert "--stack '../etc' is not a stack name" in capsys.readouterr().err
    from infra.offline.stackfile import StackFileError
    from infra.verify.reservations import read_files

    with pytest.raises(StackFileError, match="not the JSON a `gcloud ... describe --format=json` prints"):
        read_files(tmp_path)("train", "block")
    assert offline_main(["verify", "--stack", "drift", "--config", str(stack_file)]) == 2
    assert "verify what?" in capsys.readouterr().err


def test_findings_and_alerts_share_one_severity_scale():
    # #75.7: a finding carries the Cloud Monitoring severity an alert of its weight has, in the same order
    from components.manifests.monitoring import ALERT_SEVERITY
    from infra.verify.findings import ALERT_SEVERITY_OF, SEVERITIES, Finding

    cloud = ["CRITICAL", "ERROR", "WARNING"]  # the AlertPolicy API's Severity enum, highest first
    mapped = [ALERT_SEVERITY_OF[s] for s in SEVERITIES if ALERT_SEVERITY_OF[s]]
    assert mapped == cloud and ALERT_SEVERITY_OF["info"] is None
    assert set(ALERT_SEVERITY.values()) <= set(cloud)
    assert Finding("medium", "drift", "x", "y", "z").to_json()["alertSeverity"] == "ERROR"
