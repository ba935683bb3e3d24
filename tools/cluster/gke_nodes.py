"""Fake nodes as GKE makes them, from the node pools a plan creates, built from GKE's facts in
tools/cluster/gke-nodes.yaml (public sources: real nodes, GKE's own cluster autoscaler, the Compute Engine
machine-type list; never this project's tables in components/model).

For every NodePool registration of a plan (the inputs Pulumi sends to GKE), one Node per VM with:
- the machine type's GKE labels, taints, capacity and allocatable from the fixture (allocatable is what
  GKE leaves for pods; GKE's own DaemonSets, which take about 1 CPU and 2 GiB of it, do not run here);
- the labels GKE sets per pool and node: cloud.google.com/gke-nodepool, kubernetes.io/hostname,
  topology.kubernetes.io/region and zone, node.kubernetes.io/instance-type, kubernetes.io/os and arch; on TPU nodes the slice's topology,
  cloud.google.com/gke-tpu-topology: the pool's placement-policy topology (multi-host) or the machine
  type's own (single-host); on spot nodes cloud.google.com/gke-spot=true and gke-provisioning=spot;
- the pool's own labels and taints (nodeConfig.labels, nodeConfig.taints).

GKE refuses a multi-host TPU pool whose node count is not the topology's chips over the machine type's
chips per VM, and a topology of the wrong rank for the family; so does this, with GKE's facts: a pool the
project sizes wrong fails the tier instead of getting nodes.
Flex-start pools are created at their full size (GKE's autoscaler would scale them up for a pending slice).
Queued-provisioning pools get no node here: GKE makes theirs only for a ProvisioningRequest, tainted
cloud.google.com/gke-queued=true:NoSchedule (tools/cluster/provisioner.py stands in for GKE there).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from components.constants import NODE_POOL
from infra.offline.engine import Plan

FIXTURE = Path(__file__).resolve().parent / "gke-nodes.yaml"
RESOURCE_POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
_EFFECT = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}


class PoolRefused(ValueError):
    """What GKE would answer to a node pool create."""


@functools.lru_cache(maxsize=1)
def machine_facts() -> dict[str, dict[str, Any]]:
    """Machine type -> GKE's facts for its nodes (tools/cluster/gke-nodes.yaml)."""
    doc = yaml.safe_load(FIXTURE.read_text())
    return {m["machineType"]: m for m in doc["machineTypes"]}


def _chips(topology: str) -> int:
    return math.prod(int(d) for d in topology.split("x"))


# Dynamic slicing (GKE "Use dynamic slicing"; the slice controller's internal/core/constants.go and its sub-slice test
# cluster, AI-Hypercomputer/xpk slice-main @ 250d4b3c slice/hack/kind-cluster-subslice.yaml): a pool on a sub-block under
# a provision-only workload policy is one 4x4x4 cube, and GKE labels its nodes with their block and, per partition
# shape, the partition they belong to (each halving the one above) and its health. GKE's IDs are opaque; here they
# sort as the cubes are listed and the hosts are numbered, the layout the plan's prediction assumes.
PARTITIONS = (("4x4x4", 16), ("2x4x4", 8), ("2x2x4", 4), ("2x2x2", 2), ("2x2x1", 1))
BLOCK_LABEL = "cloud.google.com/gce-topology-block"


def partition_labels(block: str, cube: int, host: int) -> dict[str, str]:
    """The dynamic-slicing labels of host `host` (0-15) of cube `cube` of reservation block `block`."""
    labels = {BLOCK_LABEL: block}
    for shape, hosts in PARTITIONS:
        part = f"{block}-c{cube:03d}" + ("" if shape == "4x4x4" else f"-{shape}-{host // hosts:02d}")
        labels[f"cloud.google.com/gke-tpu-partition-{shape}-id"] = part
        labels[f"cloud.google.com/gke-tpu-partition-{shape}-state"] = "HEALTHY"
    return labels


