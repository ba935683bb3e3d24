"""A fleet: one Kueue queue over several clusters with Kueue's MultiKueue (Pulumi-free).

A `worker` stack publishes what a manager needs to dispatch to it (the `fleet` stack output, `WorkerFacts`); a
`manager` stack reads each worker's output through a Pulumi stack reference and makes Kueue's MultiKueue objects.

Facts, Kueue v0.19.2 (its CRDs and pkg/controller/admissionchecks/multikueue):
- MultiKueueCluster (v1beta2, cluster-scoped) spec.clusterSource.kubeConfig {locationType: Secret, location: <name>}:
  a Secret in Kueue's namespace (kueue-system) with the kubeconfig under the key `kubeconfig`.
- MultiKueueConfig spec.clusters: 1 to 20 MultiKueueCluster names.
- AdmissionCheck controllerName kueue.x-k8s.io/multikueue, parameters naming the MultiKueueConfig; a ClusterQueue
  takes one such check, for all its flavors (with onFlavors, or beside a ProvisioningRequest check, Kueue makes
  the queue inactive: pkg/cache/scheduler/clusterqueue.go).
- The kubeconfig is refused (MultiKueueCluster Active=False, reason InsecureKubeConfig; no switch turns the check
  off since v0.15, PR #7439) when it has an exec plugin, an auth provider, tokenFile, basic auth, a CA file path,
  insecure-skip-tls-verify or no server: `gcloud`'s kubeconfig does not work, an inline token does.
- A dispatched JobSet keeps its queue-name label: each worker needs the manager's namespace and a LocalQueue of the
  same name (site/content/en/docs/tasks/manage/setup_multikueue.md); Kueue's JobSet webhook sets the manager's copy's
  spec.managedBy to kueue.x-k8s.io/multikueue, and the worker's copy runs.
- Worker RBAC: Kueue's create-multikueue-kubeconfig.sh, narrowed to the kinds this stack runs (JobSet, LWS).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional

from pydantic import Field, field_validator, model_validator

from components.model.common import _dns_label, _Model

MAX_FLEET_WORKERS = 20  # MultiKueueConfig spec.clusters maxItems (Kueue v0.19.2 CRD)
MULTIKUEUE_NAMESPACE = "kueue-system"
MULTIKUEUE_SERVICE_ACCOUNT = "pathways-multikueue"
# the name the API server gives the manager's Kueue on a worker (its token's user)
MULTIKUEUE_USER = f"system:serviceaccount:{MULTIKUEUE_NAMESPACE}:{MULTIKUEUE_SERVICE_ACCOUNT}"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
MULTIKUEUE_CHECK = "pathways-fleet"
# Pulumi's fully qualified stack name (a stack reference): <organization>/<project>/<stack>
STACK_REFERENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class FleetWorker(_Model):
    """One worker cluster of a manager's fleet."""

    name: str = Field(description="The worker's MultiKueueCluster name on the manager (lowercase, at most 63 characters).")
    stack: str = Field(description=(
        "The worker's Pulumi stack, fully qualified (<organization>/<project>/<stack>): the manager reads its `fleet` "
        "output with a stack reference."))

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _dns_label(v, 63)

    @field_validator("stack")
    @classmethod
    def _stack(cls, v: str) -> str:
        if not STACK_REFERENCE.fullmatch(v):
            raise ValueError(f"{v[:120]!r} is not a fully qualified stack name; give <organization>/<project>/<stack> "
                             "(with the DIY backends, organization is `organization`)")
        return v


class FleetConfig(_Model):
    """pathways:fleet: this stack's part in a MultiKueue fleet (docs/fleet.md)."""

    role: Literal["worker", "manager"] = Field(description=(
        "worker: runs the fleet's workloads and publishes what a manager needs (the `fleet` output, its token a "
        "secret); manager: queues workloads and dispatches each to a worker with room."))
    workers: list[FleetWorker] = Field(default_factory=list, max_length=MAX_FLEET_WORKERS, description=(
        f"manager: its workers, in the order Kueue tries them (at most {MAX_FLEET_WORKERS}, MultiKueueConfig's limit)."))
    endpoint: str | None = Field(default=None, description=(
        "worker on a cluster made elsewhere (cluster.existing): the API server URL the manager's Kueue reaches it at "
        "(https://host:port). A cluster the stack makes publishes its own endpoint (the DNS endpoint when private)."))
    private_endpoint: bool = Field(default=False, description=(
        "worker on a cluster the stack makes: publish the control plane's private IP endpoint and its CA for the manager, "
        "and keep Kubernetes tokens off the internet-facing DNS endpoint. The manager's nodes must reach the worker's "
        "VPC (the same network, peering or VPN); docs/fleet.md."))
    acknowledge_internet_tokens: bool = Field(default=False, description=(
        "worker in a protected stack, on the DNS endpoint: true accepts that the control plane takes the manager's "
        "Kubernetes token from anywhere on the internet (no authorized-networks list covers the DNS endpoint); "
        "otherwise set privateEndpoint. docs/fleet.md."))
    token_generation: int = Field(default=1, ge=1, le=1_000_000, description=(
        "worker: raise it to rotate the manager's token: `pulumi up` here replaces the token Secret (the old token "
        "stops working), then `pulumi up` on the manager writes the new one into its kubeconfig Secret."))

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"https://[a-z0-9.-]+(:[0-9]{1,5})?/?", v):
            raise ValueError(f"{v[:120]!r} is not an API server URL; give https://<host or IP>[:port] (Kueue refuses other "
                             "schemes and hosts that are not an IP or DNS name)")
        return v

    @model_validator(mode="after")
    def _role_keys(self) -> "FleetConfig":
        if self.role == "manager":
            if not self.workers:
                raise ValueError("a manager dispatches to workers; list at least one under workers")
            worker_keys = {"endpoint", "token_generation", "private_endpoint", "acknowledge_internet_tokens"}
            if worker_keys & self.model_fields_set:
                raise ValueError("endpoint, tokenGeneration, privateEndpoint and acknowledgeInternetTokens are a worker's "
                                 "keys; remove them from the manager")
            for key in ("name", "stack"):
                seen: set[str] = set()
                for w in self.workers:
                    value = getattr(w, key)
                    if value in seen:
                        raise ValueError(f"workers: {key} {value!r} is listed twice")
                    seen.add(value)
        elif self.workers:
            raise ValueError("workers is a manager's key; a worker lists none")
        return self


