"""The rules of the Pathways policy pack, one per module."""

from policies.rules.bucket_hardening import bucket_hardening
from policies.rules.cache_location import cache_location
from policies.rules.cluster_hardening import cluster_hardening
from policies.rules.coordinator_label import coordinator_label
from policies.rules.disruption_policy import disruption_policy
from policies.rules.future_reservation import future_reservation
from policies.rules.guards_in_force import guards_in_force
from policies.rules.head_machine import head_machine
from policies.rules.jobset_lifecycle import jobset_lifecycle
from policies.rules.kueue_quota import kueue_quota
from policies.rules.network_exposure import network_exposure
from policies.rules.node_identity import node_identity
from policies.rules.pinned_images import pinned_images
from policies.rules.pod_security import pod_security_levels
from policies.rules.service_access import service_access
from policies.rules.single_zone import single_zone
from policies.rules.storage_iam import storage_iam
from policies.rules.tpu_pool_catalog import tpu_pool_catalog
from policies.rules.tpu_pool_replacement import tpu_pool_replacement
from policies.rules.unique_objects import unique_objects

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
    guards_in_force,
    unique_objects,
]
