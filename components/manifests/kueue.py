"""Kueue objects derived from the stack (pure Python): never typed twice.

Facts: ../shared/reference/kueue/FACTS.md (Kueue v0.19.2): objects at kueue.x-k8s.io/v1beta2; a JobSet
picks its LocalQueue with the label kueue.x-k8s.io/queue-name and its priority with
kueue.x-k8s.io/priority-class; Kueue admits a JobSet as one Workload (one PodSet per replicatedJob),
all or nothing, and on admission merges the chosen ResourceFlavor's nodeLabels and tolerations into
the pod templates.

- A ResourceFlavor per slice group (its nodes' accelerator, topology and slice-group labels; the TPU
  taint, and the spot taint on spot groups) and one for the head pool.
- One ClusterQueue, one resource group covering cpu, memory and google.com/tpu. Quotas are what the
  pools provide: a group's chips are its slices x hosts x chips per VM (spares are provisioned for
  hot-swap, never queue quota), its cpu and memory the TPU VMs' allocatable; the head flavor holds
  what the head pool can allocate. The head flavor is listed first, with no TPU quota: Kueue tries
  flavors in order, so a head PodSet lands there and a worker PodSet (which asks for TPUs) cannot.
- A LocalQueue in each namespace the JobSets live in, and WorkloadPriorityClasses matching the PriorityClasses.
"""

from __future__ import annotations

from typing import Any

from ..labels import HEAD_ROLE, HEAD_TAINT, ROLE_LABEL, SLICE_GROUP_LABEL, SPOT_LABEL, TPU_TAINT
from ..model import machines
from ..model.config import StackConfig
from ..model.pools import Capacity, SliceGroup
from .guardrails import PRIORITY_CLASSES

API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
QUEUE = "pathways"  # the ClusterQueue and the LocalQueue
HEAD_FLAVOR = "pathways-head"
TPU_RESOURCE = "google.com/tpu"
RESOURCES = ("cpu", "memory", TPU_RESOURCE)

_EFFECT = {"NO_SCHEDULE": "NoSchedule"}


def flavor_name(group: SliceGroup) -> str:
    return f"tpu-{group.name}"


def _toleration(taint: tuple[str, str, str]) -> dict[str, Any]:
    key, value, effect = taint
    return {"key": key, "operator": "Equal", "value": value, "effect": _EFFECT[effect]}


def resource_flavors(cfg: StackConfig) -> list[dict[str, Any]]:
    flavors = [{
        "apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": HEAD_FLAVOR},
        "spec": {"nodeLabels": {ROLE_LABEL: HEAD_ROLE}, "tolerations": [_toleration(HEAD_TAINT)]},
    }]
    for g in cfg.slices:
        tolerations = [{"key": TPU_TAINT[0], "operator": "Exists", "effect": "NoSchedule"}]
        if g.capacity is Capacity.SPOT:
            tolerations.append({"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
        flavors.append({
            "apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor_name(g)},
            "spec": {
                "nodeLabels": {
                    "cloud.google.com/gke-tpu-accelerator": g.tpu.accelerator,
                    "cloud.google.com/gke-tpu-topology": g.tpu.topology,
                    SLICE_GROUP_LABEL: g.name,
                },
                "tolerations": tolerations,
            },
        })
    return flavors


def quotas(cfg: StackConfig) -> dict[str, dict[str, int]]:
    """Per flavor: cpu (cores), memory (GiB) and TPU chips the pools provide, in flavor order."""
    head = machines.shape(cfg.head_pool.machine_type)
    out = {HEAD_FLAVOR: {
        "cpu": int(head.allocatable_cpu) * cfg.head_nodes,
        "memory": int(head.allocatable_memory_gib) * cfg.head_nodes,
        TPU_RESOURCE: 0,
    }}
    for g in cfg.slices:
        vm = machines.tpu_vm_shape(g.tpu.machine_type)
        hosts = g.count * g.tpu.hosts  # the slices, not the spares
        out[flavor_name(g)] = {
            "cpu": int(vm.allocatable_cpu) * hosts,
            "memory": int(vm.allocatable_memory_gib) * hosts,
            TPU_RESOURCE: hosts * g.tpu.chips_per_vm,
        }
    return out


def _quantity(resource: str, amount: int) -> str:
    return f"{amount}Gi" if resource == "memory" else str(amount)


def cluster_queue(cfg: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": QUEUE},
        "spec": {
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": cfg.workload_namespaces},
            ]},
            "queueingStrategy": "BestEffortFIFO",
            # A higher-priority JobSet may take slices from a lower-priority one (hot-swap, priorities).
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{
                "coveredResources": list(RESOURCES),
                "flavors": [
                    {"name": flavor, "resources": [{"name": r, "nominalQuota": _quantity(r, q[r])} for r in RESOURCES]}
                    for flavor, q in quotas(cfg).items()
                ],
            }],
        },
    }


def local_queues(cfg: StackConfig) -> list[dict[str, Any]]:
    """One LocalQueue per namespace the stack's JobSets live in."""
    return [
        {"apiVersion": API_VERSION, "kind": "LocalQueue", "metadata": {"name": QUEUE, "namespace": ns}, "spec": {"clusterQueue": QUEUE}}
        for ns in cfg.workload_namespaces
    ]


def workload_priority_classes() -> list[dict[str, Any]]:
    return [
        {"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": f"pathways-{key}"},
         "value": value, "description": text}
        for key, (value, text) in PRIORITY_CLASSES.items()
    ]


def queue_labels(w_priority: str) -> dict[str, str]:
    """The labels a JobSet carries to be queued: its LocalQueue and its WorkloadPriorityClass."""
    return {QUEUE_LABEL: QUEUE, PRIORITY_LABEL: f"pathways-{w_priority}"}


def objects(cfg: StackConfig) -> list[dict[str, Any]]:
    return [*resource_flavors(cfg), cluster_queue(cfg), *local_queues(cfg), *workload_priority_classes()]
