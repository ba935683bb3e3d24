"""Dashboard, alert policies and console links for a stack (pure Python, JSON-able dicts).

Metric types are only those GKE publishes (Cloud Monitoring, "GKE system metrics",
monitoring/api/metrics_kubernetes: kubernetes.io/container/accelerator/*, .../restart_count,
.../cpu/core_usage_time, .../memory/used_bytes, kubernetes.io/node/interruption_count) and the
kube-state-metrics series GKE collects when the cluster enables the POD and JOBSET components
(GKE docs, "Collect and view kube state metrics": kube_pod_container_status_ready,
kube_pod_status_phase, kube_jobset_restarts). Every aligner is checked against the kind and value
type of the metric it reads (`aggregation_problems`): the Monitoring API answers 400 otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import quote

from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.stack import service_account_id


@dataclass(frozen=True)
class Metric:
    resource_type: str
    kind: str  # GAUGE, DELTA or CUMULATIVE (MetricDescriptor.MetricKind)
    value_type: str  # INT64, DOUBLE, BOOL, DISTRIBUTION (MetricDescriptor.ValueType)


# The documented metric types this module may use, with their kind and value type as the GKE system
# metrics list gives them (cloud.google.com/monitoring/api/metrics_kubernetes). Tests check every
# filter against this table and every aligner against the kind.
METRICS = {
    "kubernetes.io/container/accelerator/duty_cycle": Metric("k8s_container", "GAUGE", "INT64"),
    "kubernetes.io/container/accelerator/memory_used": Metric("k8s_container", "GAUGE", "INT64"),
    "kubernetes.io/container/accelerator/memory_total": Metric("k8s_container", "GAUGE", "INT64"),
    "kubernetes.io/container/cpu/core_usage_time": Metric("k8s_container", "CUMULATIVE", "DOUBLE"),
    "kubernetes.io/container/memory/used_bytes": Metric("k8s_container", "GAUGE", "INT64"),
    "kubernetes.io/container/restart_count": Metric("k8s_container", "CUMULATIVE", "INT64"),
    # "the current count of interruptions", sampled every 60 s: a GAUGE, so ALIGN_DELTA is refused (400).
    "kubernetes.io/node/interruption_count": Metric("k8s_node", "GAUGE", "INT64"),
}
METRIC_TYPES = {name: m.resource_type for name, m in METRICS.items()}

# Which metric kinds and value types each aligner accepts (Cloud Monitoring API v3, Aggregation.Aligner):
# ALIGN_DELTA and ALIGN_RATE only on CUMULATIVE and DELTA metrics; MEAN, MIN, MAX, SUM, COUNT, STDDEV
# only on GAUGE and DELTA metrics; all of them numeric (SUM and DELTA also take distributions).
_NUMERIC = frozenset({"INT64", "DOUBLE"})
ALIGNERS = {
    "ALIGN_DELTA": (frozenset({"CUMULATIVE", "DELTA"}), _NUMERIC | {"DISTRIBUTION"}),
    "ALIGN_RATE": (frozenset({"CUMULATIVE", "DELTA"}), _NUMERIC),
    "ALIGN_MEAN": (frozenset({"GAUGE", "DELTA"}), _NUMERIC),
    "ALIGN_MIN": (frozenset({"GAUGE", "DELTA"}), _NUMERIC),
    "ALIGN_MAX": (frozenset({"GAUGE", "DELTA"}), _NUMERIC),
    "ALIGN_SUM": (frozenset({"GAUGE", "DELTA"}), _NUMERIC | {"DISTRIBUTION"}),
}
# Cross-series reducers on the aligned (numeric) series (Aggregation.Reducer): all take INT64 and DOUBLE.
REDUCERS = frozenset({"REDUCE_NONE", "REDUCE_MEAN", "REDUCE_SUM", "REDUCE_MAX", "REDUCE_MIN"})

# kube-state-metrics series GKE's managed collection exports (Pod and JobSet packages); not
# kube_pod_status_ready, which only the open-source exporter has.
PROMQL_METRICS = ("kube_pod_container_status_ready", "kube_pod_status_phase", "kube_jobset_restarts")
# What the cluster must collect for the PromQL series above (GKE monitoring components).
MONITORING_COMPONENTS = ("SYSTEM_COMPONENTS", "POD", "JOBSET")

WORKER, HEAD_CONTAINERS = "pathways-worker", ("pathways-rm", "pathways-proxy", "jax-program")
WORKLOAD_LABEL = "pathways/workload"


def _filter(stack: ResolvedStack, metric: str, **labels: str) -> str:
    parts = [f'metric.type="{metric}"', f'resource.type="{METRIC_TYPES[metric]}"', f'resource.label."cluster_name"="{stack.cluster_name}"']
    if METRIC_TYPES[metric] == "k8s_container":
        parts.append(f'resource.label."namespace_name"="{stack.namespace}"')
    parts += [f'{k}="{v}"' for k, v in labels.items()]
    return " ".join(parts)


def _chart(title: str, filter_: str, aligner: str, reducer: str, group_by: list[str], y: int, x: int = 0, width: int = 24) -> dict[str, Any]:
    return {
        "xPos": x, "yPos": y, "width": width, "height": 16,
        "widget": {"title": title, "xyChart": {"dataSets": [{
            "plotType": "LINE",
            "timeSeriesQuery": {"timeSeriesFilter": {"filter": filter_, "aggregation": {
                "alignmentPeriod": "60s", "perSeriesAligner": aligner, "crossSeriesReducer": reducer, "groupByFields": group_by,
            }}},
        }]}},
    }


def _promql_chart(title: str, query: str, y: int, x: int = 0) -> dict[str, Any]:
    return {"xPos": x, "yPos": y, "width": 24, "height": 16, "widget": {"title": title, "xyChart": {"dataSets": [{
        "plotType": "LINE", "timeSeriesQuery": {"prometheusQuery": query},
    }]}}}


def _by_workload(w: ResolvedWorkload) -> str:
    return f'metadata.user_labels."{WORKLOAD_LABEL}"="{w.name}"'


def runs_head_pods(stack: ResolvedStack) -> bool:
    """Pathways head pods (and JobSets) exist unless every workload serves: a serving replica's leader runs on
    its slice (manifests/lws.py), so a serving-only stack gets no head tiles, JobSet tile or head alert."""
    return bool(stack.jobset_workloads or not stack.serve_workloads)


def dashboard(stack: ResolvedStack) -> dict[str, Any]:
    """One Cloud Monitoring dashboard per stack (mosaicLayout, 48 columns)."""
    tiles: list[dict[str, Any]] = []
    y = 0
    for w in stack.active_workloads:
        group = w.group.name
        worker = {"resource.label.\"container_name\"": WORKER}
        f_duty = _filter(stack, "kubernetes.io/container/accelerator/duty_cycle", **worker) + " " + _by_workload(w)
        f_hbm = _filter(stack, "kubernetes.io/container/accelerator/memory_used", **worker) + " " + _by_workload(w)
        tiles.append(_chart(f"{w.name} ({group}): TPU duty cycle %", f_duty, "ALIGN_MEAN", "REDUCE_MEAN", ["resource.label.\"pod_name\""], y))
        tiles.append(_chart(f"{w.name} ({group}): HBM used", f_hbm, "ALIGN_MEAN", "REDUCE_SUM", ["resource.label.\"pod_name\""], y, x=24))
        y += 16
        if w.mode == "serve":
            ready = f'sum(kube_pod_container_status_ready{{{_serving_engines(stack, w)}}})'
            tiles.append(_promql_chart(f"{w.name}: replicas serving (JetStream engine ready)", ready, y))
            tiles.append(_chart(f"{w.name}: leader restarts", _filter(stack, "kubernetes.io/container/restart_count") + " " + _by_workload(w)
                                + f' resource.label."pod_name"=monitoring.regex.full_match("{w.name}-[0-9]+")',
                                "ALIGN_DELTA", "REDUCE_SUM", ["resource.label.\"container_name\""], y, x=24))
            y += 16
    if runs_head_pods(stack):
        head_pods = ' resource.label."pod_name"=monitoring.regex.full_match(".*-pathways-head-.*")'
        tiles.append(_chart("Head pods: CPU cores", _filter(stack, "kubernetes.io/container/cpu/core_usage_time") + head_pods,
                            "ALIGN_RATE", "REDUCE_SUM", ["resource.label.\"pod_name\""], y))
        tiles.append(_chart("Head pods: memory used", _filter(stack, "kubernetes.io/container/memory/used_bytes") + head_pods,
                            "ALIGN_MEAN", "REDUCE_SUM", ["resource.label.\"pod_name\""], y, x=24))
        y += 16
    tiles.append(_chart("Pod restarts (Pathways namespace)", _filter(stack, "kubernetes.io/container/restart_count"),
                        "ALIGN_DELTA", "REDUCE_SUM", ["metadata.user_labels.\"pathways/workload\""], y,
                        width=24 if runs_head_pods(stack) else 48))
    if runs_head_pods(stack):
        tiles.append(_promql_chart("JobSet restarts", f'kube_jobset_restarts{{cluster="{stack.cluster_name}", namespace="{stack.namespace}"}}', y, x=24))
    y += 16
    tiles.append(_chart("Node interruptions (spot, flex-start, maintenance)", _filter(stack, "kubernetes.io/node/interruption_count"),
                        INTERRUPTION_ALIGNER, "REDUCE_SUM", ["metric.label.\"interruption_type\"", "metric.label.\"interruption_reason\""], y, width=48))
    return {"displayName": f"Pathways {stack.cluster_name}", "mosaicLayout": {"columns": 48, "tiles": tiles}}


# A serve workload's leaders are the pods of its leader StatefulSet, <name>-<group>; the engine container is
# ready when its health check answers (manifests/lws.py): vLLM's /health, or for JetStream (jax-tpu) the HTTP
# front end's /healthcheck, which asks the engine.
SERVING_ENGINES = {"vllm": "vllm", "jetstream": "jax-tpu"}
# Loading a model took 7-20 minutes in Google's runs (PLATFORM-FACTS §7): the endpoint alert waits longer.
SERVING_NOT_READY_SECONDS = 1800


def _serving_leaders(stack: ResolvedStack, w: ResolvedWorkload) -> str:
    return f'cluster="{stack.cluster_name}", namespace="{w.namespace}", pod=~"{w.name}-[0-9]+"'


def _serving_engines(stack: ResolvedStack, w: ResolvedWorkload) -> str:
    assert w.spec.serve is not None
    return f'{_serving_leaders(stack, w)}, container="{SERVING_ENGINES[w.spec.serve.engine_name]}"'


# The interruption count is a GAUGE of interruptions per sample: summing the samples of a period counts
# the interruptions in it (ALIGN_SUM is valid on a GAUGE; ALIGN_DELTA is not).
INTERRUPTION_ALIGNER = "ALIGN_SUM"


def _one_of(values: list[str]) -> str:
    return "one_of(" + ", ".join(f'"{v}"' for v in values) + ")"


# Each alert keeps its slot (the number in its resource name) whichever others the stack has, so that
# adding or dropping one never renames, i.e. replaces, another.
ALERT_SLOTS = {"TPU slice interrupted": 0, "restart storm": 1, "TPU duty cycle low": 2, "head pod not ready": 3,
               "serving endpoint not ready": 4, "scratch bucket changed by the nodes": 5}
# How urgent each is (Monitoring API AlertPolicy.severity: CRITICAL "could cause significant damage or downtime",
# ERROR, WARNING): pages are for what a person must act on now (#75.7). An interruption is expected on spot and
# flex-start capacity and the JobSet restarts by itself: a count to review, never a page.
ALERT_SEVERITY = {"TPU slice interrupted": "WARNING", "restart storm": "ERROR", "TPU duty cycle low": "WARNING",
                  "head pod not ready": "ERROR", "serving endpoint not ready": "CRITICAL", "scratch bucket changed by the nodes": "CRITICAL"}
# Each alert's runbook: its section of docs/operating.md, "Alerts" (tests/test_observability.py holds each anchor to a heading)
RUNBOOK = "docs/operating.md"


def runbook_anchor(name: str) -> str:
    """The GitHub anchor of the alert's section: its heading, lowercased, spaces to '-', other punctuation dropped."""
    return "alert-" + "".join(c for c in name.lower().replace(" ", "-") if c.isalnum() or c == "-")


