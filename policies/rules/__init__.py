"""The rules of the Pathways policy pack, one per module."""

from .bucket_hardening import bucket_hardening
from .cache_location import cache_location
from .cluster_hardening import cluster_hardening
from .coordinator_label import coordinator_label
from .disruption_policy import disruption_policy
from .future_reservation import future_reservation
from .head_machine import head_machine
from .jobset_lifecycle import jobset_lifecycle
from .kueue_quota import kueue_quota
from .network_exposure import network_exposure
from .node_identity import node_identity
from .pinned_images import pinned_images
from .pod_security import pod_security_levels
from .service_access import service_access
from .single_zone import single_zone
from .storage_iam import storage_iam
from .tpu_pool_catalog import tpu_pool_catalog
from .tpu_pool_replacement import tpu_pool_replacement

ALL_POLICIES = [
    single_zone,
    head_machine,
    tpu_pool_catalog,
    pinned_images,
    cache_location,
    bucket_hardening,
    storage_iam,
    node_identity,
    cluster_hardening,
    jobset_lifecycle,
    tpu_pool_replacement,
    future_reservation,
    coordinator_label,
    network_exposure,
    kueue_quota,
    disruption_policy,
    service_access,
    pod_security_levels,
]
