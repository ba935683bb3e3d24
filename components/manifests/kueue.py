"""Kueue objects derived from the stack (pure Python): never typed twice.

Facts: Kueue v0.19.2 (its CRDs and sources): objects at kueue.x-k8s.io/v1beta2; a JobSet picks its
LocalQueue with the label kueue.x-k8s.io/queue-name and its priority with kueue.x-k8s.io/priority-class;
Kueue admits a JobSet as one Workload (one PodSet per replicatedJob), all or nothing, and on admission
merges the chosen ResourceFlavor's nodeLabels and tolerations into the pod templates.

- A ResourceFlavor per slice group (its nodes' accelerator, topology and slice-group labels; the TPU
  taint, and the spot taint on spot groups) and one for the head pool.
- ClusterQueues covering cpu, memory and google.com/tpu. Quotas are what the pools provide: a group's
  chips are its slices x hosts x chips per VM (spares are provisioned for hot-swap, never queue quota),
  its cpu and memory the TPU VMs' allocatable; the head flavor holds what the head pool can allocate.
  Kueue matches a PodSet against a flavor by that flavor's nodeLabels keys only, so head pods require a
  node without a TPU accelerator label (a key every TPU flavor carries): a head PodSet matches the head
  flavor alone, a worker PodSet its slice group's flavor (and the head flavor, which has no TPU quota).
  The head flavor is listed last, so a head PodSet's pass over the flavors ends where its status names
  the head flavor's quota. The search stops where a PodSet fits or could preempt (flavorFungibility
  MayStopSearch: Kueue's default for whenCanPreempt, TryNextFlavor, would look past a flavor it could
  preempt in).
- A resource group holds at most 64 flavors (v1beta2 CRD, resourceGroups[].flavors maxItems 64), so a
  stack with more slice groups gets several ClusterQueues of at most 63 TPU flavors each, in one cohort:
  the first holds the head pool's quota, the others borrow it (and it reclaims what they borrow).
- A LocalQueue per workload, in its namespace: suspending a workload sets its queue's stopPolicy to
  HoldAndDrain. Kueue un-suspends every job it has admitted (jobframework/reconciler.go, "handle job is
  suspended"), so a JobSet's own spec.suspend cannot hold it; a held queue evicts the admitted Workload
  (the JobSet is suspended, its pods deleted) and admits nothing until it is released.
- WorkloadPriorityClasses matching the PriorityClasses.
- Per pool set (slices[].subBlocks, docs/dynamic-slicing.md): a Topology slices-<group> (block, each partition, host)
  that its flavor names (topologyName: Kueue's topology-aware scheduling, on by default in v0.19.2, places each
  slice on its cubes), and an AdmissionCheck slices-<group> of the slice controller (accelerator.gke.io/slice),
  required on that flavor: the workload starts once the Slice of the chosen hosts is Ready.
- Per team (pathways:teams, components/manifests/teams.py has the rest): a ClusterQueue team-<name> in the cohort
  (every group's flavor at its owned slices, 0 elsewhere so that it may borrow; its limits; the head flavor at 0,
  borrowed from the stack's queue, which holds the slices no team owns; its fair-sharing weight), a Cohort
  teams-<parent> for a group of teams, and its run queue in its namespace.
- Per queued-provisioning slice group (GKE "flex-start with queued provisioning"): a ProvisioningRequestConfig
  (class queued-provisioning.gke.io, managedResources google.com/tpu, so a workload's request names its TPU
  workers only and never the CPU head) and an AdmissionCheck of Kueue's provisioning controller naming it,
  required on that group's flavor alone (admissionChecksStrategy onFlavors). Kueue then reserves the quota,
  makes the ProvisioningRequest, and admits the workload once GKE has provisioned its slices; a failed request
  is retried with backoff (retryStrategy). Shapes: Kueue's provisioning docs and CRDs, Cluster Toolkit's
  examples/gke-consumption-options/dws-flex-start-queued-provisioning/tpu-dws-queues.yaml.tftpl.
"""

from __future__ import annotations

from typing import Any

