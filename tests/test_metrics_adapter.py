"""The Custom Metrics Stackdriver Adapter an autoscaled serve workload reads its metric through
(components/model/workloads/metrics_adapter.py gives the upstream manifest it is written from)."""

from __future__ import annotations

import base64
import datetime as dt
import socket
import ssl
import threading

import pytest

from components.kubernetes import metrics_adapter as adapter_component
from components.manifests import metrics_adapter as adapter_manifest
from components.manifests import serving_tls
from components.model.config import load, resolve
from components.model.cost.summary import notices
from components.model.workloads import metrics_adapter as ma
from infra.offline.charts import chart_objects
from infra.offline.engine import _secret_digest, stand_in_token
from infra.offline.render import check_builtins, describe, manifests
from tests.conftest import every_stack, example_plan, plan_of, stack_plan
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
    # 443 for the aggregator, sent to 8443: with every capability dropped the adapter cannot bind a port below 1024
    assert objs[("Service", ma.NAME)]["spec"]["ports"] == [{"port": 443, "protocol": "TCP", "targetPort": 8443}]
    pod = objs[("Deployment", ma.NAME)]["spec"]["template"]["spec"]
    (adapter,) = pod["containers"]
    assert adapter["image"] == "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
    assert adapter["imagePullPolicy"] == "IfNotPresent" and adapter["command"][:len(ma.FLAGS) + 1] == ["/adapter", *ma.FLAGS]
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


def test_the_adapter_is_created_once_kueue_serves_its_webhooks():
    # the Kueue chart's manager config enables the deployment integration, whose webhook (mdeployment.kb.io,
    # failurePolicy Fail) refuses every Deployment outside kube-system until Kueue serves it: a first `pulumi up`
    # that made the adapter beside the chart failed ("no endpoints available for service kueue-webhook-service")
    plan = example_plan("serving")
    (deployment,) = [r for r in plan.resources if r.urn.endswith(f"Deployment::metrics-adapter-deployment-{ma.NAME}")]
    (kueue,) = [r.urn for r in plan.resources if r.urn.endswith("pathways:k8s:Kueue$kubernetes:helm.sh/v4:Chart::kueue")]
    assert kueue in deployment.dependencies, deployment.dependencies


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


SERVICE_NAME = f"{ma.NAME}.{ma.NAMESPACE}.svc"  # what kube-aggregator checks the adapter's certificate for
SECRET = "kubernetes:core/v1:Secret"


def handshake(tls: serving_tls.ServingTLS, trusted_ca_pem: str, server_name: str = SERVICE_NAME) -> None:
    """A TLS handshake between a server holding `tls`'s certificate and key and a client that trusts only
    `trusted_ca_pem` and checks the name `server_name`, as the aggregator does (raises where it would refuse)."""
    import tempfile

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.NamedTemporaryFile("w", suffix=".pem") as chain:
        chain.write(tls.cert_pem + tls.key_pem)
        chain.flush()
        server_ctx.load_cert_chain(chain.name)
    client_ctx = ssl.create_default_context(cadata=trusted_ca_pem)
    a, b = socket.socketpair()
    failure: list[BaseException] = []

    def serve() -> None:
        try:
            with server_ctx.wrap_socket(a, server_side=True) as s:
                s.recv(1)
        except (ssl.SSLError, OSError) as e:
            failure.append(e)

    t = threading.Thread(target=serve)
    t.start()
    try:
        with client_ctx.wrap_socket(b, server_hostname=server_name) as c:
            c.sendall(b"x")
    finally:
        b.close()
        t.join(10)


def serving_stack_tls(plan, generation: int = 1) -> serving_tls.ServingTLS:
    """What the stack derives from its seed Secret as the offline engine's stand-in token controller fills it."""
    return adapter_manifest.serving_tls_of(*stand_in_token(ma.NAMESPACE, ma.seed_secret_name(generation)))


