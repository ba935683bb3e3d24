module pathways-gke/tools/engines/gcp-apis

// Wrapper, never built: pins Google's API discovery documents the offline checks judge the GCP half by
// (infra/offline/gcp_api.py): google.golang.org/api carries each API's discovery document beside its generated
// client (container/v1/container-api.json, compute/v1/compute-api.json, storage/v1, iam/v1, monitoring/v3,
// cloudkms/v1, serviceusage/v1), the API's own description of every field, enum, format and output-only mark.
// tools/engines/crds.py copies them to build/crds/gcp-api.

go 1.26.0

require google.golang.org/api v0.316.0
