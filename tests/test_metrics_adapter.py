"""The Custom Metrics Stackdriver Adapter an autoscaled serve workload reads its metric through
(components/model/workloads/metrics_adapter.py gives the upstream manifest it is written from)."""

from __future__ import annotations

import pytest

from components.model.config import load, resolve
from components.model.cost.summary import notices
from components.model.workloads import metrics_adapter as ma
from infra.offline.render import check_builtins, manifests
from tests.conftest import example_plan, plan_of
from tests.test_bootstrap import PROJECT_MEMBER, example_bootstrap_config, example_bootstrap_plan
from tests.test_vllm import AUTOSCALE, FOUR, WEIGHTS, _raw, vllm_config

ADAPTER_LABEL = ("k8s-app", ma.NAME)


def adapter_objects(plan) -> list[dict]:
    return [o for o in manifests(plan) if (o["metadata"].get("labels") or {}).get("k8s-app") == ma.NAME
            or o["metadata"].get("name") == ma.NAMESPACE]


def test_an_autoscaled_endpoint_gets_the_adapter_its_autoscaler_reads_through():
    plan = example_plan("serving")
    objs = {(o["kind"], o["metadata"]["name"]): o for o in adapter_objects(plan)}
    # the three aggregated APIs, served by the adapter's Service (upstream's manifest)
    apis = {name: o["spec"] for (kind, name), o in objs.items() if kind == "APIService"}
    assert set(apis) == {"v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io", "v1beta1.external.metrics.k8s.io"}
    assert {(s["service"]["namespace"], s["service"]["name"]) for s in apis.values()} == {(ma.NAMESPACE, ma.NAME)}
    assert objs[("Service", ma.NAME)]["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 443}]
    pod = objs[("Deployment", ma.NAME)]["spec"]["template"]["spec"]
    (adapter,) = pod["containers"]
    assert adapter["image"] == "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
    assert adapter["imagePullPolicy"] == "IfNotPresent" and adapter["command"] == ["/adapter", *ma.FLAGS]
    # on the system pool, with none of upstream's TPU and GPU tolerations (the node guard refuses those)
    assert pod["nodeSelector"] == {"pathways/role": "system"} and "tolerations" not in pod
    assert pod["serviceAccountName"] == ma.SERVICE_ACCOUNT
    # its namespace enforces baseline, which its pod passes; warn and audit at restricted
    ns = objs[("Namespace", ma.NAMESPACE)]["metadata"]["labels"]
    assert ns["pod-security.kubernetes.io/enforce"] == "baseline" and ns["pod-security.kubernetes.io/warn"] == "restricted"
    # the HPA controller may read external metrics
    binding = objs[("ClusterRoleBinding", "external-metrics-reader")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "horizontal-pod-autoscaler", "namespace": "kube-system"}]
    # every object as the API server's schema has it
    reports = check_builtins(plan)
    assert not [k for k, r in reports.items() if r.violations and (k.startswith("APIService/") or ma.NAME in k)]


def test_the_autoscaler_waits_for_the_adapter():
    plan = example_plan("serving")
    (hpa,) = plan.by_type("kubernetes:autoscaling/v2:HorizontalPodAutoscaler")
    adapter_urns = {r.urn for r in plan.resources if "CustomMetricsAdapter" in r.urn}
    assert adapter_urns & set(hpa.dependencies), hpa.dependencies


@pytest.mark.parametrize("config", [
    vllm_config(slices=FOUR, weights=WEIGHTS),  # no autoscaling
    vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE) | {"pathways:kubernetes": {"installMetricsAdapter": False}},
])
def test_no_adapter_without_an_autoscaler_or_where_the_cluster_runs_one(config):
    assert adapter_objects(plan_of(config)) == []


def test_turning_it_off_is_said_in_the_plan():
    off = vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE) | {"pathways:kubernetes": {"installMetricsAdapter": False}}
    said = [n for n in notices(resolve(load(_raw(off), stack="test"))) if "Custom Metrics Stackdriver Adapter" in n]
    assert said and "the cluster must run one" in said[0]
    on = vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE)
    assert not [n for n in notices(resolve(load(_raw(on), stack="test"))) if "Custom Metrics Stackdriver Adapter" in n]


def test_the_bootstrap_grants_the_adapter_its_monitoring_read_through_workload_identity():
    plan = example_bootstrap_plan("pathways-serving-123")
    number = example_bootstrap_config("pathways-serving-123")["pathways-bootstrap:projectNumber"]
    (grant,) = [r for r in plan.by_type(PROJECT_MEMBER) if str(r.input("member")).startswith("principal://")]
    assert grant.input("role") == "roles/monitoring.viewer"
    assert grant.input("member") == (f"principal://iam.googleapis.com/projects/{number}/locations/global/workloadIdentityPools/"
                                     "pathways-serving-123.svc.id.goog/subject/ns/custom-metrics/sa/custom-metrics-stackdriver-adapter")
    # and nowhere else: no other stack autoscales
    assert not [r for r in example_bootstrap_plan("pathways-dev-123").by_type(PROJECT_MEMBER) if "custom-metrics" in str(r.input("member"))]


def test_its_apis_go_first_when_the_stack_is_destroyed():
    # A registered, unserved aggregated API stops the namespace controller from deleting any namespace
    # (NamespaceDeletionDiscoveryFailure: a destroy of the serving stack hung on kueue-system in the real-engine
    # tier). Each APIService is made after its server and every namespace and controller chart, so a destroy deletes
    # it before them.
    plan = example_plan("serving")
    by_urn = {r.urn: r for r in plan.resources}
    for api in plan.by_type("kubernetes:apiregistration.k8s.io/v1:APIService"):
        names = {(by_urn[u].type, by_urn[u].name) for u in api.dependencies if u in by_urn}
        assert {("kubernetes:core/v1:Namespace", "workloads"), ("kubernetes:helm.sh/v4:Chart", "kueue"),
                ("kubernetes:helm.sh/v4:Chart", "lws"), ("kubernetes:apps/v1:Deployment", f"metrics-adapter-deployment-{ma.NAME}"),
                ("kubernetes:core/v1:Service", f"metrics-adapter-service-{ma.NAME}")} <= names, names