def scratch_bucket_changes(stack: ResolvedStack) -> str:
    """Cloud Audit Logs' Admin Activity entries (always written, never sampled) of the nodes' account changing the
    scratch bucket's configuration: what storage.buckets.update allows beyond the lifecycle rule Pathways adds (a
    locked retention policy, soft delete at zero, a lifecycle rule that deletes everything; security #73.3)."""
    def who(account_id: str) -> str:
        return f"{account_id}@{stack.project}.iam.gserviceaccount.com"

    nodes = f'resource.labels.bucket_name="{stack.bucket_name}" protoPayload.authenticationInfo.principalEmail="{who(service_account_id(stack.cluster_name, "nodes"))}"'
    if stack.domains:  # each isolation domain's nodes and its own scratch bucket too (teams[].isolationDomain)
        nodes = "(" + " OR ".join(f"({pair})" for pair in [nodes.replace('" proto', '" AND proto'), *(
            f'resource.labels.bucket_name="{d.bucket_name}" AND protoPayload.authenticationInfo.principalEmail="{who(d.node_account_id)}"'
            for d in stack.domains)]) + ")"
    return (f'logName="projects/{stack.project}/logs/cloudaudit.googleapis.com%2Factivity" '
            f'protoPayload.serviceName="storage.googleapis.com" resource.type="gcs_bucket" {nodes} '
            f'protoPayload.methodName=("storage.buckets.update" OR "storage.buckets.lockRetentionPolicy" OR "storage.setIamPermissions")')


