"""Real-time serving on the real control plane, deployed by the real `pulumi up` with the LeaderWorkerSet chart:
the LWS controller (with its webhooks) and Kueue's LeaderWorkerSet integration run a serve workload's replicas
on GKE-shaped TPU nodes as Google's shape needs them: Kueue admits each replica (LWS group) at the serving
priority, LWS places it whole on a slice of its own, its webhook injects LWS_LEADER_ADDRESS into every
container; the HTTP Service's endpoints hold only leaders, and only those whose probes pass; the inference
gateway's pool selects exactly the leaders and its real endpoint picker runs on the system pool and reads it;
disaggregated replicas spread prefill and decode over two slices, and a replica past the group's quota is held by
Kueue whole; and only the LWS controller may make TPU StatefulSets."""

from __future__ import annotations

import copy
import functools
import time
from collections import defaultdict
from typing import Any

import yaml
from cryptography import x509

from components.manifests import metrics_adapter as metrics_adapter_manifest
from components.model.workloads import metrics_adapter as ma
from components.model.workloads.workload import serve_service_name
from tests.conftest import config_with
from tests_e2e.helpers import is_true, kueue_judged, nodes, running
from tests_e2e.test_stacks import example_model, example_stack_config
from tools.cluster.engine_prober import ENGINE_ANSWERS, PROBED_AT
from tools.cluster.local import ClusterError

LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
POOL = "cloud.google.com/gke-nodepool"


