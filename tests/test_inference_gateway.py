"""serve.gateway: the GKE Inference Gateway in front of a vLLM serve workload — the pinned inferencepool chart
(Gateway API Inference Extension v1.5.0, expanded offline as `pulumi up` expands it), GKE's Gateway and an
HTTPRoute to the pool, and the GCP half GKE's gateway classes need (components/model/workloads/inference_gateway.py)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from components.model.cluster.kubernetes import KubernetesConfig
from components.model.config import load, resolve
from components.model.cost.summary import stack_summary, summary_text
from components.model.workloads import inference_gateway as igw
from infra.offline.charts import CHARTS, chart_objects
from infra.offline.render import check_builtins, check_charts, manifests
from tests.conftest import plan_of
from tests.test_vllm import _errors, _raw, vllm_config

ROOT = Path(__file__).resolve().parents[1]
SUBNETWORK = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
CLUSTER = "gcp:container/cluster:Cluster"


def gateway_config(system="e2-standard-8", **gateway):
    config = vllm_config(gateway={"enabled": True, **gateway})
    config["pathways:cluster"] = {**config.get("pathways:cluster", {}), "systemPool": {"machineType": system}}
    return config


def pool_objects(plan) -> dict[str, dict]:
    return {f"{c.obj['kind']}/{c.obj['metadata']['name']}": c.obj for c in chart_objects(plan) if c.release == "serve-chat-inference-pool"}


def test_the_pinned_chart_selects_the_leaders_and_runs_its_picker_on_the_system_pool():
    objs = pool_objects(plan_of(gateway_config()))
    pool = objs["InferencePool/chat"]  # named after the release: the workload
    # the leaders by LWS's own labels (the -http Service's selector), on vLLM's port, through the chart's picker
    assert pool["spec"]["selector"]["matchLabels"] == {"leaderworkerset.sigs.k8s.io/name": "chat",
                                                      "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    assert pool["spec"]["endpointPickerRef"] == {"name": "chat-epp", "port": {"number": igw.EXT_PROC_PORT}, "failureMode": "FailOpen"}
    picker = objs["Deployment/chat-epp"]["spec"]["template"]["spec"]
    (epp,) = picker["containers"]
    assert epp["image"] == "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0" and epp["imagePullPolicy"] == "IfNotPresent"
    assert epp["resources"] == {"requests": {"cpu": "4", "memory": "8Gi"}, "limits": {"memory": "16Gi"}}  # the chart's sizing
    assert picker["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "pathways/role", "operator": "In", "values": ["system"]}]}]
    assert "--pool-name" in epp["args"] and epp["args"][epp["args"].index("--pool-name") + 1] == "chat"
    # provider gke: the load balancer's health check is vLLM's /health on the pool's port
    check = objs["HealthCheckPolicy/chat"]["spec"]
    assert check["targetRef"] == {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "chat"}
    assert check["default"]["config"] == {"type": "HTTP", "httpHealthCheck": {"requestPath": "/health", "port": 8000}}
    assert "GCPBackendPolicy/chat" in objs
    # the picker may read the pool and the pods (the chart's Roles); nothing cluster-wide
    assert not [k for k in objs if k.startswith("Cluster")]


def test_every_object_of_the_gateway_meets_its_schema():
    plan = plan_of(gateway_config())
    reports = check_charts([c for c in chart_objects(plan) if c.release == "serve-chat-inference-pool"])
    assert reports and all(not r.violations for r in reports.values()), {k: r.violations for k, r in reports.items() if r.violations}
    reports = check_builtins(plan)
    assert not reports["Gateway/chat-gateway"].violations and not reports["HTTPRoute/chat"].violations


def test_the_gateway_is_internal_unless_the_stack_opts_out_and_routes_everything_to_the_pool():
    by_kind = {o["kind"]: o for o in manifests(plan_of(gateway_config())) if o["kind"] in ("Gateway", "HTTPRoute")}
    assert by_kind["Gateway"]["spec"] == {"gatewayClassName": "gke-l7-rilb",
                                          "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}
    assert by_kind["HTTPRoute"]["spec"] == {
        "parentRefs": [{"name": "chat-gateway"}],
        "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                   "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "chat"}]}],
    }
    external = gateway_config(external=True)
    plan = plan_of(external)
    (gw,) = [o for o in manifests(plan) if o["kind"] == "Gateway"]
    assert gw["spec"]["gatewayClassName"] == "gke-l7-regional-external-managed"
    assert "from the internet" in plan.outputs["serving"]["chat"]["gatewayAddress"]
    # the opt-in stands out in the plan
    text = "\n".join(summary_text(stack_summary(resolve(load(_raw(external), stack="test")))))
    assert "chat gateway: EXTERNAL (reachable from the internet) gke-l7-regional-external-managed pathways/chat-gateway" in text


def test_the_gcp_half_a_regional_gateway_class_needs():
    plan = plan_of(gateway_config())
    (proxy_only,) = [r for r in plan.by_type(SUBNETWORK) if r.input("purpose")]
    assert (proxy_only.input("purpose"), proxy_only.input("role"), proxy_only.input("ipCidrRange")) == (
        "REGIONAL_MANAGED_PROXY", "ACTIVE", igw.DEFAULT_PROXY_ONLY_CIDR)
    (cluster,) = plan.by_type(CLUSTER)
    assert cluster.input("gatewayApiConfig") == {"channel": "CHANNEL_STANDARD"}
    (rule,) = [r for r in plan.by_type(FIREWALL) if r.input("name").endswith("-serving-gateway")]
    assert rule.input("allows") == [{"protocol": "tcp", "ports": ["8000"]}]
    assert rule.input("sourceRanges") == [igw.DEFAULT_PROXY_ONLY_CIDR, "35.191.0.0/16", "130.211.0.0/22"]
    # none of it without a gateway
    plain = plan_of(vllm_config())
    assert not [r for r in plain.by_type(SUBNETWORK) if r.input("purpose")]
    assert plain.by_type(CLUSTER)[0].input("gatewayApiConfig") is None
    assert not [r for r in plain.by_type(FIREWALL) if r.input("name").endswith("-serving-gateway")]
    assert not [c for c in chart_objects(plain) if c.release.endswith("-inference-pool")]


def test_the_chart_the_tools_expand_is_the_release_the_stack_pins():
    meta = yaml.safe_load((CHARTS / igw.CHART_NAME / "Chart.yaml").read_text())
    # stamped as the release's hack/push-chart.sh stamps it; the picker image the chart's values name is the same tag
    assert meta["version"] == meta["appVersion"] == f"v{igw.CHART_VERSION}"
    values = yaml.safe_load((CHARTS / igw.CHART_NAME / "values.yaml").read_text())
    assert values["inferenceExtension"]["image"]["tag"] == f"v{igw.CHART_VERSION}"
    assert values["inferenceExtension"]["extProcPort"] == igw.EXT_PROC_PORT
    resources = values["inferenceExtension"]["resources"]
    assert (resources["requests"]["cpu"], resources["requests"]["memory"], resources["limits"]["memory"]) == (
        igw.PICKER_CPU, igw.PICKER_MEMORY, igw.PICKER_MEMORY_LIMIT)
    # the dependency the release bundles (`helm dependency update`): the picker library chart
    assert yaml.safe_load((CHARTS / igw.CHART_NAME / "charts" / "inference-extension" / "Chart.yaml").read_text())["name"] == "inference-extension"


def test_the_picker_resources_are_the_stacks_to_lower():
    objs = pool_objects(plan_of(gateway_config(system="e2-standard-4", pickerResources={"cpu": "1", "memory": "2Gi"})))
    (epp,) = objs["Deployment/chat-epp"]["spec"]["template"]["spec"]["containers"]
    assert epp["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}


@pytest.mark.parametrize(("config", "key", "text"), [
    # the chart's sizing does not fit the default system pool
    (gateway_config(system="e2-standard-4"), "pathways:workloads[0].serve.gateway.pickerResources",
     "the endpoint picker requests 4 CPU and 8Gi (the chart's sizing unless set here), more than one e2-standard-4 "
     "system-pool node holds (2.92 CPU, 11.3 GiB allocatable); set cluster.systemPool.machineType to e2-standard-8 or larger"),
    (vllm_config(engine="jetstream", model="llama3.1-8b", weights="gs://acme-models/llama", version="jax-0.5.3",
                 gateway={"enabled": True}), "pathways:workloads[0].serve.gateway.enabled",
     "only for engine: vllm; the endpoint picker of the pinned chart reads one of the model servers vllm, sglang"),
])
def test_a_gateway_the_chart_or_gke_would_not_run_is_refused(config, key, text):
    errors = [e for e in _errors(config) if e.startswith(key)]
    assert errors and text in errors[0], errors


def test_the_proxy_only_range_must_be_its_own():
    config = gateway_config()
    config["pathways:network"] = {"proxyOnlyCidr": "10.4.0.0/23"}
    (error,) = _errors(config)
    assert error == ("pathways:network.proxyOnlyCidr: 10.4.0.0/23 overlaps podsCidr 10.4.0.0/14; the gateway's "
                     "proxy-only subnet needs a range of its own (e.g. a /23)")


def test_a_long_name_the_chart_would_cut_is_refused():
    config = copy.deepcopy(gateway_config())
    config["pathways:workloads"][0]["name"] = "a" * 41
    errors = _errors(config)
    assert any(e.startswith("pathways:workloads[0].name: 41 characters; with serve.gateway at most 40") for e in errors), errors


def test_the_tier_builds_the_picker_of_the_version_the_stack_installs():
    # the chart and CRD pin (tools/engines/gke-crds) and the picker binary the real-engine tier runs
    # (tools/engines/control-plane) are the same GAIE release as the stack's default chart version
    for wrapper in ("gke-crds", "control-plane"):
        text = (ROOT / "tools" / "engines" / wrapper / "go.mod").read_text()
        assert re.search(rf"^\s*sigs\.k8s\.io/gateway-api-inference-extension v{re.escape(igw.CHART_VERSION)}\b", text, re.M), wrapper
    assert KubernetesConfig().inference_pool_version == igw.CHART_VERSION


def test_the_picker_is_gaies_last_release_that_has_one():
    """GAIE v1.6 removed cmd/epp and the inferencepool chart (inference_gateway.LAST_PICKER_RELEASE says where the
    picker went): a pin past v1.5.x while the tier still builds cmd/epp and the stack installs that chart fails here."""
    text = (ROOT / "tools" / "engines" / "control-plane" / "go.mod").read_text()
    pinned = re.search(r"^\s*sigs\.k8s\.io/gateway-api-inference-extension v(\d+)\.(\d+)\.(\d+)", text, re.M)
    assert pinned and "sigs.k8s.io/gateway-api-inference-extension/cmd/epp" in text
    assert tuple(int(x) for x in pinned.groups()) <= tuple(int(x) for x in igw.LAST_PICKER_RELEASE.split("."))
