"""Rules of a fleet stack's own config (pathways:fleet), before anything is made; what the workers publish is judged
at deploy (fleet.fleet_problems)."""

from __future__ import annotations

from components.model.cluster.fleet import POOL_KEYS
from components.model.errors import Problem, config_key
from components.model.stack import StackConfig


def manager(cfg: StackConfig) -> list[Problem]:
    """A manager queues and dispatches: Kueue and runs on, no pools of its own, no declared workloads."""
    fleet = cfg.fleet
    if fleet is None or fleet.role != "manager":
        return []
    problems: list[Problem] = []
    if not cfg.kubernetes.kueue.enabled:
        problems.append(Problem(config_key(("kubernetes", "kueue", "enabled")), (
            "false, but a fleet manager is Kueue's MultiKueue: it queues the fleet's runs; enable Kueue")))
    if cfg.runs is None:
        problems.append(Problem(config_key(("fleet", "role")), (
            "manager without runs: a manager dispatches ad-hoc runs (python -m infra.run), whose queues every worker has "
            "under the same names; add `runs: {}` here and on every worker")))
    for i, g in enumerate(cfg.slices):
        made = sorted(POOL_KEYS[k] for k in g.model_fields_set if k in POOL_KEYS)
        if made:
            problems.append(Problem(config_key(("slices", i, made[0])), (
                f"a fleet manager holds no slices: {', '.join(made)} shape node pools, which are its workers'; name the "
                "group and its TPU only (its quota is the workers' slices of the same group)")))
    return problems


def manager_workloads(cfg: StackConfig) -> list[Problem]:
    """A manager takes runs (infra.run, judged without this rule), not declared workloads."""
    if cfg.fleet is None or cfg.fleet.role != "manager" or not cfg.workloads:
        return []
    return [Problem(config_key(("workloads",)), (
        f"{', '.join(w.name for w in cfg.workloads)}: a fleet manager takes ad-hoc runs only; a declared workload keeps a "
        "LocalQueue of its own that no worker has, so Kueue could not dispatch it; submit it as a run, or declare it "
        "on a worker"))]


def worker(cfg: StackConfig) -> list[Problem]:
    """A worker queues the fleet's runs under the names the manager uses, and says where a manager reaches it."""
    fleet = cfg.fleet
    if fleet is None or fleet.role != "worker":
        return []
    problems: list[Problem] = []
    if not cfg.kubernetes.kueue.enabled:
        problems.append(Problem(config_key(("kubernetes", "kueue", "enabled")), (
            "false, but a fleet worker admits the runs its manager dispatches with its own Kueue; enable Kueue")))
    if cfg.runs is None:
        problems.append(Problem(config_key(("fleet", "role")), (
            "worker without runs: the manager dispatches ad-hoc runs to the runs' LocalQueues, which this stack makes "
            "only with `runs: {}`; add it")))
    if cfg.cluster.existing is not None and fleet.endpoint is None:
        problems.append(Problem(config_key(("fleet", "endpoint")), (
            "required on a cluster made elsewhere (cluster.existing): the API server URL the manager's Kueue reaches this "
            "cluster at (https://host:port); a kubeconfig's own server may be a local address or tunnel")))
    if cfg.cluster.existing is None and fleet.endpoint is not None:
        problems.append(Problem(config_key(("fleet", "endpoint")), (
            "a cluster the stack makes publishes its own endpoint; remove fleet.endpoint")))
    if cfg.cluster.existing is not None and fleet.private_endpoint:
        problems.append(Problem(config_key(("fleet", "privateEndpoint")), (
            "only on a cluster the stack makes; on a cluster made elsewhere, fleet.endpoint says where the manager reaches it")))
    internet_tokens = cfg.cluster.existing is None and not fleet.private_endpoint
    if fleet.acknowledge_internet_tokens and not internet_tokens:
        problems.append(Problem(config_key(("fleet", "acknowledgeInternetTokens")), (
            "has no effect: this worker takes no token on the DNS endpoint (privateEndpoint, or a cluster made elsewhere); remove it")))
    elif cfg.protected and internet_tokens and not fleet.acknowledge_internet_tokens:
        problems.append(Problem(config_key(("fleet", "privateEndpoint")), (
            "a protected worker would take the manager's Kubernetes token on its internet-facing DNS endpoint, which no "
            "authorized-networks list covers (a leaked token works from anywhere); set fleet.privateEndpoint: true (the "
            "manager reaches the private IP endpoint through the worker's VPC) or, to accept the exposure, "
            "fleet.acknowledgeInternetTokens: true")))
    return problems


RULES = (manager, manager_workloads, worker)

