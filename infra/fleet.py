"""pathways:fleet in the program, one block: a manager's stack references, the rules its workers' outputs must keep,
its kubeconfig Secrets and MultiKueue objects (merged into its Kueue objects); a worker's identity for its manager
and its `fleet` output. Everything it renders is resolved once in the model (components/model/cluster/fleet.py,
ResolvedFleet); the objects are components/manifests/fleet.py's."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Optional

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.dependencies import Dependency, all_of
from components.kubernetes.kubernetes_object import KubernetesObject
from components.manifests import fleet as fleet_manifest
from components.manifests.kueue_api import TPU_RESOURCE
from components.model import quantity
from components.model.cluster.fleet import MULTIKUEUE_NAMESPACE, ResolvedFleet, WorkerFacts, kubeconfig
from components.model.cluster.fleet_workers import fleet_problems
from components.model.errors import ConfigError, Problem, config_key
from components.model.workloads.teams import TEAM_LABEL
from infra.config import read_input_file
from infra.errors import InvalidStackConfig


def existing_cluster_ca(kubeconfig_path: Path, context: Optional[str]) -> str:
    """The certificate-authority-data of a kubeconfig's cluster (its current context's, or `context`'s): what a
    manager's kubeconfig for this cluster carries inline. InvalidStackConfig, one line, for a file that cannot be read."""
    try:
        doc = yaml.safe_load(read_input_file(kubeconfig_path)) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise InvalidStackConfig(ConfigError([Problem(config_key(("cluster", "existing", "kubeconfig")), (
            f"cannot be read for the fleet worker's CA ({type(e).__name__}); give the path of a readable kubeconfig file"))])) from None
    if not isinstance(doc, dict):
        doc = {}
    name = context or doc.get("current-context")
    ctx = next((c["context"] for c in doc.get("contexts") or [] if c.get("name") == name), {})
    cluster = next((c["cluster"] for c in doc.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {})
    return str(cluster.get("certificate-authority-data", ""))


class Fleet:
    """The stack's part in a fleet. `kueue_objects` before the Kueue objects are made (a manager's MultiKueue objects
    and its ClusterQueues with the workers' quota join them); `output` after (a worker's identity and token for its
    manager need Kueue's namespace and queues). `endpoint`: a worker's API server URL and CA (base64 PEM; empty for a
    publicly trusted certificate), as its manager reaches it."""

    def __init__(self, fleet: ResolvedFleet, provider: k8s.Provider,
                 endpoint: Optional[tuple[pulumi.Input[str], pulumi.Input[str]]] = None):
        self.fleet, self.provider, self.endpoint = fleet, provider, endpoint
        self._workers: Optional[pulumi.Output[dict[str, WorkerFacts]]] = None

    def kueue_objects(self, own: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The Kueue objects to make: the stack's own, and a manager's fleet objects merged in their order."""
        if not self.fleet.manager:
            return own
        merged, self._workers = manager(self.fleet, own)
        return merged

    def output(self, after: list[Dependency], quotas: dict[str, dict[str, str]], namespace: str) -> Optional[dict[str, Any]]:
        """The `fleet` stack output: a worker's publication, or the workers as a manager read them."""
        if self.fleet.manager and self._workers is not None:
            return {"role": "manager", "workers": self._workers.apply(lambda f: {
                n: {"stack": w.name, "region": w.region, "endpoint": w.endpoint, "groups": dict(w.groups)} for n, w in f.items()}),
                # where a run landed: Kueue writes the worker's name on its Workload (python -m infra.run list shows it)
                "whereARunRuns": f"kubectl get workloads -n {namespace} -o custom-columns=NAME:.metadata.name,CLUSTER:.status.clusterName"}
        if self.fleet.worker and self.endpoint is not None:
            return {"role": "worker", **worker(self.fleet, self.provider, after, *self.endpoint, quotas=quotas)}
        return None


def worker(fleet: ResolvedFleet, provider: k8s.Provider, after: list[Dependency], endpoint: pulumi.Input[str],
           ca_certificate: pulumi.Input[str], quotas: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The manager's ServiceAccount, its read ClusterRole and write Roles with their bindings, and its token on this
    worker; the `fleet` output."""
    objects = fleet_manifest.worker_objects(fleet)
    *identity, token_secret = objects
    opts = pulumi.ResourceOptions(provider=provider, depends_on=all_of(after))
    # a Role and its binding per fleet namespace: the namespace in the name
    made = [KubernetesObject("-".join(["fleet", o["kind"].lower(), *([o["metadata"]["namespace"]] if o["kind"].startswith("Role") else [])]),
                             o, opts=opts) for o in identity]
    # typed, for its data: the provider waits for the token controller to fill it (pulumi-kubernetes #2048)
    secret = k8s.core.v1.Secret(
        "fleet-token", metadata=k8s.meta.v1.ObjectMetaArgs(**token_secret["metadata"]), type=token_secret["type"],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=all_of([*after, *made])))
    token = secret.data.apply(lambda d: base64.b64decode((d or {}).get("token", "")).decode())
    return {
        "stack": fleet.stack, "region": fleet.region, "endpoint": endpoint, "caCertificate": ca_certificate,
        "token": pulumi.Output.secret(token), "versions": dict(fleet.versions),
        "namespaces": list(fleet.namespaces), "localQueues": list(fleet.local_queues),
        # what a manager's plan shows of this worker: its chips per group, their capacity and list cost an hour
        "groups": {name: dict(g) for name, g in fleet.groups.items()},
        "quotas": quotas,
    }


def _facts(fleet: ResolvedFleet, outputs: list[Any], owned: Optional[dict[str, dict[str, Any]]] = None) -> dict[str, WorkerFacts]:
    """The workers' outputs read, judged by the fleet rules, and the teams' owned shares against the workers' summed
    slices; InvalidStackConfig (one line each) if any is broken."""
    problems: list[Problem] = []
    facts: dict[str, WorkerFacts] = {}
    for i, (ref, value) in enumerate(zip(fleet.workers, outputs, strict=True)):
        if not isinstance(value, dict) or not value.get("endpoint"):
            problems.append(Problem(config_key(("fleet", "workers", i, "stack")), (
                f"{ref.stack} publishes no fleet output: deploy it with fleet.role: worker first (its `pulumi up` makes "
                "the manager's token)")))
            continue
        facts[ref.name] = WorkerFacts.from_output(value)
    problems += fleet_problems(fleet, facts)
    total = fleet_manifest.fleet_quotas(facts)
    for flavor, amounts in (owned or {}).items():
        chips = amounts.get(TPU_RESOURCE, 0)
        if chips and chips > quantity.parse(total.get(flavor, {}).get(TPU_RESOURCE, "0")):
            problems.append(Problem(config_key(("teams",)), (
                f"the teams own {chips} chips of {flavor.removeprefix('tpu-')}, but the workers have "
                f"{total.get(flavor, {}).get(TPU_RESOURCE, '0')} of it; lower the teams' slices or add workers")))
    if problems:
        raise InvalidStackConfig(ConfigError(problems))
    return facts


def manager(fleet: ResolvedFleet, own: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], pulumi.Output[dict[str, WorkerFacts]]]:
    """The manager's Kueue objects (the stack's `own`, its ClusterQueues with the workers' summed quota and the
    MultiKueue check, then a kubeconfig Secret and MultiKueueCluster per worker, the MultiKueueConfig and the check),
    and the workers' facts (read through stack references, judged when they resolve)."""
    refs = [pulumi.StackReference(f"fleet-{w.name}", stack_name=w.stack) for w in fleet.workers]
    owned = fleet_manifest.team_owned(own)  # the teams' queues keep their shares; the stack's queue holds the rest
    facts = pulumi.Output.all(*[r.get_output("fleet") for r in refs]).apply(lambda outs: _facts(fleet, list(outs), owned))
    quotas = facts.apply(lambda f: fleet_manifest.fleet_quotas(f, owned))

    def quota(flavor: str, resource: str) -> pulumi.Output[str]:
        return quotas.apply(lambda q: q.get(flavor, {}).get(resource, "0"))

    def stack_queue(o: dict[str, Any]) -> bool:
        return o["kind"] == "ClusterQueue" and TEAM_LABEL not in (o["metadata"].get("labels") or {})

    queues = fleet_manifest.manager_cluster_queues([o for o in own if stack_queue(o)], quota)
    secrets = [{
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": fleet_manifest.kubeconfig_secret_name(w.name), "namespace": MULTIKUEUE_NAMESPACE},
        "stringData": {"kubeconfig": pulumi.Output.secret(facts.apply(lambda f, n=w.name: kubeconfig(n, f[n])))},
    } for w in fleet.workers]
    objects = [*secrets, *fleet_manifest.manager_objects(fleet)]
    first = next(i for i, o in enumerate(own) if o["kind"] == "ClusterQueue")
    merged = [*own[:first], *objects, *queues, *(o for o in own[first:] if not stack_queue(o))]
    return merged, facts
