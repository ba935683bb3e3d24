module pathways-gke/tools/engines/gke-crds

// Wrapper, never built: pins the modules whose CRDs GKE (not the stack) installs, so that the offline checks and
// the real-engine tier read the exact schemas (tools/engines/crds.py copies them byte for byte):
// - Managed Service for Prometheus (GKE's managed collection): PodMonitoring, from
//   github.com/GoogleCloudPlatform/prometheus-engine v0.17.2 charts/operator/crds;
// - the Gateway API Inference Extension: InferencePool (inference.networking.k8s.io/v1), from
//   sigs.k8s.io/gateway-api-inference-extension v1.5.0 config/crd/bases.

go 1.26.0

require (
	github.com/GoogleCloudPlatform/prometheus-engine v0.17.2
	sigs.k8s.io/gateway-api-inference-extension v1.5.0
)
