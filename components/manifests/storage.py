"""Storage mounts, rendered as GKE documents them (pure; components/model/workloads/storage.py has the sources).

- A bucket: an inline CSI volume of the Cloud Storage FUSE driver in the pod, which the driver's webhook serves
  through a sidecar it injects into pods annotated gke-gcsfuse/volumes: "true". Pathways pods are on the host
  network, so the volume carries hostNetworkPodKSA: "true" and the pod names its own Kubernetes service account,
  the principal the bucket grants go to (no token in the pod: the kubelet hands one to the driver).
- A file system: a PersistentVolume of the instance's CSI driver, bound to a claim in the workload namespace by
  claimRef and volumeName (static provisioning, storageClassName ""), ReadWriteMany; both named after the file
  system and a digest of what they hold (``claim_name``).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.workloads.storage import GCSFUSE_DRIVER, GOOGLE_ATTRIBUTES, FileSystem, Mount, volume_name

FILE_SYSTEM_LABEL = "pathways/file-system"


def _volume(stack: ResolvedStack, index: int, m: Mount) -> dict[str, Any]:
    name = volume_name(index)
    if m.bucket is not None:
        return {"name": name, "csi": {"driver": GCSFUSE_DRIVER, "readOnly": m.read_only, "volumeAttributes": {
            "bucketName": m.bucket, "mountOptions": ",".join(m.mount_options), "hostNetworkPodKSA": "true",
            **GOOGLE_ATTRIBUTES}}}
    fs = next(f for f in stack.file_systems if f.name == m.file_system)
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name(stack, fs), "readOnly": m.read_only}}


def pod_mounts(stack: ResolvedStack, w: ResolvedWorkload, *, workers: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, volumeMounts) of a workload's head pod (its program's container), or of its worker pods (the mounts
    with onWorkers)."""
    chosen = [(i, m) for i, m in enumerate(w.spec.mounts) if m.on_workers or not workers]
    volumes = [_volume(stack, i, m) for i, m in chosen]
    mounts = [{"name": volume_name(i), "mountPath": m.path, "readOnly": m.read_only} for i, m in chosen]
    return volumes, mounts


def mounts_buckets(w: ResolvedWorkload, *, workers: bool) -> bool:
    return any(m.bucket for m in w.spec.mounts if m.on_workers or not workers)


def _volume_spec(stack: ResolvedStack, fs: FileSystem) -> dict[str, Any]:
    location = fs.location or stack.zone
    if fs.filestore:
        handle, attributes = f"modeInstance/{location}/{fs.filestore}/{fs.share}", {"ip": fs.ip, "volume": fs.share}
    else:
        handle, attributes = f"{stack.project}/{location}/{fs.lustre}", {"ip": fs.ip, "filesystem": fs.filesystem}
    return {"capacity": fs.capacity, "driver": fs.driver, "volumeHandle": handle, "volumeAttributes": attributes}


def _revision(stack: ResolvedStack, fs: FileSystem) -> str:
    """A volume's source and size are fixed once its claim is bound (a PersistentVolume's CSI source is immutable, and
    a claim without a storage class cannot grow): a changed file system is a new volume and claim, named by this
    digest of what they hold, which the workloads then mount while the old pair goes once nothing uses it."""
    return hashlib.sha256(json.dumps(_volume_spec(stack, fs), sort_keys=True).encode()).hexdigest()[:8]


def claim_name(stack: ResolvedStack, fs: FileSystem) -> str:
    return f"{fs.name}-{_revision(stack, fs)}"


def persistent_volume_name(stack: ResolvedStack, fs: FileSystem) -> str:
    """PersistentVolumes are cluster-wide: named after the claim's namespace too (a dot: no namespace holds one), so
    two stacks on one cluster differ."""
    return f"{stack.namespace}.{claim_name(stack, fs)}"


def file_system_objects(stack: ResolvedStack) -> list[dict[str, Any]]:
    """A PersistentVolume and its claim per pathways:storage file system, in the workload namespace."""
    out: list[dict[str, Any]] = []
    ns = stack.namespace
    for fs in stack.file_systems:
        spec, pv, claim = _volume_spec(stack, fs), persistent_volume_name(stack, fs), claim_name(stack, fs)
        labels = {FILE_SYSTEM_LABEL: fs.name}
        out += [
            {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv, "labels": labels},
             "spec": {
                 "storageClassName": "", "capacity": {"storage": fs.capacity}, "accessModes": ["ReadWriteMany"],
                 # The instance outlives the stack: deleting the volume never touches its data.
                 "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem",
                 "claimRef": {"namespace": ns, "name": claim},
                 "csi": {"driver": spec["driver"], "volumeHandle": spec["volumeHandle"], "volumeAttributes": spec["volumeAttributes"]},
             }},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim, "namespace": ns, "labels": labels},
             "spec": {"storageClassName": "", "volumeName": pv, "accessModes": ["ReadWriteMany"],
                      "resources": {"requests": {"storage": fs.capacity}}}},
        ]
    return out


def service_accounts(stack: ResolvedStack) -> list[dict[str, Any]]:
    """The Kubernetes service accounts of workloads (and runs) that mount buckets: identities for Workload Identity,
    no token mounted anywhere."""
    names: list[tuple[str, str]] = [(w.namespace, w.service_account) for w in stack.active_workloads if w.service_account]
    if stack.runs is not None and stack.runs.buckets:
        names.append((stack.namespace, stack.run_service_account))
    if stack.runs is not None:  # a team's buckets are granted to the runs' account in its namespace (#74.1)
        names += [(t.team_namespace, stack.run_service_account) for t in stack.teams if t.buckets]
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns},
             "automountServiceAccountToken": False} for ns, name in dict.fromkeys(names)]


def storage_output(stack: ResolvedStack) -> dict[str, Any] | None:
    """The stack output `storage`: the file systems' claims, and the bucket grants the bootstrap must hold (None
    without mounts)."""
    grants = stack.bucket_grants
    if not grants and not stack.file_systems:
        return None
    return {
        "fileSystems": {fs.name: f"{stack.namespace}/{claim_name(stack, fs)}" for fs in stack.file_systems},
        "bucketGrants": [f"gs://{bucket}: {role} to {ns}/{sa}" for bucket, role, ns, sa in grants],
    }
