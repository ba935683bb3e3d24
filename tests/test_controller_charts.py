"""The controllers' Helm charts offline (infra/offline/charts.py): expanded from the pinned chart directories with
the values the program gives each helm.v4.Chart (components/manifests/controller_charts.py), named and namespaced
as the Kubernetes provider registers a Chart's children (pulumi-kubernetes v4.25.0 helm/v4/chart.go, yaml/v2), and
seen by render, its admission checks and the plan's policy run."""

from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest
import yaml

import infra.offline.__main__ as offline_cli
from components.constants import HELM_CHART, SYSTEM_ROLE
from components.manifests import guardrails
from components.manifests.controller_charts import (
    CHARTS,
    FLEET_FRAMEWORKS,
    LWS,
    SERVE_FRAMEWORKS,
    STACK_FRAMEWORKS,
    kueue_manager_config,
)
from components.model.config import load, resolve
from infra.offline import charts
from infra.offline.charts import ChartError, chart_objects, render_chart, with_chart_objects
from infra.offline.policy_runner import run_policies
from infra.offline.render import RenderError, write_manifests
from infra.offline.stackfile import PROJECT_ROOT, load_config, raw_values, stack_path
from policies.rules import ALL_POLICIES
from tests.conftest import config_with, every_stack, example_path, example_plan, plan_of, section, stack_config, stack_plan
from tests.test_policies import mutate

SERVING = example_plan("serving")


def _mtc(name: str) -> bool:
    config, secrets = load_config(stack_path(name))
    return resolve(load(raw_values(config), name, frozenset(secrets))).mtc is not None


@every_stack("name")
def test_the_program_installs_each_chart_with_the_values_of_controller_charts(name):
    # one source for `pulumi up` and the offline render: the Chart's release, namespace and values
    plan = stack_plan(name)
    installed = plan.by_type(HELM_CHART)
    if section(stack_config(name), "kubernetes").get("installControllers") is False:  # installed by whoever made the cluster (xpk)
        assert installed == []
        return
    assert {r.name for r in installed} >= {"jobset", "kueue"}
    # besides the controllers', only a serve workload's inference gateway chart (tests/test_inference_gateway.py)
    assert all(r.name.endswith("-inference-pool") for r in installed if r.name not in CHARTS)
    for r in (r for r in installed if r.name in CHARTS):
        chart = CHARTS[r.name]
        assert r.input("namespace") == chart.namespace and r.input("skipCrds") is False
        # Kueue: the chart's manager config with the stack's integrations only (a fleet's: JobSet alone,
        # tests/test_fleet.py; serve workloads add LWS and its pods), its managed namespaces, fair sharing with teams
        config = stack_config(name)
        serve = any(w.get("mode") == "serve" for w in config.get("pathways:workloads") or [])
        frameworks = FLEET_FRAMEWORKS if config.get("pathways:fleet") else SERVE_FRAMEWORKS if serve else STACK_FRAMEWORKS
        manager = kueue_manager_config(frameworks, fair_sharing=bool(config.get("pathways:teams"))) if r.name == "kueue" else {}
        assert r.input("values") == {**chart.values(r.input("version"), SYSTEM_ROLE, mtc=_mtc(name)), **manager}
        ns = next(o for o in plan.by_type("kubernetes:core/v1:Namespace") if o.input("metadata.name") == chart.namespace)
        assert ns.input("metadata.labels") == guardrails.psa_labels(chart.pod_security)


def test_the_images_are_the_pinned_releases_not_the_charts_staging_ones():
    # each chart's own values name a staging image at a moving tag, pulled Always
    for chart in CHARTS.values():
        (deployment,) = [o for o in render_chart(charts.CHARTS / chart.release, chart.release, chart.namespace, chart.values("9.9.9", "system"))
                         if o["kind"] == "Deployment"]
        pod = deployment["spec"]["template"]["spec"]
        images = {c["image"] for c in pod["containers"]}
        assert images == {f"{chart.image_repository}:v9.9.9"}, chart.release
        assert {c["imagePullPolicy"] for c in pod["containers"]} == {"IfNotPresent"}
        assert pod["nodeSelector"] == {"pathways/role": "system"}


