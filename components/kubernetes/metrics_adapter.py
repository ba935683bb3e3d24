"""CustomMetricsAdapter: the Custom Metrics Stackdriver Adapter, which serves Managed Service for Prometheus
metrics to the HorizontalPodAutoscalers of autoscaled serve workloads (custom.metrics.k8s.io), in a namespace
of its own. Its project role (roles/monitoring.viewer for its Kubernetes service account, through Workload
Identity Federation for GKE) is granted by the bootstrap, which grants the stacks' project roles
(bootstrap/program.py): the deploy identity grants none.

Its serving CA and certificate are derived from a token Secret the cluster fills (components/manifests/serving_tls.py
says why): Pulumi keeps the token in its state, so every later preview and `up` derives the same bytes and changes
nothing, while a first preview shows them as unknown (the token does not exist yet), which an update plan accepts."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Optional

import pulumi
import pulumi_kubernetes as k8s

from components.dependencies import Dependency, all_of
from components.kubernetes.kubernetes_object import KubernetesObject
from components.manifests import serving_tls
from components.manifests.guardrails import psa_labels
from components.model.workloads import metrics_adapter as ma


@dataclass(frozen=True)
class CustomMetricsAdapterArgs:
    objects: list[dict[str, Any]]
    """components.manifests.metrics_adapter.objects (pure)."""
    seed: list[dict[str, Any]]
    """metrics_adapter.seed_objects: the seed's ServiceAccount and token Secret."""
    derive: Callable[[str, str], serving_tls.ServingTLS]
    """metrics_adapter.serving_tls_of: the CA and certificate from the seed's token and creation time."""
    serving_secret: Callable[[Any], dict[str, Any]]
    """metrics_adapter.serving_secret with the generation: the Secret for ServingTLS.secret_data()."""
    api_services: Callable[[Any], list[dict[str, Any]]]
    """metrics_adapter.api_services: the APIServices for a caBundle."""
    now: dt.datetime
    """The plan's clock (StackConfig.planned_at): what the certificate's end is judged against."""
    after: tuple[Dependency, ...] = ()
    """The stack's namespaces and controller charts. While an aggregated API is registered and not served, the
    namespace controller cannot finish deleting any namespace (NamespaceDeletionDiscoveryFailure, seen in the
    real-engine tier): the APIServices are made after, and so deleted before, every one of them."""


class CustomMetricsAdapter(pulumi.ComponentResource):
    ready: list[Dependency]

    def __init__(self, name: str, args: CustomMetricsAdapterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:k8s:CustomMetricsAdapter", name, None, opts)
        ns = k8s.core.v1.Namespace(
            f"{name}-namespace", metadata=k8s.meta.v1.ObjectMetaArgs(name=ma.NAMESPACE, labels=psa_labels(ma.POD_SECURITY)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])
        seed_account, seed_secret = args.seed
        account = KubernetesObject(f"{name}-serviceaccount-{seed_account['metadata']['name']}", seed_account, opts=in_ns)
        # typed, for its data and creation time: the provider waits for the token controller to fill it
        # (pulumi-kubernetes #2048), as for the fleet's token
        seed = k8s.core.v1.Secret(
            f"{name}-seed", metadata=k8s.meta.v1.ObjectMetaArgs(**seed_secret["metadata"]), type=seed_secret["type"],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, account]))
        tls = pulumi.Output.all(seed.data, seed.metadata).apply(
            lambda a: args.derive((a[0] or {})["token"], a[1]["creation_timestamp"]))
        tls.apply(lambda t: _warn_if_ending(t, args.now))
        serving = KubernetesObject(f"{name}-serving-secret", args.serving_secret(pulumi.Output.secret(tls.apply(lambda t: t.secret_data()))),
                                   opts=pulumi.ResourceOptions(parent=self, depends_on=[ns], additional_secret_outputs=["data"]))
        made: list[pulumi.Resource] = [account, seed, serving]
        server: list[pulumi.Resource] = []
        for obj in args.objects:
            meta = obj["metadata"]
            # the Deployment mounts the serving Secret: made after it, and after the controller charts: Kueue's
            # webhooks intercept Deployments (mdeployment.kb.io, failurePolicy Fail) and refuse them until it serves
            made.append(KubernetesObject(f"{name}-{obj['kind'].lower()}-{meta['name']}", obj, opts=pulumi.ResourceOptions(
                parent=self, depends_on=all_of([ns, serving, *args.after]) if obj["kind"] == "Deployment" else [ns])))
            if obj["kind"] in ("Deployment", "Service"):
                server.append(made[-1])
        # the CA's certificate is public: the caBundle shows in previews, the key stays secret in the Secret
        ca_bundle = pulumi.Output.unsecret(tls.apply(lambda t: base64.b64encode(t.ca_pem.encode()).decode()))
        for obj in args.api_services(ca_bundle):
            # an APIService after its server (the Service and Deployment) and everything in `after`: a destroy
            # removes it first, before its server stops answering and before any namespace is deleted
            made.append(KubernetesObject(f"{name}-apiservice-{obj['metadata']['name']}", obj, opts=pulumi.ResourceOptions(
                parent=self, depends_on=all_of([ns, *server, *args.after]))))
        self.ready = [ns, *made]
        self.register_outputs({})


def _warn_if_ending(tls: serving_tls.ServingTLS, now: dt.datetime) -> None:
    """Under `pulumi preview` and `up`: the certificate's end within CERTIFICATE_WARN_DAYS, and how to rotate."""
    ends = serving_tls.expires(tls.cert_pem)
    left = ends - now
    if left < dt.timedelta(days=ma.CERTIFICATE_WARN_DAYS):
        pulumi.log.warn(
            f"the metrics adapter's serving certificate {'ended' if left.total_seconds() <= 0 else 'ends'} on "
            f"{ends:%Y-%m-%d}: the custom metrics API is unavailable once it has, and serve autoscalers hold their count. "
            "Raise kubernetes.metricsAdapterCertificateGeneration and run `pulumi up` to rotate it (docs/security.md)")
