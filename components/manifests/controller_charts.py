"""The upstream controller charts the stack installs (JobSet, Kueue, LeaderWorkerSet): each one's release name,
namespace, that namespace's Pod Security level and the values it is installed with (pure Python).

One source for `pulumi up` (components/kubernetes/jobset_controller.py, kueue.py, lws_controller.py pass these values to
their helm.v4.Chart) and for the offline render of the same charts (infra/offline/charts.py), so both expand
the charts with exactly the same values. The pinned charts are the `charts/<name>` directories of the Go
modules `make crds` copies into build/charts (tools/engines/crds.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from components.constants import ROLE_LABEL
from components.manifests.guardrails import CONTROLLER_NAMESPACE_LEVEL
from components.manifests.kueue_api import MANAGED_NAMESPACES
from components.model.workloads.resilience import MTC_JOBSET_CONTROLLER_REQUESTS


@dataclass(frozen=True)
class ControllerChart:
    release: str
    """The release name, also the Pulumi name of the Chart (program.py); the charts name their objects after it."""
    namespace: str
    pod_security: str
    """The Pod Security level its namespace enforces (components/kubernetes/controller_chart.py labels it)."""
    image_repository: str
    """The controller image: each chart's own values name a staging image at a moving tag, pulled Always, which
    the release rewrites for the published chart; set here, so a local chart directory (air-gapped) runs the same
    pinned controller as the registry's chart."""
    build_values: Callable[["ControllerChart", str, str, bool], dict[str, Any]]

    def values(self, version: str, system_role: str, mtc: bool = False) -> dict[str, Any]:
        """The values the chart is installed with, for chart `version` on the nodes labelled `system_role`, on a
        cluster with multi-tier checkpointing or not."""
        return self.build_values(self, version, system_role, mtc)

    def image(self, version: str) -> dict[str, str]:
        return {"repository": self.image_repository, "tag": f"v{version}", "pullPolicy": "IfNotPresent"}


def _jobset_values(chart: ControllerChart, version: str, system_role: str, mtc: bool) -> dict[str, Any]:
    # charts/jobset/values.yaml (v0.12.0): image.{repository,tag,pullPolicy}, controller.nodeSelector; its pod
    # security context (runAsNonRoot, RuntimeDefault seccomp, no capabilities) passes `restricted` as it is.
    controller: dict[str, Any] = {"nodeSelector": {ROLE_LABEL: system_role}}
    if mtc:
        # sized as xpk sizes it for multi-tier checkpointing (model/workloads/resilience.py); Helm merges these requests
        # into the chart's controller.resources, whose limits (2 CPU, 4Gi) stay
        controller["resources"] = {"requests": dict(MTC_JOBSET_CONTROLLER_REQUESTS)}
    return {
        "image": chart.image(version),
        "controller": controller,
        # Off, as the chart's default is: a ServiceMonitor needs the monitoring.coreos.com CRD, which GKE does
        # not install, and the chart fails the render without it (templates/prometheus/monitor.yaml).
        "prometheus": {"enable": False},
    }


def _kueue_values(chart: ControllerChart, version: str, system_role: str, mtc: bool) -> dict[str, Any]:
    # charts/kueue/values.yaml (v0.19.2): controllerManager.nodeSelector, controllerManager.manager.image; its
    # podSecurityContext (runAsNonRoot, RuntimeDefault seccomp) and containerSecurityContext (no privilege
    # escalation, every capability dropped) pass `restricted` as they are. The default manager config enables
    # the JobSet and LeaderWorkerSet integrations.
    # The unadmitted-workload reasons `python -m infra.run why` reads (QuotaReserved=False with WaitingForQuota,
    # ExceedsMaxQuota, Misconfigured, ...): Beta and off by default at v0.19 (pkg/features/kube_features.go), and the
    # second needs the first (pkg/config/validation.go).
    # Highly available: two replicas on the system pool, spread over its nodes where it has several, and a budget
    # that keeps one through a drain or an upgrade (chart values controllerManager.replicas, podDisruptionBudget,
    # topologySpreadConstraints). Every replica serves the webhooks and the visibility API (controller-runtime's
    # webhook server does not need the leader, webhook/server.go NeedLeaderElection; main.go starts the visibility
    # server on each), one leads the controllers (leaderElection in the Configuration): an outage of one leaves
    # admission, and namespace deletion, which discovers the visibility API, working.
    return {"controllerManager": {
        "nodeSelector": {ROLE_LABEL: system_role}, "manager": {"image": chart.image(version)},
        "featureGates": [{"name": gate, "enabled": True} for gate in KUEUE_FEATURE_GATES],
        "replicas": KUEUE_REPLICAS,
        "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": KUEUE_POD_LABELS}}],
    }}


