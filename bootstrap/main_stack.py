"""What the bootstrap needs to know about a main stack (stacks/Pulumi.<stack>.yaml), read without Pulumi:
its validated config, the Cloud KMS key its secrets provider names, and the resource types it creates.

``resource_types`` follows infra/program.py's choices (existing cluster or not, existing network, Cloud NAT,
tpu7x workload policies, controllers, Kueue, secrets, serving, shared service); tests/test_bootstrap.py
keeps it equal to the offline plan's types, so the identities' roles are those of the plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

from components.model.capacity.reservations import ReservationPath, parse_path, read_permissions
from components.model.capacity.tpu import Placement
from components.model.config import GCP_KEYS, PROJECT_NAMESPACE, StackConfig, load, resolve
from components.model.errors import ConfigError
from components.model.workloads import isolation

ROOT = Path(__file__).resolve().parents[1]
STACKS_DIR = ROOT / "stacks"

# gcpkms://projects/<p>/locations/<l>/keyRings/<r>/cryptoKeys/<k> (Pulumi's Cloud KMS secrets provider)
GCPKMS = re.compile(r"gcpkms://projects/([a-z][a-z0-9-]{4,28}[a-z0-9])/locations/([a-z0-9-]+)/keyRings/([A-Za-z0-9_-]{1,63})"
                    r"/cryptoKeys/([A-Za-z0-9_-]{1,63})")


class MainStackError(ValueError):
    """A main stack the bootstrap cannot set up; the message names the file and what is wrong."""


@dataclass(frozen=True)
class KmsKey:
    project: str
    location: str
    key_ring: str
    name: str


@dataclass(frozen=True)
class MainStack:
    name: str
    config: StackConfig
    kms_key: Optional[KmsKey]
    """The key of `secretsprovider: gcpkms://...`; None for a passphrase."""
    types: frozenset[str]

    @property
    def creates_cluster(self) -> bool:
        return self.config.cluster.existing is None

    @property
    def installs_metrics_adapter(self) -> bool:
        """The stack installs the Custom Metrics Stackdriver Adapter (an autoscaled serve workload), whose project
        role the bootstrap grants."""
        return self.config.kubernetes.install_metrics_adapter and bool(resolve(self.config).autoscaled_workloads)

    @property
    def node_account_ids(self) -> tuple[str, ...]:
        """The node service accounts the stack's pools run as (the bootstrap creates them): none on an existing cluster;
        one more for each isolation domain (teams[].isolationDomain), whose pools run as their own."""
        if not self.creates_cluster:
            return ()
        return (self.config.service_account_id("sys"), self.config.service_account_id("nodes"),
                *(d.node_account_id for d in isolation.domains(self.config)))

    @property
    def buckets(self) -> tuple[str, ...]:
        """The buckets the stack creates or grants on (its storage roles reach these only)."""
        if not self.creates_cluster:
            return ()
        weights = [b for w in self.config.workloads if w.serve and w.state != "finished" and (b := w.serve.weights_bucket)]
        backups = [self.config.mtc_bucket_name] if self.config.mtc_bucket_name else []
        domains = [b for d in isolation.domains(self.config) for b in (d.bucket_name, d.artifacts_bucket_name)]
        return tuple(dict.fromkeys([self.config.bucket_name, self.config.artifacts_bucket_name, *domains, *weights, *backups]))

    @property
    def bucket_grants(self) -> list[tuple[str, str, str, str]]:
        """(bucket, role, namespace, Kubernetes service account) of the workloads' and runs' bucket mounts, which the
        bootstrap grants: the principal names the project by number, and the buckets are usually not the stack's."""
        return resolve(self.config).bucket_grants

    @property
    def external_bucket_grants(self) -> list[tuple[str, str, str, str]]:
        """bucket_grants on buckets the stack does not make (the bootstrap's output lists them)."""
        return resolve(self.config).external_bucket_grants

    @property
    def reservation_reads(self) -> dict[str, tuple[str, ...]]:
        """Owner project -> the permissions the stack's CI identities need there to read its groups' reservations
        live under `pulumi preview` and `up` (slices[].readReservation; infra/reservation_records.py)."""
        paths: dict[str, list[ReservationPath]] = {}
        for g in self.config.slices:
            if g.read_reservation and g.reservation:
                path = parse_path(g.reservation, self.config.project)
                paths.setdefault(path.owner, []).append(path)
        return {owner: read_permissions(ps) for owner, ps in sorted(paths.items())}

    @property
    def mtc_backups_bucket(self) -> Optional[str]:
        """The multi-tier checkpointing backups' bucket the stack creates, on which the bootstrap grants GKE's
        checkpointing driver (it names the project by number, which only the bootstrap knows)."""
        return self.config.mtc_bucket_name if self.creates_cluster else None