from components.constants import (
    HEAD_TAINT,
    QUEUED_TAINT,
    SPOT_LABEL,
    TPU_TAINT,
)
from components.manifests import placement
from components.manifests.guardrails import PRIORITY_CLASSES
from components.manifests.kueue_api import API_VERSION, RESOURCES, TPU_RESOURCE
from components.manifests.runs import run_local_queues
from components.model import quantity
from components.model.capacity import dynamic_slicing, machines, queue_shares
from components.model.capacity.pools import Capacity, SliceGroup
from components.model.capacity.queue_shares import QueueShares
from components.model.resolved import MAX_FLAVORS_PER_RESOURCE_GROUP as MAX_FLAVORS_PER_RESOURCE_GROUP
from components.model.resolved import QUEUE, ResolvedStack
from components.model.workloads.isolation import ISOLATION_LABEL, IsolationDomain
from components.model.workloads.runs import run_queue
from components.model.workloads.teams import TEAM_LABEL, Team

HEAD_FLAVOR = "pathways-head"

_EFFECT = {"NO_SCHEDULE": "NoSchedule"}


PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
QUEUED_PROVISIONING_CLASS = "queued-provisioning.gke.io"
# Kueue's own defaults (ProvisioningRequestConfig CRD, retryStrategy), written out so that the plan shows them: a
# failed request is retried after about 1, 2 and 4 minutes; after the third the workload is deactivated.
PROVISIONING_RETRY = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}


def flavor_name(group: SliceGroup) -> str:
    return dynamic_slicing.flavor_name(group.name)


def provisioning_check_name(group: SliceGroup) -> str:
    """The AdmissionCheck (and its ProvisioningRequestConfig) of a queued-provisioning group."""
    return f"queued-{group.name}"


def _toleration(taint: tuple[str, str, str]) -> dict[str, Any]:
    key, value, effect = taint
    return {"key": key, "operator": "Equal", "value": value, "effect": _EFFECT[effect]}