def test_the_aggregator_verifies_the_adapter_against_a_ca_the_stack_holds():
    plan = example_plan("serving")
    tls = serving_stack_tls(plan)
    apis = plan.by_type("kubernetes:apiregistration.k8s.io/v1:APIService")
    ours = [a for a in apis if a.input("spec.service.name") == ma.NAME]
    assert len(ours) == 3
    for api in ours:
        # verified against the stack's CA: no insecureSkipTLSVerify (upstream's manifest sets it)
        assert "insecureSkipTLSVerify" not in api.input("spec") and api.input("spec.caBundle") == base64.b64encode(tls.ca_pem.encode()).decode()
    # the adapter serves the certificate signed by that CA, from a Secret it mounts read-only
    (serving,) = [r for r in plan.by_type(SECRET) if r.input("metadata.name") == ma.serving_secret_name(1)]
    assert serving.input("type") == "kubernetes.io/tls" and serving.input("metadata.namespace") == ma.NAMESPACE
    assert serving.secret_digests == {"data": _secret_digest(tls.secret_data())}, "the Secret holds what the caBundle was derived with"
    deployment = plan.one("kubernetes:apps/v1:Deployment", f"metrics-adapter-deployment-{ma.NAME}")
    pod = deployment.input("spec.template.spec")
    (container,) = pod["containers"]
    assert container["command"][-3:] == ["--secure-port=8443", f"--tls-cert-file={ma.TLS_DIR}/tls.crt",
                                         f"--tls-private-key-file={ma.TLS_DIR}/tls.key"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]} and container["ports"][0]["containerPort"] == 8443
    assert container["readinessProbe"]["httpGet"]["port"] == 8443
    assert container["volumeMounts"] == [{"name": "serving-cert", "mountPath": ma.TLS_DIR, "readOnly": True}]
    (volume,) = pod["volumes"]
    assert volume["secret"]["secretName"] == ma.serving_secret_name(1) and {i["key"] for i in volume["secret"]["items"]} == {"tls.crt", "tls.key"}
    assert {u for u in deployment.dependencies} >= {serving.urn}
    # and the handshake the aggregator makes succeeds: the certificate names the Service, chains to the caBundle
    handshake(tls, base64.b64decode(ours[0].input("spec.caBundle")).decode())
    for name in ma.SERVING_DNS_NAMES:
        handshake(tls, tls.ca_pem, name)


def test_a_certificate_for_another_name_or_from_another_ca_is_refused():
    tls = serving_stack_tls(None)
    with pytest.raises(ssl.SSLCertVerificationError, match="match"):
        handshake(tls, tls.ca_pem, f"other.{ma.NAMESPACE}.svc")
    other = adapter_manifest.serving_tls_of(*stand_in_token(ma.NAMESPACE, "another-seed"))
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        handshake(tls, other.ca_pem)


def test_the_seed_is_a_token_secret_of_an_account_with_no_role_and_no_mounted_token():
    plan = example_plan("serving")
    (seed,) = [r for r in plan.by_type(SECRET) if r.input("type") == "kubernetes.io/service-account-token"
               and r.input("metadata.namespace") == ma.NAMESPACE]
    assert seed.input("metadata.name") == ma.seed_secret_name(1)
    assert seed.input("metadata.annotations") == {"kubernetes.io/service-account.name": ma.SEED_SERVICE_ACCOUNT}
    (account,) = [r for r in plan.by_type("kubernetes:core/v1:ServiceAccount") if r.input("metadata.name") == ma.SEED_SERVICE_ACCOUNT]
    assert account.input("automountServiceAccountToken") is False
    subjects = [s for t in ("ClusterRoleBinding", "RoleBinding") for b in plan.by_type(f"kubernetes:rbac.authorization.k8s.io/v1:{t}")
                for s in b.input("subjects") or []]
    assert subjects and not [s for s in subjects if s.get("name") == ma.SEED_SERVICE_ACCOUNT]


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_keys():
    token, created = stand_in_token(ma.NAMESPACE, ma.seed_secret_name(1))
    first, again = adapter_manifest.serving_tls_of(token, created), adapter_manifest.serving_tls_of(token, created)
    assert first == again  # every preview and `up` computes the same Secret and caBundle: no change, no plan violation
    other = adapter_manifest.serving_tls_of(*stand_in_token(ma.NAMESPACE, ma.seed_secret_name(2)))
    assert len({first.ca_pem, other.ca_pem}) == 2 and len({first.key_pem, other.key_pem}) == 2
    # valid from the seed's creation for CERTIFICATE_YEARS
    issued = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    assert serving_tls.expires(first.cert_pem) == serving_tls.add_years(issued, ma.CERTIFICATE_YEARS)
    with pytest.raises(ValueError, match="too short"):
        serving_tls.derive(b"short", issued, ["a"], years=1, ca_name="ca")


