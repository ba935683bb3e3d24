"""TpuSliceGroup: one GKE node pool per TPU slice of a slice group.

Each pool's shape comes from the TPU catalog. Pools are siblings that depend only on the cluster,
so adding slices never lengthens a deploy's critical path.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.constants import SLICE_GROUP_LABEL, SLICE_LABEL, TPU_TAINT
from components.gcp.node_defaults import KEEP_MAX_PODS, node_config, pool_locations
from components.gcp.node_pool_lanes import NodePoolLanes
from components.model.capacity.tpu import Placement, TpuSlice
from components.model.cluster.address_space import TPU_MAX_PODS
from components.model.config import Capacity

# A TPU pool can take far longer than the provider's default to come up (capacity search, atomic
# multi-host creation); deletes of large slices are slow too.
TPU_POOL_TIMEOUTS = pulumi.CustomTimeouts(create="180m", update="120m", delete="90m")


def placement_policy(tpu: TpuSlice, policy_name: Optional[pulumi.Input[str]]) -> Optional[gcp.container.NodePoolPlacementPolicyArgs]:
    """The pool's placement_policy, written as GKE stores it, so `pulumi up` never sees a diff
    (placement_policy is ForceNew in the provider: a diff would replace the slice).

    - single host: none (GKE refuses tpu_topology on single-host TPU pools);
    - compact (v4, v5e, v5p, v6e multi-host): {type: COMPACT, tpu_topology};
    - workload policy (tpu7x multi-host): {policy_name, tpu_topology} and type "". The API's PlacementPolicy.type
      enum is TYPE_UNSPECIFIED or COMPACT (container-api.json v1, revision 20261027), and "" is how the provider
      sends TYPE_UNSPECIFIED: proto3 JSON leaves the default out. GKE stores a named policy with no type
      (vllm-project/ci-infra #547, probed on a live cluster: "the API stored policyName and tpuTopology with no
      type"; terraform-provider-google #25388, open: the API "returns only policyName when a named policy is
      used", so a type in the config diffs on every plan). The provider's read copies type, policy_name and
      tpu_topology from the API verbatim, so "" is what matches the read-back state. Cluster Toolkit sends
      type COMPACT beside the name (modules/compute/resource-policy/outputs.tf placement_policy, read at
      c765092f): that is the perpetual diff #25388 reports, which under Pulumi would replace the slice at every
      `pulumi up`; xpk sends no type either (src/xpk/core/nodepool.py: "--placement-type=COMPACT enables group
      placement policy which is mutually exclusive with workload policy").
    """
    if tpu.placement is Placement.COMPACT:
        return gcp.container.NodePoolPlacementPolicyArgs(type="COMPACT", tpu_topology=tpu.topology)
    if tpu.placement is Placement.WORKLOAD_POLICY:
        return gcp.container.NodePoolPlacementPolicyArgs(type="", policy_name=policy_name, tpu_topology=tpu.topology)
    return None


def flex_start_autoscaling(tpu: TpuSlice) -> dict[str, Any]:
    """Autoscaling of a flex-start slice pool: 0 nodes until a workload asks, then the whole slice.

    Per-zone limits, not total ones: GKE checks a multi-host slice against the per-zone
    max_node_count, which is 0 when only total_max_node_count is set ("Maximum node count 0 is not a
    valid size of TPU pod slice", vllm-project/ci-infra #545; Cluster Toolkit exposes per-zone
    limits for flex-start TPU pools, cluster-toolkit #5111). The pool lives in one zone, so per-zone
    and total are the same number. Location policy ANY: a balanced spread cannot assemble a slice.
    """
    return {"min_node_count": 0, "max_node_count": tpu.hosts, "location_policy": "ANY"}


PROVISION_ONLY = "PROVISION_ONLY"
_POLICY_NAME = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")  # compute-api.json ResourcePolicy.name pattern (RFC 1035, 1-63)


def workload_policy_name(cluster: str, group: str, topology: str, provision_only: bool) -> str:
    """The tpu7x workload policy's name, from the stack and the policy's shape.

    Compute Engine has no update for a resource policy (every input forces a new one), and Pulumi replaces
    create-before-delete: a new shape under the old name would be refused ("already exists"), and the pools,
    deleted first, may be gone by then. So the name carries everything the policy holds that the stack varies,
    as xpk names its policies from their shape (src/xpk/core/scheduling.py get_placement_policy_name:
    <device>-<topology>[-ss]-placement-policy): the topology and the mode (-po: PROVISION_ONLY, a pool set's).
    Policies are per project and region, so the cluster and group names keep stacks and groups apart; when
    the whole is over 63 characters, the cluster-group part is cut and a digest of it keeps it unique."""
    shape = f"-{topology}{'-po' if provision_only else ''}-wp"
    owner = f"{cluster}-{group}"
    if len(owner) + len(shape) > 63:
        digest = hashlib.sha256(owner.encode()).hexdigest()[:6]
        owner = owner[: 63 - len(shape) - len(digest) - 1].rstrip("-") + "-" + digest
    name = owner + shape
    assert _POLICY_NAME.fullmatch(name), name  # cluster and group are DNS labels, topology is digits and x
    return name


def pool_name(group: str, index: int) -> str:
    """Deterministic pool name (GKE allows 40 characters; groups are at most 20)."""
    return f"tpu-{group}-{index}"


@dataclass(frozen=True)
class TpuSliceGroupArgs:
    project: str
    """Project of the cluster."""
    region: str
    """Region (for the tpu7x workload policy)."""
    zone: str
    """The stack's one zone."""
    regional: bool
    """Whether the cluster is regional."""
    cluster: pulumi.Input[str]
    """Cluster name (output, so pools wait for the cluster)."""
    cluster_name: str
    """Cluster name as configured, to make project-unique names (the workload policy)."""
    location: str
    """Cluster location."""
    group: str
    """Slice group name: node label value and pool name part."""
    tpu: TpuSlice
    """The slice shape from the TPU catalog."""
    count: int
    """Number of slices, one node pool each."""
    capacity: Capacity
    """on-demand, spot, reservation or flex-start."""
    reservation: Optional[str]
    """Specific reservation name when capacity is reservation."""
    service_account: pulumi.Input[str]
    """Email of the Pathways node SA."""
    lanes: NodePoolLanes
    """The stack's node-pool lanes (GKE's concurrent-operations limit): the pool waits its turn."""
    auto_upgrade: bool = True
    """Whether GKE upgrades the pools' nodes (recreating the slice)."""
    scale_to_zero: bool = False
    """Autoscale from 0 to the whole slice (flex-start pools always do)."""
    queued_provisioning: bool = False
    """Flex-start with queued provisioning: nodes only for ProvisioningRequests (Kueue's admission check makes them)."""
    sub_blocks: tuple[str, ...] = ()
    """A pool set (dynamic slicing): pool i takes the reservation's sub-block sub_blocks[i] whole, under a
    provision-only workload policy, and GKE forms slices on the pools when workloads are admitted."""
    isolation: Optional[tuple[str, str, str]] = None
    """An isolation domain's taint (key, value, effect): its nodes carry it, and its key=value as a label."""
    workload_metadata: str = "GKE_METADATA"
    """GCE_METADATA where serve workloads run: Google's JetStream-on-Pathways tutorial runs those pools without
    Workload Identity, its pods acting as the node service account (PLATFORM-FACTS §7)."""


class TpuSliceGroup(pulumi.ComponentResource):
    pool_names: pulumi.Output[list[str]]
    """Node pool names, index order."""

    def __init__(self, name: str, args: TpuSliceGroupArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:TpuSliceGroup", name, None, opts)
        tpu = args.tpu
        policy_name: Optional[pulumi.Output[str]] = None
        if tpu.placement is Placement.WORKLOAD_POLICY:
            policy = gcp.compute.ResourcePolicy(
                f"{name}-workload-policy",
                project=args.project,
                region=args.region,
                # named from its shape: a policy cannot change (every input forces a new one), and a new shape
                # under the old name would collide with it (Pulumi creates the replacement first)
                name=workload_policy_name(args.cluster_name, args.group, tpu.topology, provision_only=bool(args.sub_blocks)),
                # A pool set's pools are provisioned as cubes and joined into slices later (PROVISION_ONLY: xpk
                # nodepool.py ensure_resource_policy_exists for super-slicing; Cluster Toolkit resource-policy
                # workload_policy.accelerator_topology_mode); a fixed slice's are linked at creation.
                workload_policy=gcp.compute.ResourcePolicyWorkloadPolicyArgs(
                    type="HIGH_THROUGHPUT", accelerator_topology=tpu.topology,
                    accelerator_topology_mode=PROVISION_ONLY if args.sub_blocks else None,
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
            policy_name = policy.name
        pools = [self._pool(name, args, i, policy_name) for i in range(args.count)]
        self.pool_names = pulumi.Output.all(*[p.name for p in pools])
        self.register_outputs({"poolNames": self.pool_names})

    def _pool(self, name: str, args: TpuSliceGroupArgs, index: int, policy_name: Optional[pulumi.Output[str]]) -> gcp.container.NodePool:
        tpu, flex = args.tpu, args.capacity is Capacity.FLEX_START
        autoscaled = flex or args.scale_to_zero
        extra: dict = {}
        if args.capacity is Capacity.SPOT:
            extra["spot"] = True
        elif args.capacity is Capacity.RESERVATION:
            assert args.reservation is not None  # the config model's capacity property
            extra["reservation_affinity"] = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="SPECIFIC_RESERVATION",
                key="compute.googleapis.com/reservation-name",
                # a pool set's pool takes one sub-block whole (xpk --reservation <r>/reservationBlocks/<b>/reservationSubBlocks/<s>)
                values=[f"{args.reservation}/reservationSubBlocks/{args.sub_blocks[index]}" if args.sub_blocks else args.reservation],
            )
        elif flex:
            extra["flex_start"] = True
            extra["reservation_affinity"] = gcp.container.NodePoolNodeConfigReservationAffinityArgs(
                consume_reservation_type="NO_RESERVATION"
            )
        # GKE "flex-start with queued provisioning": --flex-start --enable-queued-provisioning, no reservation, autoscaled
        # from 0, no auto-repair (Cluster Toolkit modules/compute/gke-node-pool queued_provisioning; GKE taints the
        # nodes cloud.google.com/gke-queued=true:NoSchedule, which the group's Kueue flavor tolerates).
        queued = gcp.container.NodePoolQueuedProvisioningArgs(enabled=True) if flex and args.queued_provisioning else None
        placement = placement_policy(tpu, policy_name)
        labels = {SLICE_GROUP_LABEL: args.group, SLICE_LABEL: pool_name(args.group, index),
                  **({args.isolation[0]: args.isolation[1]} if args.isolation else {})}
        pool = gcp.container.NodePool(
            f"{name}-{index}",
            project=args.project,
            cluster=args.cluster,
            location=args.location,
            name=pool_name(args.group, index),
            node_locations=pool_locations(args.regional, args.zone),
            # Flex-start and scale-to-zero pools start empty and the autoscaler brings the whole slice up on demand.
            node_count=None if autoscaled else tpu.hosts,
            initial_node_count=0 if autoscaled else None,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(**flex_start_autoscaling(tpu)) if autoscaled else None,
            management=gcp.container.NodePoolManagementArgs(auto_repair=not flex, auto_upgrade=args.auto_upgrade),
            # A slice upgrades as a whole; no surge node (a spare VM cannot join a slice): one at a time,
            # as Cluster Toolkit's gke-node-pool does for TPU pools (max_surge 0, max_unavailable 1).
            upgrade_settings=gcp.container.NodePoolUpgradeSettingsArgs(strategy="SURGE", max_surge=0, max_unavailable=1),
            placement_policy=placement,
            # a /27 of the pod range a node instead of GKE's /24 default (components/model/cluster/address_space.py)
            max_pods_per_node=TPU_MAX_PODS,
            queued_provisioning=queued,
            node_config=node_config(tpu.machine_type, args.service_account, labels,
                                    taints=(TPU_TAINT, *((args.isolation,) if args.isolation else ())),
                                    workload_metadata=args.workload_metadata, **extra),
            opts=pulumi.ResourceOptions(
                parent=self,
                # Quota and reservations never fit two copies of a slice: delete, then create.
                delete_before_replace=True,
                custom_timeouts=TPU_POOL_TIMEOUTS,
                ignore_changes=[*(["nodeCount", "initialNodeCount"] if autoscaled else []), *KEEP_MAX_PODS],
                depends_on=args.lanes.after(),
            ),
        )
        args.lanes.add(pool)
        return pool
