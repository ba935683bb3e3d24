"""pathways:fleet in the program: a worker's identity for its manager and its `fleet` output; a manager's stack
references, the rules its workers' outputs must keep, its kubeconfig Secrets, MultiKueue objects and queues
(components/model/cluster/fleet.py for the facts, components/manifests/fleet.py for the objects)."""

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
from components.manifests import kueue as kueue_manifest
from components.model.capacity.pools import SliceGroup
from components.model.cluster.fleet import MULTIKUEUE_NAMESPACE, WorkerFacts, kubeconfig
from components.model.cluster.fleet_workers import fleet_problems
from components.model.config import StackConfig
from components.model.cost.pricing import tpu_chip_price
from components.model.errors import ConfigError, Problem, config_key
from components.model.resolved import ResolvedStack
from infra.errors import InvalidStackConfig


def run_queue_names(stack: ResolvedStack) -> tuple[str, ...]:
    """<namespace>/<name> of the stack's run LocalQueues: what a manager dispatches to."""
    return tuple(dict.fromkeys(f"{stack.namespace}/{q}" for q in stack.run_queues.values()))


def local_queue_names(stack: ResolvedStack) -> list[str]:
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in kueue_manifest.objects(stack) if o["kind"] == "LocalQueue"]


def existing_cluster_ca(kubeconfig_path: Path, context: Optional[str]) -> str:
    """The certificate-authority-data of a kubeconfig's cluster (its current context's, or `context`'s): what a
    manager's kubeconfig for this cluster carries inline. InvalidStackConfig, one line, for a file that cannot be read."""
    try:
        doc = yaml.safe_load(kubeconfig_path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise InvalidStackConfig(ConfigError([Problem(config_key(("cluster", "existing", "kubeconfig")), (
            f"cannot be read for the fleet worker's CA ({type(e).__name__}); give the path of a readable kubeconfig file"))])) from None
    if not isinstance(doc, dict):
        doc = {}
    name = context or doc.get("current-context")
    ctx = next((c["context"] for c in doc.get("contexts") or [] if c.get("name") == name), {})
    cluster = next((c["cluster"] for c in doc.get("clusters") or [] if c.get("name") == ctx.get("cluster")), {})
    return str(cluster.get("certificate-authority-data", ""))


def worker(cfg: StackConfig, stack: ResolvedStack, provider: k8s.Provider, after: list[Dependency],
           endpoint: pulumi.Input[str], ca_certificate: pulumi.Input[str]) -> dict[str, Any]:
    """The manager's ServiceAccount, ClusterRole, binding and token on this worker; the `fleet` output."""
    assert cfg.fleet is not None
    objects = fleet_manifest.worker_objects(cfg.fleet)
    *identity, token_secret = objects
    opts = pulumi.ResourceOptions(provider=provider, depends_on=all_of(after))
    made = [KubernetesObject(f"fleet-{o['kind'].lower()}", o, opts=opts) for o in identity]
    # typed, for its data: the provider waits for the token controller to fill it (pulumi-kubernetes #2048)
    secret = k8s.core.v1.Secret(
        "fleet-token", metadata=k8s.meta.v1.ObjectMetaArgs(**token_secret["metadata"]), type=token_secret["type"],
        opts=pulumi.ResourceOptions(provider=provider, depends_on=all_of([*after, *made])))
    token = secret.data.apply(lambda d: base64.b64decode((d or {}).get("token", "")).decode())
    kube = cfg.kubernetes
    return {
        "stack": cfg.stack, "region": cfg.region, "endpoint": endpoint, "caCertificate": ca_certificate,
        "token": pulumi.Output.secret(token),
        "versions": {"kueue": kube.kueue.version, "jobset": kube.jobset_version, "lws": kube.lws_version},
        "namespaces": list(stack.workload_namespaces), "localQueues": local_queue_names(stack),
        # what a manager's plan shows of this worker: its chips per group, their capacity and list cost an hour
        "groups": {g.name: group_facts(stack, g) for g in stack.slices},
        "quotas": kueue_manifest.quota_quantities(stack),
    }


def group_facts(stack: ResolvedStack, g: SliceGroup) -> dict[str, Any]:
    """A worker's slice group as its manager sees it: TPU, slices and chips in its queue, capacity, $/hour of those chips
    at the worker's prices (None where no price is known)."""
    chips = stack.group_slices(g) * g.tpu.chips
    price, _ = tpu_chip_price(g.tpu.family, g.capacity, stack.prices)
    return {"tpu": g.tpu.name, "slices": stack.group_slices(g), "chips": chips, "capacity": g.capacity.value,
            "hourly": None if price is None else round(price * chips, 2)}


def _facts(cfg: StackConfig, stack: ResolvedStack, outputs: list[Any]) -> dict[str, WorkerFacts]:
    """The workers' outputs read, judged by the fleet rules; InvalidStackConfig (one line each) if any is broken."""
    assert cfg.fleet is not None
    problems: list[Problem] = []
    facts: dict[str, WorkerFacts] = {}
    for i, (ref, value) in enumerate(zip(cfg.fleet.workers, outputs, strict=True)):
        if not isinstance(value, dict) or not value.get("endpoint"):
            problems.append(Problem(config_key(("fleet", "workers", i, "stack")), (
                f"{ref.stack} publishes no fleet output: deploy it with fleet.role: worker first (its `pulumi up` makes "
                "the manager's token)")))
            continue
        facts[ref.name] = WorkerFacts.from_output(value)
    problems += fleet_problems(cfg, run_queue_names(stack), facts)
    if problems:
        raise InvalidStackConfig(ConfigError(problems))
    return facts


def manager(cfg: StackConfig, stack: ResolvedStack) -> tuple[list[dict[str, Any]], pulumi.Output[dict[str, WorkerFacts]]]:
    """The manager's Kueue objects (the stack's, its ClusterQueues with the workers' summed quota and the MultiKueue
    check, then a kubeconfig Secret and MultiKueueCluster per worker, the MultiKueueConfig and the check), and the
    workers' facts (read through stack references, judged when they resolve)."""
    assert cfg.fleet is not None
    refs = [pulumi.StackReference(f"fleet-{w.name}", stack_name=w.stack) for w in cfg.fleet.workers]
    facts = pulumi.Output.all(*[r.get_output("fleet") for r in refs]).apply(lambda outs: _facts(cfg, stack, list(outs)))
    quotas = facts.apply(fleet_manifest.fleet_quotas)

    def quota(flavor: str, resource: str) -> pulumi.Output[str]:
        return quotas.apply(lambda q: q.get(flavor, {}).get(resource, "0"))

    own = kueue_manifest.objects(stack)
    queues = fleet_manifest.manager_cluster_queues([o for o in own if o["kind"] == "ClusterQueue"], quota)
    secrets = [{
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": fleet_manifest.kubeconfig_secret_name(w.name), "namespace": MULTIKUEUE_NAMESPACE},
        "stringData": {"kubeconfig": pulumi.Output.secret(facts.apply(lambda f, n=w.name: kubeconfig(n, f[n])))},
    } for w in cfg.fleet.workers]
    objects = [*secrets, *fleet_manifest.manager_objects(cfg.fleet)]
    first = next(i for i, o in enumerate(own) if o["kind"] == "ClusterQueue")
    merged = [*own[:first], *objects, *queues, *(o for o in own[first:] if o["kind"] != "ClusterQueue")]
    return merged, facts
