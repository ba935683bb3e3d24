"""Training-safe operations and observability as code: maintenance control, restart defaults, the
dashboard and alerts (structure and metric types checked), and console links."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from components.manifests import monitoring
from infra.errors import InvalidStackConfig
from infra.offline.stackfile import flatten, raw_values
from policies.rules import ALL_POLICIES
from tests.conftest import FLEET_MANAGERS, ROOT, config_with, example_config, example_path, example_plan, plan_of, stack_config

VERSION = "jax-0.9.0"
CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"


def violations(plan, name):
    from infra.offline.policy_runner import run_policies

    return [v for v in run_policies(plan, ALL_POLICIES) if v.policy == name]


# --- maintenance ---------------------------------------------------------------------------------


def test_prod_holds_node_upgrades_and_maintains_on_weekends():
    c = example_plan("prod").one(CLUSTER)
    policy = c.input("maintenancePolicy")
    assert policy["recurringWindow"] == {"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
    (exclusion,) = policy["maintenanceExclusions"]
    assert exclusion["exclusionName"] == "pretraining-h1" and exclusion["exclusionOptions"] == {"scope": "NO_MINOR_OR_NODE_UPGRADES"}
    assert exclusion["startTime"] < exclusion["endTime"]


def test_tpu_pools_upgrade_as_slices():
    for p in example_plan("prod").by_type(POOL):
        if p.input("name").startswith("tpu-"):
            # no surge node (a spare VM cannot join a slice): Cluster Toolkit gke-node-pool's TPU default
            assert p.input("upgradeSettings") == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}


def test_protected_stacks_must_hold_node_upgrades():
    prod = example_plan("prod")
    assert violations(prod, "pathways-disruption-policy") == []
    cfg = json.loads(json.dumps(example_config("prod")))
    cfg["pathways:cluster"].pop("maintenance")
    found = violations(plan_of(cfg, "prod"), "pathways-disruption-policy")
    assert {v.message.split()[2] for v in found} == {f"tpu-train-{i}" for i in range(4)} | {"tpu-explore-0"}
    assert "NO_MINOR_OR_NODE_UPGRADES" in found[0].message
    # the way out is the exclusion alone: auto-upgrade cannot be off in a release channel (GKE API ReleaseChannel)
    assert "autoUpgrade" not in found[0].message
    # unprotected stacks may leave upgrades to GKE
    assert violations(example_plan("staging"), "pathways-disruption-policy") == []


@pytest.mark.parametrize("maintenance,key,text", [
    ({"window": {"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T04:00:00Z"}}, "pathways:cluster.maintenance.window", "at least 4 hours"),
    ({"window": {"startTime": "Saturday", "endTime": "2026-12-05T10:00:00Z"}}, "pathways:cluster.maintenance.window.startTime", "is not an RFC 3339 time"),
    ({"window": {"startTime": "2026-12-05T02:00:00", "endTime": "2026-12-05T10:00:00Z"}}, "pathways:cluster.maintenance.window.startTime", "has no time zone"),
    ({"window": {"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "every weekend"}}, "pathways:cluster.maintenance.window.recurrence", "is not an RRULE"),
    ({"exclusions": [{"name": "x", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-02-01T00:00:00Z", "scope": "NO_UPGRADES"}]}, "pathways:cluster.maintenance.exclusions[0]", "at most 30 days"),
    ({"exclusions": [{"name": "x", "startTime": "2026-12-01T00:00:00Z", "endTime": "2026-11-01T00:00:00Z"}]}, "pathways:cluster.maintenance.exclusions[0]", "is not after startTime"),
])
def test_maintenance_config_errors(maintenance, key, text):
    from components.model.config import load
    from components.model.errors import ConfigError

    flat, _ = flatten(config_with(cluster={"maintenance": maintenance}))
    with pytest.raises(ConfigError) as err:
        load(raw_values(flat), "test")
    assert any(line.startswith(f"{key}: ") and text in line for line in str(err.value).splitlines()), str(err.value)


def _maintenance_error(maintenance, **cluster):
    from tests.test_pinned_behaviour import error

    return error(cluster={"maintenance": maintenance, **cluster})


def test_every_stack_has_a_maintenance_window_even_with_exclusions_only():
    # the provider refuses a maintenancePolicy without exactly one window (ExactlyOneOf,
    # resource_container_cluster.go), and without one GKE may upgrade a TPU pool at any hour
    for name in ("dev", "staging"):
        assert example_plan(name).one(CLUSTER).input("maintenancePolicy")["recurringWindow"] == {
            "startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
    exclusion = {"name": "x", "startTime": "2026-12-10T00:00:00Z", "endTime": "2027-01-05T00:00:00Z"}
    policy = plan_of(config_with(cluster={"maintenance": {"exclusions": [exclusion]}})).one(CLUSTER).input("maintenancePolicy")
    assert policy["recurringWindow"]["recurrence"] == "FREQ=WEEKLY;BYDAY=SA,SU" and len(policy["maintenanceExclusions"]) == 1


@pytest.mark.parametrize("window,text", [
    # GKE: at least 48 hours of availability in any 32-day period
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T06:00:00Z", "recurrence": "FREQ=MONTHLY;BYDAY=1SA"},
     "FREQ=MONTHLY;BYDAY=1SA with 4-hour windows leaves GKE 4 hours in some 32-day period; GKE requires at least 48"),
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T07:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"},
     "leaves GKE 40 hours in some 32-day period"),
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SAT,SUN"},
     "'SAT' is not a day; BYDAY takes MO, TU, WE, TH, FR, SA, SU"),
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SA"},
     "BYDAY lists a day twice"),
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=HOURLY"},
     "FREQ must be DAILY, WEEKLY or MONTHLY"),
    ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYMONTHDAY=1"},
     "BYMONTHDAY needs FREQ=MONTHLY"),
])
def test_maintenance_windows_gke_refuses(window, text):
    assert text in _maintenance_error({"window": window})


def test_maintenance_windows_gke_accepts():
    from tests.test_pinned_behaviour import model

    for window in ({"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T08:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"},
                   {"startTime": "2026-12-05T02:00:00Z", "endTime": "2026-12-05T06:00:00Z", "recurrence": "FREQ=DAILY"},
                   {"startTime": "2026-12-05T00:00:00Z", "endTime": "2026-12-07T00:00:00Z", "recurrence": "FREQ=MONTHLY;BYDAY=1SA"}):
        assert model(cluster={"maintenance": {"window": window}}).cluster.maintenance.window.recurrence == window["recurrence"]


def test_exclusions_gke_refuses(monkeypatch):
    from components.model.cluster import cluster as cluster_rules

    def exclusion(name="x", start="2026-12-10T00:00:00Z", end="2027-01-05T00:00:00Z", scope="NO_MINOR_OR_NODE_UPGRADES"):
        return {"name": name, "startTime": start, "endTime": end, "scope": scope}

    assert "exclusion name 'x' is used twice; GKE keys exclusions by name" in _maintenance_error({"exclusions": [exclusion(), exclusion()]})
    # one that has ended holds nothing (and GKE refuses it)
    monkeypatch.setattr(cluster_rules, "now", lambda: __import__("datetime").datetime(2027, 1, 6, tzinfo=__import__("datetime").timezone.utc))
    assert ("pathways:cluster.maintenance.exclusions[0].endTime: 2027-01-05T00:00:00Z has passed: exclusion 'x' no longer holds "
            "anything") in _maintenance_error({"exclusions": [exclusion()]})
    monkeypatch.undo()
    # a no-minor-upgrades exclusion may not outlast the cluster's minor (GKE 1.35: standard support ends 2027-04-11)
    late = exclusion(end="2027-05-31T00:00:00Z")
    assert ("2027-05-31T00:00:00Z is after the end of standard support of GKE 1.35 (2027-04-11; the REGULAR channel creates "
            "clusters at 1.35 today)") in _maintenance_error({"exclusions": [late]})
    assert "of GKE 1.34 (2026-10-01; cluster.minMasterVersion 1.34)" in _maintenance_error(
        {"exclusions": [exclusion(end="2026-12-20T00:00:00Z")]}, minMasterVersion="1.34")
    # NO_UPGRADES is bounded by its 30 days instead
    assert "end of standard support" not in str(__import__("tests.test_pinned_behaviour", fromlist=["x"]).model(
        cluster={"maintenance": {"exclusions": [exclusion(scope="NO_UPGRADES")]}}))


# --- restart defaults -------------------------------------------------------------------------------


def test_restart_defaults_per_mode():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "b", "image": "example.com/t:1"}, {"name": "i", "mode": "interactive"}], headPool={"nodeCount": 2}))
    from infra.offline.render import manifests

    restarts = {o["metadata"]["name"]: o["spec"]["failurePolicy"]["maxRestarts"] for o in manifests(plan) if o["kind"] == "JobSet"}
    assert restarts == {"b": 3, "i": 20}


# --- dashboard and alerts ---------------------------------------------------------------------------

# The Monitoring API's Dashboard structure (monitoring.googleapis.com v1 Dashboard, MosaicLayout, Tile,
# Widget, XyChart, DataSet, TimeSeriesQuery, TimeSeriesFilter, Aggregation), the part this project writes.
AGGREGATION = {"type": "object", "additionalProperties": False, "properties": {
    "alignmentPeriod": {"type": "string", "pattern": "^[0-9]+s$"},
    "perSeriesAligner": {"enum": ["ALIGN_MEAN", "ALIGN_RATE", "ALIGN_DELTA", "ALIGN_MAX", "ALIGN_SUM"]},
    "crossSeriesReducer": {"enum": ["REDUCE_MEAN", "REDUCE_SUM", "REDUCE_MAX", "REDUCE_NONE"]},
    "groupByFields": {"type": "array", "items": {"type": "string"}},
}}
DASHBOARD_SCHEMA = {
    "type": "object", "additionalProperties": False, "required": ["displayName", "mosaicLayout"],
    "properties": {
        "displayName": {"type": "string", "minLength": 1},
        "mosaicLayout": {"type": "object", "additionalProperties": False, "required": ["columns", "tiles"], "properties": {
            "columns": {"type": "integer", "minimum": 1, "maximum": 48},
            "tiles": {"type": "array", "items": {"type": "object", "additionalProperties": False,
                "required": ["xPos", "yPos", "width", "height", "widget"], "properties": {
                    "xPos": {"type": "integer", "minimum": 0}, "yPos": {"type": "integer", "minimum": 0},
                    "width": {"type": "integer", "minimum": 1, "maximum": 48}, "height": {"type": "integer", "minimum": 1},
                    "widget": {"type": "object", "additionalProperties": False, "required": ["title", "xyChart"], "properties": {
                        "title": {"type": "string"},
                        "xyChart": {"type": "object", "additionalProperties": False, "required": ["dataSets"], "properties": {
                            "dataSets": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": False,
                                "required": ["timeSeriesQuery"], "properties": {
                                    "plotType": {"enum": ["LINE", "STACKED_AREA", "STACKED_BAR", "HEATMAP"]},
                                    "timeSeriesQuery": {"type": "object", "additionalProperties": False, "properties": {
                                        "prometheusQuery": {"type": "string"},
                                        "timeSeriesFilter": {"type": "object", "additionalProperties": False, "required": ["filter"], "properties": {
                                            "filter": {"type": "string"}, "aggregation": AGGREGATION}},
                                    }, "minProperties": 1, "maxProperties": 1},
                                }}},
                        }},
                    }},
                }}},
        }},
    },
}


def _filters(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("filter",) and isinstance(v, str):
                yield v
            else:
                yield from _filters(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _filters(v)


def _metric_types(text):
    return re.findall(r'metric\.type="([^"]+)"', text)


def test_dashboard_passes_the_structure_and_uses_documented_metrics(made_stack):
    name, plan = made_stack
    if name in FLEET_MANAGERS:
        assert not plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")  # nothing of its own to watch
        return
    dash = json.loads(plan.one("gcp:monitoring/dashboard:Dashboard").input("dashboardJson"))
    jsonschema.validate(dash, DASHBOARD_SCHEMA)
    tiles = dash["mosaicLayout"]["tiles"]
    for t in tiles:
        assert t["xPos"] + t["width"] <= 48
    # no two tiles overlap on the grid (the Monitoring console would stack them)
    cells = [(x, y) for t in tiles for x in range(t["xPos"], t["xPos"] + t["width"]) for y in range(t["yPos"], t["yPos"] + t["height"])]
    assert len(cells) == len(set(cells))
    used = {m for f in _filters(dash) for m in _metric_types(f)}
    assert used <= set(monitoring.METRIC_TYPES)
    workloads = stack_config(name).get("pathways:workloads") or []
    # the slices' interruptions and restarts always; the accelerators' use per workload
    assert {"kubernetes.io/node/interruption_count", "kubernetes.io/container/restart_count"} <= used
    assert {"kubernetes.io/container/accelerator/duty_cycle", "kubernetes.io/container/accelerator/memory_used"} <= used or not workloads
    titles = [t["widget"]["title"] for t in tiles]
    for w in workloads:
        assert any(t.startswith(f"{w['name']} (") and "duty cycle" in t for t in titles)
    # a serving-only stack runs no Pathways head and no JobSet: no tile that could only stay empty
    heads = not workloads or any(w.get("mode") != "serve" for w in workloads)  # no workload yet: runs may come
    assert any("JobSet restarts" in t for t in titles) == heads and any("Head pods: CPU" in t for t in titles) == heads
    for f in _filters(dash):
        assert f'resource.label."cluster_name"="{plan.outputs["clusterName"]}"' in f


def test_alerts_cover_the_failures_and_use_documented_metrics(made_stack):
    name, plan = made_stack
    if name in FLEET_MANAGERS:
        assert not plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")  # nothing of its own to watch
        return
    alerts = plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy")
    names = sorted(a.input("displayName").split(": ", 1)[1] for a in alerts)
    workloads = stack_config(name).get("pathways:workloads") or []
    running = [w for w in workloads if w.get("state", "running") == "running"]
    batch = [w for w in running if w.get("mode", "batch") == "batch"]
    serve = [w for w in running if w.get("mode") == "serve"]
    heads = not workloads or [w for w in workloads if w.get("mode") != "serve"]  # no workload yet: runs may come
    expected = (["TPU slice interrupted", "restart storm", "scratch bucket changed by the nodes"] + (["head pod not ready"] if heads else [])
                + (["TPU duty cycle low"] if batch else []) + (["serving endpoint not ready"] if serve else []))
    assert names == sorted(expected)
    # #73.3: the nodes' account (what the TPU pools run as) changing the scratch bucket (what the Pathways pods use)
    accounts = {p.input("nodeConfig.serviceAccount") for p in plan.by_type("gcp:container/nodePool:NodePool")
                if (p.input("nodeConfig.machineType") or "").startswith(("ct", "tpu"))}
    scratch = {f"gs://{b}" for b in (r.input("name") for r in plan.by_type("gcp:storage/bucket:Bucket"))}
    for a in alerts:
        (cond,) = a.input("conditions")
        if "conditionMatchedLog" in cond:
            log_filter = cond["conditionMatchedLog"]["filter"]
            # (bucket, account) pairs: the stack's scratch bucket and nodes, then each isolation domain's own
            pairs = re.findall(r'resource.labels.bucket_name="([^"]+)"(?: AND)? protoPayload.authenticationInfo.principalEmail="([^"]+)"', log_filter)
            domains = plan.outputs.get("isolationDomains") or {}
            want = [(plan.outputs["cacheLocation"], plan.outputs["nodeServiceAccounts"]["pathways"]),
                    *((d["cacheLocation"], d["nodeServiceAccount"]) for d in domains.values())]
            assert [(f"gs://{b}", e) for b, e in pairs] == [(loc.rsplit("/", 1)[0], e) for loc, e in want], log_filter
            assert all(f"gs://{b}" in scratch for b, _ in pairs), log_filter
            assert accounts == {e for _, e in pairs}, (pairs, accounts)
            assert 'protoPayload.methodName=("storage.buckets.update"' in log_filter
            # a log-match condition needs a rate limit (Monitoring API AlertStrategy.notificationRateLimit)
            assert a.input("alertStrategy.notificationRateLimit.period") == "3600s"
            continue
        if "conditionThreshold" in cond:
            assert set(_metric_types(cond["conditionThreshold"]["filter"])) <= set(monitoring.METRIC_TYPES)
            assert cond["conditionThreshold"]["comparison"] in ("COMPARISON_GT", "COMPARISON_LT")
        else:
            query = cond["conditionPrometheusQueryLanguage"]["query"]
            # only series GKE's managed kube-state-metrics exports (GKE "Collect and view kube state metrics")
            assert set(re.findall(r"\b(kube_[a-z_]+)\{", query)) <= set(monitoring.PROMQL_METRICS), query
        assert a.input("documentation.mimeType") == "text/markdown"
        # #75.7: a severity, and a runbook link to a section of docs/operating.md that exists
        name = a.input("displayName").split(": ", 1)[1]
        assert a.input("severity") == monitoring.ALERT_SEVERITY[name] in ("CRITICAL", "ERROR", "WARNING")
        assert f"Runbook: docs/operating.md#{monitoring.runbook_anchor(name)}" in a.input("documentation.content")
    # the kube-state-metrics the PromQL series need are collected
    assert plan.one(CLUSTER).input("monitoringConfig") == {
        "enableComponents": ["SYSTEM_COMPONENTS", "POD", "JOBSET"], "managedPrometheus": {"enabled": True}}


def test_every_aggregation_is_one_the_monitoring_api_accepts(made_stack):
    # Aligner reference: ALIGN_DELTA/ALIGN_RATE only on CUMULATIVE or DELTA metrics, MEAN/SUM/MAX only on
    # GAUGE or DELTA ones; kinds from the GKE system metrics list (monitoring.METRICS)
    name, plan = made_stack
    dash = json.loads(plan.one("gcp:monitoring/dashboard:Dashboard").input("dashboardJson"))
    alerts = [a.input("conditions") for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy")]
    assert monitoring.aggregation_problems(dash) == []
    assert monitoring.aggregation_problems(alerts) == []
    # every chart but the PromQL ones is checked (two per workload, more per serving one, two or four for the
    # stack), every threshold alert too
    charts = [t for t in dash["mosaicLayout"]["tiles"] if "timeSeriesFilter" in t["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]]
    assert len(list(monitoring._aggregations(dash))) == len(charts) >= (5 if stack_config(name).get("pathways:workloads") else 4)
    assert len(list(monitoring._aggregations(alerts))) == sum("conditionThreshold" in c[0] for c in alerts) >= 2


def test_the_aggregation_check_refuses_what_the_api_refuses():
    gauge = {"filter": 'metric.type="kubernetes.io/node/interruption_count"', "aggregation": {"perSeriesAligner": "ALIGN_DELTA"}}
    assert monitoring.aggregation_problems(gauge) == [
        "kubernetes.io/node/interruption_count is GAUGE INT64; ALIGN_DELTA takes only CUMULATIVE/DELTA "
        "DISTRIBUTION/DOUBLE/INT64 metrics (the API answers 400)"]
    cumulative = {"filter": 'metric.type="kubernetes.io/container/restart_count"', "aggregations": [{"perSeriesAligner": "ALIGN_MEAN"}]}
    assert "CUMULATIVE INT64; ALIGN_MEAN takes only DELTA/GAUGE" in monitoring.aggregation_problems(cumulative)[0]
    unknown = {"filter": 'metric.type="kubernetes.io/node/cpu/core_usage_time"', "aggregation": {"perSeriesAligner": "ALIGN_RATE"}}
    assert monitoring.aggregation_problems(unknown) == ["kubernetes.io/node/cpu/core_usage_time: not a metric of the table (METRICS)"]
    assert monitoring.aggregation_problems({"filter": 'metric.type="kubernetes.io/container/restart_count"',
                                            "aggregation": {"perSeriesAligner": "ALIGN_DELTA", "crossSeriesReducer": "REDUCE_BOGUS"}}) == [
        "kubernetes.io/container/restart_count: reducer REDUCE_BOGUS is not one this project knows the rules of"]


def test_idle_tpu_alert_watches_running_batch_workloads_only():
    # an idle notebook or shared service is idle by design: only running batch workloads page
    workloads = [{"name": "b", "image": "example.com/t:1"}, {"name": "i", "mode": "interactive"},
                 {"name": "s", "image": "example.com/t:1", "state": "suspended"}]
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=workloads, headPool={"nodeCount": 3}))
    (alert,) = [a for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if "duty cycle" in a.input("displayName")]
    assert alert.input("conditions")[0]["conditionThreshold"]["filter"].endswith(' metadata.user_labels."pathways/workload"=one_of("b")')
    only_interactive = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "i", "mode": "interactive"}]))
    assert not [a for a in only_interactive.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if "duty cycle" in a.input("displayName")]


def test_head_not_ready_alert_reads_series_gke_exports():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "i", "mode": "interactive"}]))
    (alert,) = [a for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if "head pod" in a.input("displayName")]
    assert alert.input("conditions")[0]["conditionPrometheusQueryLanguage"]["query"] == (
        'min by (pod) (kube_pod_container_status_ready{cluster="pathways-test", namespace="pathways", pod=~".*-pathways-head-.*"}) == 0 '
        'and on (pod) max by (pod) (kube_pod_status_phase{cluster="pathways-test", namespace="pathways", pod=~".*-pathways-head-.*", '
        'phase="Running"}) == 1')


def test_duty_cycle_alert_follows_the_config_and_notifies_channels():
    plan = plan_of(config_with(monitoring={"dutyCycleThreshold": 25, "dutyCycleMinutes": 45,
                                           "notificationChannels": ["projects/test-proj-123/notificationChannels/42"]},
                               pathwaysVersion=VERSION, workloads=[{"name": "b", "image": "example.com/t:1"}]))
    alert = next(a for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if "duty cycle" in a.input("displayName"))
    t = alert.input("conditions")[0]["conditionThreshold"]
    assert (t["comparison"], t["thresholdValue"], t["duration"]) == ("COMPARISON_LT", 25, "2700s")
    assert alert.input("notificationChannels") == ["projects/test-proj-123/notificationChannels/42"]


def test_interruption_and_restart_alerts_fire_on_their_thresholds(made_stack):
    _, plan = made_stack
    by_name = {a.input("displayName").split(": ", 1)[1]: a.input("conditions")[0]["conditionThreshold"]
               for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy") if "conditionThreshold" in a.input("conditions")[0]}
    t = by_name["TPU slice interrupted"]  # one interruption is one restarted slice: alert on the first
    assert (t["comparison"], t["thresholdValue"], t["duration"]) == ("COMPARISON_GT", 0, "0s")
    assert t["aggregations"] == [{"alignmentPeriod": "300s", "perSeriesAligner": "ALIGN_SUM", "crossSeriesReducer": "REDUCE_SUM",
                                  "groupByFields": ['resource.label."node_name"']}]
    t = by_name["restart storm"]
    assert (t["comparison"], t["duration"], t["aggregations"][0]["alignmentPeriod"]) == ("COMPARISON_GT", "0s", "600s")


# --- links -----------------------------------------------------------------------------------------------


def test_every_workload_has_links(made_stack):
    name, plan = made_stack
    if name in FLEET_MANAGERS:
        assert not plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")  # nothing of its own to watch
        return
    links = plan.outputs["links"]
    project = plan.one(CLUSTER).input("project")
    assert links["cluster"].startswith("https://console.cloud.google.com/kubernetes/clusters/details/") and project in links["cluster"]
    assert links["dashboard"].startswith("https://console.cloud.google.com/monitoring/dashboards/builder/")
    workloads = [w["name"] for w in stack_config(name).get("pathways:workloads") or []]
    assert sorted(links["workloads"]) == sorted(workloads)
    for w, l in links["workloads"].items():
        assert "logs/query;query=" in l["logs"] and f"%22{w}%22" in l["logs"]
        assert l["profiles"].endswith(f"/{w}/profiles?project={project}")


def test_plan_prints_the_links_in_full(capsys):
    from infra.offline.__main__ import main

    assert main(["plan", "--config", str(example_path("dev"))]) == 0
    out = capsys.readouterr().out
    assert "https://console.cloud.google.com/monitoring/dashboards/builder/" in out
    assert "…" not in next(line for line in out.splitlines() if "logs/query" in line)


def test_dev_dashboard_tiles_and_namespace_filters():
    dash = json.loads(example_plan("dev").one("gcp:monitoring/dashboard:Dashboard").input("dashboardJson"))
    assert [t["widget"]["title"] for t in dash["mosaicLayout"]["tiles"]] == [
        "notebook (dev): TPU duty cycle %", "notebook (dev): HBM used", "Head pods: CPU cores", "Head pods: memory used",
        "Pod restarts (Pathways namespace)", "JobSet restarts", "Node interruptions (spot, flex-start, maintenance)"]
    # two charts a row on the 48-column grid, 16 high; the interruptions chart takes a whole row
    assert [(t["xPos"], t["yPos"], t["width"], t["height"]) for t in dash["mosaicLayout"]["tiles"]] == [
        (0, 0, 24, 16), (24, 0, 24, 16), (0, 16, 24, 16), (24, 16, 24, 16), (0, 32, 24, 16), (24, 32, 24, 16), (0, 48, 48, 16)]
    # container metrics are scoped to the Pathways namespace; node metrics have no namespace label
    filters = _filters(dash)
    assert filters
    for f in filters:
        # every filter names the resource type its metric is published on (a filter without one is refused)
        (metric,) = re.findall(r'metric\.type="([^"]+)"', f)
        assert f'resource.type="{monitoring.METRIC_TYPES[metric]}"' in f, f
        if monitoring.METRIC_TYPES[metric] == "k8s_container":
            assert 'resource.label."namespace_name"="pathways"' in f, f
        else:
            assert "namespace_name" not in f, f


def test_alerts_keep_their_resource_names_when_another_comes_or_goes():
    # finishing the only batch run drops the idle-TPU alert; the others keep their slot (no replacement)
    running = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "b", "image": "example.com/t:1"}]))
    finished = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "b", "image": "example.com/t:1", "state": "finished"}]))
    def names(plan):
        return {a.name: a.input("displayName").split(": ", 1)[1] for a in plan.by_type("gcp:monitoring/alertPolicy:AlertPolicy")}

    assert names(running) == {"observability-alert-0": "TPU slice interrupted", "observability-alert-1": "restart storm",
                              "observability-alert-2": "TPU duty cycle low", "observability-alert-3": "head pod not ready",
                              "observability-alert-5": "scratch bucket changed by the nodes"}
    assert names(finished) == {k: v for k, v in names(running).items() if k != "observability-alert-2"}


@pytest.mark.parametrize("channel", ["RAPID", "REGULAR", "STABLE", "EXTENDED"])
def test_auto_upgrade_off_is_refused_in_every_release_channel(channel):
    # GKE API reference, ReleaseChannel: "Node auto-upgrade defaults to true and cannot be disabled"; the stack makes
    # every cluster in a channel, so the 400 GKE would answer at `pulumi up` is said before anything is created
    config = config_with(slices=[{"name": "main", "tpu": "v6e-16"}, {"name": "b", "tpu": "v6e-16", "autoUpgrade": False}],
                         cluster={"releaseChannel": channel})
    with pytest.raises(InvalidStackConfig) as err:
        plan_of(config)
    [line] = [ln for ln in str(err.value).splitlines() if "autoUpgrade" in ln]
    assert line.startswith("pathways:slices[1].autoUpgrade: false cannot be: the cluster is in the "
                           f"{channel} release channel")
    assert "NO_MINOR_OR_NODE_UPGRADES" in line and "cannot be disabled" in line


def test_every_made_pool_keeps_auto_upgrade_on(made_stack):
    _, plan = made_stack
    assert {p.input("management.autoUpgrade") for p in plan.by_type("gcp:container/nodePool:NodePool")} == {True}



def test_each_alert_has_a_runbook_section_and_a_preemption_is_never_a_page():
    # #75.7: every anchor an alert links is a heading of docs/operating.md, as GitHub makes anchors of headings
    doc = (ROOT / "docs" / "operating.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", doc, re.M)}
    assert {monitoring.runbook_anchor(n) for n in monitoring.ALERT_SLOTS} <= anchors
    assert set(monitoring.ALERT_SEVERITY) == set(monitoring.ALERT_SLOTS)
    assert monitoring.ALERT_SEVERITY["TPU slice interrupted"] == "WARNING"
