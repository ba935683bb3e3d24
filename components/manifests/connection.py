"""How a user reaches a workload (pure Python): the interactive and shared-service outputs of the stack, what a client
sets or pastes to connect (the JobSets themselves are jobset.py)."""

from __future__ import annotations

from typing import Any

from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.workloads.ports import PROXY_PORT, RM_PORT


def interactive_access(w: ResolvedWorkload, stack_name: str) -> dict[str, str]:
    """How a client reaches an interactive workload's IFRT proxy. The proxy speaks ALTS, Google's authenticated
    transport (xla/python/ifrt_proxy/common/grpc_credentials.cc; insecure only with
    IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true on both ends), which works between Google Cloud machines only:
    clients run in the VPC, and a notebook from a laptop runs in the cluster (docs/runs.md, "A notebook")."""
    ns = w.namespace
    address = f"grpc://{w.coordinator}.{ns}.svc.cluster.local:{PROXY_PORT}"
    return {
        # The head pod's DNS name under the JobSet's headless service: reachable from the Pathways nodes
        # (and network.pathwaysClientRanges) only, the VPC firewall closes port 29000 to the rest.
        "proxyAddress": address,
        "clientEnv": f"JAX_PLATFORMS=proxy JAX_BACKEND_TARGET={address}",
        "fromALaptop": (f"not through a port-forward (ALTS); a notebook in the cluster instead: python -m infra.run submit "
                        f"--stack {stack_name} --notebook --name <name> --image <Jupyter + JAX image> (docs/runs.md)"),
    }


def service_access(stack: ResolvedStack, w: ResolvedWorkload) -> dict[str, Any]:
    """What a Shared Pathways Service's users paste (pathwaysutils 0.1.13 shared_pathways_service:
    run_workload's flags, isc_pathways.connect's arguments)."""
    address = f"{w.coordinator}:{RM_PORT}"
    instance_type = w.tpu.instance_type
    command = (
        "python3 -m pathwaysutils.experimental.shared_pathways_service.run_workload "
        f"--cluster={stack.cluster_name} --project={stack.project} --region={stack.location} "
        f"--gcs_bucket={stack.cache_location} --pathways_service={address} "
        f"--tpu_type={instance_type} --tpu_count=1 --command='python3 my_program.py'"
    )
    return {
        "address": address,
        "namespace": w.namespace,
        "instanceType": instance_type,
        "maxVirtualSlices": w.slices,
        "proxyImage": w.proxy_image,
        "gcsScratchLocation": stack.cache_location,
        "runWorkload": command,
        "connect": (
            f"isc_pathways.connect(cluster={stack.cluster_name!r}, project={stack.project!r}, region={stack.location!r}, "
            f"gcs_bucket={stack.cache_location!r}, pathways_service={address!r}, "
            f"expected_tpu_instances={{{instance_type!r}: 1}})"
        ),
    }
