"""Loading a stack's configuration: the entry point of the typed model (Pulumi-free).

``load()`` turns the raw key/value mapping of a stack's config into a frozen ``StackConfig`` (its schema:
``stack``) or raises ``ConfigError`` with one line per problem, each naming the key path, the bad value and what
would be valid: first what the schema refuses, then what the rules that span keys find (``checks``, each
feature's rules beside its model). ``resolve()`` derives every value the components need, once. Nothing here
knows about Pulumi: ``infra.config`` feeds it.
"""


from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from typing import Any, Iterable, Mapping, Optional, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from components.model.capacity.pools import Capacity as Capacity
from components.model.capacity.pools import SliceGroup
from components.model.checks import NOT_FOR_RUNS, cross_checks
from components.model.cluster import cluster as cluster_rules
from components.model.cluster.bucket_grants import owned_buckets
from components.model.cluster.cluster import AuthorizedNetwork
from components.model.cluster.fleet import ResolvedFleet
from components.model.common import GCP_KEYS as GCP_KEYS
from components.model.common import MAX_TPU_POOLS as MAX_TPU_POOLS
from components.model.common import MAX_WORKLOADS as MAX_WORKLOADS
from components.model.common import PROJECT_NAMESPACE as PROJECT_NAMESPACE
from components.model.cost.pricing import tpu_chip_price
from components.model.errors import ConfigError, Problem
from components.model.errors import config_key as config_key
from components.model.resolved import (
    SERVICE_WORKER_JOB,
    WORKER_JOB,
    ResolvedMtc,
    ResolvedStack,
    ResolvedWorkload,
    cluster_queue_name,
    fail_on_exit_codes,
    formed_slice,
    proxy_image,
    server_image,
    worker_backoff_limit,
)
from components.model.stack import StackConfig as StackConfig
from components.model.workloads import isolation
from components.model.workloads.images import is_pinned as is_pinned
from components.model.workloads.run_limits import run_mount_problems, run_team_problems
from components.model.workloads.runs import RUN_KEYS, RUN_MODES, RUN_PRIORITIES
from components.model.workloads.storage import service_account_name
from components.model.workloads.workload import SCRATCH_PERMISSIONS as SCRATCH_PERMISSIONS
from components.model.workloads.workload import Workload, coordinator_address, serve_leader_address
from components.model.workloads.workload import head_pod_demand as head_pod_demand

# StackConfig fields the loader sets, never config keys
LOADER_KEYS = ("stack", "secretKeys", "plannedAt")

# --- the error contract ------------------------------------------------------------------------


def _unwrap(annotation: Any) -> Any:
    """The model class inside Optional[...] / list[...] / dict[str, ...], if any."""
    origin = get_origin(annotation)
    if origin in (list, Union, dict) or str(origin) == "types.UnionType":
        for arg in get_args(annotation):
            found = _unwrap(arg)
            if isinstance(found, type) and issubclass(found, BaseModel):
                return found
    return annotation


def _model_at(loc: tuple[Any, ...]) -> Optional[type[BaseModel]]:
    model: Any = StackConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def key_paths(model: Optional[type[BaseModel]] = None, prefix: str = "") -> list[str]:
    """Every config key the model accepts, e.g. pathways:slices[i].tpu (for the README reference)."""
    model = model or StackConfig
    out = []
    for name, f in model.model_fields.items():
        alias = f.alias or name
        if model is StackConfig:
            if alias in LOADER_KEYS:
                continue
            key = f"gcp:{alias}" if alias in GCP_KEYS else f"{PROJECT_NAMESPACE}:{alias}"
        else:
            key = f"{prefix}.{alias}"
        inner = _unwrap(f.annotation)
        is_list = get_origin(f.annotation) is list
        if isinstance(inner, type) and issubclass(inner, BaseModel) and inner is not AuthorizedNetwork:
            out += key_paths(inner, key + ("[i]" if is_list else ""))
        else:
            out.append(key)
    return out


def valid_keys(model: type[BaseModel]) -> list[str]:
    keys = [f.alias or n for n, f in model.model_fields.items()]
    if model is StackConfig:  # gcp:* keys and the loader's stack name are not pathways:* keys
        keys = [k for k in keys if k not in (*GCP_KEYS, *LOADER_KEYS)]
    return keys


