"""A stand-in for tpu7x dynamic slicing's controllers, for the tier (docs/dynamic-slicing.md). The real Kueue places a
workload's slices on a pool set (topology-aware scheduling); this does what the two controllers behind it do, as their
sources and GKE's pages describe, and nothing of Kueue's:

- the in-cluster slice controller (AI-Hypercomputer/xpk slice-main @ 250d4b3c, slice/internal/controller): it keeps
  each AdmissionCheck of controller accelerator.gke.io/slice Active; for a Workload with quota reserved and that check
  Pending, it reads the topology assignment, takes the partition IDs of the assigned hosts at the slice level the pod
  template asks for (podset-slice-required-topology), in assignment order and once each, splits them into one run per
  Job (the PodSet's subGroupCount) and makes one Slice of each run, named <namespace>-<workload>-<podset>-<index>
  (49 characters at most, else cut with a hash); once every Slice is Ready it sets the check Ready and Kueue admits;
  when the Workload goes or loses its quota, its Slices go;
- GKE's slice controller: it makes a Slice Ready (reason ACTIVE) when its partitions are not in another Slice, else
  SliceCreationFailed.

The Slice CRD is this stand-in's own, written from GKE's Slice CRD reference (accelerator.gke.io/v1beta1, cluster
scoped: spec.type, spec.topology, spec.partitionIds, status.conditions): GKE installs the real one with its add-on.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Optional

from tools.cluster.api import Api, ApiError
from tools.cluster.cloud import _Controller, log

CONTROLLER = "accelerator.gke.io/slice"
GROUP, VERSION = "accelerator.gke.io", "v1beta1"
SLICES = f"/apis/{GROUP}/{VERSION}/slices"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
TOPOLOGY = "cloud.google.com/gke-tpu-slice-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
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


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SliceFormation(_Controller):
    """The stand-in of both slice controllers (the module's docstring). `formed` records each Slice it made:
    name -> (workload namespace/name, topology, partition IDs)."""

    def __init__(self, api: Api):
        super().__init__(api)
        self.formed: dict[str, tuple[str, str, tuple[str, ...]]] = {}
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
        wanted: list[tuple[str, str, str, str, tuple[str, ...]]] = []
        for psa in (wl["status"].get("admission") or {}).get("podSetAssignments") or []:
            assignment = psa.get("topologyAssignment")
            ps = podsets.get(psa["name"])
            if not assignment or ps is None:
                continue
            template = ps["template"]
            level = ((template.get("metadata") or {}).get("annotations") or {}).get(SLICE_LEVEL)
            topology = ((template.get("metadata") or {}).get("annotations") or {}).get(TOPOLOGY)
            if not level or not topology:
                continue
            ids = list(dict.fromkeys(nodes.get(h, {}).get(level, "") for h in assigned_hosts(assignment)))
            jobs = int((ps.get("topologyRequest") or {}).get("subGroupCount") or 1)
            if "" in ids or len(ids) % jobs:
                self._note(f"{key}: an assigned host has no {level} label, or {len(ids)} partitions do not split into {jobs} slices")
                return
            chunk = len(ids) // jobs
            accelerator = (template["spec"].get("nodeSelector") or {}).get(ACCELERATOR, "tpu7x")
            for j in range(jobs):
                wanted.append((slice_name(meta["namespace"], meta["name"], psa["name"], j), psa["name"], topology, accelerator,
                               tuple(ids[j * chunk:(j + 1) * chunk])))
        ready = True
        for name, podset, topology, accelerator, ids in wanted:
            s = slices.get(name)
            if s is None:
                s = self.api.create(SLICES, {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Slice", "metadata": {
                    "name": name, "annotations": {OWNER_NAMESPACE: meta["namespace"], OWNER_NAME: meta["name"], OWNER_PODSET: podset}},
                    "spec": {"type": accelerator, "topology": topology, "partitionIds": list(ids)}})
                with self._lock:
                    self.formed[name] = (key, topology, ids)
                self._note(f"{key}: Slice {name} {topology} on {', '.join(ids)}")
                self._activate(s, slices)
            conditions = (s.get("status") or {}).get("conditions") or []
            ready = ready and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
        if ready and wanted:
            self.api.call("PATCH", f"{KUEUE}/namespaces/{meta['namespace']}/workloads/{meta['name']}/status?fieldManager={FIELD_MANAGER}&force=true",
                          {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                           "status": {"admissionChecks": [{"name": check, "state": "Ready", "lastTransitionTime": _now(),
                                                           "message": f"Slices {', '.join(n for n, *_ in wanted)} are ready"}]}},
                          content_type="application/apply-patch+yaml")
            self._note(f"{key}: check {check} Ready")

    def _activate(self, s: dict[str, Any], slices: dict[str, dict[str, Any]]) -> None:
        """GKE's side: Ready once no other Slice holds its partitions."""
        ids = set(s["spec"]["partitionIds"])
        taken = any(ids & set(o["spec"]["partitionIds"]) for n, o in slices.items() if n != s["metadata"]["name"])
        cond = ({"type": "Ready", "status": "False", "reason": "SliceCreationFailed", "message": "a partition is in another Slice"}
                if taken else {"type": "Ready", "status": "True", "reason": "ACTIVE", "message": "formed by the tier's stand-in for GKE"})
        s["status"] = {"conditions": [{**cond, "lastTransitionTime": _now(), "observedGeneration": 1}]}
        self.api.merge_patch(f"{SLICES}/{s['metadata']['name']}/status", {"status": s["status"]})
        slices[s["metadata"]["name"]] = s

    def formed_for(self, namespace: str, workload: str) -> list[tuple[str, tuple[str, ...]]]:
        """(topology, partition IDs) of each Slice made for a workload, in Slice-name order."""
        with self._lock:
            return [(t, ids) for n, (k, t, ids) in sorted(self.formed.items()) if k == f"{namespace}/{workload}"]

    def _round(self) -> None:
        checks = self._checks()
        slices = {s["metadata"]["name"]: s for s in self.api.get(SLICES)["items"]}
        workloads = self.api.get(f"{KUEUE}/workloads")["items"]
        nodes: Optional[dict[str, dict[str, str]]] = None
        live = set()
        for wl in workloads:
            status = wl.get("status") or {}
            mine = [c for c in status.get("admissionChecks") or [] if c["name"] in checks]
            if not mine or not status.get("admission"):
                continue
            meta = wl["metadata"]
            live.add((meta["namespace"], meta["name"]))
            if mine[0]["state"] == "Pending" and not meta.get("deletionTimestamp"):
                if nodes is None:
                    nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in self.api.get("/api/v1/nodes")["items"]}
                self._form(wl, mine[0]["name"], nodes, slices)
        for name, s in slices.items():
            owner = s["metadata"].get("annotations") or {}
            if OWNER_NAME not in owner or (owner.get(OWNER_NAMESPACE), owner[OWNER_NAME]) in live:
                continue
            try:
                self.api.delete(f"{SLICES}/{name}")
                self._note(f"Slice {name} deleted: its workload is gone or lost its quota")
            except ApiError as e:
                if e.status != 404:
                    raise

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self._round()
            except ApiError as e:
                if e.status != 404:  # the CRDs come with the first stack
                    self._note(f"ApiError: {e}")
            except Exception as e:  # the next round tries again
                self._note(f"{type(e).__name__}: {e}")
