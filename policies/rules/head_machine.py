"""The head machine fits the head pod (the seed: at least a dedicated n2-standard-64)."""

from decimal import Decimal

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.model import quantity
from components.model.capacity import machines
from components.model.config import head_pod_demand
from policies.rules.common import JOBSET, NODE_POOL, get, is_head_pool, pod_specs


def _head_demands(args: StackValidationArgs):
    for js in (r for r in args.resources if r.resource_type == JOBSET):
        for name, pod in pod_specs(js.props):
            if name != "pathways-head":
                continue
            items = list(pod.get("initContainers") or []) + list(pod.get("containers") or [])
            cpu = sum((quantity.parse(get(c, "resources.requests.cpu", "0")) for c in items), Decimal(0))
            mem = sum((quantity.parse(get(c, "resources.requests.memory", "0")) for c in items), Decimal(0)) / quantity.GIB
            yield f"JobSet {get(js.props, 'metadata.name')}", cpu, mem


def _validate(args: StackValidationArgs, report) -> None:
    demands = list(_head_demands(args))
    if not demands:
        cpu, mem, _ = head_pod_demand(None)
        demands = [("a default batch head pod", cpu, mem)]
    for pool in (r for r in args.resources if r.resource_type == NODE_POOL and is_head_pool(r.props)):
        machine_type = get(pool.props, "nodeConfig.machineType", "")
        try:
            shape = machines.shape(machine_type)
        except machines.MachineError as e:
            report(str(e), pool.urn)
            continue
        for who, cpu, mem in demands:
            if not machines.fits(shape, cpu, mem):
                report(f"{machine_type} cannot hold {who} ({cpu:g} vCPU, {mem:.1f} GiB); use "
                       f"{machines.smallest_fitting(cpu, mem)} or larger", pool.urn)


head_machine = StackValidationPolicy(
    name="pathways-head-machine-fits",
    description="The head pool's machine holds resource manager + IFRT proxy + user container (seed: >= n2-standard-64). Pick a larger machine type.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
