"""Run in the client's own environment (build/client-venv: pathwaysutils 0.1.13 and its dependencies),
never in the project's: what Google's Shared Pathways Service client does against a service, with the
kubeconfig of a user the stack lets connect. Prints one JSON object; any exception is the client's verdict.

    python service_client_probe.py <cluster> <project> <location> <service address> <instance type> <gcs scratch>
"""

import json
import sys

from pathwaysutils.experimental.shared_pathways_service import gke_utils, isc_pathways, validators

cluster, project, location, address, instance_type, scratch = sys.argv[1:7]
out = {}
validators.validate_pathways_service(address)
validators.validate_tpu_instances({instance_type: 1})
# The readiness check run_workload makes before it connects, with the arguments it passes (no namespace).
gke_utils.verify_pathways_service_is_up(cluster=cluster, project=project, region=location, pathways_service=address,
                                        tpu_type=instance_type, tpu_count=1)
out["ready"] = True
server_image, sidecar_image = gke_utils.get_pathways_service_images(address)
out["serverImage"], out["sidecarImage"] = server_image, sidecar_image
out["proxyImage"] = gke_utils.get_compatible_proxy_server_image(server_image)
# The client's proxy Job, exactly as connect() deploys it (pw-proxy.yaml through `kubectl apply`).
# (the step connect() takes first; the rest of connect() needs a running proxy)
isc_pathways._deploy_pathways_proxy_server(
    pathways_service=address, proxy_job_name="probe-proxy", expected_instances={instance_type: 1},
    gcs_scratch_location=scratch, proxy_server_image=out["proxyImage"])
out["proxyJob"] = "probe-proxy"
print(json.dumps(out))