@dataclass(frozen=True)
class WorkerFacts:
    """What a worker stack publishes for its manager (its `fleet` output), read back from the stack reference."""

    name: str
    """The worker's stack name."""
    region: str
    endpoint: str
    ca_certificate: str
    """base64 PEM, as a kubeconfig's certificate-authority-data takes it"""
    token: str
    versions: Mapping[str, str]
    """kueue, jobset, lws chart versions"""
    namespaces: tuple[str, ...]
    local_queues: tuple[str, ...]
    """<namespace>/<name> of every LocalQueue it has"""
    groups: Mapping[str, Mapping[str, Any]]
    """slice group -> {tpu, slices}"""
    quotas: Mapping[str, Mapping[str, str]]
    """Kueue flavor -> resource -> quantity"""

    @classmethod
    def from_output(cls, value: Mapping[str, Any]) -> "WorkerFacts":
        return cls(
            name=str(value.get("stack", "")), region=str(value.get("region", "")), endpoint=str(value.get("endpoint", "")),
            ca_certificate=str(value.get("caCertificate", "")), token=str(value.get("token", "")),
            versions=dict(value.get("versions") or {}), namespaces=tuple(value.get("namespaces") or ()),
            local_queues=tuple(value.get("localQueues") or ()), groups=dict(value.get("groups") or {}),
            quotas=dict(value.get("quotas") or {}),
        )


@dataclass(frozen=True)
class ResolvedFleet:
    """pathways:fleet resolved once (config.resolve): what this stack publishes as a worker, and what a manager judges
    its workers by (fleet_workers.fleet_problems). The program's fleet block (infra/fleet.py) renders only these."""

    role: Literal["worker", "manager"]
    stack: str
    region: str
    workers: tuple[FleetWorker, ...]
    """a manager's workers, in the order Kueue tries them"""
    endpoint: Optional[str]
    """fleet.endpoint: a worker's API server URL on a cluster made elsewhere (a cluster the stack makes publishes its own)"""
    token_generation: int
    """fleet.tokenGeneration: a worker's token Secret is named after it (raising it rotates the token)"""
    private_endpoint: bool
    """fleet.privateEndpoint: a worker the stack makes publishes its private IP endpoint and CA"""
    internet_tokens: bool
    """a worker's control plane takes Kubernetes tokens on its internet-facing DNS endpoint (a cluster the stack makes,
    without privateEndpoint)"""
    versions: Mapping[str, str]
    """kueue, jobset, lws chart versions: MultiKueue needs the same controllers on every cluster"""
    namespaces: tuple[str, ...]
    """the workload namespaces, the stack's own first"""
    local_queues: tuple[str, ...]
    """<namespace>/<name> of every LocalQueue the stack makes (its workloads', then its runs')"""
    run_queues: tuple[str, ...]
    """<namespace>/<name> of the run LocalQueues: what a manager dispatches to"""
    groups: Mapping[str, Mapping[str, Any]]
    """slice group -> what a manager's plan shows of it: TPU, slices and chips in the queue, capacity, list $/hour"""
    queue_workers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """a manager's team run queue (<namespace>/<name>) -> the workers it dispatches to (teams[].workers); a queue not
    listed goes to every worker"""
    team_checks: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """a manager's per-team MultiKueue admission check -> its workers, in order (teams naming workers)"""

    @property
    def manager(self) -> bool:
        return self.role == "manager"

    @property
    def worker(self) -> bool:
        return self.role == "worker"

    @property
    def dispatch_namespaces(self) -> tuple[str, ...]:
        """Where a manager's Kueue writes on a worker: the run queues' namespaces (a dispatched run keeps its own)."""
        return tuple(dict.fromkeys(q.split("/", 1)[0] for q in self.run_queues))


def kubeconfig(worker: str, facts: WorkerFacts) -> str:
    """The kubeconfig Kueue reads from the worker's Secret: the endpoint, its CA inline and an inline token (what
    Kueue accepts; no exec plugin, token file or CA path), as YAML (JSON is YAML)."""
    import json

    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": worker,
        "clusters": [{"name": worker, "cluster": {"server": facts.endpoint, "certificate-authority-data": facts.ca_certificate}}],
        "users": [{"name": MULTIKUEUE_SERVICE_ACCOUNT, "user": {"token": facts.token}}],
        "contexts": [{"name": worker, "context": {"cluster": worker, "user": MULTIKUEUE_SERVICE_ACCOUNT}}],
    }, indent=2)


# --- the rules a manager's own config must keep (the workers' outputs are judged at deploy: fleet_problems) ---------

# Slice-group keys that make or shape node pools: a manager has none (its workers hold the slices).
POOL_KEYS = {"count": "count", "spares": "spares", "spot": "spot", "flex_start": "flexStart",
             "queued_provisioning": "queuedProvisioning", "scale_to_zero": "scaleToZero", "ladder": "ladder",
             "reservation": "reservation", "future_reservation": "futureReservation", "auto_upgrade": "autoUpgrade"}