def stack_names() -> list[str]:
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in STACKS_DIR.glob("Pulumi.*.yaml"))


def _stand_in_secrets(value: Any) -> tuple[Any, bool]:
    """`secure:` leaves (ciphertext) -> a marker, as the offline tools do; and whether there was one."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        return "[secret]", True
    if isinstance(value, dict):
        pairs = {k: _stand_in_secrets(v) for k, v in value.items()}
        return {k: v for k, (v, _) in pairs.items()}, any(s for _, s in pairs.values())
    if isinstance(value, list):
        items = [_stand_in_secrets(v) for v in value]
        return [v for v, _ in items], any(s for _, s in items)
    return value, False


def kms_key(provider: Any, path: str) -> Optional[KmsKey]:
    if provider in (None, "", "passphrase", "default"):
        return None
    m = GCPKMS.fullmatch(str(provider))
    if not m:
        raise MainStackError(f"{path}: secretsprovider {str(provider)[:120]!r} is neither a passphrase nor "
                             "gcpkms://projects/<project>/locations/<location>/keyRings/<ring>/cryptoKeys/<key>")
    return KmsKey(*m.groups())


def load_main_stack(name: str) -> MainStack:
    path = STACKS_DIR / f"Pulumi.{name}.yaml"
    shown = f"stacks/Pulumi.{name}.yaml"
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", name) or not path.is_file():
        raise MainStackError(f"no stack file {shown} (stacks: {', '.join(stack_names()) or 'none'})")
    try:
        doc = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise MainStackError(f"{shown}: not a stack file: {' '.join(str(e).split())[:200]}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("config"), dict):
        raise MainStackError(f"{shown}: no 'config:' mapping (Pulumi stack-config format)")
    raw: dict[str, Any] = {}
    secret_keys: set[str] = set()
    for key, value in doc["config"].items():
        namespace, _, short = str(key).rpartition(":")
        namespace = namespace or PROJECT_NAMESPACE  # unqualified keys belong to the project
        if namespace == PROJECT_NAMESPACE or (namespace == "gcp" and short in GCP_KEYS):
            raw[short], secret = _stand_in_secrets(value)
            if secret:
                secret_keys.add(f"{namespace}:{short}")
    try:
        cfg = load(raw, stack=name, secret_keys=frozenset(secret_keys))
    except ConfigError as e:
        raise MainStackError(f"{shown} is not a valid stack ({e.problems[0]}); `make plan STACK={name}` lists every problem") from None
    return MainStack(name=name, config=cfg, kms_key=kms_key(doc.get("secretsprovider"), shown), types=resource_types(cfg))


def resource_types(cfg: StackConfig) -> frozenset[str]:
    """The Pulumi types the main program registers for this config (its own pathways:* components aside)."""
    stack = resolve(cfg)
    kube = cfg.kubernetes
    types = {"pulumi:providers:kubernetes", "kubernetes:core/v1:Namespace", "kubernetes:scheduling.k8s.io/v1:PriorityClass"}
    if kube.guards.enabled:
        types |= {"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
                  "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"}
    if kube.install_controllers:
        types.add("kubernetes:helm.sh/v4:Chart")
    if kube.kueue.enabled:
        types.add("kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass")
        if kube.kueue.cluster_queue is None:  # a shared ClusterQueue and its flavors are someone else's
            types |= {f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}" for kind in ("ResourceFlavor", "ClusterQueue")}
            if any(t.parent or t.isolation_domain for t in cfg.teams):  # teams-<parent> and isolated-<domain> Cohorts
                types.add("kubernetes:kueue.x-k8s.io/v1beta2:Cohort")
        if stack.active_workloads or stack.run_queues:
            types.add("kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue")
        if any(g.queued_provisioning for g in cfg.slices):
            types |= {f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}" for kind in ("ProvisioningRequestConfig", "AdmissionCheck")}
        if any(g.dynamic for g in cfg.slices) and kube.kueue.cluster_queue is None:  # a pool set's Topology and slice check
            types |= {f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}" for kind in ("Topology", "AdmissionCheck")}
        if cfg.fleet is not None and cfg.fleet.role == "manager":  # infra/fleet.py: the kubeconfigs and MultiKueue
            types |= {"kubernetes:core/v1:Secret", *(f"kubernetes:kueue.x-k8s.io/v1beta2:{kind}"
                                                     for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"))}
        if cfg.teams:  # components/manifests/usage.py: the teams' usage recorder and the policy on its queue writes
            types |= {"kubernetes:core/v1:ServiceAccount", "kubernetes:core/v1:ConfigMap", "kubernetes:batch/v1:CronJob",
                      "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
                      "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding",
                      *(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}" for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"))}
        if cfg.fleet is not None and cfg.fleet.role == "worker":  # the manager's identity and token
            types |= {"kubernetes:core/v1:ServiceAccount", "kubernetes:core/v1:Secret",
                      *(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}" for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"))}
    if cfg.fleet is not None and cfg.fleet.role == "worker" and cfg.runs is not None:  # runs.fleet_dispatch_policy
        types |= {"kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
                  "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"}
    service = cfg.service_workload
    if service is not None:
        types |= {"kubernetes:core/v1:NamespacePatch", "kubernetes:rbac.authorization.k8s.io/v1:Role"}
        if service.service_settings.clients:
            types.add("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
    if cfg.runs is not None and cfg.runs.submitters:  # components/manifests/runs.py
        types |= {f"kubernetes:rbac.authorization.k8s.io/v1:{kind}" for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")}
    if cfg.runs is not None and (cfg.runs.submitters or any(t.submitters for t in cfg.teams)):
        types.add("kubernetes:core/v1:ResourceQuota")  # runs.run_object_quota, where submitters write
    if stack.serve_workloads:
        types |= {"kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "kubernetes:core/v1:Service",
                  "kubernetes:networking.k8s.io/v1:NetworkPolicy"}
        if stack.autoscaled_workloads:
            types |= {"kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "kubernetes:monitoring.googleapis.com/v1:PodMonitoring"}
            if kube.install_metrics_adapter:  # components/manifests/metrics_adapter.py
                types |= {"kubernetes:core/v1:ServiceAccount", "kubernetes:core/v1:Secret", "kubernetes:apps/v1:Deployment",
                          "kubernetes:apiregistration.k8s.io/v1:APIService", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole",
                          "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"}
        if cfg.gateway_workloads:
            # the inferencepool chart of each, and the Gateway and HTTPRoute in front of it
            types |= {"kubernetes:helm.sh/v4:Chart", "kubernetes:gateway.networking.k8s.io/v1:Gateway",
                      "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"}
    if any(w.service_account for w in stack.active_workloads) or (stack.runs is not None and (stack.runs.buckets or any(t.buckets for t in stack.teams))):
        types.add("kubernetes:core/v1:ServiceAccount")  # components/manifests/storage.py
    if stack.file_systems:
        types |= {"kubernetes:core/v1:PersistentVolume", "kubernetes:core/v1:PersistentVolumeClaim"}
    if stack.jobset_workloads:
        types.add("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    if any(w.profiling_secret or w.env_secret for w in stack.jobset_workloads):
        types.add("kubernetes:core/v1:Secret")
    if any(w.profiling_secret for w in stack.jobset_workloads):
        types.add("random:index/randomPassword:RandomPassword")
    if stack.mtc is not None and stack.mtc.slice_groups:  # components/manifests/checkpointing.py
        types.add("kubernetes:checkpointing.gke.io/v1:CheckpointConfiguration")
    if cfg.cluster.existing is not None:
        return frozenset(types)
    types |= {
        "gcp:compute/firewall:Firewall", "gcp:container/cluster:Cluster", "gcp:container/nodePool:NodePool",
        # the CI preview identity's dry-run access (components/manifests/ci_preview.py)
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "gcp:storage/bucket:Bucket", "gcp:storage/bucketIAMMember:BucketIAMMember",
        "gcp:monitoring/dashboard:Dashboard", "gcp:monitoring/alertPolicy:AlertPolicy",
    }
    if any(w.serve and w.serve.gateway.enabled and w.serve.gateway.client_ranges for w in cfg.workloads if w.state != "finished"):
        types.add("gcp:compute/regionSecurityPolicy:RegionSecurityPolicy")  # components/gcp/gateway_armor.py
    if cfg.network.existing_network is None:
        types |= {"gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"}
    if cfg.cloud_nat:
        types |= {"gcp:compute/router:Router", "gcp:compute/routerNat:RouterNat"}
    if any(g.tpu.placement is Placement.WORKLOAD_POLICY for g in cfg.slices):
        types.add("gcp:compute/resourcePolicy:ResourcePolicy")
    if any(g.future_reservation is not None for g in cfg.slices):
        types.add("gcp:compute/futureReservation:FutureReservation")
    return frozenset(types)
