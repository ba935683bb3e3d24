"""Kueue quotas within what the pools provide, and every JobSet of a Kueue stack queued.

A ClusterQueue whose TPU quota exceeds the chips its flavor's pools hold admits JobSets that can never
run (pods Pending for ever, slices held by nobody); a JobSet without the queue label bypasses Kueue and
can take part of a group's slices while a queued one holds the rest.
"""

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.constants import SLICE_GROUP_LABEL
from components.manifests.kueue_api import API_VERSION, QUEUE_LABEL
from components.manifests.kueue_api import TPU_RESOURCE as TPU
from components.model.capacity import tpu
from policies.rules.common import NODE_POOL, WORKLOAD_TYPES, get, is_tpu_pool

CLUSTER_QUEUE = f"kubernetes:{API_VERSION}:ClusterQueue"
LOCAL_QUEUE = f"kubernetes:{API_VERSION}:LocalQueue"
FLAVOR = f"kubernetes:{API_VERSION}:ResourceFlavor"
ADMISSION_CHECK = f"kubernetes:{API_VERSION}:AdmissionCheck"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"


def _chips_per_vm(machine: str) -> int:
    return next(f.machine_types[machine] for f in tpu.FAMILIES.values() if machine in f.machine_types)


def _provisioned_chips(resources) -> dict[str, int]:
    """Chips per slice group the TPU pools hold (at their full size, autoscaled ones included)."""
    out: dict[str, int] = {}
    for r in resources:
        if r.resource_type != NODE_POOL or not is_tpu_pool(r.props):
            continue
        group = str((get(r.props, "nodeConfig.labels") or {}).get(SLICE_GROUP_LABEL, ""))
        nodes = get(r.props, "nodeCount") or get(r.props, "autoscaling.maxNodeCount") or 0
        out[group] = out.get(group, 0) + int(nodes) * _chips_per_vm(get(r.props, "nodeConfig.machineType"))
    return out


def _holds_nothing_queued(props) -> bool:
    """A LeaderWorkerSet whose pods tolerate no taint and request no TPU (a split endpoint's proxy): it runs only on
    untainted nodes (the system pool), never on the head or TPU nodes that Kueue's quotas hold, so it needs no queue."""
    if "leaderWorkerTemplate" not in (get(props, "spec") or {}):
        return False
    templates = [t for t in (get(props, "spec.leaderWorkerTemplate.leaderTemplate"), get(props, "spec.leaderWorkerTemplate.workerTemplate")) if t]
    for t in templates:
        spec = t.get("spec") or {}
        if spec.get("tolerations"):
            return False
        for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
            res = c.get("resources") or {}
            if TPU in (res.get("requests") or {}) or TPU in (res.get("limits") or {}):
                return False
    return bool(templates)


def _validate(args: StackValidationArgs, report) -> None:
    resources = list(args.resources)
    queues = [r for r in resources if r.resource_type == CLUSTER_QUEUE]
    if not queues:
        return
    chips = _provisioned_chips(resources)
    # Quotas are checked against pools the stack creates; on a cluster made elsewhere there are none to read.
    creates_pools = any(r.resource_type == NODE_POOL for r in resources)
    flavor_group = {get(r.props, "metadata.name"): (get(r.props, "spec.nodeLabels") or {}).get(SLICE_GROUP_LABEL)
                    for r in resources if r.resource_type == FLAVOR}
    # a fleet manager's queue admits against its workers' pools (MultiKueue dispatches every workload it admits):
    # its quota is their sum, which the program reads from them, not this plan's pools
    multikueue = {get(r.props, "metadata.name") for r in resources
                  if r.resource_type == ADMISSION_CHECK and get(r.props, "spec.controllerName") == MULTIKUEUE}
    for q in queues:
        checks = {c.get("name") for c in (get(q.props, "spec.admissionChecksStrategy.admissionChecks") or [])}
        if checks & multikueue:
            continue
        for group in get(q.props, "spec.resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                quota = next((int(str(x.get("nominalQuota"))) for x in flavor.get("resources") or [] if x.get("name") == TPU), 0)
                slice_group = flavor_group.get(flavor.get("name"))
                have = chips.get(slice_group, 0) if slice_group else 0
                if creates_pools and quota > have:
                    report(f"ClusterQueue {get(q.props, 'metadata.name')}: flavor {flavor.get('name')} has a {TPU} quota of "
                           f"{quota}, but its pools hold {have} chips; derive quotas from the pools", q.urn)
    local = {(get(r.props, "metadata.namespace"), get(r.props, "metadata.name")) for r in resources if r.resource_type == LOCAL_QUEUE}
    for js in (r for r in resources if r.resource_type in WORKLOAD_TYPES):
        name = (get(js.props, "metadata.labels") or {}).get(QUEUE_LABEL)
        if (get(js.props, "metadata.namespace"), name) not in local and not _holds_nothing_queued(js.props):
            report(f"{js.resource_type.rsplit(':', 1)[-1]} {get(js.props, 'metadata.name')} is not queued (label {QUEUE_LABEL} naming a LocalQueue of its "
                   "namespace): it would bypass Kueue and can hold slices a queued JobSet waits for", js.urn)


kueue_quota = StackValidationPolicy(
    name="pathways-kueue-quota",
    description="Kueue TPU quotas never exceed the chips the pools hold (a fleet manager's: its workers'); every JobSet and LeaderWorkerSet of a Kueue stack carries a LocalQueue label (but a LeaderWorkerSet whose pods tolerate no taint and request no TPU).",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
