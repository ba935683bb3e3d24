"""TPU pools consistent with the TPU catalog: machine type <-> topology <-> node count <-> placement."""

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from components.model.capacity import tpu
from policies.rules.common import NODE_POOL, get, is_tpu_pool


def _family_of(machine: str) -> tpu.TpuFamily:
    return next(f for f in tpu.FAMILIES.values() if machine in f.machine_types)


def _validate(args: ResourceValidationArgs, report) -> None:
    if args.resource_type != NODE_POOL or not is_tpu_pool(args.props):
        return
    props = args.props
    machine = get(props, "nodeConfig.machineType")
    fam = _family_of(machine)
    nodes = get(props, "nodeCount")
    if nodes is None:
        nodes = get(props, "autoscaling.maxNodeCount")
        if nodes is None and get(props, "autoscaling.totalMaxNodeCount"):
            # GKE checks a slice against the per-zone maximum, 0 here (vllm-project/ci-infra #545).
            report(f"autoscaled pool {get(props, 'name')} sets only total node limits; GKE sizes a TPU slice by the "
                   "per-zone max_node_count, which is then 0: set min_node_count/max_node_count instead", args.urn)
            return
    placement = get(props, "placementPolicy") or {}
    topology = placement.get("tpuTopology")
    name = get(props, "name")
    if nodes == 1 and topology:
        report(f"pool {name} is single-host ({machine}) but sets tpu_topology {topology}; remove it", args.urn)
        return
    if nodes is None or nodes < 1:
        report(f"pool {name} has no node count; set node_count to the slice's hosts", args.urn)
        return
    if nodes > 1:
        if fam.name == "tpu7x":
            if not placement.get("policyName"):
                report(f"pool {name} is a multi-host tpu7x slice without a workload policy; set placement_policy.policy_name", args.urn)
            elif placement.get("type"):
                # GKE stores a named policy without a type: sending one diffs (and replaces) on every update.
                report(f"pool {name} sends placement_policy.type {placement['type']} with a named workload policy; GKE stores "
                       "none, so every update would replace the slice: leave type empty", args.urn)
            return
        if placement.get("type") != "COMPACT" or not topology:
            report(f"pool {name} is multi-host ({nodes} x {machine}) without placement_policy {{type: COMPACT, tpu_topology}}", args.urn)
            return
        try:
            s = tpu.resolve(fam.name, topology, machine)
        except tpu.TpuError as e:
            report(f"pool {name}: {e}", args.urn)
            return
        if s.hosts != nodes:
            report(f"pool {name}: a {fam.name} {topology} slice on {machine} has {s.hosts} hosts, not {nodes} nodes", args.urn)


tpu_pool_catalog = ResourceValidationPolicy(
    name="pathways-tpu-pool-matches-catalog",
    description="TPU node pools agree with the TPU catalog (machine type, topology, node count, placement). Derive them from the slice's name.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
