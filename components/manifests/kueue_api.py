"""Kueue's API names and the labels a workload carries to be queued (pure constants): what the JobSet, run, fleet
and Kueue builders share, so none of them imports another for a name (Kueue v0.15 apis/kueue/v1beta2 and
pkg/controller/constants: `kueue.x-k8s.io/queue-name`, `kueue.x-k8s.io/priority-class`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a name only: the policy pack imports these constants without the model
    from components.model.resolved import ResolvedWorkload

API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Kueue v0.19.2 pkg/controller/constants MaxExecTimeSecondsLabel: a job's maximum execution time (positive seconds,
# jobframework validateCreateForMaxExecTime; unchangeable while the job runs), copied into the Workload's
# spec.maximumExecutionTimeSeconds; past it the Workload controller deactivates the workload (reconcileMaxExecutionTime:
# Evicted reason DeactivatedDueToMaximumExecutionTimeExceeded)
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
MAX_EXEC_TIME_EVICTION = "DeactivatedDueToMaximumExecutionTimeExceeded"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
TPU_RESOURCE = "google.com/tpu"
RESOURCES = ("cpu", "memory", TPU_RESOURCE)
# The namespaces the stack's Kueue manages, and the only ones its webhooks see: Kueue copies the Configuration's
# managedJobsNamespaceSelector into the namespaceSelector of every job webhook (chart v0.19.2
# templates/webhook/manifests.yaml) and reconciles jobs only in matching namespaces (reconciler.go; the gate
# ManagedJobsNamespaceSelectorAlwaysRespected is GA and locked on at v0.19). The stack labels the namespaces it makes
# for workloads, runs and teams; the controllers' own namespaces and everyone else's stay outside, so a Kueue outage
# (its webhooks fail closed) cannot stop a Deployment or Pod anywhere else.
MANAGED_NAMESPACE_LABEL = "pathways/kueue-managed"
MANAGED_NAMESPACES = {"matchLabels": {MANAGED_NAMESPACE_LABEL: "true"}}


def queue_labels(w: ResolvedWorkload) -> dict[str, str]:
    """The labels a JobSet carries to be queued: its LocalQueue and its WorkloadPriorityClass."""
    return {QUEUE_LABEL: str(w.local_queue), PRIORITY_LABEL: f"pathways-{w.priority}"}
