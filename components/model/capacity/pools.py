"""The head pool and the TPU slice groups."""

from __future__ import annotations

import re
from datetime import date, datetime, timezone
from enum import Enum
from typing import Any, Literal, Optional

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from components.model.capacity import dynamic_slicing
from components.model.capacity import tpu as tpu_catalog
from components.model.common import (
    MAX_NODES_PER_POOL_ZONE,
    MAX_TPU_POOLS,
    _dns_label,
    _Model,
)

# --- pools ---------------------------------------------------------------------------------


class HeadPoolConfig(_Model):
    machine_type: str = Field(default="n2-standard-64", description="Machine type for Pathways head pods (RM + proxy + user program).")
    node_count: Optional[int] = Field(default=None, ge=1, le=MAX_NODES_PER_POOL_ZONE, description="Nodes; default one per workload with a head pod (one head pod per node; a serve workload has none).")
    scale_to_zero: bool = Field(default=False, description=(
        "Autoscale the pool between 0 and its node count: no head VM runs while no workload does (a head pod then "
        "waits a few minutes for its node)."
    ))
    node_pool: Optional[str] = Field(default=None, description=(
        "With cluster.existing: the existing pool that runs the head pods, selected by GKE's own label "
        "cloud.google.com/gke-nodepool (e.g. xpk's cpu-np) instead of the stack's pathways/role=head. "
        "docs/from-xpk.md."))

    @field_validator("node_pool")
    @classmethod
    def _node_pool(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else _dns_label(v, 40)


# A reservation as GKE's --reservation and a node pool's reservationAffinity name it: name or shared path, then
# optionally one block or sub-block of it (components/model/capacity/reservations.py parses it).
RESOURCE_NAME = r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
RESERVATION_PATH = re.compile(
    rf"(projects/(?P<owner>[a-z][-a-z0-9]{{4,28}}[a-z0-9])/reservations/)?(?P<name>{RESOURCE_NAME})"
    rf"(/reservationBlocks/(?P<block>{RESOURCE_NAME})(/reservationSubBlocks/(?P<sub_block>{RESOURCE_NAME}))?)?")



class Capacity(str, Enum):
    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVATION = "reservation"
    FLEX_START = "flex-start"


def _parse_tpu(v: Any) -> tpu_catalog.TpuSlice:
    try:
        if isinstance(v, str):
            return tpu_catalog.from_name(v)
        if isinstance(v, dict):
            extra = set(v) - {"family", "topology", "machineType"}
            if extra or "family" not in v or "topology" not in v:
                raise ValueError(
                    "give a TPU name (e.g. v6e-16) or {family, topology[, machineType]}"
                    + (f"; unknown keys: {', '.join(sorted(extra))}" if extra else "")
                )
            return tpu_catalog.resolve(str(v["family"]), str(v["topology"]), v.get("machineType"))
    except tpu_catalog.TpuError as e:
        raise ValueError(str(e)) from None
    raise ValueError(f"{v!r} is not a TPU; give a name like v6e-16 or {{family: v6e, topology: 4x4}}")


class FutureReservationRequest(_Model):
    """A calendar-mode future reservation request for a slice group's TPUs (Compute Engine, "Create a future
    reservation request in calendar mode"): reserved chips delivered at startTime, for 1 to 90 days."""

    start_time: datetime = Field(description="When the reserved TPUs are delivered (RFC 3339, UTC).")
    end_time: datetime = Field(description="When the reservation and its VMs end (RFC 3339, UTC), 1 to 90 days after startTime.")
    workload_type: Literal["BATCH", "SERVING"] = Field(default="BATCH", description=(
        "BATCH (training, fine-tuning) or SERVING (inference; TPU v5e only in us-central1-a, 1, 4 or 8 chips)."))

    @field_validator("start_time", "end_time")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError(f"{v.isoformat()} has no time zone; give it in UTC, e.g. 2027-03-01T00:00:00Z")
        return v.astimezone(timezone.utc)


class SliceGroup(_Model):
    """Identical TPU slices, one GKE node pool each."""

    name: str = Field(description="Group name: node label, pool name part, and what workloads reference.")
    tpu: tpu_catalog.TpuSlice = Field(description="TPU name (v6e-16) or {family, topology, machineType}.")
    count: int = Field(default=1, ge=1, le=MAX_TPU_POOLS, description="Number of slices (node pools) in the group.")
    spares: int = Field(default=0, ge=0, le=MAX_TPU_POOLS, description=(
        "Extra slices kept ready for hot-swap: a restarted JobSet lands on a spare instead of waiting for a "
        "failed slice's repair. Provisioned, but never queue quota."
    ))
    auto_upgrade: bool = Field(default=True, description=(
        "GKE upgrades the pools' nodes (recreating a slice). It cannot be off: every cluster the stack makes is in a "
        "release channel, where GKE keeps node auto-upgrade on (GKE API, ReleaseChannel); hold node upgrades with a "
        "maintenance exclusion (cluster.maintenance.exclusions, scope NO_MINOR_OR_NODE_UPGRADES) instead."
    ))
    spot: bool = Field(default=False, description="Spot capacity.")
    flex_start: bool = Field(default=False, description="Flex-start (DWS) capacity: pools start at 0 nodes.")
    queued_provisioning: bool = Field(default=False, description=(
        "With flexStart: GKE's queued provisioning. The pools get nodes only through a ProvisioningRequest, which "
        "Kueue makes for each workload it has quota for (its ProvisioningRequest admission check on this group's "
        "flavor); the workload starts once all its slices are obtained together. docs/capacity.md."))
    scale_to_zero: bool = Field(default=False, description=(
        "Autoscale each pool between 0 and the whole slice: no TPU VM runs while no workload uses it (a workload "
        "waits for its slices to come up, as on flex-start). Not with a reservation, which is paid for either way."
    ))
    ladder: list[str] = Field(default_factory=list, max_length=MAX_TPU_POOLS, description=(
        "The next rungs of this group's capacity ladder: other slice groups of the same TPU, in order of preference "
        "(e.g. this group on a reservation, then a flex-start group, then a spot one). Kueue admits this group's "
        "workloads on the first rung with room (its flavors in this order); a workload runs all its slices on one "
        "rung. docs/capacity.md."))
    unlisted_zone: bool = Field(default=False, description=(
        "Deploy the group's TPU family in gcp:zone although Google's TPU zone table does not list it there (a "
        "single-tenant or new zone Google offers your project); the plan says so. docs/capacity.md."))
    reservation: Optional[str] = Field(default=None, description=(
        "A specific reservation to consume: its name, or projects/<project>/reservations/<name> for a shared one."
    ))
    reservation_record: Optional[str] = Field(default=None, description=(
        "A recorded `gcloud compute reservations describe NAME --zone ZONE --format=json` of the reservation (a path "
        "from the project root): the plan and pulumi preview judge the reservation by it before creating anything "
        "(READY, zone, machine type, free VMs, sharing, end) and show its free VMs. docs/capacity.md."))
    reservation_block_record: Optional[str] = Field(default=None, description=(
        "With a reservation path that ends in a block or sub-block: a recorded `gcloud compute reservations blocks "
        "describe` (or `sub-blocks describe`) --format=json of it (a path from the project root); the plan and pulumi "
        "preview refuse a block that is not READY or not HEALTHY, or has fewer free hosts than the groups on it need. "
        "docs/capacity.md."))
    read_reservation: bool = Field(default=False, description=(
        "Read the reservation under `pulumi preview` and `up` (pulumi-gcp's get_reservation) and judge it as a record "
        "is judged, before anything is created; a specific (VM) reservation only. The deploy and preview identities "
        "need compute.reservations.get on its project: the bootstrap grants it in its own. The offline tools make no cloud call: they judge "
        "reservationRecord, if any. Default: true in a protected stack for a reservation of its own project (false opts "
        "out), false otherwise. docs/capacity.md."))
    future_reservation: Optional[FutureReservationRequest] = Field(default=None, description=(
        "Request the group's TPUs as a calendar-mode future reservation named `reservation` (startTime, endTime, "
        "workloadType). A submitted request cannot be cancelled, changed or deleted: the stack protects it, and the "
        "group's pools are created at the first `pulumi up` after startTime. docs/capacity.md."))
    needed_until: Optional[date] = Field(default=None, description=(
        "With a reservation that ends (deleteAtTime, calendar mode): the date the group is needed until; a reservation "
        "ending before it is refused. Without it, any end is refused."))
    node_pools: list[str] = Field(default_factory=list, max_length=MAX_TPU_POOLS, description=(
        "With cluster.existing: the group's existing node pools, one per slice (e.g. xpk's <cluster>-np-0), selected "
        "by GKE's own label cloud.google.com/gke-nodepool instead of the stack's pathways/slice-group; their nodes need "
        "no label of this project. docs/from-xpk.md."))

    sub_blocks: list[str] = Field(default_factory=list, max_length=dynamic_slicing.MAX_CUBES, description=(
        "tpu7x dynamic slicing: the sub-blocks of the reservation block named in `reservation` that this group takes, "
        "one 16-VM node pool (a 4x4x4 cube) each, provisioned once. Workloads ask for any legal `topology` on them "
        "(a sub-slice of one cube or a super-slice of whole cubes) and GKE forms the slice when Kueue admits the "
        "workload; changing a topology changes no node pool. The group's count is the number of sub-blocks; tpu is "
        "tpu7x-128 (the cube). docs/dynamic-slicing.md."))
    sub_slicing: Optional[bool] = Field(default=None, description=(
        "With subBlocks: also form sub-slices (2x2x1 to 2x4x4) inside a cube; needs GKE "
        f"{dynamic_slicing.SUB_SLICING_MIN_GKE} or later (super-slices need {dynamic_slicing.SUPER_SLICING_MIN_GKE}). "
        "Default true. It sets the levels of the group's Kueue Topology, which Kueue never changes in place (the levels "
        "and the flavor's topologyName are immutable): to change it on a deployed stack, give the pool set a new name."))

    @model_validator(mode="before")
    @classmethod
    def _count_of_sub_blocks(cls, data: Any) -> Any:
        # A pool set has one pool per sub-block: its count is theirs unless given (and then it must agree).
        if isinstance(data, dict) and isinstance(data.get("subBlocks", data.get("sub_blocks")), list):
            blocks = data.get("subBlocks", data.get("sub_blocks"))
            if "count" not in data and blocks:
                return {**data, "count": len(blocks)}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 20)

    @field_validator("sub_blocks")
    @classmethod
    def _sub_blocks(cls, v: list[str]) -> list[str]:
        for name in v:
            _dns_label(name, 63)
        if len(set(v)) != len(v):
            raise ValueError(f"names a sub-block twice ({', '.join(sorted({n for n in v if v.count(n) > 1}))}); each is one pool")
        return v

    @field_validator("node_pools")
    @classmethod
    def _node_pools(cls, v: list[str]) -> list[str]:
        for name in v:
            _dns_label(name, 40)
        if len(set(v)) != len(v):
            raise ValueError(f"names a pool twice ({', '.join(sorted({n for n in v if v.count(n) > 1}))}); each slice is its own pool")
        return v

    @field_validator("tpu", mode="before")
    @classmethod
    def _tpu(cls, v: Any) -> tpu_catalog.TpuSlice:
        return _parse_tpu(v)

    @field_validator("reservation")
    @classmethod
    def _reservation(cls, v: Optional[str]) -> Optional[str]:
        # A shared reservation is named by its path (GKE "Consume reserved zonal resources": --reservation
        # projects/<owner project>/reservations/<name>); a block or sub-block of one by the path after it that GKE's
        # reservationAffinity takes (Cluster Toolkit gke-node-pool: <name>/reservationBlocks/<block>).
        if v is not None and not RESERVATION_PATH.fullmatch(v):
            raise ValueError(f"{v[:80]!r} is not a reservation: give its name (lowercase letters, digits, '-') or, for a "
                             "shared one, projects/<project>/reservations/<name>; either may end in /reservationBlocks/<block> "
                             "or /reservationBlocks/<block>/reservationSubBlocks/<sub-block> to consume one block of it")
        return v

    @model_validator(mode="after")
    def _one_capacity(self) -> "SliceGroup":
        chosen = [k for k, on in (("spot", self.spot), ("flexStart", self.flex_start), ("reservation", self.reservation)) if on]
        if len(chosen) > 1:
            raise ValueError(
                f"conflicting capacity options {' and '.join(chosen)}; set at most one of spot, flexStart, "
                "reservation (none means on-demand)"
            )
        if (self.reservation_record or self.reservation_block_record or self.needed_until or self.read_reservation
                or self.future_reservation) and not self.reservation:
            raise ValueError("reservationRecord, reservationBlockRecord, readReservation, futureReservation and neededUntil "
                             "describe a reservation; set reservation too, or remove them")
        for key, record in (("reservationRecord", self.reservation_record), ("reservationBlockRecord", self.reservation_block_record)):
            if record is not None and (not record.endswith(".json") or ".." in record.split("/") or record.startswith("/")):
                raise ValueError(f"{key} {record[:80]!r} is not a .json file under the project root "
                                 "(e.g. stacks/reservations/train-v5p.json)")
        block = self.reservation is not None and "/reservationBlocks/" in self.reservation
        if self.reservation_block_record is not None and not block:
            raise ValueError("reservationBlockRecord records a block of the reservation; name the block in reservation "
                             "(<reservation>/reservationBlocks/<block>[/reservationSubBlocks/<sub-block>]), or remove it")
        if block and self.future_reservation is not None:
            raise ValueError("futureReservation requests a whole reservation; name it without /reservationBlocks/...")
        if self.queued_provisioning and not self.flex_start:
            raise ValueError("queuedProvisioning is a mode of flex-start capacity (GKE: --flex-start "
                             "--enable-queued-provisioning); set flexStart: true too, or remove queuedProvisioning")
        if self.scale_to_zero and self.reservation:
            raise ValueError("scaleToZero with a reservation saves nothing (reserved capacity is paid for either way); "
                             "remove scaleToZero, or use on-demand or spot capacity")
        if self.sub_blocks:
            self._pool_set_rules()
        elif self.sub_slicing is not None:
            raise ValueError("subSlicing is a setting of dynamic slicing; list the group's subBlocks too, or remove it")
        return self

    def _pool_set_rules(self) -> None:
        """A pool set (subBlocks): whole cubes of one block of a reservation (docs/dynamic-slicing.md)."""
        t = self.tpu
        if (t.family, t.topology, t.machine_type) != (dynamic_slicing.SUB_BLOCK_FAMILY, dynamic_slicing.SUB_BLOCK_TOPOLOGY,
                                                      dynamic_slicing.SUB_BLOCK_MACHINE_TYPE):
            raise ValueError(f"subBlocks are 4x4x4 cubes of {dynamic_slicing.SUB_BLOCK_MACHINE_TYPE} VMs, so tpu is "
                             f"tpu7x-128 (not {t.name} {t.topology}); workloads ask for their own topology")
        m = RESERVATION_PATH.fullmatch(self.reservation or "")
        if self.reservation is not None and (m is None or not m["block"] or m["sub_block"]):
            raise ValueError("subBlocks are sub-blocks of one reservation block: set reservation to "
                             "<reservation>/reservationBlocks/<block> (an All Capacity mode reservation)")
        if self.count != len(self.sub_blocks):
            raise ValueError(f"count {self.count} disagrees with the {len(self.sub_blocks)} subBlocks (one pool each); "
                             "remove count")
        extra = [k for k, on in (("spares", self.spares), ("ladder", self.ladder), ("nodePools", self.node_pools),
                                 ("futureReservation", self.future_reservation), ("readReservation", self.read_reservation))
                 if on]
        if extra:
            raise ValueError(f"{', '.join(extra)} cannot be set on a pool set (subBlocks): a reshape forms slices on "
                             "the cubes it has; remove them")

    @property
    def dynamic(self) -> bool:
        """A pool set: slices formed on its sub-blocks when a workload is admitted."""
        return bool(self.sub_blocks)

    @property
    def forms_sub_slices(self) -> bool:
        return self.dynamic and self.sub_slicing is not False

    def sub_block_path(self, index: int) -> str:
        """The reservation path of the pool's sub-block, as a node pool's reservationAffinity takes it."""
        return f"{self.reservation}/reservationSubBlocks/{self.sub_blocks[index]}"

    @property
    def autoscaled(self) -> bool:
        """Its pools sit at 0 nodes until a workload asks for them (flex-start always, others on request)."""
        return self.flex_start or self.scale_to_zero

    @property
    def pools(self) -> int:
        """Node pools: the slices and the spares."""
        return self.count + self.spares

    @property
    def capacity(self) -> Capacity:
        if self.spot:
            return Capacity.SPOT
        if self.flex_start:
            return Capacity.FLEX_START
        if self.reservation:
            return Capacity.RESERVATION
        return Capacity.ON_DEMAND
