"""A stand-in for tpu7x dynamic slicing's controllers, for the tier (docs/dynamic-slicing.md). The real Kueue places a
workload's slices on a pool set (topology-aware scheduling); this does what the two controllers behind it do, as their
sources and GKE's pages describe, and nothing of Kueue's:

- the in-cluster slice controller (AI-Hypercomputer/xpk slice-main @ 250d4b3c, slice/internal/controller): it keeps
  each AdmissionCheck of controller accelerator.gke.io/slice Active; for a Workload with quota reserved and that check
  Pending, for each pod set of a TPU slice (an accelerator selector and the slice-topology annotation), it takes the
  partition IDs of the assigned hosts at the level the topology implies (a sub-slice's own shape, else the cube), in
  assignment order and once each, splits them into one run per Job (the PodSet's subGroupCount) and makes one Slice
  of each run, named <namespace>-<workload>-<podset>-<index> (49 characters at most, else cut with a hash); once
  every Slice is Ready (ACTIVE or ACTIVE_DEGRADED) it sets the check Ready with the pod sets' updates, the formed
  topology as a nodeSelector on cloud.google.com/gke-tpu-topology (buildPodSetUpdates), and Kueue admits; when the
  Workload goes or loses its quota, its Slices go once its pods have ended (the controller's finalizer);
- GKE's slice controller: it labels the Slice's hosts with the formed topology (as the controller's own e2e does,
  test/utils/e2e.go SetSliceReady) and makes the Slice Ready (ACTIVE).

Where it is simpler than the real one: a Slice whose partitions another Slice still holds is not made (the real
controller evicts the workload, ConfigurationFailure, and Kueue requeues it), so the workload waits instead; after a
Slice, its hosts go back to their pool's topology (GKE's pages do not say).

The Slice CRD is this stand-in's own, written from GKE's Slice CRD reference (accelerator.gke.io/v1beta1, cluster
scoped: spec.type, spec.topology, spec.partitionIds, status.conditions): GKE installs the real one with its add-on.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from tools.cluster.api import Api, ApiError
from tools.cluster.cloud import _Controller, log

CONTROLLER = "accelerator.gke.io/slice"
GROUP, VERSION = "accelerator.gke.io", "v1beta1"
SLICES = f"/apis/{GROUP}/{VERSION}/slices"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
TOPOLOGY = "cloud.google.com/gke-tpu-slice-topology"
TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
CUBE = "4x4x4"
SUB_SLICES = ("2x2x1", "2x2x2", "2x2x4", "2x4x4")  # the slice controller's SupportedSubsliceTopologies
ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
OWNER_NAMESPACE, OWNER_NAME, OWNER_PODSET = ("accelerator.gke.io/owner-workload-namespace", "accelerator.gke.io/owner-workload-name",
                                             "accelerator.gke.io/owner-podset-name")
FIELD_MANAGER = "slice-controller-stand-in"

SLICE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"slices.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Cluster",
             "names": {"plural": "slices", "singular": "slice", "kind": "Slice", "listKind": "SliceList"},
             "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "required": ["type", "topology", "partitionIds"], "properties": {
                                   "type": {"type": "string", "enum": ["v6e", "tpu7x"]},
                                   "topology": {"type": "string", "pattern": r"^\d+x\d+(x\d+)?$"},
                                   "partitionIds": {"type": "array", "minItems": 1, "items": {"type": "string"}}}},
                               "status": {"type": "object", "properties": {"conditions": {
                                   "type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
                           }}}}]},
}


def slice_name(namespace: str, workload: str, podset: str, index: int) -> str:
    """The slice controller's SliceName: at most 49 characters, else cut with 5 hex of a sha256."""
    name = f"{namespace}-{workload}-{podset}-{index}"
    if len(name) <= 49:
        return name
    return f"{name[:49 - 6]}-{hashlib.sha256(name.encode()).hexdigest()[:5]}"


def assigned_hosts(assignment: dict[str, Any]) -> list[str]:
    """A v1beta2 topologyAssignment's hosts in order, one per pod (Kueue pkg/util/tas InternalSeqFrom)."""
    levels = assignment.get("levels") or []
    host_level = levels.index("kubernetes.io/hostname")
    out: list[str] = []
    for s in assignment.get("slices") or []:
        values = s["valuesPerLevel"][host_level]
        counts = s.get("podCounts") or {}
        for i in range(int(s.get("domainCount", 0))):
            if "universal" in values:
                host = values["universal"]
            else:
                ind = values["individual"]
                host = ind.get("prefix", "") + ind["roots"][i] + ind.get("suffix", "")
            count = counts["universal"] if "universal" in counts else counts["individual"][i]
            out += [host] * int(count)
    return out


