"""Serving without Pathways (issue #77): serve.runtime: direct (vLLM on single-host slices) and serve.split (prefill and
decode apart, joined by tpu-inference's TPUConnector, behind its proxy): the objects the plan makes, what it refuses,
what it says and costs, and what changing a role touches. tests/test_vllm_sources.py reads every name from the
pinned wheels."""

from __future__ import annotations

import copy
import json

import pytest

from components.manifests import admission
from components.model.workloads import vllm
from infra.offline.diff import diff
from infra.offline.policy_runner import run_policies
from infra.offline.render import check_builtins, manifests
from policies.rules import ALL_POLICIES
from tests.conftest import config_with, in_zone_of, plan_of
from tests.test_serving import _errors, containers

LWS_TYPE = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
SERVE_GROUP = [{"name": "serve", "tpu": "v6e-8", "count": 3}]


def direct_config(slices=None, workload=None, zone=None, **serve) -> dict:
    """A vLLM endpoint on the direct runtime (no pathwaysVersion: nothing of Pathways runs)."""
    return config_with(slices=slices or SERVE_GROUP, **(zone or {}), workloads=[{
        "name": "chat", "mode": "serve", "sliceGroup": "serve", **(workload or {}),
        "serve": {"model": "Qwen/Qwen3-8B", **serve}}])


def split_config(prefill=1, decode=2, slices=None, **serve) -> dict:
    serve = {"extraArgs": ["--block-size=256"], **serve}
    return direct_config(slices=slices, split={"prefill": {"replicas": prefill}, "decode": {"replicas": decode}}, **serve)


def lws_objects(plan) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in manifests(plan) if o["kind"] == "LeaderWorkerSet"}


def pod(lws: dict) -> dict:
    return lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]


# made when a test first asks (not at collection, where each of the suite's workers would make them)
PLANS = {
    "direct": lambda: direct_config(runtime="direct", replicas=2),
    "split": lambda: split_config(),
    # everything the Pathways-backed endpoint has, on the direct runtime: autoscaling, the gateway, the load balancer
    "direct-autoscaled-gateway": lambda: direct_config(runtime="direct", autoscale={"maxReplicas": 3, "target": 8},
                                                       gateway={"enabled": True, "pickerResources": {"cpu": "1", "memory": "2Gi"}},
                                                       internalLoadBalancer=True),
}


def planned(name: str):
    return plan_of(PLANS[name]())


