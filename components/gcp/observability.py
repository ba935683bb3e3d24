"""Observability: the stack's Cloud Monitoring dashboard and alert policies, built by pure code
(components.manifests.monitoring) from the stack."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp


@dataclass(frozen=True)
class ObservabilityArgs:
    project: str
    """Project of the cluster (metrics scope)."""
    dashboard: dict[str, Any]
    """The dashboard as the Monitoring API takes it."""
    alert_policies: dict[int, dict[str, Any]]
    """Alert policies as the Monitoring API writes them (camelCase), by slot: resource <name>-alert-<slot>."""
    notification_channels: list[str] = field(default_factory=list)
    """Channels every alert notifies (optional: alerts still open incidents in the console)."""


def _condition(c: dict[str, Any]) -> gcp.monitoring.AlertPolicyConditionArgs:
    if "conditionMatchedLog" in c:
        return gcp.monitoring.AlertPolicyConditionArgs(
            display_name=c["displayName"],
            condition_matched_log=gcp.monitoring.AlertPolicyConditionConditionMatchedLogArgs(filter=c["conditionMatchedLog"]["filter"]),
        )
    if "conditionPrometheusQueryLanguage" in c:
        q = c["conditionPrometheusQueryLanguage"]
        return gcp.monitoring.AlertPolicyConditionArgs(
            display_name=c["displayName"],
            condition_prometheus_query_language=gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                query=q["query"], duration=q["duration"], evaluation_interval=q["evaluationInterval"],
            ),
        )
    t = c["conditionThreshold"]
    return gcp.monitoring.AlertPolicyConditionArgs(
        display_name=c["displayName"],
        condition_threshold=gcp.monitoring.AlertPolicyConditionConditionThresholdArgs(
            filter=t["filter"], comparison=t["comparison"], threshold_value=t["thresholdValue"], duration=t["duration"],
            aggregations=[gcp.monitoring.AlertPolicyConditionConditionThresholdAggregationArgs(
                alignment_period=a["alignmentPeriod"], per_series_aligner=a["perSeriesAligner"],
                cross_series_reducer=a["crossSeriesReducer"], group_by_fields=a["groupByFields"],
            ) for a in t["aggregations"]],
        ),
    )


class Observability(pulumi.ComponentResource):
    dashboard_id: pulumi.Output[str]
    """The dashboard's ID, for its console link."""

    def __init__(self, name: str, args: ObservabilityArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:Observability", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        dashboard = gcp.monitoring.Dashboard(
            f"{name}-dashboard", project=args.project, dashboard_json=json.dumps(args.dashboard, sort_keys=True), opts=child,
        )
        for i, p in sorted(args.alert_policies.items()):
            gcp.monitoring.AlertPolicy(
                f"{name}-alert-{i}",
                project=args.project,
                display_name=p["displayName"],
                combiner=p["combiner"],
                severity=p["severity"],
                conditions=[_condition(c) for c in p["conditions"]],
                documentation=gcp.monitoring.AlertPolicyDocumentationArgs(
                    content=p["documentation"]["content"], mime_type=p["documentation"]["mimeType"],
                ),
                notification_channels=list(args.notification_channels),
                alert_strategy=gcp.monitoring.AlertPolicyAlertStrategyArgs(
                    notification_rate_limit=gcp.monitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs(
                        period=p["alertStrategy"]["notificationRateLimit"]["period"]),
                    auto_close=p["alertStrategy"]["autoClose"]) if "alertStrategy" in p else None,
                opts=child,
            )
        self.dashboard_id = dashboard.id.apply(lambda i: str(i).rsplit("/", 1)[-1])
        self.register_outputs({"dashboardId": self.dashboard_id})
