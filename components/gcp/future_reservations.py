"""CalendarReservation: a slice group's TPUs requested as a calendar-mode future reservation (Compute Engine, "Create a
future reservation request in calendar mode"; pulumi-gcp `gcp.compute.FutureReservation`). Submitted, a request
cannot be cancelled, changed or deleted: the resource is protected and kept if the stack drops it, the policy pack
requires both, and the offline diff refuses any change to it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_gcp as gcp

from components.model.capacity.pools import FutureReservationRequest
from components.model.capacity.tpu import TpuSlice

# The Compute API's VM family of each TPU family a calendar-mode request takes (terraform-provider-google
# website/docs/r/compute_future_reservation: aggregate_reservation.vm_family).
VM_FAMILIES = {
    "v6e": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT6E",
    "v5p": "VM_FAMILY_CLOUD_TPU_POD_SLICE_CT5P",
    "v5e": "VM_FAMILY_CLOUD_TPU_LITE_POD_SLICE_CT5LP",
}


@dataclass(frozen=True)
class CalendarReservationArgs:
    project: str
    zone: str
    reservation: str
    """The reservation Compute Engine delivers (reservation_name), which the group's pools consume by name."""
    tpu: TpuSlice
    chips: int
    """The group's slices and spares, in chips."""
    request: FutureReservationRequest


class CalendarReservation(pulumi.ComponentResource):
    def __init__(self, name: str, args: CalendarReservationArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("pathways:gcp:CalendarReservation", name, None, opts)
        accelerator = args.tpu.machine_type.split("-", 1)[0]  # ct6e-standard-4t -> ct6e: the API's accelerator type
        self.request = gcp.compute.FutureReservation(
            f"{name}-request",
            project=args.project,
            zone=args.zone,
            name=args.reservation,
            description=f"Pathways slice group TPUs ({args.tpu.name}), calendar mode",
            time_window=gcp.compute.FutureReservationTimeWindowArgs(
                start_time=args.request.start_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                end_time=args.request.end_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            ),
            reservation_mode="CALENDAR",
            planning_status="SUBMITTED",
            deployment_type="DENSE",  # a TPU slice's VMs close together
            reservation_name=args.reservation,
            specific_reservation_required=True,  # only the pools that name it consume it
            auto_delete_auto_created_reservations=True,  # the delivered reservation ends with the window
            aggregate_reservation=gcp.compute.FutureReservationAggregateReservationArgs(
                vm_family=VM_FAMILIES[args.tpu.family],
                workload_type=args.request.workload_type,
                reserved_resources=[gcp.compute.FutureReservationAggregateReservationReservedResourceArgs(
                    accelerator=gcp.compute.FutureReservationAggregateReservationReservedResourceAcceleratorArgs(
                        accelerator_count=args.chips,
                        accelerator_type=f"projects/{args.project}/zones/{args.zone}/acceleratorTypes/{accelerator}",
                    ))],
            ),
            # A submitted calendar-mode request cannot be cancelled or deleted: never try (protect), and dropping it
            # from the stack leaves it in Compute Engine (retain_on_delete).
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )
        self.register_outputs({"name": self.request.name})