def resource_flavors(stack: ResolvedStack) -> list[dict[str, Any]]:
    if stack.shared_cluster_queue is not None:
        return []  # the shared ClusterQueue's flavors are its owner's
    flavors = [{
        "apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": HEAD_FLAVOR},
        "spec": {"nodeLabels": placement.head_selector(stack), "tolerations": [_toleration(HEAD_TAINT)]},
    }]
    for d in stack.domains:
        flavors.append({"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": d.head_flavor}, "spec": {
            "nodeLabels": {**placement.head_selector(stack), ISOLATION_LABEL: d.name},
            "tolerations": [_toleration(HEAD_TAINT), _toleration(d.taint)]}})
    for g in stack.slices:
        tolerations = [{"key": TPU_TAINT[0], "operator": "Exists", "effect": "NoSchedule"}]
        domain = stack.group_domain(g.name)
        if domain is not None:
            tolerations.append(_toleration(domain.taint))
        if g.capacity is Capacity.SPOT:
            tolerations.append({"key": SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
        if g.queued_provisioning:
            tolerations.append(_toleration(QUEUED_TAINT))
        # a domain's group: its label among the flavor's nodeLabels too, so that every pod Kueue admits there selects
        # the domain's nodes (the guard pathways-isolation requires it of the domain's Pathways pods)
        labels = {**placement.group_selector(g), **({ISOLATION_LABEL: domain.name} if domain is not None else {})}
        spec: dict[str, Any] = {"nodeLabels": labels, "tolerations": tolerations}
        if g.dynamic:
            spec["topologyName"] = topology_name(g)  # topology-aware scheduling places the slices on its cubes
        flavors.append({"apiVersion": API_VERSION, "kind": "ResourceFlavor", "metadata": {"name": flavor_name(g)}, "spec": spec})
    return flavors


def topology_name(group: SliceGroup) -> str:
    """A pool set's Kueue Topology (and its slice AdmissionCheck)."""
    return dynamic_slicing.topology_name(group.name)


def pool_set_objects(stack: ResolvedStack) -> list[dict[str, Any]]:
    """Per pool set: the Topology its flavor names (block, each partition, host: docs/dynamic-slicing.md) and the
    AdmissionCheck of the slice controller, which forms the Slice of the hosts Kueue chose and lets the workload start
    once GKE reports it Ready."""
    if stack.shared_cluster_queue is not None:
        return []
    out: list[dict[str, Any]] = []
    for g in stack.slices:
        if not g.dynamic:
            continue
        name = topology_name(g)
        out.append({"apiVersion": API_VERSION, "kind": "Topology", "metadata": {"name": name}, "spec": {
            "levels": [{"nodeLabel": label} for label in dynamic_slicing.topology_levels(g.forms_sub_slices)]}})
        out.append({"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": name},
                    "spec": {"controllerName": dynamic_slicing.SLICE_CONTROLLER}})
    return out


def slice_quota(g: SliceGroup) -> dict[str, int]:
    """cpu (cores), memory (GiB) and TPU chips of one slice of the group: a team's share is a multiple of it."""
    vm = machines.tpu_vm_shape(g.tpu.machine_type)
    return {"cpu": int(vm.allocatable_cpu) * g.tpu.hosts, "memory": int(vm.allocatable_memory_gib) * g.tpu.hosts,
            TPU_RESOURCE: g.tpu.hosts * g.tpu.chips_per_vm}


def quotas(stack: ResolvedStack) -> dict[str, dict[str, int]]:
    """Per flavor: cpu (cores), memory (GiB) and TPU chips the pools provide, in flavor order."""
    head = machines.shape(stack.head_machine_type)
    out = {HEAD_FLAVOR: {
        "cpu": int(head.allocatable_cpu) * stack.head_nodes,
        "memory": int(head.allocatable_memory_gib) * stack.head_nodes,
        TPU_RESOURCE: 0,
    }}
    for d in stack.domains:
        out[d.head_flavor] = {"cpu": int(head.allocatable_cpu) * d.head_nodes,
                              "memory": int(head.allocatable_memory_gib) * d.head_nodes, TPU_RESOURCE: 0}
    for g in stack.slices:
        one = slice_quota(g)  # the slices, not the spares (none before a future reservation's delivery)
        out[flavor_name(g)] = {r: n * stack.group_slices(g) for r, n in one.items()}
    return out


def slice_shares(stack: ResolvedStack) -> dict[str, QueueShares]:
    """ClusterQueue -> its share of each fixed group in slices: the model the plan proves admission from."""
    available = {g.name: stack.group_slices(g) for g in stack.slices}
    return {q.name: q for q in queue_shares.stack_queues(stack.slices, stack.teams, COHORT, available)}


def own_quotas(stack: ResolvedStack) -> dict[str, dict[str, int]]:
    """What the stack's own ClusterQueues hold: the pools' quotas less the slices the teams own (none without teams)."""
    q = quotas(stack)
    groups = {g.name: g for g in stack.slices}
    for shares in slice_shares(stack).values():
        if shares.team is None:
            for group, share in shares.groups.items():
                q[flavor_name(groups[group])] = {r: n * share.nominal for r, n in slice_quota(groups[group]).items()}
    return q


def _quantity(resource: str, amount: int) -> str:
    # as the API server stores it ("0", not "0Gi"): anything else is a change on every preview
    return quantity.canonical(f"{amount}Gi" if resource == "memory" else str(amount))


def quota_quantities(stack: ResolvedStack) -> dict[str, dict[str, str]]:
    """The quotas as Kubernetes quantities, as the ClusterQueues write them (memory in Gi): the stack output."""
    return {flavor: {r: _quantity(r, n) for r, n in amounts.items()} for flavor, amounts in quotas(stack).items()}


COHORT = QUEUE


def queue_namespaces(stack: ResolvedStack) -> dict[str, list[str]]:
    """ClusterQueue -> the namespaces of the LocalQueues the stack points at it, the stack's own first: all a queue
    admits from (security #73.19: the stack's queues never select a team's namespace, where only the team's queue
    may admit, whoever makes a LocalQueue there)."""
    out: dict[str, list[str]] = {}
    made = [*local_queues(stack), *run_local_queues(stack),
            *(o for o in team_kueue_objects(stack) if o["kind"] == "LocalQueue")]
    for lq in sorted(made, key=lambda o: o["metadata"]["namespace"] != stack.namespace):
        names = out.setdefault(lq["spec"]["clusterQueue"], [])
        if lq["metadata"]["namespace"] not in names:
            names.append(lq["metadata"]["namespace"])
    return out


def cluster_queues(stack: ResolvedStack) -> list[dict[str, Any]]:
    if stack.shared_cluster_queue is not None:
        return []  # made elsewhere: the stack's LocalQueues point at it
    q = own_quotas(stack)
    shards = stack.queue_shards
    admitted_from = queue_namespaces(stack)
    sharded = len(shards) > 1 or bool(stack.teams)  # teams borrow from the stack's queue in its cohort
    out = []
    for i, (name, groups) in enumerate(shards):
        flavors = [{"name": flavor_name(g), "resources": [{"name": r, "nominalQuota": _quantity(r, q[flavor_name(g)][r])} for r in RESOURCES]}
                   for g in groups]
        # last: a head PodSet's one pass over the flavors then ends at the one it matches, and its status names
        # that flavor's quota (Kueue resumes the next pass after the flavor it stopped at)
        flavors.append({"name": HEAD_FLAVOR, "resources": [
            {"name": r, "nominalQuota": _quantity(r, q[HEAD_FLAVOR][r] if i == 0 else 0)} for r in RESOURCES]})
        preemption: dict[str, Any] = {"withinClusterQueue": "LowerPriority"}
        spec: dict[str, Any] = {
            "namespaceSelector": {"matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": admitted_from.get(name) or [stack.namespace]},
            ]},
            "queueingStrategy": "BestEffortFIFO",
            # A higher-priority JobSet may take slices from a lower-priority one (hot-swap, priorities).
            "preemption": preemption,
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
            "resourceGroups": [{"coveredResources": list(RESOURCES), "flavors": flavors}],
        }
        checks = [{"name": provisioning_check_name(g), "onFlavors": [flavor_name(g)]} for g in groups if g.queued_provisioning]
        checks += [{"name": topology_name(g), "onFlavors": [flavor_name(g)]} for g in groups if g.dynamic]
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": checks}
        if sharded:
            # The queues share the head pool (and the teams the slices no team owns) through the cohort: the
            # first lends, the others borrow. borrowWithinCohort lets a workload that borrows preempt lower-priority
            # ones of the other queues; Kueue applies it only under classical preemption, "not with Fair Sharing"
            # (the v0.19.2 ClusterQueue CRD), so it is set only where teams (fair sharing) are not.
            spec["cohortName"] = COHORT
            preemption["reclaimWithinCohort"] = "Any"
            if not stack.teams:
                preemption["borrowWithinCohort"] = {"policy": "LowerPriority"}
        out.append({"apiVersion": API_VERSION, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec})
    return out