def _problem(err: Mapping[str, Any], secret: bool = False) -> Problem:
    """One line for a pydantic error; a value under a secret key is never shown."""
    loc = tuple(err["loc"])
    kind = err["type"]
    # cluster.existing names a kubeconfig; what is written there in its place may be one, credentials and all
    value = "[secret]" if secret or loc[:2] == ("cluster", "existing") else repr(err.get("input"))
    if kind == "extra_forbidden":
        parent = _model_at(loc[:-1])
        valid = f"; valid keys: {', '.join(valid_keys(parent))}" if parent else ""
        if len(loc) == 1 and any(c in str(loc[0]) for c in ".["):
            valid += f"; to set a nested key use `pulumi config set --path 'pathways:{loc[0]}' <value>`"
        return Problem(config_key(loc), f"unknown key{valid}")
    if kind == "missing":
        return Problem(config_key(loc), "required but not set")
    msg = str(err["msg"])
    if msg.startswith("Value error, "):
        return Problem(config_key(loc), msg[len("Value error, "):])
    return Problem(config_key(loc), f"{value} is not valid: {msg[0].lower()}{msg[1:]}")


# --- secrets and loading --------------------------------------------------------------------


# Secret config is supported where the stack can keep it secret end to end: workload env values
# (they become a Kubernetes Secret per workload). Pulumi marks a whole top-level key secret when any
# value under it is (`config set --secret --path`), so the key is what the program can see.
SECRET_CAPABLE_KEYS = frozenset({f"{PROJECT_NAMESPACE}:workloads"})


def _secret_key_problems(secret_keys: frozenset[str]) -> list[Problem]:
    return [
        Problem(key, (
            "is set as a secret, but only workload env values can be kept secret (they go to a Kubernetes Secret); "
            "this value would reach resources in plaintext: set it without --secret, or move the secret into "
            "`pulumi config set --secret --path 'pathways:workloads[i].env.NAME'`"
        ))
        for key in sorted(secret_keys - SECRET_CAPABLE_KEYS)
    ]


# Where a stack file may hold a secret below a top-level key: a workload's env value, as
# `pulumi config set --secret --path 'pathways:workloads[i].env.NAME'` writes it.
SECRET_ENV_PATH = re.compile(rf"^{PROJECT_NAMESPACE}:workloads\[[0-9]+\]\.env\.[^.\[\]]+$")
WORKLOADS_KEY = f"{PROJECT_NAMESPACE}:workloads"


def is_secure_value(value: Any) -> bool:
    """A stack file's ciphertext: `{secure: v1:...}` (Pulumi's stack-config format)."""
    return isinstance(value, Mapping) and set(value) == {"secure"}


def secure_paths(key: str, value: Any) -> list[str]:
    """The `pulumi config set --path` paths of every `secure:` leaf under a stack file's `key: value` (the key
    itself when the whole value is one)."""
    if is_secure_value(value):
        return [key]
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in secure_paths(f"{key}.{k}", v)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in secure_paths(f"{key}[{i}]", v)]
    return []


def secret_path_problems(key: str, paths: Iterable[str]) -> list[Problem]:
    """Secrets below a top-level key where the stack cannot keep them secret: anywhere but a workload's env
    values (the rest reaches JobSets, LeaderWorkerSets, node pools and buckets, so the state, the preview and
    the cluster, in plaintext), or the whole workloads list (then its env values cannot be told from the rest).
    `paths`: those of one top-level `key` (secure_paths). One line each, naming the path, never the value. A whole
    top-level key given as a secret is load()'s to judge (_secret_key_problems)."""
    problems = []
    for path in paths:
        shown = path if path.isprintable() else repr(path)
        if path == key == WORKLOADS_KEY:
            problems.append(Problem(shown, (
                "the whole value is encrypted, so its workloads cannot be checked; keep workloads in plain text and set "
                "each secret with pulumi config set --secret --path 'pathways:workloads[i].env.NAME' VALUE")))
        elif path != key and not SECRET_ENV_PATH.fullmatch(path):
            problems.append(Problem(shown, (
                "a secret value here would reach resources in plaintext; only workload env values can be kept secret: "
                "pulumi config set --secret --path 'pathways:workloads[i].env.NAME' VALUE")))
    return problems