def alert_policies(stack: ResolvedStack) -> dict[int, dict[str, Any]]:
    """Alert policies as the Monitoring API writes them (AlertPolicy resource, camelCase), by slot."""
    m = stack.monitoring
    ns, cluster = stack.namespace, stack.cluster_name

    def threshold(name, filter_, comparison, value, duration, aligner, reducer, group_by, period="300s"):
        return {"displayName": name, "conditionThreshold": {
            "filter": filter_, "comparison": comparison, "thresholdValue": value, "duration": duration,
            "aggregations": [{"alignmentPeriod": period, "perSeriesAligner": aligner, "crossSeriesReducer": reducer, "groupByFields": group_by}],
        }}

    def policy(name, condition, doc):
        doc += f"\n\nSeverity {ALERT_SEVERITY[name]}. Runbook: {RUNBOOK}#{runbook_anchor(name)} in the stack's repository."
        return {"displayName": f"{cluster}: {name}", "combiner": "OR", "conditions": [condition], "severity": ALERT_SEVERITY[name],
                "documentation": {"content": doc, "mimeType": "text/markdown"}}

    policies = [
        policy("TPU slice interrupted", threshold(
            "node interruptions", _filter(stack, "kubernetes.io/node/interruption_count"), "COMPARISON_GT", 0, "0s",
            INTERRUPTION_ALIGNER, "REDUCE_SUM", ['resource.label."node_name"']),
            "A TPU or head node was interrupted (spot preemption, flex-start end, maintenance): the slice restarts by itself."),
        policy("restart storm", threshold(
            f"more than {m.restart_storm} container restarts in 10 minutes", _filter(stack, "kubernetes.io/container/restart_count"),
            "COMPARISON_GT", m.restart_storm, "0s", "ALIGN_DELTA", "REDUCE_SUM",
            ['metadata.user_labels."pathways/workload"'], period="600s"),
            "Pathways containers keep restarting: look at the workload's logs (stack output links.workloads.<name>.logs)."),
    ]
    # Idle TPUs mean trouble only for a batch run: an interactive notebook or a shared service waits for its
    # users, idle by design, and would page every night.
    batch = [w.name for w in stack.active_workloads if w.mode == "batch" and w.state == "running"]
    if batch:
        policies.append(policy("TPU duty cycle low", threshold(
            f"duty cycle below {m.duty_cycle_threshold}% for {m.duty_cycle_minutes} min",
            _filter(stack, "kubernetes.io/container/accelerator/duty_cycle", **{"resource.label.\"container_name\"": WORKER})
            + f' metadata.user_labels."{WORKLOAD_LABEL}"={_one_of(batch)}',
            "COMPARISON_LT", m.duty_cycle_threshold, f"{m.duty_cycle_minutes * 60}s", "ALIGN_MEAN", "REDUCE_MEAN",
            ['metadata.user_labels."pathways/workload"']),
            "A running batch workload's TPUs are mostly idle: a stalled input pipeline, a hung step or a lost slice."))
    # Ready per container (kube_pod_container_status_ready), only while the pod runs: a finished batch
    # head is not ready either, and a queued one is Kueue's business.
    selector = f'cluster="{cluster}", namespace="{ns}", pod=~".*-pathways-head-.*"'
    if runs_head_pods(stack):
        policies.append(policy("head pod not ready", {"displayName": "head pod not ready for 10 minutes", "conditionPrometheusQueryLanguage": {
            "query": (f"min by (pod) (kube_pod_container_status_ready{{{selector}}}) == 0 "
                      f'and on (pod) max by (pod) (kube_pod_status_phase{{{selector}, phase="Running"}}) == 1'),
            "duration": "600s", "evaluationInterval": "60s",
        }}, "A Pathways head pod (resource manager, IFRT proxy, the program) is running but not ready: the workload cannot make progress."))
    serving = [w for w in stack.active_workloads if w.mode == "serve" and w.state == "running"]
    if serving:
        # Per leader, only while it runs: a replica whose engine stopped answering its health check (the
        # restart storm alert covers the restarts of every Pathways container, serve pods included).
        queries = [f"(min by (pod) (kube_pod_container_status_ready{{{_serving_engines(stack, w)}}}) == 0 "
                   f'and on (pod) max by (pod) (kube_pod_status_phase{{{_serving_leaders(stack, w)}, phase="Running"}}) == 1)'
                   for w in serving]
        policies.append(policy("serving endpoint not ready", {
            "displayName": f"a serving leader's engine not ready for {SERVING_NOT_READY_SECONDS // 60} minutes",
            "conditionPrometheusQueryLanguage": {"query": " or ".join(queries), "duration": f"{SERVING_NOT_READY_SECONDS}s",
                                                 "evaluationInterval": "60s"},
        }, "A model replica's health check on port 8000 fails (vLLM: /health; JetStream: /healthcheck, the engine's gRPC "
           "HealthCheck): that replica takes no requests. Look at the leader's engine logs (container vllm, or jax-tpu "
           "and jetstream-http) and its pathways-proxy and pathways-rm."))
    policies.append({**policy("scratch bucket changed by the nodes", {
        "displayName": "the nodes' account changed the scratch bucket's configuration",
        "conditionMatchedLog": {"filter": scratch_bucket_changes(stack)},
    }, ("The Pathways nodes' service account changed the scratch bucket's configuration. Pathways adds a lifecycle rule "
        "(its TTL) once for each new scratch location: that is expected. Anything else is not: look at the audit log "
        "entry for a retention policy (a locked one cannot be undone and makes `pulumi destroy` fail), a soft-delete "
        "policy or a lifecycle rule that deletes everything, and at which pod ran as the nodes then (security #73.3).")),
        # a log-match condition needs a notification rate limit (Monitoring API, AlertStrategy.notificationRateLimit)
        "alertStrategy": {"notificationRateLimit": {"period": "3600s"}, "autoClose": "86400s"}})
    return {ALERT_SLOTS[p["displayName"].split(": ", 1)[1]]: p for p in policies}


