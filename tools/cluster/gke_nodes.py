"""Fake nodes exactly as GKE makes them, from the node pools a plan creates.

For every NodePool registration of a plan (the inputs Pulumi sends to GKE), one Node per VM with:
- the labels GKE sets on every node: cloud.google.com/gke-nodepool, node.kubernetes.io/instance-type,
  cloud.google.com/machine-family, topology.kubernetes.io/region and zone, kubernetes.io/hostname,
  kubernetes.io/os and arch (GKE "Node labels"); on TPU nodes cloud.google.com/gke-tpu-accelerator and
  cloud.google.com/gke-tpu-topology (GKE "TPUs in GKE": the slice's topology, from the pool's placement
  policy or, for a single-host pool, its machine type); on spot nodes cloud.google.com/gke-spot=true;
- the pool's own labels and taints (nodeConfig.labels, nodeConfig.taints);
- capacity: the machine's vCPUs, memory and 110 pods (GKE's default maximum pods per node), and
  google.com/tpu chips on TPU VMs;
- allocatable: what GKE leaves for workload pods: capacity less its reservations (components/model/
  machines.py: CPU 6 % of the first core, 1 % of the next, 0.5 % of the next 2, 0.25 % above 4; memory
  25/20/10/6/2 % tiers and the 100 MiB eviction threshold, GKE "Plan GKE Standard node sizes") and less
  what GKE's own DaemonSets request on every node (1 CPU, 2 GiB), which do not run here.
Flex-start pools are created at their full size (GKE's autoscaler would scale them up for a pending slice).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from components.model import machines, tpu
from components.resource_types import NODE_POOL
from infra.offline.engine import Plan

GKE_MAX_PODS_PER_NODE = 110
_EFFECT = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


def _chips_per_vm(machine_type: str) -> int:
    return next(f.machine_types[machine_type] for f in tpu.FAMILIES.values() if machine_type in f.machine_types)


def _single_host_topology(machine_type: str) -> str:
    """The topology GKE labels a single-host TPU VM with: its chips laid out as the family writes them."""
    fam = next(f for f in tpu.FAMILIES.values() if machine_type in f.machine_types)
    for name in tpu.valid_sizes(fam):
        s = tpu.from_name(name)
        if s.machine_type == machine_type and s.hosts == 1:
            return s.topology
    raise ValueError(f"no single-host topology for {machine_type}")


def _quantity_gib(gib: Decimal) -> str:
    return f"{int(gib * 1024)}Mi"


def pool_nodes(pool: dict[str, Any], region: str, zone: str) -> list[dict[str, Any]]:
    """The Nodes GKE would run for one node pool (its inputs as the plan records them)."""
    cfg = pool.get("nodeConfig") or {}
    machine_type = cfg["machineType"]
    count = pool.get("nodeCount") or (pool.get("autoscaling") or {}).get("maxNodeCount") \
        or (pool.get("autoscaling") or {}).get("totalMaxNodeCount") or pool.get("initialNodeCount") or 1
    name = pool["name"]
    labels = {
        "cloud.google.com/gke-nodepool": name,
        "node.kubernetes.io/instance-type": machine_type,
        "cloud.google.com/machine-family": machine_type.split("-")[0],
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **(cfg.get("labels") or {}),
    }
    taints = [{"key": t["key"], "value": t["value"], "effect": _EFFECT[t["effect"]]} for t in cfg.get("taints") or []]
    if cfg.get("spot"):
        labels["cloud.google.com/gke-spot"] = "true"
    if tpu.is_tpu_machine(machine_type):
        fam = next(f for f in tpu.FAMILIES.values() if machine_type in f.machine_types)
        placement = pool.get("placementPolicy") or {}
        labels["cloud.google.com/gke-tpu-accelerator"] = fam.accelerator
        labels["cloud.google.com/gke-tpu-topology"] = placement.get("tpuTopology") or _single_host_topology(machine_type)
        shape = machines.tpu_vm_shape(machine_type)
        chips = str(_chips_per_vm(machine_type))
    else:
        shape = machines.shape(machine_type)
        chips = None
    capacity = {"cpu": str(shape.vcpus), "memory": _quantity_gib(Decimal(shape.memory_gib)), "pods": str(GKE_MAX_PODS_PER_NODE)}
    allocatable = {"cpu": f"{int(shape.allocatable_cpu * 1000)}m", "memory": _quantity_gib(shape.allocatable_memory_gib),
                   "pods": str(GKE_MAX_PODS_PER_NODE)}
    if chips:
        capacity["google.com/tpu"] = allocatable["google.com/tpu"] = chips
    nodes = []
    for i in range(int(count)):
        node = f"gke-{name}-{i}"
        nodes.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {**labels, "kubernetes.io/hostname": node},
                         "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": capacity, "allocatable": allocatable},
        })
    return nodes


def plan_nodes(plan: Plan, region: str, zone: str) -> list[dict[str, Any]]:
    """Every node of every pool the plan creates (the system pool too: the controllers' pods go there)."""
    return [n for r in plan.by_type(NODE_POOL) for n in pool_nodes(r.inputs, region, zone)]