def _secret_strings(value: Any, under_env: bool = False) -> set[str]:
    """The env values under a secret key (the only values that may be secret, SECRET_CAPABLE_KEYS), found
    wherever an `env` mapping sits, however malformed the rest is; texts of 4+ characters."""
    if isinstance(value, Mapping):
        return {x for k, v in value.items() for x in _secret_strings(v, under_env or k == "env")}
    if isinstance(value, (list, tuple)):
        return {x for v in value for x in _secret_strings(v, under_env)}
    if not under_env or isinstance(value, bool) or value is None:
        return set()
    text = str(value)
    return {text} if len(text) >= 4 else set()


def _redacted(problems: list[Problem], secrets: set[str]) -> list[Problem]:
    """Problems with every secret text replaced: under `pulumi preview` the program sees decrypted values,
    and a message quoting one would put it in CI logs. Longest first, so a secret that contains another
    is replaced whole."""
    out = []
    for p in problems:
        message = p.message
        for text in sorted(secrets, key=len, reverse=True):
            message = message.replace(text, "[secret]").replace(repr(text)[1:-1], "[secret]")
        out.append(Problem(p.key, message))
    return out


# Namespaces a stack file's keys belong to here: the project's (read by the program), the Google provider's
# (gcp:project, gcp:region... read too) and the Kubernetes provider's. Pulumi hands a program every key whatever
# its namespace, and a program reads the ones it asks for: a key whose namespace is misspelt
# (`pathway:protected: true`) is silently nobody's, and what it was meant to switch on stays off.
KNOWN_NAMESPACES = (PROJECT_NAMESPACE, "gcp", "kubernetes")