def lws_pods(cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    return cluster.get("pods", "-n", namespace, "-l", f"{LWS_NAME}={name}")["items"]


def wait_lws_running(cluster, namespace: str, name: str, count: int) -> list[dict[str, Any]]:
    seen: list[str] = []

    def done():
        every = lws_pods(cluster, namespace, name)
        seen[:] = [f"{p['metadata']['name']}:{p['status'].get('phase')}{'(deleting)' if p['metadata'].get('deletionTimestamp') else ''}"
                   f"@{p['spec'].get('nodeName') or '-'}{'/gated' if p['spec'].get('schedulingGates') else ''}" for p in every]
        ps = [p for p in every if running(p)]
        return ps if len(ps) == count else None
    try:
        return cluster.wait_for(f"{count} running pods of LeaderWorkerSet {namespace}/{name}", done, timeout=180)
    except ClusterError as e:
        raise ClusterError(f"{e}; its pods: {', '.join(seen) or 'none'}") from None


def groups_of(ps: list[dict[str, Any]]) -> dict[int, dict[int, dict[str, Any]]]:
    """group index -> worker index (0: the leader) -> pod."""
    out: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for p in ps:
        labels = p["metadata"]["labels"]
        out[int(labels[GROUP_INDEX])][int(labels[WORKER_INDEX])] = p
    return dict(out)


def check_leader_address(ps: list[dict[str, Any]], name: str, namespace: str) -> None:
    """LWS's pod webhook puts LWS_LEADER_ADDRESS first in every container's env (the RM, proxy and workers
    find each other by it)."""
    for p in ps:
        group = p["metadata"]["labels"][GROUP_INDEX]
        for c in p["spec"]["containers"]:
            first = (c.get("env") or [{}])[0]
            assert first == {"name": "LWS_LEADER_ADDRESS", "value": f"{name}-{group}.{name}.{namespace}"}, (p["metadata"]["name"], c["name"], first)


def serving_stack(stacks):
    """The example serving stack (autoscaled: its HorizontalPodAutoscaler owns the count between its bounds); the
    replicas it may run at most, which its slice group holds."""
    stacks.use("serving", example_stack_config("serving"))
    m = example_model("serving")
    (w,) = m.serve_workloads
    assert w.spec.serve is not None and w.spec.serve.autoscale is not None
    return w.name, w.namespace, w.spec.serve.max_replicas, w.group.tpu.hosts + 1


def lws_replicas(cluster, namespace: str, name: str) -> int:
    return cluster.get("leaderworkersets.leaderworkerset.x-k8s.io", "-n", namespace, name)["spec"]["replicas"]


def scaled_to(cluster, namespace: str, name: str, replicas: int) -> None:
    """Scale the set through its scale subresource, as the autoscaler does on load (no metrics run here)."""
    cluster.kubectl("scale", "-n", namespace, f"leaderworkerset/{name}", f"--replicas={replicas}")
    cluster.wait_for(f"{name} at {replicas} replicas", lambda: lws_replicas(cluster, namespace, name) == replicas or None)


def hpa_condition(hpa: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (hpa.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def check_the_autoscaler_owns_the_replica_count_within_its_bounds(cluster, stacks) -> None:
    # The real controller-manager's HPA controller reads the LeaderWorkerSet through its scale subresource
    # (the CRD's .status.hpaPodSelector: the leaders) and holds the count within the stack's bounds; no metrics
    # API runs here, so it cannot scale on load, and says so. (Kubernetes' HPA controller, reconcileAutoscaler:
    # a count above maxReplicas is brought back to it before any metric is read.)
    name, namespace, max_replicas, _ = serving_stack(stacks)
    hpa = cluster.wait_for("the HorizontalPodAutoscaler resolves its scale target", lambda: (
        lambda h: h if hpa_condition(h, "AbleToScale").get("status") == "True" else None)(
        cluster.get("horizontalpodautoscalers", "-n", namespace, name)), timeout=120)
    assert hpa_condition(hpa, "AbleToScale")["reason"] == "SucceededGetScale", hpa["status"]
    assert hpa["status"]["currentReplicas"] == lws_replicas(cluster, namespace, name) == hpa["spec"]["minReplicas"] == 1
    # beyond maxReplicas, the autoscaler brings the set back to it
    cluster.kubectl("scale", "-n", namespace, f"leaderworkerset/{name}", f"--replicas={max_replicas + 1}")
    cluster.wait_for(f"the autoscaler caps {name} at {max_replicas}", lambda: lws_replicas(cluster, namespace, name) == max_replicas or None,
                     timeout=120)
    hpa = cluster.get("horizontalpodautoscalers", "-n", namespace, name)
    able = hpa_condition(hpa, "AbleToScale")
    assert able.get("reason") == "SucceededRescale" and f"update the target scale to {max_replicas}" in able.get("message", ""), hpa["status"]
    events = cluster.get("events", "-n", namespace, "--field-selector", f"involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={name}")
    assert any(e.get("reason") == "SuccessfulRescale" and "above Spec.MaxReplicas" in e.get("message", "") for e in events["items"]), \
        [e.get("message") for e in events["items"]]
    # The custom metrics API is the stack's adapter's: registered with the aggregator, which finds no ready server
    # behind it (the adapter's image does not run here; its pod is admitted and bound to a system-pool node), so the
    # autoscaler cannot read its metric and says so instead of scaling.
    api = cluster.get("apiservices.apiregistration.k8s.io", "v1beta2.custom.metrics.k8s.io")
    assert api["spec"]["service"] == {"namespace": "custom-metrics", "name": "custom-metrics-stackdriver-adapter", "port": 443}
    assert hpa_condition(api, "Available").get("status") == "False", api.get("status")
    (adapter,) = cluster.get("pods", "-n", "custom-metrics", "-l", "k8s-app=custom-metrics-stackdriver-adapter")["items"]
    assert nodes(cluster)[adapter["spec"]["nodeName"]]["pathways/role"] == "system"
    active = hpa_condition(hpa, "ScalingActive")
    assert active.get("status") == "False" and "custom metric" in active.get("message", "").lower(), hpa["status"]
    serving_secret = check_the_aggregator_verifies_the_adapter(cluster, adapter)
    # `pulumi up` of a change leaves the autoscaler's count alone: the stack sends no spec.replicas
    config = example_stack_config("serving")
    config["pathways:workloads"][0]["serve"]["autoscale"]["target"] = 9
    stacks.update(config)
    # and re-derives the same CA and certificate from the seed in its state: the Secret is not touched
    again = cluster.get("secrets", "-n", ma.NAMESPACE, ma.serving_secret_name(1))
    assert again["metadata"]["resourceVersion"] == serving_secret["metadata"]["resourceVersion"] and again["data"] == serving_secret["data"]
    assert cluster.get("horizontalpodautoscalers", "-n", namespace, name)["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "9"
    assert lws_replicas(cluster, namespace, name) == max_replicas


def check_the_aggregator_verifies_the_adapter(cluster, adapter_pod: dict[str, Any]) -> dict[str, Any]:
    """The adapter's APIServices trust the stack's CA (no insecureSkipTLSVerify); the Secret the adapter serves from
    holds a certificate for the Service's name, signed by that CA, derived from the token the real token controller
    wrote into the seed Secret. Returns the serving Secret."""
    seed = cluster.get("secrets", "-n", ma.NAMESPACE, ma.seed_secret_name(1))
    serving = cluster.get("secrets", "-n", ma.NAMESPACE, ma.serving_secret_name(1))
    assert serving["type"] == "kubernetes.io/tls" and set(serving["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    for group, version, _ in ma.API_SERVICES:
        spec = cluster.get("apiservices.apiregistration.k8s.io", f"{version}.{group}")["spec"]
        assert not spec.get("insecureSkipTLSVerify") and spec["caBundle"] == serving["data"]["ca.crt"], spec
    derived = metrics_adapter_manifest.serving_tls_of(seed["data"]["token"], seed["metadata"]["creationTimestamp"])
    assert serving["data"] == derived.secret_data()
    ca = x509.load_pem_x509_certificate(derived.ca_pem.encode())
    cert = x509.load_pem_x509_certificate(derived.cert_pem.encode())
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)
    assert f"{ma.NAME}.{ma.NAMESPACE}.svc" in names
    (volume,) = [v for v in adapter_pod["spec"]["volumes"] if v["name"] == "serving-cert"]
    assert volume["secret"]["secretName"] == ma.serving_secret_name(1)
    return serving


def test_serving_stack_runs_each_replica_on_its_own_slice(cluster, stacks):
    check_the_autoscaler_owns_the_replica_count_within_its_bounds(cluster, stacks)
    name, namespace, replicas, size = serving_stack(stacks)
    scaled_to(cluster, namespace, name, replicas)  # the autoscaler's maximum: every slice of the group

    # Kueue's LeaderWorkerSet integration admits each group as one workload, at the serving priority
    seen: list[str] = []

    def admitted():
        wls = cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
        ours = [w for w in wls if any(o.get("kind") == "LeaderWorkerSet" and o.get("name") == name
                                      for o in w["metadata"].get("ownerReferences", []))]
        if len(ours) == replicas and all(is_true(w, "Admitted") for w in ours):
            return ours
        # what a timeout reports: each workload of the namespace with its conditions' reasons and Kueue's message
        seen[:] = [f"{w['metadata']['name']}: " + "; ".join(f"{c['type']}={c['status']} {c.get('reason', '')} {c.get('message', '')[:120]}"
                                                            for c in (w.get("status") or {}).get("conditions") or []) for w in wls]
        return None
    try:
        # a busy 2-core machine rolls Kueue to the serving integrations while this scales up: room to settle
        wls = cluster.wait_for(f"Kueue admits the {replicas} groups of {name}", admitted, timeout=300)
    except ClusterError as e:
        raise ClusterError(f"{e}; workloads in {namespace}: {' | '.join(seen) or 'none'}") from None
    assert {w["spec"].get("priority") for w in wls} == {2_000_000}  # pathways-serving, above training

    ps = wait_lws_running(cluster, namespace, name, replicas * size)
    labels = nodes(cluster)
    groups = groups_of(ps)
    assert sorted(groups) == list(range(replicas))  # the LWS controller made every group, each whole
    pools_used = []
    for g, members in groups.items():
        assert sorted(members) == list(range(size))
        pools = {labels[p["spec"]["nodeName"]][POOL] for p in members.values()}
        assert len(pools) == 1, (g, pools)  # LWS's exclusive placement: the whole replica on one slice's pool
        pools_used += pools
    assert len(set(pools_used)) == replicas  # each replica on its own slice
    check_leader_address(ps, name, namespace)
    check_the_inference_gateway_fronts_exactly_the_leaders(cluster, name, namespace, ps)


def check_the_inference_gateway_fronts_exactly_the_leaders(cluster, name: str, namespace: str, ps: list[dict[str, Any]]) -> None:
    # The example stack's serve.gateway: the pinned inferencepool chart (GAIE v1.5.0, as its release packages it),
    # installed by the real `pulumi up`, and the Gateway API objects, all stored by the API server under the pinned
    # CRDs (their CEL rules included). GKE's Gateway controller does not run here: no address, no load balancer.
    pool = cluster.get("inferencepools.inference.networking.k8s.io", "-n", namespace, name)
    # the API server's label selection with the pool's selector finds exactly the leaders the LWS controller made,
    # one per replica, and no worker (a worker in the pool would be sent prompts it cannot answer)
    selector = ",".join(f"{k}={v}" for k, v in pool["spec"]["selector"]["matchLabels"].items())
    selected = sorted(p["metadata"]["name"] for p in cluster.get("pods", "-n", namespace, "-l", selector)["items"])
    assert selected == sorted(m[0]["metadata"]["name"] for m in groups_of(ps).values()), selected
    # the endpoint picker the pool names: its pod admitted (Pod Security, the stack's guards), bound by the real
    # scheduler to a system-pool node, where the tier runs the picker built from the pinned module as the chart
    # runs it (its args, its ConfigMap, its ServiceAccount); its Deployment is available only once the picker's own
    # gRPC health check says SERVING, which it says when it has read its InferencePool (cmd/epp/runner/health.go:
    # PoolHasSynced) under the chart's RBAC
    picker = pool["spec"]["endpointPickerRef"]["name"]
    deployment = cluster.get("deployments", "-n", namespace, picker)
    assert is_true(deployment, "Available"), deployment.get("status")
    (pod,) = cluster.get("pods", "-n", namespace, "-l", f"inferencepool={picker}")["items"]
    assert nodes(cluster)[pod["spec"]["nodeName"]]["pathways/role"] == "system", pod["spec"]["nodeName"]
    # what RBAC lets the picker's ServiceAccount do: watch its pool and the pods, read no Secret, touch no LWS
    account = f"system:serviceaccount:{namespace}:{pod['spec']['serviceAccountName']}"

    def can(verb: str, resource: str) -> bool:
        proc = cluster.kubectl("auth", "can-i", verb, resource, "-n", namespace, f"--as={account}", check=False)
        return proc.stdout.strip() == "yes"
    assert can("watch", "inferencepools.inference.networking.k8s.io") and can("list", "pods")
    assert not can("get", "secrets") and not can("patch", "leaderworkersets.leaderworkerset.x-k8s.io")
    # GKE's health check (the chart's HealthCheckPolicy) probes the port the pool sends to
    check = cluster.get("healthcheckpolicies.networking.gke.io", "-n", namespace, name)["spec"]
    assert check["targetRef"]["name"] == name and check["default"]["config"]["httpHealthCheck"]["port"] == pool["spec"]["targetPorts"][0]["number"]
    # the stack's route sends to the chart's pool, through the stack's Gateway
    route = cluster.get("httproutes.gateway.networking.k8s.io", "-n", namespace, name)
    (backend,) = route["spec"]["rules"][0]["backendRefs"]
    assert (backend["group"], backend["kind"], backend["name"]) == ("inference.networking.k8s.io", "InferencePool", name)
    (parent,) = route["spec"]["parentRefs"]
    assert cluster.get("gateways.gateway.networking.k8s.io", "-n", namespace, parent["name"])["spec"]["gatewayClassName"] == "gke-l7-rilb"


def ready_endpoints(cluster, namespace: str, service: str) -> dict[str, bool]:
    """Pod name -> ready, for the endpoints the EndpointSlice controller keeps for a Service."""
    out = {}
    for s in cluster.get("endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}")["items"]:
        for e in s.get("endpoints") or []:
            out[e["targetRef"]["name"]] = bool((e.get("conditions") or {}).get("ready"))
    return out


def test_the_endpoint_holds_only_leaders_whose_probes_pass(cluster, stacks):
    # The serve engine's probes (startup, then readiness, on vLLM's /health) gate the leader's readiness. kwok runs
    # the pod; the engine is the scenario's to play (ENGINE_ANSWERS: its /health answers from then on), and the
    # tier's prober (tools/cluster/engine_prober.py) makes the pod Ready when the kubelet would, from the pod's own
    # probes. Until then the Service has no ready endpoint; then exactly the leaders that answer.
    name, namespace, replicas, size = serving_stack(stacks)
    scaled_to(cluster, namespace, name, 1)
    wait_lws_running(cluster, namespace, name, size)
    # a scale-up, as the autoscaler makes on load: the new replicas' leaders start unready
    started = time.monotonic()
    scaled_to(cluster, namespace, name, replicas)
    ps = wait_lws_running(cluster, namespace, name, replicas * size)
    groups = groups_of(ps)
    leaders = sorted(m[0]["metadata"]["name"] for m in groups.values())
    service = serve_service_name(name)
    endpoints = cluster.wait_for("the Service's endpoints listed",
                                 lambda: (e := ready_endpoints(cluster, namespace, service)) and len(e) == replicas and e or None)
    assert sorted(endpoints) == leaders and not any(endpoints.values()), endpoints  # leaders only, none ready yet
    # a new replica's engine answers as soon as it runs (its model loaded): Ready within its probes' periods, not
    # after a fixed delay (JetStream's 600 s startup delay held every scaled-up vLLM replica unready for 10 minutes)
    new_leader = groups[max(groups)][0]
    engine = next(c for c in new_leader["spec"]["containers"] if c["name"] == "vllm")
    within = engine["startupProbe"]["periodSeconds"] + engine["readinessProbe"]["periodSeconds"]
    assert "initialDelaySeconds" not in engine["startupProbe"], engine["startupProbe"]
    answered = time.monotonic()
    cluster.kubectl("annotate", "pod", "-n", namespace, new_leader["metadata"]["name"], f"{ENGINE_ANSWERS}=true")
    cluster.wait_for(f"{new_leader['metadata']['name']} ready behind the Service",
                     lambda: ready_endpoints(cluster, namespace, service).get(new_leader["metadata"]["name"]) is True, timeout=120)
    ready = time.monotonic()
    probed = cluster.get("pods", "-n", namespace, new_leader["metadata"]["name"])["metadata"]["annotations"][PROBED_AT]
    print(f"scale-up to ready: {ready - started:.1f} s (engine answered after {answered - started:.1f} s; probes passed "
          f"{probed} s after it, ready {ready - answered:.1f} s after it)")
    assert float(probed) <= within and ready - answered <= within + 20, (probed, ready - answered)
    endpoints = ready_endpoints(cluster, namespace, service)
    assert endpoints == {n: n == new_leader["metadata"]["name"] for n in leaders}, endpoints


def test_only_the_lws_controller_makes_tpu_statefulsets(cluster, stacks):
    serving_stack(stacks)  # its guards
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "sneaky", "namespace": "pathways"},
           "spec": {"serviceName": "sneaky", "selector": {"matchLabels": {"app": "sneaky"}},
                    "template": {"metadata": {"labels": {"app": "sneaky"}}, "spec": {
                        "containers": [{"name": "c", "image": "x:1"}],
                        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(sts), check=False)
    assert proc.returncode != 0 and "pathways-workload-templates" in proc.stderr, proc.stderr
    del sts["spec"]["template"]["spec"]["tolerations"]
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(sts), check=False)
    assert proc.returncode == 0, proc.stderr  # an ordinary StatefulSet is none of the guard's business
    # ...unless its pods would carry LWS's own labels, by which the serve Service selects the leaders
    name, namespace = sts["metadata"]["name"], sts["metadata"]["namespace"]
    sts["spec"]["template"]["metadata"]["labels"][LWS_NAME] = name
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(sts), check=False)
    assert proc.returncode != 0 and "pathways-workload-templates" in proc.stderr, proc.stderr
    # and a bare pod posing as a leader (LWS's size annotation, so that LWS's own pod webhook lets it through)
    leader, _, _, _ = serving_stack(stacks)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{leader}-0", "namespace": namespace, "annotations": {"leaderworkerset.sigs.k8s.io/size": "5"},
        "labels": {LWS_NAME: leader, WORKER_INDEX: "0"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}}
    proc = cluster.kubectl("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(pod), check=False)
    assert proc.returncode != 0 and "pathways-nodes-reserved" in proc.stderr and LWS_NAME in proc.stderr, proc.stderr


def test_rotating_the_adapters_certificate_replaces_what_diff_predicts(cluster, stacks):
    # a day-two change (issue #72.9): a raised kubernetes.metricsAdapterCertificateGeneration names new seed and
    # serving Secrets; the real engine's preview replaces exactly what the offline diff says, and the up succeeds
    from tests_e2e.test_day_two import engine_plan, predicted
    from tools.cluster.deploy import existing_mode, pulumi_up

    serving_stack(stacks)
    before = example_stack_config("serving")
    after = copy.deepcopy(before)
    after["pathways:kubernetes"] = {**(after.get("pathways:kubernetes") or {}), "metricsAdapterCertificateGeneration": 2}
    replaced, deleted = predicted(cluster, before, after, "serving")
    run = stacks.current.run
    run.set_config(existing_mode(after, cluster))
    stacks.changed()
    engine_replaced, engine_deleted = engine_plan(run)
    assert engine_replaced == replaced and deleted <= engine_deleted, (sorted(engine_replaced), sorted(replaced))
    up = pulumi_up(cluster, run)
    assert up.returncode == 0, up.output[-4000:]
    secrets = {s["metadata"]["name"] for s in cluster.get("secrets", "-n", "custom-metrics")["items"]}
    from components.model.workloads import metrics_adapter as ma

    assert {ma.seed_secret_name(2), ma.serving_secret_name(2)} <= secrets, secrets
    assert not {ma.seed_secret_name(1), ma.serving_secret_name(1)} & secrets, secrets


# last: it leaves another stack running than the serving one
def test_disaggregated_replica_spans_two_slices(cluster, stacks):
    # JetStream's disaggregated server (vLLM's `vllm serve` cannot run tpu-inference's disaggregated engine)
    stacks.use("disagg", config_with(pathwaysVersion="jax-0.5.3", workloads=[{
        "name": "disagg", "mode": "serve",
        "serve": {"engine": "jetstream", "model": "llama3.1-8b", "weights": "gs://test-models/llama3.1-8b", "disaggregated": True},
    }]))
    ps = wait_lws_running(cluster, "pathways", "disagg", 2 * 4 + 1)
    labels = nodes(cluster)
    (members,) = groups_of(ps).values()
    by_pool: dict[str, list[int]] = defaultdict(list)
    for i, p in members.items():
        by_pool[labels[p["spec"]["nodeName"]][POOL]].append(i)
    # prefill and decode each own a slice: the leader and workers 1-4 on one pool, workers 5-8 on the other
    assert sorted(sorted(v) for v in by_pool.values()) == [[0, 1, 2, 3, 4], [5, 6, 7, 8]]
    check_leader_address(ps, "disagg", "pathways")

    # Scaled past its slice group (by hand: the stack refuses replicas the group cannot hold), the set gets a
    # second group, which Kueue holds whole: its workload waits for quota and none of its pods is bound, while the
    # first replica keeps running. Kueue's LeaderWorkerSet integration, one workload per group, decides.
    cluster.kubectl("scale", "-n", "pathways", "leaderworkerset/disagg", "--replicas=2")

    def held():
        wls = [w for w in cluster.get("workloads.kueue.x-k8s.io", "-n", "pathways")["items"]
               if any(o.get("kind") == "LeaderWorkerSet" and o.get("name") == "disagg" for o in w["metadata"].get("ownerReferences", []))]
        waiting = [w for w in wls if not is_true(w, "Admitted")]
        return waiting[0] if len(wls) == 2 and len(waiting) == 1 else None
    waiting, verdict = kueue_judged(cluster, "pathways", held, "the second disaggregated replica", "insufficient", timeout=120)
    assert "insufficient" in verdict.message, (waiting["status"], verdict)
    second = [p for p in lws_pods(cluster, "pathways", "disagg") if p["metadata"]["labels"][GROUP_INDEX] == "1"]
    assert second and not [p["metadata"]["name"] for p in second if p["spec"].get("nodeName")], second
    assert len([p for p in lws_pods(cluster, "pathways", "disagg") if running(p)]) == 2 * 4 + 1


def _split_config(decode: int) -> dict[str, Any]:
    """A split prefill/decode endpoint (serve.split, the direct runtime) on four single-host v6e-8 slices."""
    return config_with(slices=[{"name": "serve", "tpu": "v6e-8", "count": 4}], workloads=[{
        "name": "chat", "mode": "serve", "sliceGroup": "serve",
        "serve": {"model": "Qwen/Qwen3-8B", "extraArgs": ["--block-size=256"],
                  "split": {"prefill": {"replicas": 1}, "decode": {"replicas": decode}}},
    }])


def _workloads_of(cluster, namespace: str, lws_name: str) -> list[dict[str, Any]]:
    return [w for w in cluster.get("workloads.kueue.x-k8s.io", "-n", namespace)["items"]
            if any(o.get("kind") == "LeaderWorkerSet" and o.get("name") == lws_name for o in w["metadata"].get("ownerReferences", []))]


def test_a_split_endpoint_runs_its_roles_on_slices_of_their_own_and_scaling_decode_leaves_prefill(cluster, stacks):
    # serve.split on the direct runtime, deployed by the real `pulumi up` with the real LWS controller and Kueue: each
    # engine is a one-pod LWS group admitted whole by Kueue on a single-host slice of its own; the proxies run on the
    # system pool, not queued; the endpoint's Service holds the proxies, each role's Service its own ready engines.
    stacks.use("split", _split_config(decode=2))
    ns = "pathways"
    prefill = wait_lws_running(cluster, ns, "chat-prefill", 1)
    decode = wait_lws_running(cluster, ns, "chat-decode", 2)
    proxies = wait_lws_running(cluster, ns, "chat-proxy", 2)
    labels = nodes(cluster)
    engines = prefill + decode
    pools = [labels[p["spec"]["nodeName"]][POOL] for p in engines]
    assert len(set(pools)) == 3, pools  # a slice of its own each
    assert {labels[p["spec"]["nodeName"]]["cloud.google.com/gke-tpu-topology"] for p in engines} == {"2x4"}
    assert {labels[p["spec"]["nodeName"]]["pathways/role"] for p in proxies} == {"system"}
    for p in engines:  # nothing of Pathways: vLLM alone on the host's chips
        (c,) = p["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in c.get("env") or []}
        assert c["name"] == "vllm" and env["JAX_PLATFORMS"] == "tpu,cpu", env
    # Kueue admitted each engine group at the serving priority; the proxy has no Workload of its own
    def admitted(name: str, count: int) -> Any:
        ws = _workloads_of(cluster, ns, name)
        return ws if len(ws) == count and all(is_true(w, "Admitted") for w in ws) else None

    for name, count in (("chat-prefill", 1), ("chat-decode", 2)):
        wls = cluster.wait_for(f"Kueue admits {name}'s {count} group(s)", functools.partial(admitted, name, count), timeout=180)
        assert {w["spec"].get("priority") for w in wls} == {2_000_000}
    assert _workloads_of(cluster, ns, "chat-proxy") == []
    # the Services: before the engines answer, nothing is ready; then each role's Service holds its own engines
    service_pods = {"chat-http": proxies, "chat-prefill-http": prefill, "chat-decode-http": decode}
    def endpoints(service: str, count: int, ready: bool) -> Any:
        found = ready_endpoints(cluster, ns, service)
        return found if len(found) == count and (all(found.values()) if ready else True) else None

    for service, ps in service_pods.items():
        found = cluster.wait_for(f"{service}'s endpoints listed", functools.partial(endpoints, service, len(ps), False))
        assert sorted(found) == sorted(p["metadata"]["name"] for p in ps) and not any(found.values()), (service, found)
    for p in [*engines, *proxies]:
        cluster.kubectl("annotate", "pod", "-n", ns, p["metadata"]["name"], f"{ENGINE_ANSWERS}=true")
    for service, ps in service_pods.items():
        cluster.wait_for(f"{service} ready", functools.partial(endpoints, service, len(ps), True), timeout=120)
    check_a_request_goes_through_the_proxy_to_prefill_then_decode(cluster, ns, prefill, decode, proxies)
    # scaling decode (a `pulumi up` of split.decode.replicas) adds a decode group; prefill and the proxies are untouched
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in [*prefill, *proxies]}
    stacks.update(_split_config(decode=3))
    wait_lws_running(cluster, ns, "chat-decode", 3)
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for name in ("chat-prefill", "chat-proxy") for p in lws_pods(cluster, ns, name)}
    assert after == before
    assert lws_replicas(cluster, ns, "chat-prefill") == 1 and lws_replicas(cluster, ns, "chat-decode") == 3


def check_a_request_goes_through_the_proxy_to_prefill_then_decode(cluster, ns: str, prefill: list[dict[str, Any]],
                                                                 decode: list[dict[str, Any]], proxies: list[dict[str, Any]]) -> None:
    # Stand-ins run the pods' own command lines in network namespaces holding their IPs (tests_e2e/pd_stand_ins.py):
    # `vllm serve` as a stand-in that speaks vLLM's HTTP API and plays TPUConnector's part, tpu-inference's proxy as
    # one that takes its flags and does what it does. The scenario plays the cluster's DNS and kube-proxy: each
    # role's Service name resolves to the ready pods its EndpointSlices hold.
    from tests_e2e.pd_stand_ins import PodStandIns, complete
    from tools.cluster.offline import ADDRESS

    ip = {p["metadata"]["name"]: p["status"]["podIP"] for p in [*prefill, *decode, *proxies]}
    with PodStandIns(cluster.workdir / "split-stand-ins", ADDRESS.split("/")[0]) as stand_ins:
        stand_ins.resolve({f"{svc}.{ns}.svc": [ip[n] for n, ready in ready_endpoints(cluster, ns, svc).items() if ready]
                           for svc in ("chat-prefill-http", "chat-decode-http")})
        for p in [*prefill, *decode, *proxies]:
            stand_ins.start(p)
        for p in [*prefill, *decode, *proxies]:
            stand_ins.wait_answering(p["status"]["podIP"])
        answers = [complete(ip[proxies[i % len(proxies)]["metadata"]["name"]],
                            {"model": "Qwen/Qwen3-8B", "prompt": f"request {i}", "max_tokens": 16}) for i in range(4)]
        seen = stand_ins.requests()
    (prefill_ip,) = [p["status"]["podIP"] for p in prefill]
    decode_ips = {p["status"]["podIP"] for p in decode}
    assert [r["role"] for r in seen] == ["prefill", "decode"] * 4, seen
    for first, then, answer in zip(seen[0::2], seen[1::2], answers, strict=True):
        # prefill: one token, not streamed, no parameters of its own; it answers where its cache is
        assert (first["max_tokens"], first["stream"], first["received"]) == (1, False, None), first
        assert first["answered"]["remote_host"] == prefill_ip and first["answered"]["remote_port"] == 9100, first
        # decode: the original request with what prefill answered, and prefill's transfer port and side channel reached
        assert then["max_tokens"] == 16 and then["received"] == first["answered"], then
        assert then["reached"] == {"transfer": True, "sideChannel": True} and then["pod"] in decode_ips, then
        assert answer["choices"][0]["text"] == f" answered by decode at {then['pod']}", answer
    # both proxies answered, and the decode Service's two engines served (each proxy's connections spread over them)
    assert {r["pod"] for r in seen[1::2]} == decode_ips
