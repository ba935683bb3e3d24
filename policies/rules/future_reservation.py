"""Calendar-mode future reservation requests are protected: Compute Engine lets no one cancel, change or delete a
submitted request ("Create a future reservation request in calendar mode", limitations), so a stack that tried would
fail half-way; `protect` makes Pulumi refuse a delete or replacement before it starts."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.rules.common import get

FUTURE_RESERVATION = "gcp:compute/futureReservation:FutureReservation"


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != FUTURE_RESERVATION:
        return
    name = get(args.props, "name")
    if not args.opts.protect:
        report(f"future reservation {name}: set `protect` (a submitted calendar-mode request cannot be cancelled or deleted)")
    if get(args.props, "reservationMode") == "CALENDAR" and get(args.props, "planningStatus") != "SUBMITTED":
        report(f"future reservation {name}: planningStatus {get(args.props, 'planningStatus')!r}; the stack submits its requests "
               "(SUBMITTED), a draft is made by hand")


future_reservation = ResourceValidationPolicy(
    name="pathways-future-reservation-protected",
    description="Calendar-mode future reservation requests are submitted and protected.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