def _one_edit_apart(a: str, b: str) -> bool:
    """a and b differ by exactly one insertion, deletion, substitution or swap of adjacent letters."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def misspelt_namespaces(keys: Iterable[str]) -> list[Problem]:
    """A key whose namespace is one edit from one the stack reads: refused, naming the key it was likely meant to be.
    Other namespaces (other providers', a team's own) pass untouched; the value is never shown."""
    problems = []
    for key in sorted(keys):
        namespace, sep, name = key.partition(":")
        if not sep or namespace in KNOWN_NAMESPACES:
            continue
        # Pulumi's namespaces are case-sensitive: `Pathways:` is as much another namespace as `pathway:`
        meant = [k for k in KNOWN_NAMESPACES if namespace.lower() == k or _one_edit_apart(namespace.lower(), k)]
        if meant:
            shown = key if key.isprintable() else repr(key)
            problems.append(Problem(shown, (
                f"unknown namespace {namespace!r}, one edit from {meant[0]!r}: did you mean {meant[0]}:{name}? A key of a "
                "namespace the stack does not read is ignored, so as written this one has no effect"
            )))
    return problems


def load(raw: dict[str, Any], stack: str, secret_keys: frozenset[str] = frozenset(), now: Optional[datetime] = None) -> StackConfig:
    """Validate raw config values (keys without namespace) into a StackConfig, or raise ConfigError. `now`: the plan's
    clock (the composition root passes it: the wall clock under the CLI, the offline engine's input); a caller that
    gives none (a model check, the researcher's client) reads it here."""
    secret_problems = _secret_key_problems(frozenset(secret_keys))
    if secret_problems:
        raise ConfigError(secret_problems)
    secret_roots = {k.partition(":")[2] for k in secret_keys}
    secrets = {x for name in secret_roots if name in raw for x in _secret_strings(raw[name])}
    try:
        cfg = StackConfig.model_validate({**raw, "stack": stack, "secretKeys": frozenset(secret_keys),
                                          "plannedAt": now or cluster_rules.now()})
    except ValidationError as e:
        problems = [_problem(err, secret=bool(err["loc"]) and err["loc"][0] in secret_roots and "env" in err["loc"]) for err in e.errors()]
        raise ConfigError(_redacted(problems, secrets)) from None
    problems = cross_checks(cfg)
    if problems:
        raise ConfigError(_redacted(problems, secrets))
    return cfg


# --- derived values ---------------------------------------------------------------------------


def resolve(cfg: StackConfig) -> ResolvedStack:
    """Every derived value, once. The config is valid (config.load checked it)."""
    groups = {g.name: g for g in cfg.slices}
    isolated = isolation.domains(cfg)
    by_team = {team: d for d in isolated for team in d.teams}
    workloads = []
    for w in cfg.workloads:
        group = groups[w.slice_group or cfg.slices[0].name]
        formed = formed_slice(group, w)
        workloads.append(ResolvedWorkload(
            spec=w, name=w.name, mode=w.mode, state=w.state,
            namespace=cfg.workload_namespace(w),
            group=group,
            slices=cfg.workload_slices(w),
            server_image=server_image(cfg.pathways_version, w),
            proxy_image=proxy_image(cfg.pathways_version, w),
            restarts=w.restarts,
            worker_backoff_limit=worker_backoff_limit(formed or group.tpu, w),
            fail_on_exit_codes=fail_on_exit_codes(w),
            priority=w.effective_priority,
            worker_job=SERVICE_WORKER_JOB if w.mode == "service" else WORKER_JOB,
            coordinator=serve_leader_address(w.name, cfg.workload_namespace(w)) if w.mode == "serve" else coordinator_address(w.name, w.subdomain),
            local_queue=w.name if cfg.kubernetes.kueue.enabled else None,
            cluster_queue=_cluster_queue(cfg, w, group) if cfg.kubernetes.kueue.enabled else None,
            profiling_secret=f"{w.name}-profiling-token" if w.profiling else None,
            env_secret=f"{w.name}-env" if cfg.secret_env and w.env else None,
            cache_location=domain.cache_location if (domain := by_team.get(w.team or "")) else cfg.cache_location,
            artifacts_location=domain.artifacts_location if domain else cfg.artifacts_location,
            load_balancer_source_ranges=cfg.load_balancer_source_ranges(w),
            mtc_mount_path=cfg.resilience.mtc.mount_path if cfg.resilience.mtc and cfg.uses_mtc(w) else None,
            service_account=service_account_name(w.name) if any(m.bucket for m in w.mounts) else None,
            rungs=(group, *(groups[n] for n in group.ladder)),
            formed=formed,
        ))
    service = cfg.service_workload
    stack = ResolvedStack(
        stack=cfg.stack, project=cfg.project, region=cfg.region, zone=cfg.zone,
        location=cfg.region if cfg.cluster.regional else cfg.zone,
        cluster_name=cfg.cluster_name, namespace=cfg.kubernetes.namespace,
        cache_location=cfg.cache_location, artifacts_location=cfg.artifacts_location,
        artifacts_bucket=cfg.artifacts_bucket_name, artifacts_prefix=cfg.bucket.artifacts_prefix,
        bucket_name=cfg.bucket_name, bucket=cfg.bucket,
        kueue=cfg.kubernetes.kueue.enabled,
        head_machine_type=cfg.head_pool.machine_type, head_nodes=cfg.head_nodes, head_scale_to_zero=cfg.head_pool.scale_to_zero,
        system_machine_type=cfg.cluster.system_pool.machine_type,
        system_min_nodes=cfg.cluster.system_pool.min_nodes, system_max_nodes=cfg.cluster.system_pool.max_nodes,
        proxy_machine_type=service.service_settings.proxy_machine_type if service else None,
        proxy_nodes=cfg.proxy_nodes,
        node_pools=cfg.node_pools, node_pool_concurrency=cfg.cluster.node_pool_concurrency,
        slices=tuple(cfg.slices), workloads=tuple(workloads),
        monitoring=cfg.monitoring, prices=cfg.prices, labels=dict(cfg.default_labels),
        existing_cluster=cfg.cluster.existing is not None, owned_buckets=owned_buckets(cfg),
        install_controllers=cfg.kubernetes.install_controllers,
        install_metrics_adapter=cfg.kubernetes.install_metrics_adapter,
        metrics_adapter_certificate_generation=cfg.kubernetes.metrics_adapter_certificate_generation,
        head_node_pool=cfg.head_pool.node_pool,
        shared_cluster_queue=cfg.kubernetes.kueue.cluster_queue if cfg.kubernetes.kueue.enabled else None,
        guards=cfg.kubernetes.guards,
        mtc=_resolved_mtc(cfg),
        runs=cfg.runs,
        file_systems=tuple(cfg.storage.file_systems),
        teams=tuple(cfg.teams), domains=isolated,
        csi_drivers=cfg.csi_drivers,
        group_subjects=tuple(dict.fromkeys(name for _, name in cfg.group_subjects)), security_group=cfg.cluster.security_group,
        # a fleet manager's groups are its workers' (no pools, no quota of its own); a calendar request's wait for delivery
        undelivered=frozenset(g.name for g in cfg.slices if (cfg.fleet is not None and cfg.fleet.role == "manager")
                              or (g.future_reservation and g.future_reservation.start_time > cfg.planned_at)),
    )
    return dataclasses.replace(stack, fleet=_resolved_fleet(cfg, stack))


def _resolved_fleet(cfg: StackConfig, stack: ResolvedStack) -> Optional[ResolvedFleet]:
    """pathways:fleet, once: the versions, namespaces, queues and slice groups a worker publishes and a manager
    judges its workers by."""
    if cfg.fleet is None:
        return None
    kube = cfg.kubernetes
    groups = {}
    for g in stack.slices:
        chips = stack.group_slices(g) * g.tpu.chips
        price, _ = tpu_chip_price(g.tpu.family, g.capacity, stack.prices)
        groups[g.name] = {"tpu": g.tpu.name, "slices": stack.group_slices(g), "chips": chips, "capacity": g.capacity.value,
                          "hourly": None if price is None else round(price * chips, 2)}
    return ResolvedFleet(
        role=cfg.fleet.role, stack=cfg.stack, region=cfg.region, workers=tuple(cfg.fleet.workers), endpoint=cfg.fleet.endpoint,
        token_generation=cfg.fleet.token_generation, private_endpoint=cfg.fleet.private_endpoint,
        internet_tokens=cfg.fleet.role == "worker" and cfg.cluster.existing is None and not cfg.fleet.private_endpoint,
        versions={"kueue": kube.kueue.version, "jobset": kube.jobset_version, "lws": kube.lws_version},
        namespaces=tuple(stack.workload_namespaces), local_queues=stack.local_queue_names,
        run_queues=tuple(dict.fromkeys([*(f"{stack.namespace}/{q}" for q in stack.run_queues.values()),
                                        *(f"{t.team_namespace}/{stack.team_run_queue(t)}" for t in stack.teams)])), groups=groups,
        queue_workers={f"{t.team_namespace}/{stack.team_run_queue(t)}": tuple(t.workers) for t in stack.teams if t.workers},
        team_checks={t.fleet_check: tuple(t.workers) for t in stack.teams if t.workers})


def _resolved_mtc(cfg: StackConfig) -> Optional[ResolvedMtc]:
    mtc, bucket = cfg.resilience.mtc, cfg.mtc_bucket_name
    if mtc is None or bucket is None:
        return None
    # every group a mounting workload's workers may land on: its own and its ladder's rungs
    groups = sorted({name for w in cfg.workloads if cfg.uses_mtc(w)
                     for name in (cfg.workload_group(w).name, *cfg.workload_group(w).ladder)})
    return ResolvedMtc(bucket=bucket, in_memory_volume_size=mtc.in_memory_volume_size, mount_path=mtc.mount_path,
                       gcs_fuse_mount_options=mtc.gcs_fuse_mount_options, slice_groups=tuple(groups))


# --- ad-hoc runs (python -m infra.run; runs.py has the stack's side) ---------------------------
# A run spec is appended to the stack's workloads and judged by the stack's own schema and rules, so a bad spec
# gets the same one-line errors as a stack file, keyed run.<key> instead of pathways:workloads[i].<key>.


def _run_key(problem: Problem, prefix: str) -> Problem:
    """pathways:workloads[7].image -> run.image: the spec's own key, in the key and in the message."""
    index = prefix[prefix.index("["):]
    message = problem.message.replace(f"workloads{index}.", "run.")
    if problem.key != prefix and not problem.key.startswith((f"{prefix}.", f"{prefix}[")):
        return Problem(problem.key, message)
    rest = problem.key[len(prefix):]
    return Problem(f"run{rest}" if rest else "run", message)


MAX_RUN_GRACE_SECONDS = 600


def _spec_problems(spec: Mapping[str, Any]) -> list[Problem]:
    problems = [Problem(f"run.{k}", f"not a run key; valid: {', '.join(RUN_KEYS)}") for k in spec if k not in RUN_KEYS]
    if "name" not in spec:
        problems.append(Problem("run.name", "required but not set"))
    mode = spec.get("mode", "batch")
    if mode not in RUN_MODES:
        problems.append(Problem("run.mode", f"{mode!r} is not a run mode; valid: {', '.join(RUN_MODES)} (serve and service are the stack's)"))
    priority = spec.get("priority")
    if priority is not None and priority not in RUN_PRIORITIES:
        problems.append(Problem("run.priority", f"{priority!r} is not a run priority; valid: {', '.join(RUN_PRIORITIES)}"))
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool) and grace > MAX_RUN_GRACE_SECONDS:
        # a run's pods keep their slices until they end: a preempted or deleted run would hold them that long
        problems.append(Problem("run.terminationGracePeriodSeconds", (
            f"{grace} s: a run ends within {MAX_RUN_GRACE_SECONDS} s of a delete, preemption or time limit (its slices wait "
            "for it); give at most that")))
    return problems


def load_run(cfg: StackConfig, spec: Mapping[str, Any]) -> StackConfig:
    """The stack with the run appended as its last workload, validated as the stack's own are; ConfigError keyed run.*."""
    if cfg.runs is None:
        raise ConfigError([Problem(config_key(("runs",)), (
            f"not set in stack {cfg.stack}: it has no queue or head room for ad-hoc runs; add `pathways:runs: {{}}` "
            "to the stack file and run pulumi up"))])
    problems = _spec_problems(spec)
    if problems:
        raise ConfigError(problems)
    index, prefix = len(cfg.workloads), config_key(("workloads", len(cfg.workloads)))
    team = cfg.team(spec.get("team")) if isinstance(spec.get("team"), str) else None
    raw = {"priority": team.priority if team is not None else cfg.runs.priority, **spec}
    if raw.get("mode", "batch") == "batch":
        raw.setdefault("ttlSecondsAfterFinished", cfg.runs.ttl_seconds_after_finished)  # an interactive run ends when deleted
        if raw.get("priority") == "experiment" and not {"maxRestarts", "onFailure"} & set(spec):
            raw.update({"maxRestarts": 0, "onFailure": {}})  # a failed experiment is not rerun unless asked; a disruption is (#74.3)
    try:
        workload = Workload.model_validate(raw)
    except ValidationError as e:
        raise ConfigError([_run_key(_problem({**err, "loc": ("workloads", index, *err["loc"])}), prefix) for err in e.errors()]) from None
    with_run = cfg.model_copy(update={"workloads": [*cfg.workloads, workload]})
    # The run's own problems, and the stack-wide ones it brings (its head pod fits no head VM, say); not the head
    # pool's node count, which counts declared workloads: Kueue queues a run that finds no room.
    before = set(cross_checks(cfg)) | {p for rule in NOT_FOR_RUNS for p in rule(with_run)}
    problems = [
        _run_key(p, prefix) for p in cross_checks(with_run)
        if p not in before and p.key != config_key(("headPool", "nodeCount"))
    ] + run_mount_problems(cfg, workload) + run_team_problems(cfg, workload)
    if problems:
        raise ConfigError(problems)
    return with_run


def _cluster_queue(cfg: StackConfig, w: Workload, group: SliceGroup) -> str:
    """A team's workload queues on the team's ClusterQueue; the others on the stack's (or the shared one)."""
    team = cfg.team(w.team)
    if team is not None:
        return team.cluster_queue
    return cfg.kubernetes.kueue.cluster_queue or cluster_queue_name(isolation.shared_groups(cfg.slices, cfg.teams), group)


def as_run(stack: ResolvedStack, w: ResolvedWorkload) -> ResolvedWorkload:
    """A resolved workload as an ad-hoc run: queued on its group's run queue, env in the JobSet (no Secret: nothing
    but the user's kubeconfig creates it), the runs' service account when it mounts a bucket."""
    team = stack.team(w.spec.team)
    queue = stack.team_run_queue(team) if team is not None else stack.run_queues.get(w.group.name)
    account = stack.run_service_account if any(m.bucket for m in w.spec.mounts) else None
    return dataclasses.replace(w, local_queue=queue, env_secret=None, profiling_secret=None, service_account=account)
