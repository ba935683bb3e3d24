module pathways-gke/tools/engines/versions/lws-0.8.0

// Wrapper, never built: pins lws v0.8.0, a release a stack may choose besides the one the real-engine tier builds
// (tools/engines/control-plane), so that the offline plan expands its chart and the fast tier checks the stack's
// objects against its CRDs (tools/engines/crds.py copies them to build/crds/lws@0.8.0 and build/charts/lws@0.8.0;
// components/model/cluster/controller_versions.py is the table). One wrapper a release: Go's minimal version
// selection keeps one version of a module per build list.

go 1.26.0

require sigs.k8s.io/lws v0.8.0
