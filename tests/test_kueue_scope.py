"""Kueue cannot stall the cluster (issue #72.6): its webhooks see only the namespaces the stack labels, only the
integrations the stack uses fail closed, and it runs highly available. Read off the pinned chart as the stack
renders it (build/charts/kueue, Kueue v0.19.2) and off every stack's plan."""

from __future__ import annotations

import pytest
import yaml

from components.manifests.controller_charts import KUEUE, SERVE_FRAMEWORKS, STACK_FRAMEWORKS, kueue_manager_config
from components.manifests.kueue_api import MANAGED_NAMESPACE_LABEL, MANAGED_NAMESPACES
from infra.offline import charts
from tests.conftest import STACKS, every_stack, stack_config, stack_plan
from tests.test_controller_charts import render_chart

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
NAMESPACE = "kubernetes:core/v1:Namespace"
NAMESPACE_PATCH = "kubernetes:core/v1:NamespacePatch"


def _rendered(frameworks):
    values = {**KUEUE.values("0.19.2", "system"), **kueue_manager_config(frameworks)}
    return render_chart(charts.CHARTS / KUEUE.release, KUEUE.release, KUEUE.namespace, values)


def _webhooks(objects):
    return {w["name"]: w for o in objects if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
            for w in o["webhooks"]}


@pytest.mark.parametrize("frameworks", [STACK_FRAMEWORKS, SERVE_FRAMEWORKS])
def test_every_job_webhook_sees_only_the_managed_namespaces(frameworks):
    hooks = _webhooks(_rendered(frameworks))
    kueue_objects = {n for n in hooks if any(k in n for k in ("clusterqueue", "resourceflavor", "workload", "cohort"))}
    assert len(hooks) == 43 and len(kueue_objects) == 7
    for name, hook in hooks.items():
        if name in kueue_objects:
            continue  # Kueue's own kinds (cluster-scoped or its Workloads): never a Deployment or Pod of anyone
        assert hook["namespaceSelector"] == MANAGED_NAMESPACES, name


def test_deployments_and_statefulsets_never_wait_for_kueue_and_pods_only_with_serve():
    for frameworks, pods in ((STACK_FRAMEWORKS, "Ignore"), (SERVE_FRAMEWORKS, "Fail")):
        hooks = _webhooks(_rendered(frameworks))
        for kind in ("deployment", "statefulset"):
            assert {hooks[f"{p}{kind}.kb.io"]["failurePolicy"] for p in "mv"} == {"Ignore"}
        # a serve pod created while Kueue is down must not start unadmitted (LWS turns on Kueue's pod integration)
        assert {hooks[f"{p}pod.kb.io"]["failurePolicy"] for p in "mv"} == {pods}


def test_kueue_runs_two_replicas_spread_with_a_disruption_budget():
    objects = _rendered(STACK_FRAMEWORKS)
    [deployment] = [o for o in objects if o["kind"] == "Deployment"]
    [budget] = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    assert deployment["spec"]["replicas"] == 2
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["minAvailable"] == 1 and budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    [spread] = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["labelSelector"]["matchLabels"].items() <= pod_labels.items()
    [config] = [o for o in objects if o["kind"] == "ConfigMap" and "controller_manager_config.yaml" in o.get("data", {})]
    parsed = yaml.safe_load(config["data"]["controller_manager_config.yaml"])
    assert parsed["leaderElection"]["leaderElect"] is True  # one leads, every replica serves the webhooks
    assert parsed["managedJobsNamespaceSelector"] == MANAGED_NAMESPACES


def _labels_of(plan) -> dict[str, dict]:
    out = {r.input("metadata.name"): r.input("metadata.labels") or {} for r in plan.by_type(NAMESPACE)}
    for patch in plan.by_type(NAMESPACE_PATCH):  # `default`, patched for the shared service, never owned
        out.setdefault(patch.input("metadata.name"), {}).update(patch.input("metadata.labels") or {})
    return out


@every_stack()
def test_every_namespace_with_queued_workloads_is_managed_and_no_other(stack):
    plan = stack_plan(stack)
    kube = stack_config(stack).get("pathways:kubernetes") or {}
    if (kube.get("kueue") or {}).get("enabled") is False or kube.get("installControllers") is False:
        return  # no Kueue of the stack's: the cluster's own manages what it manages
    labels = _labels_of(plan)
    # the JobSets and LeaderWorkerSets the stack declares, and the namespace runs are submitted to
    queued = {r.input("metadata.namespace") for t in (JOBSET, LWS) for r in plan.by_type(t)} | {kube.get("namespace", "pathways")}
    assert all(labels.get(ns, {}).get(MANAGED_NAMESPACE_LABEL) == "true" for ns in queued), (queued, labels)
    managed = {ns for ns, lab in labels.items() if lab.get(MANAGED_NAMESPACE_LABEL) == "true"}
    controllers = {"jobset-system", "kueue-system", "lws-system", "custom-metrics"}
    assert not managed & controllers


def test_the_stacks_cover_both_framework_sets():
    # the every-stack test above sees a stack with serve workloads and one without, when the examples have them
    serve = {s for s in STACKS if any(w.get("mode") == "serve" for w in stack_config(s).get("pathways:workloads") or [])}
    assert serve and set(STACKS) - serve
