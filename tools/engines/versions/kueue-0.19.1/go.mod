module pathways-gke/tools/engines/versions/kueue-0.19.1

// Wrapper, never built: pins kueue v0.19.1, a release a stack may choose besides the one the real-engine tier builds
// (tools/engines/control-plane), so that the offline plan expands its chart and the fast tier checks the stack's
// objects against its CRDs (tools/engines/crds.py copies them to build/crds/kueue@0.19.1 and build/charts/kueue@0.19.1;
// components/model/cluster/controller_versions.py is the table). One wrapper a release: Go's minimal version
// selection keeps one version of a module per build list.

go 1.26.0

require sigs.k8s.io/kueue v0.19.1
