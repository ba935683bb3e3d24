"""What the plan says of a reserved slice group that nothing checks before the deploy (issue #75.3): with no recorded
reservation (slices[].reservationRecord, reservationBlockRecord) and no live read (readReservation), neither the plan
nor `pulumi preview` can tell whether the reservation holds the group's VMs; a short one shows only after `pulumi up`,
as pools whose nodes never come (GKE: "reservation ... does not have sufficient resources"). Pure functions."""

from __future__ import annotations

from collections.abc import Sequence

from components.model.capacity.pools import SliceGroup


def unchecked(group: SliceGroup) -> bool:
    """A group that consumes a specific reservation nothing judges before the deploy (a future reservation is the
    stack's own request: it is judged when it is made)."""
    return bool(group.reservation and group.future_reservation is None and group.node_pools == []
                and not (group.reservation_record or group.reservation_block_record or group.read_reservation))


def unchecked_notices(groups: Sequence[SliceGroup], zone: str) -> list[str]:
    out = []
    for g in groups:
        if not unchecked(g):
            continue
        vms = g.pools * g.tpu.hosts
        out.append(f"slice group {g.name} consumes reservation {g.reservation}, which nothing checks before the deploy: "
                   f"if it has fewer than {vms} free {g.tpu.machine_type} VMs in {zone}, its pools wait without nodes after "
                   f"pulumi up; {_record_advice(g, zone)} or set slices[].readReservation: true")
    return out


def _record_advice(g: SliceGroup, zone: str) -> str:
    """The gcloud line that records what the group names (docs/capacity.md), and the key that reads it."""
    reservation = g.reservation or ""
    name = reservation.split("/reservationBlocks/")[0].rsplit("/", 1)[-1]
    out = f"> stacks/reservations/{g.name}.json"
    if "/reservationBlocks/" not in reservation:
        return f"record it (gcloud compute reservations describe {name} --zone {zone} --format=json {out}, then slices[].reservationRecord)"
    block, _, sub = reservation.split("/reservationBlocks/")[1].partition("/reservationSubBlocks/")
    what = (f"sub-blocks describe {name} --block-name {block} --sub-block-name {sub}" if sub
            else f"blocks describe {name} --block-name {block}")
    return f"record it (gcloud compute reservations {what} --zone {zone} --format=json {out}, then slices[].reservationBlockRecord)"


def growth_notes(before: Sequence[SliceGroup], after: Sequence[SliceGroup]) -> list[str]:
    """For `diff`: a reserved group that grows needs its reservation to hold the new size, which no change of the
    stack makes (a reservation grows only by its owner)."""
    was = {g.name: g for g in before}
    out = []
    for g in after:
        old = was.get(g.name)
        vms = g.pools * g.tpu.hosts
        if old is None or not g.reservation or g.future_reservation is not None or vms <= old.pools * old.tpu.hosts:
            continue
        out.append(f"slice group {g.name} grows from {old.pools * old.tpu.hosts} to {vms} TPU VMs on reservation {g.reservation}: "
                   f"the reservation must hold {vms} {g.tpu.machine_type} VMs before pulumi up, or the new pools wait without "
                   "nodes; only its owner grows it (gcloud compute reservations update --vm-count)")
    return out