def partition_level(topology: str) -> str:
    """The node label a Slice's partition IDs are values of, from its topology (topology.go RequiredSliceLevel)."""
    return f"cloud.google.com/gke-tpu-partition-{topology if topology in SUB_SLICES else CUBE}-id"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SliceFormation(_Controller):
    """The stand-in of both slice controllers (the module's docstring). `formed` records each Slice it made:
    name -> (workload namespace/name, topology, partition IDs)."""

    def __init__(self, api: Api):
        super().__init__(api)
        self.formed: dict[str, tuple[str, str, tuple[str, ...], int]] = {}
        self._jobsets: dict[str, tuple[str, str]] = {}  # Slice -> its owner's (namespace, JobSet)
        self.log: list[str] = []
        self._lock = threading.Lock()

    def install(self) -> None:
        self.api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", SLICE_CRD)

    def _note(self, msg: str) -> None:
        self.log.append(msg)
        log(f"slices: {msg}")

    def _checks(self) -> set[str]:
        """The slice AdmissionChecks, each kept Active (the slice controller's admissioncheck_controller)."""
        names = set()
        for ac in self.api.get(f"{KUEUE}/admissionchecks")["items"]:
            if ac["spec"].get("controllerName") != CONTROLLER:
                continue
            names.add(ac["metadata"]["name"])
            if not any(c["type"] == "Active" and c["status"] == "True" for c in (ac.get("status") or {}).get("conditions") or []):
                self.api.merge_patch(f"{KUEUE}/admissionchecks/{ac['metadata']['name']}/status", {"status": {"conditions": [
                    {"type": "Active", "status": "True", "reason": "Active", "message": "the slice controller (the tier's stand-in) is ready",
                     "lastTransitionTime": _now(), "observedGeneration": ac["metadata"].get("generation", 1)}]}})
        return names

    def _form(self, wl: dict[str, Any], check: str, nodes: dict[str, dict[str, str]], slices: dict[str, dict[str, Any]]) -> None:
        meta = wl["metadata"]
        key = f"{meta['namespace']}/{meta['name']}"
        podsets = {p["name"]: p for p in wl["spec"]["podSets"]}
        wanted: list[tuple[str, int, str, str, str, tuple[str, ...]]] = []
        updates = []
        for psa in (wl["status"].get("admission") or {}).get("podSetAssignments") or []:
            assignment = psa.get("topologyAssignment")
            ps = podsets.get(psa["name"])
            if not assignment or ps is None:
                continue
            template = ps["template"]
            topology = ((template.get("metadata") or {}).get("annotations") or {}).get(TOPOLOGY)
            accelerator = (template["spec"].get("nodeSelector") or {}).get(ACCELERATOR)
            if not topology or accelerator not in ("tpu7x", "v6e"):
                continue  # not a slice's pod set (core.IsRelevantPodTemplateSpec)
            level = partition_level(topology)
            ids = list(dict.fromkeys(nodes.get(h, {}).get(level, "") for h in assigned_hosts(assignment)))
            jobs = int((ps.get("topologyRequest") or {}).get("subGroupCount") or 1)
            if "" in ids or len(ids) % jobs:
                self._note(f"{key}: an assigned host has no {level} label, or {len(ids)} partitions do not split into {jobs} slices")
                return  # the real controller leaves such a workload alone: its check stays Pending
            chunk = len(ids) // jobs
            for j in range(jobs):
                wanted.append((slice_name(meta["namespace"], meta["name"], psa["name"], j), j, psa["name"], topology, accelerator,
                               tuple(ids[j * chunk:(j + 1) * chunk])))
            # on Ready the real controller has Kueue add the formed topology to the pod set's nodeSelector (buildPodSetUpdates)
            updates.append({"name": psa["name"], "nodeSelector": {TPU_TOPOLOGY: topology}})
        ready = True
        for name, index, podset, topology, accelerator, ids in wanted:
            s = slices.get(name)
            if s is None:
                held = {i for n, o in slices.items() for i in o["spec"]["partitionIds"]}
                if held & set(ids):
                    # the real controller evicts the workload (ConfigurationFailure) and Kueue requeues it; here it waits
                    # until the Slice holding them is gone (its owner's pods ended), which ends the same way
                    self._note(f"{key}: partitions {', '.join(sorted(held & set(ids)))} are in another Slice; waiting")
                    return
                s = self.api.create(SLICES, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Slice", "metadata": {
                    "name": name, "annotations": {OWNER_NAMESPACE: meta["namespace"], OWNER_NAME: meta["name"], OWNER_PODSET: podset}},
                    "spec": {"type": accelerator, "topology": topology, "partitionIds": list(ids)}})
                owner = next((o["name"] for o in meta.get("ownerReferences") or [] if o.get("kind") == "JobSet"), "")
                with self._lock:
                    self.formed[name] = (key, topology, ids, index)
                    self._jobsets[name] = (meta["namespace"], owner)
                self._note(f"{key}: Slice {name} {topology} on {', '.join(ids)}")
                self._activate(s, slices, nodes)
            conditions = (s.get("status") or {}).get("conditions") or []
            ready = ready and any(c["type"] == "Ready" and c["status"] == "True" and c.get("reason") in ("ACTIVE", "ACTIVE_DEGRADED")
                                  for c in conditions)
        if ready and wanted:
            self.api.call("PATCH", f"{KUEUE}/namespaces/{meta['namespace']}/workloads/{meta['name']}/status?fieldManager={FIELD_MANAGER}&force=true",
                          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                           "status": {"admissionChecks": [{"name": check, "state": "Ready", "lastTransitionTime": _now(), "podSetUpdates": updates,
                                                           "message": f"Slices {', '.join(n for n, *_ in wanted)} are ready"}]}},
                          content_type="application/apply-patch+yaml")
            self._note(f"{key}: check {check} Ready")

    def _activate(self, s: dict[str, Any], slices: dict[str, dict[str, Any]], nodes: dict[str, dict[str, str]]) -> None:
        """GKE's side: the Slice's hosts are linked and labelled with its topology (as the slice controller's e2e
        SetSliceReady relabels them), then it is Ready (ACTIVE)."""
        topology = s["spec"]["topology"]
        level, ids = partition_level(topology), set(s["spec"]["partitionIds"])
        for node, labels in nodes.items():
            if labels.get(level) in ids and labels.get(TPU_TOPOLOGY) != topology:
                self.api.strategic_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {TPU_TOPOLOGY: topology}}})
                labels[TPU_TOPOLOGY] = topology
        s["status"] = {"conditions": [{"type": "Ready", "status": "True", "reason": "ACTIVE", "message": "formed by the tier's stand-in for GKE",
                                       "lastTransitionTime": _now(), "observedGeneration": 1}]}
        self.api.merge_patch(f"{SLICES}/{s['metadata']['name']}/status", {"status": s["status"]})
        slices[s["metadata"]["name"]] = s

    def _release(self, s: dict[str, Any], nodes: dict[str, dict[str, str]]) -> None:
        """A Slice whose owner lost its quota or is gone, once its pods have ended (the real controller's finalizer
        waits for them): deleted, and its hosts back to their pool's topology (GKE's, assumed here: its pages say
        nothing of the label after a Slice)."""
        name = s["metadata"]["name"]
        with self._lock:
            namespace, jobset = self._jobsets.get(name, ("", ""))
        if jobset and self.api.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=f"{JOBSET_NAME}={jobset}")["items"]:
            return
        level, ids = partition_level(s["spec"]["topology"]), set(s["spec"]["partitionIds"])
        try:
            self.api.delete(f"{SLICES}/{name}")
        except ApiError as e:
            if e.status != 404:
                raise
        for node, labels in nodes.items():
            if labels.get(level) in ids and labels.get(TPU_TOPOLOGY) != CUBE:
                self.api.strategic_patch(f"/api/v1/nodes/{node}", {"metadata": {"labels": {TPU_TOPOLOGY: CUBE}}})
                labels[TPU_TOPOLOGY] = CUBE
        self._note(f"Slice {name} deleted: its workload is gone or lost its quota, and its pods have ended")

    def formed_for(self, namespace: str, workload: str) -> list[tuple[str, tuple[str, ...]]]:
        """(topology, partition IDs) of each Slice made for a workload, by its Job's index."""
        with self._lock:
            mine = sorted((i, t, ids) for k, t, ids, i in self.formed.values() if k == f"{namespace}/{workload}")
        return [(t, ids) for _, t, ids in mine]

    def _round(self) -> None:
        checks = self._checks()
        slices = {s["metadata"]["name"]: s for s in self.api.get(SLICES)["items"]}
        workloads = self.api.get(f"{KUEUE}/workloads")["items"]
        nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in self.api.get("/api/v1/nodes")["items"]}
        live = set()
        for wl in workloads:
            status = wl.get("status") or {}
            mine = [c for c in status.get("admissionChecks") or [] if c["name"] in checks]
            if not mine or not status.get("admission"):
                continue
            meta = wl["metadata"]
            live.add((meta["namespace"], meta["name"]))
            if mine[0]["state"] == "Pending" and not meta.get("deletionTimestamp"):
                self._form(wl, mine[0]["name"], nodes, slices)
        for s in list(slices.values()):
            owner = s["metadata"].get("annotations") or {}
            if OWNER_NAME in owner and (owner.get(OWNER_NAMESPACE), owner[OWNER_NAME]) not in live:
                self._release(s, nodes)

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._round()
            except ApiError as e:
                if e.status != 404:  # the CRDs come with the first stack
                    self._note(f"ApiError: {e}")
            except Exception as e:  # the next round tries again
                self._note(f"{type(e).__name__}: {e}")