def test_raising_the_generation_rotates_seed_secret_and_mount():
    config = vllm_config(slices=FOUR, weights=WEIGHTS, autoscale=AUTOSCALE)
    before, after = plan_of(config), plan_of(config | {"pathways:kubernetes": {"metricsAdapterCertificateGeneration": 2}})
    names = lambda plan: sorted(r.input("metadata.name") for r in plan.by_type(SECRET) if r.input("metadata.namespace") == ma.NAMESPACE)
    assert names(before) == [ma.seed_secret_name(1), ma.serving_secret_name(1)]
    assert names(after) == [ma.seed_secret_name(2), ma.serving_secret_name(2)]
    volume = after.one("kubernetes:apps/v1:Deployment", f"metrics-adapter-deployment-{ma.NAME}").input("spec.template.spec.volumes")[0]
    assert volume["secret"]["secretName"] == ma.serving_secret_name(2)  # a new pod template: the adapter rolls onto it
    bundles = [{a.input("spec.caBundle") for a in p.by_type("kubernetes:apiregistration.k8s.io/v1:APIService")} for p in (before, after)]
    assert len(bundles[0]) == len(bundles[1]) == 1 and bundles[0] != bundles[1]  # a new seed, a new CA


@pytest.mark.parametrize("days_left, warned", [(ma.CERTIFICATE_WARN_DAYS - 1, True), (-3, True), (ma.CERTIFICATE_WARN_DAYS + 1, False)])
def test_a_preview_warns_before_the_certificate_ends(monkeypatch, days_left, warned):
    said: list[str] = []
    monkeypatch.setattr(adapter_component.pulumi.log, "warn", lambda msg, *a, **k: said.append(msg))
    now = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)  # the plan's clock, not the wall's
    ends = now + dt.timedelta(days=days_left)
    issued = serving_tls.add_years(ends, -ma.CERTIFICATE_YEARS)
    adapter_component._warn_if_ending(serving_tls.derive(b"s" * 32, issued, ma.SERVING_DNS_NAMES, years=ma.CERTIFICATE_YEARS, ca_name="ca"), now)
    assert bool(said) == warned
    if warned:
        assert "kubernetes.metricsAdapterCertificateGeneration" in said[0] and ("ended" if days_left < 0 else "ends") in said[0]


# APIServices that charts the stack installs register with insecureSkipTLSVerify, as their upstream ships them:
# Kueue's visibility API serves a certificate its server makes at start (docs/security.md, "Review round 5", 12).
CHART_SKIPS_VERIFY = {"v1beta1.visibility.kueue.x-k8s.io", "v1beta2.visibility.kueue.x-k8s.io"}


@every_stack()
def test_every_aggregated_api_the_stack_writes_verifies_its_server(stack):
    plan = stack_plan(stack)
    for api in plan.by_type("kubernetes:apiregistration.k8s.io/v1:APIService"):
        assert not api.input("spec.insecureSkipTLSVerify") and api.input("spec.caBundle"), api.input("metadata.name")
    # the charts' own, rendered as the cluster will (chart_objects), skip verification only where upstream's server
    # makes its own certificate
    for c in chart_objects(plan):
        if c.obj["kind"] == "APIService" and c.obj["spec"].get("insecureSkipTLSVerify"):
            assert c.obj["metadata"]["name"] in CHART_SKIPS_VERIFY, describe(c.obj, c.release)
