module pathways-gke/tools/engines/gke-crds

// Wrapper, never built: pins the modules whose CRDs GKE (not the stack) installs, so that the offline checks and
// the real-engine tier read the exact schemas (tools/engines/crds.py copies them byte for byte):
// - Managed Service for Prometheus (GKE's managed collection): PodMonitoring, from
//   github.com/GoogleCloudPlatform/prometheus-engine v0.17.2 charts/operator/crds;
// - the Gateway API Inference Extension: InferencePool (inference.networking.k8s.io/v1), from
//   sigs.k8s.io/gateway-api-inference-extension v1.5.0 config/crd/bases, and its inferencepool chart (the stack
//   installs it per gateway-fronted serve workload; crds.py copies it to build/charts as the release packages it);
// - the Gateway API: Gateway, HTTPRoute and the rest of the standard channel, from sigs.k8s.io/gateway-api v1.4.1
//   config/crd/standard (GKE installs them with the cluster's Gateway API enabled).
// - the Cluster Autoscaler's ProvisioningRequest (autoscaling.x-k8s.io/v1), from
//   k8s.io/autoscaler/cluster-autoscaler/apis config/crd, at the version Kueue v0.19.2 builds against (GKE installs it
//   from 1.28.3-gke.1098000 for queued provisioning; Kueue's provisioning admission check starts only where it is).
// GKE's own Gateway policy CRDs (networking.gke.io HealthCheckPolicy, GCPBackendPolicy) come from no public module:
// networking.gke.io_*.yaml beside this file are the project's stand-ins, their schemas from GKE's docs.

go 1.26.0

require (
	github.com/GoogleCloudPlatform/prometheus-engine v0.17.2
	k8s.io/autoscaler/cluster-autoscaler/apis v0.0.0-20240830133931-adfbe7e45277
	sigs.k8s.io/gateway-api v1.4.1
	sigs.k8s.io/gateway-api-inference-extension v1.5.0
)