def pool_nodes(pool: dict[str, Any], region: str, zone: str, cube: "tuple[str, int] | None" = None) -> list[dict[str, Any]]:
    """The Nodes GKE would run for one node pool (its inputs as the plan records them); `cube`: (block, index) for a
    pool set's pool."""
    cfg = pool.get("nodeConfig") or {}
    machine_type = cfg["machineType"]
    name = pool["name"]
    facts = machine_facts().get(machine_type)
    if facts is None:
        raise PoolRefused(f"node pool {name}: no GKE node facts for machine type {machine_type} in {FIXTURE.name}; "
                          f"known: {', '.join(sorted(machine_facts()))}")
    count = int(pool.get("nodeCount") or (pool.get("autoscaling") or {}).get("maxNodeCount")
                or (pool.get("autoscaling") or {}).get("totalMaxNodeCount") or pool.get("initialNodeCount") or 1)
    labels = {
        **facts["labels"],
        "cloud.google.com/gke-nodepool": name,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
        # the kubelet's well-known label (k8s.io/api/core/v1 LabelInstanceTypeStable): the VM's machine type
        "node.kubernetes.io/instance-type": machine_type,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **(cfg.get("labels") or {}),
    }
    # GKE's own taints and the pool's, one per key and effect (the API server refuses duplicates; a pool that
    # names GKE's TPU taint itself gets it once)
    by_key = {(t["key"], t["effect"]): dict(t) for t in facts["taints"]}
    for t in cfg.get("taints") or []:
        by_key[(t["key"], _EFFECT[t["effect"]])] = {"key": t["key"], "value": t["value"], "effect": _EFFECT[t["effect"]]}
    taints = list(by_key.values())
    if queued(pool):
        # GKE taints queued-provisioning nodes (Cluster Toolkit modules/compute/gke-node-pool, enable_queued_provisioning:
        # "adds the cloud.google.com/gke-queued taint"; it adds the label itself, GKE does not)
        taints.append({"key": "cloud.google.com/gke-queued", "value": "true", "effect": "NoSchedule"})
    if cfg.get("spot"):
        labels.update({"cloud.google.com/gke-spot": "true", "cloud.google.com/gke-provisioning": "spot"})
    if "chips" in facts:
        topology = (pool.get("placementPolicy") or {}).get("tpuTopology")
        if topology:
            single = facts["singleHostTopology"]
            if len(topology.split("x")) != len(single.split("x")):
                raise PoolRefused(f"node pool {name}: topology {topology} is not a {len(single.split('x'))}-D topology, as {machine_type} needs")
            hosts, rest = divmod(_chips(topology), int(facts["chips"]))
            if rest or hosts != count:
                raise PoolRefused(f"node pool {name}: topology {topology} has {_chips(topology)} chips, {facts['chips']} per "
                                  f"{machine_type} VM: {_chips(topology) / int(facts['chips']):g} nodes, not {count}")
        labels["cloud.google.com/gke-tpu-topology"] = topology or facts["singleHostTopology"]
    # GKE names a node gke-<cluster>-<pool>-<instance group hash>-<suffix>: here the hash is of what the node is,
    # so a pool of the same name but another machine (another stack) gets other nodes
    digest = hashlib.sha256(json.dumps([labels, taints, facts["capacity"]], sort_keys=True).encode()).hexdigest()[:6]
    nodes = []
    for i in range(count):
        node = f"gke-{name}-{digest}-{i}"
        own = partition_labels(cube[0], cube[1], i) if cube is not None else {}
        nodes.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": node, "labels": {**labels, **own, "kubernetes.io/hostname": node},
                         "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": dict(facts["capacity"]), "allocatable": dict(facts["allocatable"])},
        })
    return nodes


def queued(pool: dict[str, Any]) -> bool:
    """A queued-provisioning pool: nodes only for ProvisioningRequests."""
    return bool((pool.get("queuedProvisioning") or {}).get("enabled"))


def cubes(plan: Plan) -> dict[str, tuple[str, int]]:
    """Pool name -> (reservation block, cube index) for each pool on a sub-block under a provision-only workload policy,
    numbered per policy in the order the group declares its sub-blocks (its pools are tpu-<group>-<i>): the order the
    plan's placement gives cubes that tie (components/model/capacity/slice_placement.py). The plan's own order is by
    URN, where sub-block 10 comes before 2."""
    provision_only = {r.inputs.get("name") for r in plan.by_type(RESOURCE_POLICY)
                      if (r.inputs.get("workloadPolicy") or {}).get("acceleratorTopologyMode") == "PROVISION_ONLY"}
    found: dict[str, list[tuple[int, str, str]]] = {}
    for r in plan.by_type(NODE_POOL):
        policy = (r.inputs.get("placementPolicy") or {}).get("policyName")
        values = ((r.inputs.get("nodeConfig") or {}).get("reservationAffinity") or {}).get("values") or []
        if isinstance(policy, str) and policy in provision_only and values and "/reservationSubBlocks/" in values[0]:
            block = values[0].split("/reservationBlocks/", 1)[1].split("/", 1)[0]
            declared = re.search(r"-(\d+)$", r.inputs["name"])
            found.setdefault(policy, []).append((int(declared.group(1)) if declared else len(found.get(policy, [])), r.inputs["name"], block))
    return {name: (block, i) for pools in found.values() for i, (_, name, block) in enumerate(sorted(pools))}


def plan_nodes(plan: Plan, region: str, zone: str) -> list[dict[str, Any]]:
    """Every node of every pool the plan creates (the system pool too: the controllers' pods go there), but for
    queued-provisioning pools, which have none until a ProvisioningRequest asks (queued_pools)."""
    cube = cubes(plan)
    return [n for r in plan.by_type(NODE_POOL) if not queued(r.inputs)
            for n in pool_nodes(r.inputs, region, zone, cube.get(r.inputs["name"]))]


def queued_pools(plan: Plan, region: str, zone: str) -> dict[str, list[dict[str, Any]]]:
    """Per queued-provisioning pool of the plan: the nodes GKE would make for it when a request is provisioned."""
    return {r.inputs["name"]: pool_nodes(r.inputs, region, zone) for r in plan.by_type(NODE_POOL) if queued(r.inputs)}
