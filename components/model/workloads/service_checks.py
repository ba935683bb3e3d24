"""Rules of a Shared Pathways Service (mode: service; its schema: ``service.SharedService``): what the
pathwaysutils client expects, and room for its proxies. Registered, in the order load() reports them, in ``checks``.
"""

from __future__ import annotations

from components.model import quantity
from components.model.capacity import machines
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig
from components.model.workloads.service import CLIENT_CHIPS_PER_VM, CLIENT_INSTANCE_TYPE, CLIENT_NAMESPACE, CLIENT_PROXY_RESOURCES
from components.model.workloads.workload import Workload


def service(cfg: StackConfig, i: int, w: Workload) -> list[Problem]:
    """service: is for mode: service only; a service is what pathwaysutils 0.1.13's client can connect to."""
    if w.mode != "service":
        if w.service is not None:
            return [Problem(config_key(("workloads", i, "service")), "only for mode: service; remove it or set mode: service")]
        return []
    problems = []
    sv = w.service_settings
    if sv.namespace != CLIENT_NAMESPACE:
        # run_workload and isc_pathways.connect pass no namespace: verify_pathways_service_is_up and
        # get_pathways_service_images read the service from their default, "default" (pathwaysutils 0.1.13).
        problems.append(Problem(config_key(("workloads", i, "service", "namespace")), (
            f"{sv.namespace!r}: pathwaysutils' client looks for the service JobSet in {CLIENT_NAMESPACE!r} only "
            f"(run_workload and isc_pathways.connect pass no namespace); use {CLIENT_NAMESPACE!r} or remove the key"
        )))
    group = cfg.workload_group(w).tpu
    if not CLIENT_INSTANCE_TYPE.fullmatch(group.instance_type) or group.chips_per_vm != CLIENT_CHIPS_PER_VM:
        problems.append(Problem(config_key(("workloads", i, "sliceGroup")), (
            f"{cfg.workload_group(w).name!r} is {group.name} ({group.machine_type}, --instance_type={group.instance_type}), "
            "which pathwaysutils' client cannot use: it accepts only tpuv5e, tpuv5, tpuv6e and tpu7x instance types "
            "(validators._validate_tpu_supported) and counts 4 chips per VM (tpu_specs.get_tpu_config); give the service "
            "a v5e, v5p, v6e or tpu7x group of 4-chip VMs"
        )))
    for key, on in (("profiling", w.profiling), ("persistence", w.persistence), ("xlaFlags", w.xla_flags),
                    ("hloDump", w.hlo_dump), ("elastic", w.elastic)):
        if on:
            problems.append(Problem(config_key(("workloads", i, key)), (
                "configures the IFRT proxy or the program, which a service's clients bring themselves; remove it"
            )))
    try:
        machine = machines.shape(sv.proxy_machine_type)
    except machines.MachineError as e:
        return [*problems, Problem(config_key(("workloads", i, "service", "proxyMachineType")), str(e))]
    cpu, mem = quantity.parse(CLIENT_PROXY_RESOURCES[0]), quantity.parse(CLIENT_PROXY_RESOURCES[1]) / quantity.GIB
    if not machines.fits(machine, cpu, mem):
        problems.append(Problem(config_key(("workloads", i, "service", "proxyMachineType")), (
            f"{machine.name} ({machine.allocatable_cpu:.2f} vCPU, {machine.allocatable_memory_gib:.1f} GiB allocatable) cannot "
            f"hold a client proxy ({CLIENT_PROXY_RESOURCES[0]} CPU, {CLIENT_PROXY_RESOURCES[1]}: pathwaysutils' pw-proxy.yaml); "
            "use n2-standard-32 or larger"
        )))
    if sum(1 for x in cfg.workloads if x.mode == "service") > 1 and w is next(x for x in cfg.workloads if x.mode == "service"):
        problems.append(Problem(config_key(("workloads", i, "mode")), "one service workload per stack (its clients share one proxy pool)"))
    return problems