def _weight(w: float) -> str:
    return str(int(w)) if float(w).is_integer() else repr(w)


def team_groups(stack: ResolvedStack, team: Team) -> tuple[SliceGroup, ...]:
    """The groups a team's queue lists: its isolation domain's, or every group of no domain."""
    domain = stack.team_domain(team)
    return tuple(g for g in stack.slices if g.name in domain.groups) if domain else stack.shared_slices


def team_cluster_queue(stack: ResolvedStack, team: Team) -> dict[str, Any]:
    flavors = []
    shares = slice_shares(stack)[team.cluster_queue].groups
    domain = stack.team_domain(team)
    groups = team_groups(stack, team)
    for g in groups:
        share = shares.get(g.name, queue_shares.SliceShare(nominal=0))
        one = slice_quota(g)
        resources = []
        for r in RESOURCES:
            entry: dict[str, Any] = {"name": r, "nominalQuota": _quantity(r, one[r] * share.nominal)}
            if share.borrowing_limit is not None:
                entry["borrowingLimit"] = _quantity(r, one[r] * share.borrowing_limit)
            if share.lending_limit is not None:
                entry["lendingLimit"] = _quantity(r, one[r] * share.lending_limit)
            resources.append(entry)
        flavors.append({"name": flavor_name(g), "resources": resources})
    flavors.append({"name": domain.head_flavor if domain else HEAD_FLAVOR, "resources": [{"name": r, "nominalQuota": _quantity(r, 0)} for r in RESOURCES]})
    spec: dict[str, Any] = {
        "cohortName": domain.cohort if domain else team.cohort or COHORT,
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [team.team_namespace]}]},
        "queueingStrategy": "BestEffortFIFO",
        # no borrowWithinCohort: teams turn fair sharing on, under which Kueue does not use it (CRD: "not with Fair Sharing")
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
        "fairSharing": {"weight": _weight(team.weight)},
        "resourceGroups": [{"coveredResources": list(RESOURCES), "flavors": flavors}],
    }
    checks = [{"name": provisioning_check_name(g), "onFlavors": [flavor_name(g)]} for g in groups if g.queued_provisioning]
    checks += [{"name": topology_name(g), "onFlavors": [flavor_name(g)]} for g in groups if g.dynamic]
    if stack.fleet_manager:
        # its runs go to the workers its MultiKueue check names (teams[].workers), on every flavor, as the stack's own
        checks = [{"name": team.fleet_check}]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue",
            "metadata": {"name": team.cluster_queue, "labels": {TEAM_LABEL: team.name}}, "spec": spec}