def test_a_direct_replica_is_one_pod_running_vllm_on_the_hosts_own_chips():
    (lws,) = lws_objects(planned("direct")).values()
    spec = lws["spec"]
    assert spec["replicas"] == 2 and spec["leaderWorkerTemplate"]["size"] == 1
    # written out, not left to the CRD's default, so that a diff shows it (as on the Pathways path)
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart" and spec["startupPolicy"] == "LeaderCreated"
    assert "leaderTemplate" not in spec["leaderWorkerTemplate"]  # the group's one pod is made from workerTemplate
    (engine,) = pod(lws)["spec"]["containers"]
    assert engine["image"] == vllm.VLLM_IMAGE and engine["command"] == ["vllm", "serve"]
    env = {e["name"]: e.get("value") for e in engine["env"]}
    assert env == {vllm.ENV_PLATFORMS: "tpu,cpu"}  # nothing of Pathways: no proxy address, multiprocessing as vLLM's
    assert "--tensor-parallel-size=8" in engine["args"] and engine["args"][0] == "Qwen/Qwen3-8B"
    # all the VM's chips, half its CPU and memory (no limit beyond the chips), probes on /health
    assert engine["resources"]["limits"] == {"google.com/tpu": "8"} and engine["resources"]["requests"]["google.com/tpu"] == "8"
    assert engine["startupProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert not engine["securityContext"].get("privileged") and "add" not in engine["securityContext"].get("capabilities", {})
    # queued by Kueue, placed on the group's slices, a slice per replica
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "chat"
    assert lws["metadata"]["annotations"] == {"leaderworkerset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"}
    assert pod(lws)["spec"]["nodeSelector"]["pathways/slice-group"] == "serve"


def test_ironwood_engines_span_both_tensorcores_of_each_chip():
    plan = plan_of(direct_config(slices=[{"name": "serve", "tpu": "tpu7x-8", "count": 1}], zone=in_zone_of("tpu7x"), runtime="direct"))
    (lws,) = lws_objects(plan).values()
    (engine,) = pod(lws)["spec"]["containers"]
    # tpu-inference's v7x manifests: --tensor-parallel-size=8 on google.com/tpu: 4
    assert "--tensor-parallel-size=8" in engine["args"] and engine["resources"]["limits"] == {"google.com/tpu": "4"}


def test_a_split_endpoint_is_a_prefill_a_decode_and_a_proxy_set():
    sets = lws_objects(planned("split"))
    assert set(sets) == {"chat-prefill", "chat-decode", "chat-proxy"}
    assert [sets[n]["spec"]["replicas"] for n in ("chat-prefill", "chat-decode", "chat-proxy")] == [1, 2, 2]
    for role, kv_role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        (engine,) = pod(sets[f"chat-{role}"])["spec"]["containers"]
        (config,) = [a.split("=", 1)[1] for a in engine["args"] if a.startswith("--kv-transfer-config=")]
        assert json.loads(config) == {"kv_connector": "TPUConnector", "kv_connector_module_path": "tpu_inference.distributed.tpu_connector",
                                      "kv_role": kv_role}
        env = {e["name"]: e for e in engine["env"]}
        assert env["VLLM_HOST_IP"]["valueFrom"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["TPU_KV_TRANSFER_PORT"]["value"] == "9100" and env["TPU_SIDE_CHANNEL_PORT"]["value"] == "9600"
        assert "--block-size=256" in engine["args"]
        assert sets[f"chat-{role}"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "chat"
    # the proxy: tpu-inference's, on the system pool, over each role's Service; not queued, tolerating nothing
    proxy = pod(sets["chat-proxy"])["spec"]
    (c,) = proxy["containers"]
    assert c["command"] == ["python3"] and c["args"][0] == vllm.PROXY_SCRIPT
    args = dict(zip(c["args"][1::2], c["args"][2::2], strict=True))
    assert args == {"--host": "0.0.0.0", "--port": "8000", "--prefiller-hosts": "chat-prefill-http.pathways.svc",
                    "--prefiller-ports": "8000", "--decoder-hosts": "chat-decode-http.pathways.svc", "--decoder-ports": "8000"}
    assert set(args) <= set(vllm.PROXY_FLAGS)
    assert proxy["nodeSelector"] == {"pathways/role": "system"} and "tolerations" not in proxy
    assert "kueue.x-k8s.io/queue-name" not in sets["chat-proxy"]["metadata"]["labels"]


def test_the_endpoint_is_the_proxies_and_each_role_has_a_service_of_its_ready_engines():
    services = {o["metadata"]["name"]: o for o in manifests(planned("split")) if o["kind"] == "Service"}
    selector = "leaderworkerset.sigs.k8s.io/name"
    assert services["chat-http"]["spec"]["selector"][selector] == "chat-proxy"
    assert services["chat-prefill-http"]["spec"]["selector"][selector] == "chat-prefill"
    assert services["chat-decode-http"]["spec"]["selector"][selector] == "chat-decode"
    (policy,) = [o for o in manifests(planned("split")) if o["kind"] == "NetworkPolicy"]
    members = {"matchExpressions": [{"key": selector, "operator": "In", "values": ["chat-prefill", "chat-decode", "chat-proxy"]}]}
    # every port between the endpoint's own pods (the KV transfer's ephemeral ones), only 8000 from anyone else
    assert policy["spec"]["podSelector"] == members
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": members}]}, {"ports": [{"protocol": "TCP", "port": 8000}]}]


def test_autoscaling_the_gateway_and_the_load_balancer_select_the_direct_replicas():
    objects = manifests(planned("direct-autoscaled-gateway"))
    (lws,) = lws_objects(planned("direct-autoscaled-gateway")).values()
    assert "replicas" not in lws["spec"]  # the autoscaler's count
    (hpa,) = [o for o in objects if o["kind"] == "HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "chat"}
    leader = {"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"}
    (monitoring,) = [o for o in objects if o["kind"] == "PodMonitoring"]
    assert monitoring["spec"]["selector"] == {"matchLabels": leader}
    (svc,) = [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == "chat-http"]
    assert svc["spec"]["selector"] == leader and svc["spec"]["type"] == "LoadBalancer"
    (chart,) = [r for r in planned("direct-autoscaled-gateway").resources if r.type == "kubernetes:helm.sh/v4:Chart" and r.name == "serve-chat-inference-pool"]
    assert chart.inputs["values"]["inferencePool"]["modelServers"]["matchLabels"] == leader  # each group's one pod: vLLM itself


@pytest.mark.parametrize("name", sorted(PLANS))
def test_every_object_passes_the_crd_webhook_pod_schemas_and_the_policy_pack(name):
    plan = planned(name)
    for lws in lws_objects(plan).values():
        assert admission.check_lws(lws).violations == [], lws["metadata"]["name"]
    assert {k: [str(v) for v in r.violations] for k, r in check_builtins(plan).items() if r.violations} == {}
    assert [v for v in run_policies(plan, ALL_POLICIES) if v.enforcement == "mandatory"] == []


def test_the_queue_rule_still_refuses_an_unqueued_set_that_reaches_the_tpus():
    """The pack exempts only a set whose pods tolerate nothing and request no TPU (the proxy): a proxy given a TPU
    toleration must be queued."""
    out = []
    for r in planned("split").resources:
        if r.type == LWS_TYPE and r.name == "serve-chat-proxy":
            inputs = copy.deepcopy(r.inputs)
            inputs["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["tolerations"] = [
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]
            r = type(r)(**{**r.__dict__, "inputs": inputs})
        out.append(r)
    from infra.offline.engine import Plan

    found = run_policies(Plan(planned("split").stack, out, planned("split").outputs), ALL_POLICIES)
    assert any(v.policy == "pathways-kueue-quota" and "chat-proxy is not queued" in v.message for v in found)


def test_scaling_decode_changes_only_the_decode_set():
    four = [{"name": "serve", "tpu": "v6e-8", "count": 4}]
    changes = diff(plan_of(split_config(slices=four)), plan_of(split_config(decode=3, slices=four)))
    assert [(c.name, c.action) for c in changes] == [("serve-chat-decode", "update")]
    assert changes[0].values == {"spec.replicas": (2, 3)}


def test_the_plan_says_the_runtime_why_and_each_roles_cost():
    from components.model.config import load, resolve
    from components.model.cost.summary import stack_summary, summary_text
    from infra.offline.stackfile import flatten, raw_values

    flat, _ = flatten(split_config())
    stack = resolve(load(raw_values(flat), "test"))
    (w,) = stack_summary(stack)["workloads"]
    assert w["runtime"] == "direct" and "TPUConnector" in w["runtimeBecause"]
    assert w["split"]["prefill"] == {"replicas": 1, "chips": 8, "hourly": 21.6}  # v6e list price $2.70 a chip-hour
    assert w["split"]["decode"] == {"replicas": 2, "chips": 16, "hourly": 43.2}
    assert w["slices"] == 3 and "server" not in w["images"] and w["images"] == {"vllm": vllm.VLLM_IMAGE}
    text = "\n".join(summary_text(stack_summary(stack)))
    assert "chat split: prefill 1 x serve (8 chips, $21.60/h); decode 2 x serve (16 chips, $43.20/h)" in text
    # the default endpoint says it runs on Pathways, and how to leave it
    flat, _ = flatten(config_with(pathwaysVersion=vllm.pathways_version("v0.32.0"), workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": "Qwen/Qwen3-8B"}}]))
    (w,) = stack_summary(resolve(load(raw_values(flat), "test")))["workloads"]
    assert w["runtime"] == "pathways" and "serve.runtime: direct" in w["runtimeBecause"]


def test_a_jetstream_endpoint_is_told_its_vllm_equivalent():
    from components.model.config import load, resolve
    from components.model.cost.summary import notices
    from infra.offline.stackfile import flatten, raw_values
    from tests.test_serving import serve_config

    flat, _ = flatten(serve_config(slices=[{"name": "main", "tpu": "v6e-16", "count": 2}], disaggregated=True))
    (notice,) = [n for n in notices(resolve(load(raw_values(flat), "test"))) if "JetStream" in n]
    assert "keeps running as it is" in notice and "serve.engine: vllm" in notice and "serve.split" in notice
    assert "Hugging Face id of llama3.1-8b" in notice


@pytest.mark.parametrize("config,key,text", [
    (direct_config(slices=[{"name": "serve", "tpu": "v6e-16", "count": 2}], runtime="direct"),
     "pathways:workloads[0].serve.runtime", "needs single-host slices, and group 'serve' is v6e-16 (4 hosts a slice)"),
    (direct_config(runtime="pathways", split={"prefill": {}, "decode": {}}),
     "pathways:workloads[0].serve.runtime", "pathways cannot run serve.split"),
    (split_config(replicas=2), "pathways:workloads[0].serve.replicas", "not with serve.split"),
    (split_config(autoscale={"maxReplicas": 2, "target": 8}), "pathways:workloads[0].serve.autoscale", "not with serve.split yet"),
    (split_config(gateway={"enabled": True}), "pathways:workloads[0].serve.gateway.enabled", "knows no prefill"),
    (direct_config(split={"prefill": {"extraArgs": ["--block-size=128"]}, "decode": {"extraArgs": ["--block-size=256"]}}),
     "pathways:workloads[0].serve.split.decode.extraArgs", "--block-size is 128 on prefill and 256 on decode"),
    (direct_config(split={"prefill": {}, "decode": {"extraArgs": ["--kv-cache-dtype=fp8"]}}),
     "pathways:workloads[0].serve.split.decode.extraArgs", "--kv-cache-dtype is the default on prefill and fp8 on decode"),
    (direct_config(split={"prefill": {"extraArgs": ["--kv-transfer-config={}"]}, "decode": {}}),
     "pathways:workloads[0].serve.split.prefill.extraArgs[0]", "set by the stack from serve.split"),
    (split_config(prefill=2, decode=2), "pathways:workloads[0].serve.replicas", "4 replica(s) of one slice need 4 slices, but group 'serve' has 3"),
    (direct_config(runtime="direct", proxyResources={"cpu": "4", "memory": "8Gi"}),
     "pathways:workloads[0].serve.proxyResources", "the direct runtime does not run"),
    (direct_config(workload={"xlaFlags": ["--xla_tpu_enable_async_collective_fusion=true"]}, runtime="direct"),
     "pathways:workloads[0].xlaFlags", "configures Pathways, which the direct runtime does not run"),
    (direct_config(runtime="direct", engine="jetstream", model="llama3.1-8b", weights="gs://acme-models/llama"),
     "pathways:workloads[0].serve.runtime", "only for engine: vllm"),
    (direct_config(split={"prefill": {}, "decode": {}, "proxyResources": {"cpu": "8", "memory": "8Gi"}}),
     "pathways:workloads[0].serve.split.proxyResources", "more than one e2-standard-4 system-pool node holds"),
])
def test_what_the_direct_runtime_and_a_split_endpoint_refuse(config, key, text):
    errors = _errors(config)
    assert any(line.startswith(key + ":") and text in line for line in errors), errors


def test_vllm_disaggregated_on_pathways_points_at_serve_split():
    cfg = config_with(pathwaysVersion=vllm.pathways_version("v0.32.0"), workloads=[
        {"name": "chat", "mode": "serve", "serve": {"model": "Qwen/Qwen3-8B", "disaggregated": True}}])
    (line,) = [e for e in _errors(cfg) if e.startswith("pathways:workloads[0].serve.disaggregated:")]
    assert "use serve.split: {prefill: {replicas: 1}, decode: {replicas: 1}}" in line


def test_only_workloads_that_run_pathways_need_its_version():
    assert plan_of(direct_config(runtime="direct"))  # no pathwaysVersion
    cfg = direct_config(runtime="direct")
    cfg["pathways:workloads"].append({"name": "train", "image": "example.com/t:1"})
    assert any(e.startswith("pathways:pathwaysVersion:") for e in _errors(cfg))


def test_the_direct_engine_and_the_pathways_one_differ_only_where_the_runtime_does():
    """The same serve config on either runtime: the engine's args differ by nothing but the tensor-parallel size
    (one host's devices vs the whole slice's chips), and the endpoint's Service and outputs are the same."""
    pathways = plan_of(config_with(slices=SERVE_GROUP, pathwaysVersion=vllm.pathways_version("v0.32.0"), workloads=[
        {"name": "chat", "mode": "serve", "sliceGroup": "serve", "serve": {"model": "Qwen/Qwen3-8B", "maxModelLen": 4096}}]))
    direct = plan_of(direct_config(runtime="direct", maxModelLen=4096))
    (p_lws,) = lws_objects(pathways).values()
    (d_lws,) = lws_objects(direct).values()
    p_engine = containers(p_lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["vllm"]
    (d_engine,) = pod(d_lws)["spec"]["containers"]
    assert p_engine["args"] == d_engine["args"]  # a v6e-8 slice: 8 chips either way
    assert p_lws["spec"]["leaderWorkerTemplate"]["size"] == 2 and d_lws["spec"]["leaderWorkerTemplate"]["size"] == 1
    assert pathways.outputs["serving"] == direct.outputs["serving"]


def test_each_pod_names_its_ports_keeps_no_token_and_says_why_it_is_not_awaited():
    from components.manifests.jobset import DROP_ALL, POD_ANNOTATIONS

    sets = lws_objects(planned("split"))
    expected_ports = {
        "chat-prefill": [("http", 8000), ("kv-transfer", 9100), ("kv-side", 9600)],  # prefill binds the side channel
        "chat-decode": [("http", 8000), ("kv-transfer", 9100)],
        "chat-proxy": [("http", 8000)],
    }
    for name, ports in expected_ports.items():
        template = pod(sets[name])
        assert template["metadata"] == {"labels": {"pathways/workload": "chat"}, "annotations": POD_ANNOTATIONS}, name
        assert template["spec"]["automountServiceAccountToken"] is False, name
        (c,) = template["spec"]["containers"]
        assert c["name"] == ("proxy" if name == "chat-proxy" else "vllm")
        assert [(p["name"], p["containerPort"], p["protocol"]) for p in c["ports"]] == [(n, port, "TCP") for n, port in ports], name
    proxy = pod(sets["chat-proxy"])["spec"]["containers"][0]
    assert proxy["securityContext"] == DROP_ALL and proxy["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"},
                                                                          "limits": {"cpu": "2", "memory": "4Gi"}}
    health = {"path": "/health", "port": 8000}
    assert proxy["readinessProbe"] == {"httpGet": health, "timeoutSeconds": 5, "periodSeconds": 5, "failureThreshold": 3}
    assert proxy["livenessProbe"] == {"httpGet": health, "timeoutSeconds": 5, "periodSeconds": 30, "failureThreshold": 10}
    services = {o["metadata"]["name"]: o for o in manifests(planned("split")) if o["kind"] == "Service"}
    for role in ("prefill", "decode"):
        svc = services[f"chat-{role}-http"]
        # an engine may load its model for hours: Pulumi does not wait for the Service's endpoints
        assert svc["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
        assert svc["metadata"]["labels"] == {"pathways/workload": "chat", "app.kubernetes.io/managed-by": "pulumi"}
        assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["ports"] == [
            {"name": "http", "port": 8000, "targetPort": 8000, "protocol": "TCP", "appProtocol": "http"}]


def test_a_suspended_endpoint_runs_no_replica_of_any_role_and_weights_and_tokens_reach_the_engine():
    held = plan_of(split_config(slices=None) | {"pathways:workloads": [
        {**split_config()["pathways:workloads"][0], "state": "suspended"}]})
    assert {n: s["spec"]["replicas"] for n, s in lws_objects(held).items()} == {"chat-prefill": 0, "chat-decode": 0, "chat-proxy": 0}
    direct_held = plan_of(direct_config(runtime="direct", workload={"state": "suspended"}))
    assert [s["spec"]["replicas"] for s in lws_objects(direct_held).values()] == [0]
    weighted = plan_of(direct_config(runtime="direct", weights="gs://acme-models/Qwen/Qwen3-8B", huggingFaceTokenSecret="hf"))
    (engine,) = pod(next(iter(lws_objects(weighted).values())))["spec"]["containers"]
    assert engine["args"][0] == "gs://acme-models/Qwen/Qwen3-8B" and "--load-format=runai_streamer" in engine["args"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}}} in engine["env"]


def test_moving_an_endpoint_to_the_direct_runtime_rolls_it_and_to_split_makes_new_sets():
    """What `make diff` says of the switches docs/serving.md describes. LWS v0.9.0's update webhook
    (pkg/webhooks/leaderworkerset_webhook.go ValidateUpdate) holds only subGroupSize immutable, so a new size and
    template roll the same set; a split endpoint's sets have other names."""
    base = {"slices": SERVE_GROUP, "pathwaysVersion": vllm.pathways_version("v0.32.0")}
    workload = {"name": "chat", "mode": "serve", "sliceGroup": "serve", "serve": {"model": "Qwen/Qwen3-8B"}}
    on_pathways = plan_of(config_with(**base, workloads=[workload]))
    direct = plan_of(config_with(**base, workloads=[{**workload, "serve": {**workload["serve"], "runtime": "direct"}}]))
    (change,) = diff(on_pathways, direct)
    assert (change.name, change.action) == ("serve-chat", "update") and "recreated, one at a time" in change.interrupts[0]
    split = plan_of(config_with(**base, workloads=[{**workload, "serve": {**workload["serve"], "split": {"prefill": {}, "decode": {}}}}]))
    actions = {c.name: c.action for c in diff(on_pathways, split)}
    assert actions == {"serve-chat": "delete", "serve-chat-http": "update", "serve-chat-ingress": "update",
                       "serve-chat-prefill": "create", "serve-chat-decode": "create", "serve-chat-proxy": "create",
                       "serve-chat-prefill-http": "create", "serve-chat-decode-http": "create"}
