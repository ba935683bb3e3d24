"""The Custom Metrics Stackdriver Adapter, through which a HorizontalPodAutoscaler reads a Managed Service for
Prometheus metric (serve.autoscale), as the stack pins it (pure Python).

Source: GoogleCloudPlatform/k8s-stackdriver, custom-metrics-stackdriver-adapter/deploy/production/
adapter_new_resource_model.yaml (read at commit 673c7dd, 2026-08-18; the repository publishes no Go module the
proxy serves and no tagged release of the manifest, so the stack writes its own objects from it rather than
fetching it): the image, the adapter's flags (the new resource model, the fallback for container metrics), its
requests and limits (250m, 200Mi), its HTTPS readiness probe on /healthz:443, the APIServices
v1beta1/v1beta2.custom.metrics.k8s.io and v1beta1.external.metrics.k8s.io served by its Service, and the RBAC:
system:auth-delegator, extension-apiserver-authentication-reader in kube-system, read on pods and nodes, and the
HPA controller's read on external metrics. Google's autoscaling guides apply that file as it is
(GKE docs, "Configure autoscaling for LLM workloads on TPUs"; Managed Service for Prometheus, "Horizontal Pod
Autoscaling") and grant the adapter's Kubernetes service account roles/monitoring.viewer on the project through
Workload Identity Federation for GKE.
"""

from __future__ import annotations

IMAGE = "gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0"
NAMESPACE = "custom-metrics"
SERVICE_ACCOUNT = "custom-metrics-stackdriver-adapter"
NAME = "custom-metrics-stackdriver-adapter"
FLAGS = ("--use-new-resource-model=true", "--fallback-for-container-metrics=true")
# Where the adapter reads the serving certificate the stack gives it, instead of the self-signed one upstream's
# adapter makes at each start (which no APIService caBundle could name, hence upstream's insecureSkipTLSVerify): the
# generic API server's SecureServingOptions flags, which the adapter's basecmd.AdapterBase registers
# (kubernetes-sigs/custom-metrics-apiserver pkg/cmd/options; k8s.io/apiserver pkg/server/options/serving.go).
# Where the adapter listens: upstream's 443 needs CAP_NET_BIND_SERVICE (a port below 1024), which the stack's
# container drops with every other capability; 8443 needs none (the generic API server's --secure-port). The
# Service keeps 443, which the APIServices name, and sends it to 8443.
SERVING_PORT = 8443
TLS_DIR = "/var/run/serving-cert"
TLS_FLAGS = (f"--secure-port={SERVING_PORT}", f"--tls-cert-file={TLS_DIR}/tls.crt", f"--tls-private-key-file={TLS_DIR}/tls.key")
# The name the aggregator checks the adapter's certificate against: kube-aggregator dials the APIService's Service
# and verifies its certificate for <service>.<namespace>.svc (k8s.io/kube-aggregator pkg/apiserver/
# handler_proxy.go, ServerName of the proxy's TLS config) against spec.caBundle.
SERVING_DNS_NAMES = (f"{NAME}.{NAMESPACE}.svc", f"{NAME}.{NAMESPACE}.svc.cluster.local")
# The certificate's lifetime from its seed's creation; `pulumi preview` warns this long before it ends, naming
# kubernetes.metricsAdapterCertificateGeneration, whose raise makes a new seed, CA and certificate.
CERTIFICATE_YEARS = 5
CERTIFICATE_WARN_DAYS = 90
# A ServiceAccount bound to no role: its token Secret (filled by the cluster's token controller, which signs it with
# the cluster's key) is the stack-held secret the CA and the serving key are derived from (serving_tls.derive).
SEED_SERVICE_ACCOUNT = "custom-metrics-serving-seed"


def seed_secret_name(generation: int) -> str:
    return f"{SEED_SERVICE_ACCOUNT}-{generation}"


def serving_secret_name(generation: int) -> str:
    return f"{NAME}-serving-{generation}"
CPU = "250m"
MEMORY = "200Mi"
PORT = 443
# (group, version, versionPriority) of the APIs the adapter serves
API_SERVICES = (
    ("custom.metrics.k8s.io", "v1beta1", 100),
    ("custom.metrics.k8s.io", "v1beta2", 200),
    ("external.metrics.k8s.io", "v1beta1", 100),
)
GROUP_PRIORITY_MINIMUM = 100
# Its project role: read Cloud Monitoring (the metrics Managed Prometheus writes there).
MONITORING_ROLE = "roles/monitoring.viewer"
# Pod Security of its namespace: its manifest sets no securityContext (the image's user is not documented), so
# `restricted` (runAsNonRoot) could keep it from starting; `baseline` admits it with the stack's additions.
POD_SECURITY = "baseline"


def workload_identity_member(project: str, project_number: str) -> str:
    """The adapter's Kubernetes service account as an IAM principal (GKE docs, "Workload Identity Federation for
    GKE": principal://iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<project>.svc.id.goog/
    subject/ns/<namespace>/sa/<name>)."""
    return (f"principal://iam.googleapis.com/projects/{project_number}/locations/global/workloadIdentityPools/"
            f"{project}.svc.id.goog/subject/ns/{NAMESPACE}/sa/{SERVICE_ACCOUNT}")