def cohorts(stack: ResolvedStack) -> list[dict[str, Any]]:
    """A Cohort per group of teams (teams[].parent), under the stack's cohort; one per isolation domain, a root
    of its own, so that its queues lend to each other and to no one else."""
    names = dict.fromkeys(t.cohort for t in stack.teams if t.cohort)
    return [*({"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": n}, "spec": {"parentName": COHORT}} for n in names),
            *({"apiVersion": API_VERSION, "kind": "Cohort", "metadata": {"name": d.cohort}, "spec": {}} for d in stack.domains)]


def domain_cluster_queue(stack: ResolvedStack, domain: IsolationDomain) -> dict[str, Any]:
    """A domain's own queue: its head pool and the slices of its groups no team owns, lent to its teams in its
    cohort. No namespace selects it (every namespace has the name label this requires absent): it admits nothing."""
    q = own_quotas(stack)
    groups = [g for g in stack.slices if g.name in domain.groups]
    flavors = [{"name": f, "resources": [{"name": r, "nominalQuota": _quantity(r, q[f][r])} for r in RESOURCES]}
               for f in [*(flavor_name(g) for g in groups), domain.head_flavor]]
    spec: dict[str, Any] = {
        "cohortName": domain.cohort,
        "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
        "resourceGroups": [{"coveredResources": list(RESOURCES), "flavors": flavors}],
    }
    checks = [{"name": provisioning_check_name(g), "onFlavors": [flavor_name(g)]} for g in groups if g.queued_provisioning]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": checks}
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue",
            "metadata": {"name": domain.cluster_queue, "labels": {ISOLATION_LABEL: domain.name}}, "spec": spec}


def team_kueue_objects(stack: ResolvedStack) -> list[dict[str, Any]]:
    """The teams' Cohorts, ClusterQueues and run queues, after the stack's own Kueue objects (the flavors they name)."""
    if not stack.kueue or not stack.teams:
        return []
    queues = [*(domain_cluster_queue(stack, d) for d in stack.domains), *(team_cluster_queue(stack, t) for t in stack.teams)]
    local = [{"apiVersion": API_VERSION, "kind": "LocalQueue",
              "metadata": {"name": run_queue(t.cluster_queue), "namespace": t.team_namespace, "labels": {TEAM_LABEL: t.name}},
              "spec": {"clusterQueue": t.cluster_queue, "stopPolicy": "None"}} for t in stack.teams]
    return [*cohorts(stack), *queues, *local]


