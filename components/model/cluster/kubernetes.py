"""Kubernetes settings: the workload namespace and the JobSet, Kueue and LeaderWorkerSet charts."""

from __future__ import annotations

import re
from typing import Optional

from pydantic import Field, field_validator

from components.model.cluster import controller_versions
from components.model.common import _dns_label, _Model
from components.model.workloads import inference_gateway


def _chart_version(v: str, minimum: str, why: str, controller: str | None = None) -> str:
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", v):
        raise ValueError(f"{v!r} is not a chart version (e.g. {minimum})")
    if tuple(map(int, v.split("."))) < tuple(map(int, minimum.split("."))):
        raise ValueError(f"{v} is older than {minimum}, the first release with {why}; use {minimum} or later")
    refused = controller_versions.refusal(controller, v) if controller else None
    if refused:
        raise ValueError(refused)
    return v


# Namespaces Kubernetes, GKE and the controllers own.
RESERVED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease", "jobset-system", "kueue-system", "lws-system"})
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")

# The oldest releases that serve what the stack writes: JobSet's spec.coordinator came in v0.6.0
# (kubernetes-sigs/jobset #618, release 0.6); Kueue's v1beta2 API (cohortName, flavorFungibility
# MayStopSearch) in v0.15.0 (apis/kueue/v1beta2 first appears at that tag).
MIN_JOBSET = "0.6.0"
MIN_KUEUE = "0.15.0"
# LeaderWorkerSet moved its subgroup annotation from leaderworkerset.gke.io/ to leaderworkerset.sigs.k8s.io/
# in v0.6.0 (PLATFORM-FACTS §7); the stack writes the new keys.
MIN_LWS = "0.6.0"
# The InferencePool went GA (inference.networking.k8s.io/v1) in GAIE v1.0.0.
MIN_INFERENCE_POOL = "1.0.0"


def _chart_source(v: str) -> str:
    """An OCI chart reference, or a local chart directory (air-gapped clusters: a copy of the chart)."""
    if v.startswith("oci://"):
        if not re.fullmatch(r"oci://[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+", v):
            raise ValueError(f"{v[:80]!r} is not an OCI chart reference (oci://<registry>/<path>)")
        return v
    if len(v) > 1024 or not v.isprintable() or "://" in v:
        raise ValueError(f"{v[:80]!r} is neither an oci:// chart reference nor a local chart directory")
    return v