KUEUE_REPLICAS = 2
# the chart's selector labels for release "kueue" (templates/_helpers.tpl kueue.selectorLabels)
KUEUE_POD_LABELS = {"app.kubernetes.io/name": "kueue", "app.kubernetes.io/instance": "kueue", "control-plane": "controller-manager"}


KUEUE_FEATURE_GATES = ("UnadmittedWorkloadsObservability", "UnadmittedWorkloadsExplicitStatus")


def _lws_values(chart: ControllerChart, version: str, system_role: str, mtc: bool) -> dict[str, Any]:
    # charts/lws/values.yaml (v0.9.0): image.manager, nodeSelector, podSecurityContext at the top level.
    return {
        "image": {"manager": chart.image(version)},
        "nodeSelector": {ROLE_LABEL: system_role},
        # `restricted` requires a seccomp profile (pod-security-admission policy/check_seccompProfile_restricted.go);
        # the chart's podSecurityContext has none (runAsNonRoot only) and its deployment template adds none, so
        # without this the ReplicaSet's pods are refused and the controller never runs (issue #34).
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        # ServiceMonitor and cert-manager objects need CRDs GKE does not install.
        "enablePrometheus": False,
        "enableCertManager": False,
    }


JOBSET = ControllerChart("jobset", "jobset-system", CONTROLLER_NAMESPACE_LEVEL, "registry.k8s.io/jobset/jobset", _jobset_values)
# `restricted` since the check of issue #34: the v0.19.2 chart's pod passes it (tests/test_pod_security.py), where
# `baseline` was enforced before because nobody had checked.
# charts/kueue/values.yaml (v0.19.2) managerConfig.controllerManagerConfigYaml, but the integrations: a fleet's Kueue
# enables what its workloads are. On a MultiKueue manager Kueue watches every enabled integration's kind on each
# worker and, until every watch is established, keeps the worker's MultiKueueCluster inactive (the real Kueue, with
# the chart's list: "no matches for kind AppWrapper"), so the fleet's clusters enable JobSet alone, the kind runs are.
KUEUE_CHART_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {"groupKindConcurrency": {"Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10, "LocalQueue.kueue.x-k8s.io": 5,
                                            "ClusterQueue.kueue.x-k8s.io": 5, "ResourceFlavor.kueue.x-k8s.io": 1}},
    "clientConnection": {"qps": 300, "burst": 500},
}
FLEET_FRAMEWORKS = ("jobset.x-k8s.io/jobset",)
# What a stack's workloads are: JobSets (batch, interactive, service, runs), and LeaderWorkerSets for serve workloads.
# Kueue's LWS integration implicitly turns on its pod integration (leaderworkerset_controller.go
# ImplicitlyEnabledFrameworkNames: ["pod"]); "pod" is listed too so that the chart keeps its pod webhooks failing
# closed (it sets Ignore for pod, deployment and statefulset unless listed: a serve pod created while Kueue is down
# would otherwise start unadmitted). Every other integration's webhooks admit everything (a no-op webhook,
# jobframework/setup.go), and only in the namespaces Kueue manages.
STACK_FRAMEWORKS = ("jobset.x-k8s.io/jobset",)
SERVE_FRAMEWORKS = ("jobset.x-k8s.io/jobset", "leaderworkerset.x-k8s.io/leaderworkerset", "pod")
# the chart's own integrations (values.yaml managerConfig, v0.19.2), for a config that changes something else
CHART_FRAMEWORKS = (
    "batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/rayservice", "ray.io/raycluster", "jobset.x-k8s.io/jobset",
    "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob", "pod", "deployment", "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
# Fair sharing (pathways:teams): on when the Configuration has fairSharing (cmd/kueue/main.go, v1beta2). A queue under
# its fair share preempts one over it if, after, its share is at most the other's (LessThanOrEqualToFinalShare), else
# if strictly below the other's before (LessThanInitialShare): the chart's commented example, Kueue's documented default.
FAIR_SHARING = {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}


def kueue_manager_config(frameworks: tuple[str, ...], fair_sharing: bool = False) -> dict[str, Any]:
    """Kueue chart values replacing its manager config: the chart's own, with only these integrations, only the
    namespaces the stack labels (kueue_api.MANAGED_NAMESPACES), and fair sharing for teams."""
    import yaml

    config = {**KUEUE_CHART_CONFIG, "integrations": {"frameworks": list(frameworks)},
              "managedJobsNamespaceSelector": MANAGED_NAMESPACES,
              **({"fairSharing": FAIR_SHARING} if fair_sharing else {})}
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


KUEUE = ControllerChart("kueue", "kueue-system", CONTROLLER_NAMESPACE_LEVEL, "registry.k8s.io/kueue/kueue", _kueue_values)
LWS = ControllerChart("lws", "lws-system", CONTROLLER_NAMESPACE_LEVEL, "registry.k8s.io/lws/lws", _lws_values)
CHARTS = {c.release: c for c in (JOBSET, KUEUE, LWS)}