def _aggregations(obj: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(filter, aggregation) of every time-series query in a dashboard or an alert policy."""
    if isinstance(obj, dict):
        if "filter" in obj and ("aggregation" in obj or "aggregations" in obj):
            for a in obj.get("aggregations") or [obj["aggregation"]]:
                yield obj["filter"], a
        for v in obj.values():
            yield from _aggregations(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _aggregations(v)


def aggregation_problems(obj: Any) -> list[str]:
    """Each aggregation the Monitoring API would refuse: an aligner the metric's kind or value type does
    not allow, or an unknown aligner or reducer."""
    problems = []
    for filter_, a in _aggregations(obj):
        names = re.findall(r'metric\.type="([^"]+)"', filter_)
        for name in names:
            metric = METRICS.get(name)
            aligner, reducer = a.get("perSeriesAligner"), a.get("crossSeriesReducer", "REDUCE_NONE")
            if metric is None:
                problems.append(f"{name}: not a metric of the table (METRICS)")
            elif aligner not in ALIGNERS:
                problems.append(f"{name}: aligner {aligner} is not one this project knows the rules of")
            elif metric.kind not in ALIGNERS[aligner][0] or metric.value_type not in ALIGNERS[aligner][1]:
                kinds, types = ALIGNERS[aligner]
                problems.append(f"{name} is {metric.kind} {metric.value_type}; {aligner} takes only "
                                f"{'/'.join(sorted(kinds))} {'/'.join(sorted(types))} metrics (the API answers 400)")
            if reducer not in REDUCERS:
                problems.append(f"{name}: reducer {reducer} is not one this project knows the rules of")
    return problems


def console_links(stack: ResolvedStack, dashboard_id: str = "") -> dict[str, Any]:
    """Cloud Console URLs a user clicks: the cluster, each workload's logs and profiles, the dashboard."""
    p = stack.project
    base = "https://console.cloud.google.com"
    workloads = {}
    for w in stack.active_workloads:
        query = (f'resource.type="k8s_container"\nresource.labels.cluster_name="{stack.cluster_name}"\n'
                 f'resource.labels.namespace_name="{w.namespace}"\nlabels."k8s-pod/{WORKLOAD_LABEL}"="{w.name}"')
        workloads[w.name] = {
            "logs": f"{base}/logs/query;query={quote(query, safe='')}?project={p}",
            # its own artifacts location: the stack's, or its isolation domain's (teams[].isolationDomain)
            "profiles": f"{base}/storage/browser/{w.artifacts_location.removeprefix('gs://')}/{w.name}/profiles?project={p}",
        }
    links = {
        "cluster": f"{base}/kubernetes/clusters/details/{stack.location}/{stack.cluster_name}/details?project={p}",
        "workloads": workloads,
    }
    if dashboard_id:
        links["dashboard"] = f"{base}/monitoring/dashboards/builder/{dashboard_id}?project={p}"
    return links