class KueueConfig(_Model):
    enabled: bool = Field(default=True, description=(
        "Kueue queues the JobSets: admitted all-or-nothing when their slices are free, by priority."
    ))
    version: str = Field(default=controller_versions.default("kueue"), description=(
        "Kueue Helm chart version: one of the releases this product has been tested with (docs/operating.md, "
        "Controller versions)."))
    chart: str = Field(default="oci://registry.k8s.io/kueue/charts/kueue", description=(
        "Where the Kueue chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))

    cluster_queue: Optional[str] = Field(default=None, description=(
        "Share this existing ClusterQueue (an xpk cluster's cluster-queue) instead of making the stack's own: the "
        "stack's LocalQueues point at it, and it makes no ResourceFlavor or ClusterQueue, so one queue admits all work "
        "onto the cluster's slices. With cluster.existing and installControllers: false. docs/from-xpk.md."))

    @field_validator("chart")
    @classmethod
    def _chart(cls, v: str) -> str:
        return _chart_source(v)

    @field_validator("cluster_queue")
    @classmethod
    def _cluster_queue(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 253)

    @field_validator("version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _chart_version(v, MIN_KUEUE, "the kueue.x-k8s.io/v1beta2 API the stack writes", "kueue")


# The namespaces the node guard leaves to the platform, by exact name (security #58.7: a prefix such as gke- would
# exempt any namespace someone names so). Kubernetes' own three, and those GKE's managed features run their node
# agents in, each from the feature's GKE documentation: Managed Service for Prometheus (gmp-system, gmp-public;
# gke-gmp-system on older clusters), kube-state-metrics (gke-managed-cim), Dataplane V2 observability
# (gke-managed-dpv2-observability), the Filestore, Parallelstore and Managed Lustre CSI drivers
# (gke-managed-filestorecsi, gke-managed-parallelstorecsi, gke-managed-lustrecsi), multi-tier checkpointing
# (gke-managed-checkpointing, whose driver's principal the bootstrap names), volume populators
# (gke-managed-volumepopulator) and GKE's own system components (gke-managed-system). One table to correct: a GKE
# agent in a namespace not listed here is refused on the Pathways nodes (its pods say which policy), and
# kubernetes.guards.exemptNamespaces (acknowledged) lets it in until this table has it.
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease")
GKE_NAMESPACES = (
    "gmp-system", "gmp-public", "gke-gmp-system", "gke-managed-system", "gke-managed-cim", "gke-managed-dpv2-observability",
    "gke-managed-filestorecsi", "gke-managed-parallelstorecsi", "gke-managed-lustrecsi", "gke-managed-checkpointing",
    "gke-managed-volumepopulator",
)
PLATFORM_NAMESPACES = (*SYSTEM_NAMESPACES, *GKE_NAMESPACES)


class GuardsConfig(_Model):
    enabled: bool = Field(default=True, description=(
        "The admission guards (ValidatingAdmissionPolicies pathways-nodes-reserved and pathways-workload-templates) "
        "that keep the Pathways head and TPU nodes, and the host network, to the stack's workloads. Off: nothing keeps "
        "other pods off those nodes or out of their service account; the plan warns. Off only on a cluster made "
        "elsewhere (cluster.existing) and never in a protected stack. docs/security.md."))
    exempt_namespaces: list[str] = Field(default_factory=list, max_length=20, description=(
        "Namespaces whose pods may run on the Pathways nodes or the host network although the stack does not own them "
        "(on an xpk cluster: default, where xpk runs its workloads); the guards still judge every other namespace, "
        "and the plan names these. Needs acknowledgeExemptions: true. docs/from-xpk.md."))
    acknowledge_exemptions: bool = Field(default=False, description=(
        "true: you accept that pods in exemptNamespaces may run on the Pathways nodes and the host network, and so act as "
        "the Pathways node service account (which writes the stack's buckets). Required with exemptNamespaces; "
        "docs/security.md."))

    @field_validator("exempt_namespaces")
    @classmethod
    def _namespaces(cls, v: list[str]) -> list[str]:
        for ns in v:
            _dns_label(ns, 63)
            if ns in PLATFORM_NAMESPACES:
                raise ValueError(f"{ns!r} is a system namespace, which the guards exempt already; remove it")
        if len(set(v)) != len(v):
            raise ValueError("names a namespace twice")
        return v


class KubernetesConfig(_Model):
    namespace: str = Field(default="pathways", description="Namespace of the Pathways JobSets.")
    jobset_version: str = Field(default=controller_versions.default("jobset"), description=(
        "JobSet Helm chart version (controller and CRD): one of the releases this product has been tested with "
        "(docs/operating.md, Controller versions)."))
    jobset_chart: str = Field(default="oci://registry.k8s.io/jobset/charts/jobset", description=(
        "Where the JobSet chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))
    install_controllers: bool = Field(default=True, description=(
        "Install the JobSet (and Kueue) controllers. Off: the cluster runs them already (an existing cluster's own "
        "installs); the stack then only checks nothing of its own would clash."
    ))
    kueue: KueueConfig = Field(default_factory=KueueConfig)
    guards: GuardsConfig = Field(default_factory=GuardsConfig)
    # LWS v0.9.0: the release Kueue v0.19.2 builds against (its go.mod), newer than Google's pins (v0.4.0 in the
    # Pathways inference guide, v0.6.1 in the GKE tutorial), which the stack does not need: the leaderworkerset.
    # sigs.k8s.io annotations came in v0.6.0, and v0.9.0's webhook checks what the offline tools check.
    lws_version: str = Field(default=controller_versions.default("lws"), description=(
        "LeaderWorkerSet Helm chart version (controller and CRD), installed when a workload has mode: serve."
    ))
    lws_chart: str = Field(default="oci://registry.k8s.io/lws/charts/lws", description=(
        "Where the LeaderWorkerSet chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))

    install_metrics_adapter: bool = Field(default=True, description=(
        "Install the Custom Metrics Stackdriver Adapter when a serve workload autoscales (its HorizontalPodAutoscaler "
        "reads the Managed Prometheus metric through it). Off: the cluster runs one already (Google's autoscaling "
        "guides install it by hand)."
    ))
    metrics_adapter_certificate_generation: int = Field(default=1, ge=1, le=1_000_000, description=(
        "Raise it to rotate the metrics adapter's serving CA and certificate: `pulumi up` makes a new seed Secret, "
        "derives a new CA and certificate from it, rolls the adapter onto them and updates its APIServices' caBundle. "
        "`pulumi preview` warns 90 days before the certificate (valid 5 years) ends. docs/security.md."
    ))
    inference_pool_version: str = Field(default=inference_gateway.CHART_VERSION, description=(
        "Gateway API Inference Extension inferencepool chart version (InferencePool and its endpoint picker), "
        "installed per serve workload with serve.gateway.enabled."
    ))
    inference_pool_chart: str = Field(default=inference_gateway.CHART, description=(
        "Where the inferencepool chart comes from: the OCI reference, or a local chart directory (air-gapped clusters)."
    ))

    @field_validator("jobset_chart", "lws_chart", "inference_pool_chart")
    @classmethod
    def _chart(cls, v: str) -> str:
        return _chart_source(v)

    @field_validator("lws_version")
    @classmethod
    def _lws_version(cls, v: str) -> str:
        return _chart_version(v, MIN_LWS, "the leaderworkerset.sigs.k8s.io annotations the stack writes", "lws")

    @field_validator("inference_pool_version")
    @classmethod
    def _inference_pool_version(cls, v: str) -> str:
        return _chart_version(v, MIN_INFERENCE_POOL, "the inference.networking.k8s.io/v1 InferencePool the stack selects")

    @field_validator("namespace")
    @classmethod
    def _ns(cls, v: str) -> str:
        _dns_label(v, 63)
        # The workload namespace is made privileged (hostNetwork): never one that holds other things.
        if v in RESERVED_NAMESPACES or v.startswith(RESERVED_NAMESPACE_PREFIXES):
            raise ValueError(f"{v!r} is a system or controller namespace; the workload namespace is made privileged "
                             "for hostNetwork pods, so give the stack its own (e.g. pathways)")
        return v

    @field_validator("jobset_version")
    @classmethod
    def _version(cls, v: str) -> str:
        return _chart_version(v, MIN_JOBSET, "the spec.coordinator field the stack writes", "jobset")