def provisioning_checks(stack: ResolvedStack) -> list[dict[str, Any]]:
    """Per queued-provisioning group: its ProvisioningRequestConfig, then the AdmissionCheck naming it."""
    out: list[dict[str, Any]] = []
    for g in stack.slices:
        if not g.queued_provisioning:
            continue
        name = provisioning_check_name(g)
        out.append({"apiVersion": API_VERSION, "kind": "ProvisioningRequestConfig", "metadata": {"name": name}, "spec": {
            "provisioningClassName": QUEUED_PROVISIONING_CLASS,
            "managedResources": [TPU_RESOURCE],
            "retryStrategy": dict(PROVISIONING_RETRY),
        }})
        out.append({"apiVersion": API_VERSION, "kind": "AdmissionCheck", "metadata": {"name": name}, "spec": {
            "controllerName": PROVISIONING_CONTROLLER,
            "parameters": {"apiGroup": API_VERSION.split("/")[0], "kind": "ProvisioningRequestConfig", "name": name},
        }})
    return out


def local_queues(stack: ResolvedStack) -> list[dict[str, Any]]:
    """One LocalQueue per workload, held (HoldAndDrain) while the workload is suspended."""
    return [
        {"apiVersion": API_VERSION, "kind": "LocalQueue",
         "metadata": {"name": w.local_queue, "namespace": w.namespace},
         "spec": {"clusterQueue": w.cluster_queue, "stopPolicy": "HoldAndDrain" if w.state == "suspended" else "None"}}
        for w in stack.active_workloads
    ]


def workload_priority_classes() -> list[dict[str, Any]]:
    return [
        {"apiVersion": API_VERSION, "kind": "WorkloadPriorityClass", "metadata": {"name": f"pathways-{key}"},
         "value": value, "description": text}
        for key, (value, text) in PRIORITY_CLASSES.items()
    ]


def objects(stack: ResolvedStack) -> list[dict[str, Any]]:
    """In the order they can be made: each object after those it names (references)."""
    return [*pool_set_objects(stack), *resource_flavors(stack), *provisioning_checks(stack), *cluster_queues(stack), *local_queues(stack), *run_local_queues(stack),
            *team_kueue_objects(stack), *workload_priority_classes()]


def references(obj: dict[str, Any]) -> list[tuple[str, str]]:
    """The (kind, name) of the Kueue objects `obj` names: a ClusterQueue its ResourceFlavors, a LocalQueue its
    ClusterQueue. The program makes each object depend on those, so that Pulumi deletes a ClusterQueue before the
    flavors it names: Kueue holds a flavor's deletion (finalizer kueue.x-k8s.io/resource-in-use) while a
    ClusterQueue names it, and with no such edge the provider's deletes of the flavors waited for the queue,
    whose delete waited behind them (found by the real `pulumi up` that took a 64-group stack to one group)."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ClusterQueue":
        names = dict.fromkeys(f["name"] for rg in spec.get("resourceGroups") or [] for f in rg.get("flavors") or [])
        checks = [c["name"] for c in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []]
        # a team group's Cohort (teams-<parent>); the stack's root cohort is no object (Kueue makes it implicitly)
        cohort = [("Cohort", spec["cohortName"])] if spec.get("cohortName", COHORT) != COHORT else []
        return [*(("ResourceFlavor", n) for n in names), *(("AdmissionCheck", c) for c in checks), *cohort]
    if obj.get("kind") == "AdmissionCheck" and (spec.get("parameters") or {}).get("kind") in ("ProvisioningRequestConfig", "MultiKueueConfig"):
        return [(spec["parameters"]["kind"], spec["parameters"]["name"])]
    if obj.get("kind") == "MultiKueueConfig":
        return [("MultiKueueCluster", c) for c in spec.get("clusters") or []]
    if obj.get("kind") == "ResourceFlavor" and spec.get("topologyName"):
        return [("Topology", spec["topologyName"])]
    if obj.get("kind") == "LocalQueue" and spec.get("clusterQueue"):
        return [("ClusterQueue", spec["clusterQueue"])]
    return []