def test_render_lists_the_charts_objects(tmp_path):
    written, notes = write_manifests(SERVING, tmp_path)
    names = {p.name for p in written}
    for name in ("deployment-jobset-system-jobset-controller.yaml", "deployment-kueue-system-kueue-controller-manager.yaml",
                 "deployment-lws-system-lws-controller-manager.yaml", "serviceaccount-lws-system-lws-controller-manager.yaml",
                 "clusterrolebinding-lws-manager-rolebinding.yaml", "mutatingwebhookconfiguration-lws-mutating-webhook-configuration.yaml",
                 "validatingwebhookconfiguration-jobset-validating-webhook-configuration.yaml",
                 "customresourcedefinition-leaderworkersets.leaderworkerset.x-k8s.io.yaml",
                 "customresourcedefinition-workloads.kueue.x-k8s.io.yaml"):
        assert name in names, name
    # the stack's own objects are still there, and no chart Secret is written
    assert "leaderworkerset-pathways-llama.yaml" in names and not any(n.startswith("secret-") for n in names)
    assert "skipped Secret lws-system/lws-webhook-server-cert of chart lws: render writes no Secrets" in notes
    deployment = yaml.safe_load((tmp_path / "deployment-lws-system-lws-controller-manager.yaml").read_text())
    assert deployment["spec"]["template"]["spec"]["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def test_the_serving_stack_renders_these_chart_objects():
    kinds = collections.Counter((c.release, c.obj["kind"]) for c in chart_objects(SERVING))
    per_chart = {r: {k: n for (rel, k), n in kinds.items() if rel == r} for r in ("jobset", "kueue", "lws")}
    for release, found in per_chart.items():
        assert found["Deployment"] == 1 and found["ServiceAccount"] == 1, release
        assert found["MutatingWebhookConfiguration"] == 1 and found["ValidatingWebhookConfiguration"] == 1, release
        assert found["ClusterRole"] and found["ClusterRoleBinding"] and found["Role"] and found["RoleBinding"], release
    assert per_chart["lws"]["CustomResourceDefinition"] == 2  # leaderworkersets and disaggregatedsets (crds/)
    assert per_chart["kueue"]["CustomResourceDefinition"] == 11  # templates/crd/, Kueue's chart has no crds/


def test_the_stack_decides_which_charts_are_rendered():
    releases = {c.release for c in chart_objects(SERVING)}
    assert releases == {"jobset", "kueue", "lws", "serve-llama-inference-pool"}  # the example's gateway
    assert {c.release for c in chart_objects(example_plan("dev"))} == {"jobset", "kueue"}  # no serve workload: no LWS
    assert {c.release for c in chart_objects(plan_of(config_with(kubernetes={"kueue": {"enabled": False}})))} == {"jobset"}
    assert chart_objects(plan_of(config_with(kubernetes={"installControllers": False}))) == []


def test_objects_are_namespaced_as_the_provider_namespaces_them():
    elsewhere = []
    for c in chart_objects(SERVING):
        namespace = c.obj["metadata"].get("namespace")
        if c.obj["kind"] in charts.CLUSTER_KINDS:
            continue  # left as the chart writes it (Kueue's webhook configurations name kueue-system; the API server ignores it)
        # a serve workload's gateway chart is released into the workload namespace
        if namespace != (CHARTS[c.release].namespace if c.release in CHARTS else "pathways"):
            elsewhere.append(c.resource_name)
    # Kueue's visibility API server reads the API server's client CA, a Role of kube-system
    # (charts/kueue/templates/visibility/role_binding.yaml): the one object a chart puts outside its namespace
    assert elsewhere == ["kueue:kube-system/kueue-visibility-server-auth-reader"]


def test_the_policy_run_sees_each_object_as_a_child_of_its_chart():
    plan = with_chart_objects(SERVING)
    chart = plan.one(HELM_CHART, "lws")
    deployment = plan.one("kubernetes:apps/v1:Deployment", "lws:lws-system/lws-controller-manager")
    assert deployment.parent == chart.urn and deployment.custom
    assert deployment.urn == ("urn:pulumi:serving::pathways::pathways:k8s:LeaderWorkerSetController$kubernetes:helm.sh/v4:Chart"
                              "$kubernetes:apps/v1:Deployment::lws:lws-system/lws-controller-manager")
    crd = plan.one("kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", "lws:leaderworkersets.leaderworkerset.x-k8s.io")
    assert crd.parent == chart.urn
    # the provider marks a v1 Secret's data secret (yaml/v2 register)
    secret = plan.one("kubernetes:core/v1:Secret", "lws:lws-system/lws-webhook-server-cert")
    assert all(secret.inputs[k] == "[secret]" for k in ("data", "stringData") if k in secret.inputs)
    assert len(plan.resources) == len(SERVING.resources) + len(chart_objects(SERVING))


@every_stack("name")
def test_committed_stacks_pass_every_rule_with_the_charts_objects(name):
    # the controllers' own Roles are not the Shared Pathways Service's (pathways-service-access reads only those)
    assert run_policies(with_chart_objects(stack_plan(name)), ALL_POLICIES) == []


def test_the_plan_refuses_a_chart_pod_its_namespace_refuses():
    # issue #34 as the stack was: the LWS chart's own pod security context, without a seccomp profile
    before = mutate(SERVING, HELM_CHART, "lws", "values.podSecurityContext", {"runAsNonRoot": True})
    found = [v for v in run_policies(with_chart_objects(before), ALL_POLICIES) if v.policy == "pathways-pod-security"]
    assert [(v.urn.rsplit("::", 1)[-1], v.message) for v in found] == [(
        "lws:lws-system/lws-controller-manager",
        'Deployment lws-system/lws-controller-manager spec.template: its pods would be refused, violates PodSecurity "restricted:latest": '
        'seccompProfile (pod or container "manager" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"); '
        "set the pod's securityContext (a chart's through its values) so that the namespace's level admits it")]
    with pytest.raises(RenderError, match=re.escape(
            'Deployment lws-system/lws-controller-manager (chart lws): [pod-security] spec.template: namespace lws-system: violates '
            'PodSecurity "restricted:latest": seccompProfile (pod or container "manager" must set')):
        write_manifests(before, Path("/nonexistent/never-written"))


def test_guardrails_name_the_service_accounts_the_charts_create():
    # the template guard lets only the JobSet controller create Jobs and only the LWS controller StatefulSets there
    accounts = {f"system:serviceaccount:{c.obj['metadata']['namespace']}:{c.obj['spec']['template']['spec']['serviceAccountName']}"
                for c in chart_objects(SERVING) if c.obj["kind"] == "Deployment"}
    assert set(guardrails.JOB_CREATORS) <= accounts and set(guardrails.STATEFULSET_CREATORS) <= accounts
    service_accounts = {f"system:serviceaccount:{c.obj['metadata']['namespace']}:{c.obj['metadata']['name']}"
                        for c in chart_objects(SERVING) if c.obj["kind"] == "ServiceAccount"}
    assert accounts <= service_accounts


def test_without_the_charts_plan_and_render_say_to_run_make_crds(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(charts, "CHARTS", tmp_path / "charts")
    for command in (["plan", "--config", str(example_path("serving"))], ["render", "--config", str(example_path("serving")), "--out", str(tmp_path / "out")]):
        assert offline_cli.main(command) == 2
        err = capsys.readouterr().err
        assert err == f"error: {tmp_path / 'charts' / 'jobset'} is missing: run `make crds` (it copies the pinned JobSet, Kueue and LWS charts from their Go modules)\n"
    assert not (tmp_path / "out").exists()


def test_a_release_whose_chart_copy_is_missing_is_refused_naming_what_is_held(monkeypatch, tmp_path):
    # 0.11.0 is in the table (controller_versions): `make crds` copies its chart to build/charts/jobset@0.11.0; without
    # that copy the pinned one is not taken for it
    plan = plan_of(config_with(kubernetes={"jobsetVersion": "0.11.0"}))
    assert chart_objects(plan)
    held = charts.CHARTS
    (tmp_path / "charts").mkdir()
    (tmp_path / "charts" / "jobset").symlink_to(charts.CHARTS / "jobset")
    monkeypatch.setattr(charts, "CHARTS", tmp_path / "charts")
    with pytest.raises(ChartError, match=re.escape(
            "chart jobset: the stack installs oci://registry.k8s.io/jobset/charts/jobset 0.11.0, and "
            f"{tmp_path / 'charts' / 'jobset'} holds 0.12.0; the offline tools expand the charts of the releases they were "
            "tested with (make crds)")):
        chart_objects(plan)
    # LWS's module chart says version 0.1.0: its release is the appVersion
    assert yaml.safe_load((held / "lws" / "Chart.yaml").read_text())["appVersion"] == f"v{SERVING.one(HELM_CHART, 'lws').input('version')}"


def _chart(tmp_path: Path, templates: dict[str, str], crds: dict[str, str] | None = None) -> Path:
    path = tmp_path / "chart"
    (path / "templates").mkdir(parents=True)
    (path / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    for name, text in templates.items():
        (path / "templates" / name).write_text(text)
    for name, text in (crds or {}).items():
        (path / "crds").mkdir(exist_ok=True)
        (path / "crds" / name).write_text(text)
    return path


def test_a_chart_expands_as_helm_template_does_for_pulumi(tmp_path):
    crd = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n"
           "spec: {group: example.com, scope: Namespaced, names: {kind: Widget, plural: widgets}, versions: []}\n")
    path = _chart(tmp_path, {
        "NOTES.txt": "Thanks for installing {{ .Release.Name }}.\n",
        "objects.yaml": ("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: '{{ .Release.Name }}-sa'}\n---\n---\n"
                         "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: demo-role}\nrules: []\n---\n"
                         "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n"
                         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: elsewhere}\n"),
        "hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, annotations: {'helm.sh/hook': pre-install}}\nspec: {}\n",
    }, crds={"widgets.yaml": crd})
    objects = render_chart(path, "rel", "team", {})
    # crds/ first; NOTES.txt, the empty document and the hook (DisableHooks) are not objects; a namespaced kind
    # without a namespace gets the release's, a CRD's scope decides for its kind
    assert [(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in objects] == [
        ("CustomResourceDefinition", "widgets.example.com", None), ("ServiceAccount", "rel-sa", "team"),
        ("ClusterRole", "demo-role", None), ("Widget", "w", "team"), ("ConfigMap", "other", "elsewhere")]


def test_a_chart_error_is_one_line(tmp_path):
    bad = _chart(tmp_path, {"x.yaml": "{{ fail \"no cluster here\" }}\n"})
    with pytest.raises(ChartError) as err:
        render_chart(bad, "rel", "team", {})
    assert str(err.value).startswith(f"chart rel ({bad}): ") and "no cluster here" in str(err.value) and "\n" not in str(err.value)
    unknown = _chart(tmp_path / "2", {"x.yaml": "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n"})
    with pytest.raises(ChartError, match=re.escape("chart rel: renders example.com/v1 Gadget, whose scope neither the provider's kind "
                                                   "table nor a CRD of the chart gives (the provider would ask the cluster)")):
        render_chart(unknown, "rel", "team", {})


def test_a_local_chart_directory_is_expanded_as_it_is(tmp_path):
    path = _chart(tmp_path, {"sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: mine}\n"})
    plan = mutate(SERVING, HELM_CHART, "lws", "chart", str(path))
    lws = [c.obj["metadata"]["name"] for c in chart_objects(plan) if c.release == "lws"]
    assert lws == ["mine"]
    missing = mutate(SERVING, HELM_CHART, "lws", "chart", "charts/absent")
    with pytest.raises(ChartError, match="chart lws: the local chart directory charts/absent has no Chart.yaml"):
        chart_objects(missing)


def test_expansions_are_kept_under_the_digest_of_their_inputs():
    chart = LWS
    render_chart(charts.CHARTS / "lws", chart.release, chart.namespace, chart.values("0.9.0", "system"))
    key = charts._digest(charts.CHARTS / "lws", chart.release, chart.namespace, chart.values("0.9.0", "system"), None)
    assert (charts.EXPANDED / f"{key}.json").is_file()
    assert key != charts._digest(charts.CHARTS / "lws", chart.release, chart.namespace, chart.values("0.9.1", "system"), None)


def test_make_plan_fetches_the_charts_first():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert re.search(r"^plan: \$\(VENV\)/\.installed \$\(CRDS\)$", makefile, re.M)
    assert re.search(r"^render: \$\(VENV\)/\.installed \$\(CRDS\)$", makefile, re.M)
