module pathways-gke/tools/engines/versions/jobset-0.11.0

// Wrapper, never built: pins jobset v0.11.0, a release a stack may choose besides the one the real-engine tier builds
// (tools/engines/control-plane), so that the offline plan expands its chart and the fast tier checks the stack's
// objects against its CRDs (tools/engines/crds.py copies them to build/crds/jobset@0.11.0 and build/charts/jobset@0.11.0;
// components/model/cluster/controller_versions.py is the table). One wrapper a release: Go's minimal version
// selection keeps one version of a module per build list.

go 1.26.0

require sigs.k8s.io/jobset v0.11.0
