"""Check JobSet (and LeaderWorkerSet) manifests the way an API server and the controllers' webhooks would (pure Python).

Three layers: (1) the upstream JobSet CRD schema, with unknown fields rejected; (2) each
replicatedJob's Job against kubernetes-validate's strict schema, at the Kubernetes minor GKE's channels
run (and the local control plane of the e2e tier); (3) semantic rules no schema holds.

The upstream CRDs (JobSet's and Kueue's) come from the Go modules of the versions the stack installs,
fetched and verified by `make crds` (tools/engines/crds.py) into build/crds; without them the schema
layers say so in the report's notices.

Over 500 lines: one checker per kind the stack applies (JobSet, Job, RBAC binding, Kueue, LeaderWorkerSet, GKE's
custom kinds, Pod Security), sharing the Report, the upstream CRD loaders and the RE2 pattern rule; each kind is one
section below.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import jsonschema
import jsonschema.validators
import kubernetes_validate
import yaml
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

from components.manifests import crd_lists, pod_security
from components.manifests.jobset import COORDINATOR_LABEL, HEAD_JOB, TPU_RESOURCE, coordinator_label_value
from components.model import quantity
from components.model.capacity import dynamic_slicing
from components.model.common import INT32_MAX

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CRDS = Path(os.environ.get("PATHWAYS_CRDS") or PROJECT_ROOT / "build" / "crds")
JOBSET_SCHEMA = CRDS / "jobset" / "jobset.x-k8s.io_jobsets.yaml"
LWS_SCHEMA = CRDS / "lws" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"
# GKE's Regular and Stable channels create clusters at 1.35 (release notes, "Current versions", 2026-11);
# the e2e tier's control plane is newer (tools/engines/engine.json), so it admits what 1.35 does at least.
KUBERNETES_VERSION = "1.35"


@functools.cache
def _builtin_validator(api_version: str, kind: str) -> Optional[jsonschema.Draft202012Validator]:
    """kubernetes-validate's strict schema for one kind at KUBERNETES_VERSION, found as its `validate` finds it, and
    built once: `validate` re-reads the schema and the 1 MB definitions file on every call, which made a render
    of a stack with the charts spend seconds in JSON parsing. None when the version has no schema for the kind."""
    utils = kubernetes_validate.utils
    version = [v for v in utils.all_versions() if utils.major_minor(v) <= KUBERNETES_VERSION][-1]
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    # rbac.authorization.k8s.io/v1 -> rbac-v1, as kubernetes-validate names its files
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = utils.schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", KUBERNETES_VERSION)
    except FileNotFoundError:
        return None
    definitions = utils.schema_contents(f"{folder}/_definitions.json", KUBERNETES_VERSION)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def _builtin_errors(obj: dict[str, Any]) -> Optional[list[jsonschema.ValidationError]]:
    """The strict schema's errors for a built-in object, the first one first as `validate` reports it; None when there is no schema."""
    validator = _builtin_validator(str(obj.get("apiVersion")), str(obj.get("kind")))
    if validator is None:
        return None
    error = best_match(validator.iter_errors(obj))
    return [] if error is None else [error]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


@dataclass(frozen=True)
class Violation:
    rule: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.path}: {self.message}"


@dataclass(frozen=True)
class PoolFacts:
    """A node pool the stack creates, with the labels its nodes will carry."""

    name: str
    labels: dict[str, str]
    chips_per_vm: Optional[int] = None
    hosts: Optional[int] = None


@dataclass
class Report:
    violations: list[Violation] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    type_errors: int = 0  # values of the wrong JSON type: later layers cannot read them

    def add(self, rule: str, path: str, message: str) -> None:
        self.violations.append(Violation(rule, path, message))


def _re2_pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[Any]:
    """The pattern keyword with Go's RE2 syntax, as the API server reads it: RE2 takes inline flags after an anchor
    (Kueue's AdmissionCheck parameters.kind is ^(?i)[a-z]...), Python only at the start, where they mean the same."""
    yield from _draft7_pattern(validator, re.sub(r"^\^\(\?([a-zA-Z]+)\)", r"(?\1)^", pattern), instance, schema)


_draft7_pattern = jsonschema.Draft7Validator.VALIDATORS["pattern"]
_CrdValidator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _re2_pattern})


@functools.lru_cache(maxsize=1)
def _jobset_schema() -> Optional[dict[str, Any]]:
    if not JOBSET_SCHEMA.exists():
        return None
    crd = yaml.load(JOBSET_SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@functools.lru_cache(maxsize=1)
def _jobset_validator() -> jsonschema.Draft7Validator:
    # Built once: compiling the ~800 KB CRD schema per JobSet would be the slowest part of a render.
    schema = _jobset_schema()
    assert schema is not None  # callers check for the file first
    return _CrdValidator(schema)


def _unknown_fields(value: Any, schema: dict[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """Fields the API server would prune silently (a typo that changes nothing is still a bug)."""
    if isinstance(value, dict) and "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        props = schema["properties"]
        for key, sub in value.items():
            if key not in props:
                if not schema.get("additionalProperties"):
                    yield f"{path}.{key}", f"unknown field {key!r}"
            else:
                yield from _unknown_fields(sub, props[key], f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _unknown_fields(item, schema["items"], f"{path}[{i}]")


def _crd_schema_errors(obj: dict[str, Any], validator: Any, schema: dict[str, Any], rule: str, report: Report) -> None:
    """A CRD's OpenAPI schema as the API server applies it: each violation, values of the wrong JSON type
    counted (later layers cannot read them), and fields the schema does not know (strict field validation)."""
    for err in sorted(validator.iter_errors(obj), key=lambda e: list(e.path)):
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.path) or "."
        report.add(rule, path.lstrip("."), err.message)
        report.type_errors += err.validator == "type"
    for path, message in _unknown_fields(obj, schema, ""):
        report.add(rule, path.lstrip("."), message)
    for path, message in crd_lists.duplicates(obj, schema):
        report.add(rule, path, message)


def check_schema(obj: dict[str, Any], report: Report) -> None:
    schema = _jobset_schema()
    if schema is None:
        report.notices.append(f"JobSet CRD schema not found at {JOBSET_SCHEMA}; schema check skipped here (run `make crds` in the "
                              "infrastructure checkout); the API server still checks the JobSet against its CRD when it is created")
        return
    _crd_schema_errors(obj, _jobset_validator(), schema, "jobset-schema", report)


def check_job_templates(obj: dict[str, Any], report: Report) -> None:
    for i, rj in enumerate(obj.get("spec", {}).get("replicatedJobs", [])):
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": rj.get("name", "job")}, **rj.get("template", {})}
        for e in _builtin_errors(job) or []:
            path = ".".join(str(p) for p in e.path)
            report.add("job-schema", f"spec.replicatedJobs[{i}].template.{path}", e.message)
            report.type_errors += e.validator == "type"


def _pods(obj: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for i, rj in enumerate(obj.get("spec", {}).get("replicatedJobs", [])):
        yield f"spec.replicatedJobs[{i}]", rj, rj.get("template", {}).get("spec", {}).get("template", {})


def _labels(node: Any, path: str) -> Iterator[tuple[str, str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "labels" and isinstance(v, dict) and path.endswith("metadata"):
                for lk, lv in v.items():
                    yield f"{path}.labels.{lk}", lk, lv
            else:
                yield from _labels(v, f"{path}.{k}" if path else k)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _labels(item, f"{path}[{i}]")


# Container restart policies as Kubernetes 1.35+ validates them: ContainerRestartRules is beta and on by default
# from 1.35 (pkg/features/kube_features.go at v1.36.3), so a regular container, and an init container, may set
# restartPolicy Always, Never or OnFailure, with restartPolicyRules (pkg/apis/core/validation/validation.go,
# validateContainerRestartPolicy, validateInitContainerRestartPolicy). Before 1.35 only an init container's Always
# (a sidecar) was valid, which these checks said until the JobSets of the peers (tests/fixtures/peers) ran here.
CONTAINER_RESTART_POLICIES = ("Always", "Never", "OnFailure")
RESTART_RULE_ACTIONS = ("Restart",)


def _check_container_restart(c: dict[str, Any], kind: str, cpath: str, report: Report) -> None:
    policy, rules = c.get("restartPolicy"), c.get("restartPolicyRules") or []
    if policy is None:
        if rules:
            report.add("restart-policy", f"{cpath}.restartPolicy", "must specify restartPolicy when restart rules are used")
        return
    if policy not in CONTAINER_RESTART_POLICIES:
        report.add("restart-policy", f"{cpath}.restartPolicy", f"{policy!r} is not supported; valid: {', '.join(CONTAINER_RESTART_POLICIES)}")
    if kind == "initContainers" and policy == "Always" and rules:
        report.add("restart-policy", f"{cpath}.restartPolicyRules", "restartPolicyRules are not allowed for init containers with restart policy Always")
        return
    if len(rules) > 20:
        report.add("restart-policy", f"{cpath}.restartPolicyRules", f"{len(rules)} rules; at most 20")
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        if rule.get("action") not in RESTART_RULE_ACTIONS:
            report.add("restart-policy", f"{cpath}.restartPolicyRules[{i}].action", f"{rule.get('action')!r} is not supported; valid: {', '.join(RESTART_RULE_ACTIONS)}")
        if rule.get("exitCodes") is None:
            report.add("restart-policy", f"{cpath}.restartPolicyRules[{i}].exitCodes", "must be specified")


def check_semantics(obj: dict[str, Any], pools: Optional[list[PoolFacts]], report: Report) -> None:
    name = obj.get("metadata", {}).get("name", "")
    if not _DNS_LABEL.fullmatch(name) or len(name) > 63:
        report.add("dns-1123", "metadata.name", f"{name!r} is not a DNS-1123 label")
    value = coordinator_label_value(obj)
    if value is not None and len(value) > 63:
        report.add("coordinator-label", "spec.coordinator", f"label {COORDINATOR_LABEL} would be {value!r} ({len(value)} > 63 characters)")
    for path, _key, value in _labels(obj, ""):
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            report.add("label-value", path, f"{value!r} is not a valid label value (at most 63 characters, alphanumeric at both ends)")
    for base, rj, pod_template in _pods(obj):
        rj_name = rj.get("name", "")
        if not _DNS_LABEL.fullmatch(rj_name):
            report.add("dns-1123", f"{base}.name", f"{rj_name!r} is not a DNS-1123 label")
        pod = pod_template.get("spec", {})
        ppath = f"{base}.template.spec.template.spec"
        containers = [(kind, i, c) for kind in ("containers", "initContainers") for i, c in enumerate(pod.get(kind, []))]
        seen_names: set[str] = set()
        seen_ports: set[tuple[int, str]] = set()
        for kind, i, c in containers:
            cpath = f"{ppath}.{kind}[{i}]"
            cname = c.get("name", "")
            if not _DNS_LABEL.fullmatch(cname):
                report.add("dns-1123", f"{cpath}.name", f"{cname!r} is not a DNS-1123 label")
            if cname in seen_names:
                report.add("unique-names", f"{cpath}.name", f"duplicate container name {cname!r}")
            seen_names.add(cname)
            _check_container_restart(c, kind, cpath, report)
            env_names: set[str] = set()
            for e in c.get("env", []):
                if e.get("name") in env_names:
                    report.add("unique-names", f"{cpath}.env", f"duplicate env name {e.get('name')!r}")
                if not _ENV_NAME.fullmatch(e.get("name", "")):
                    report.add("env-name", f"{cpath}.env", f"{e.get('name')!r} is not a valid env name")
                env_names.add(e.get("name"))
            for p in c.get("ports", []):
                key = (p.get("containerPort"), p.get("protocol", "TCP"))
                # hostNetwork: every container of the pod shares the node's ports.
                if key in seen_ports:
                    report.add("unique-ports", f"{cpath}.ports", f"port {key[0]}/{key[1]} is used by another container of the pod")
                seen_ports.add(key)
            for section in ("requests", "limits"):
                for res, amount in c.get("resources", {}).get(section, {}).items():
                    try:
                        quantity.parse(amount)
                    except ValueError as e:
                        report.add("quantity", f"{cpath}.resources.{section}.{res}", str(e))
        # A Job's pods may only be Never or OnFailure (the API server's Job validation; the Pod schema allows Always).
        if pod.get("restartPolicy") not in ("Never", "OnFailure"):
            report.add("restart-policy", f"{ppath}.restartPolicy",
                       f"{pod.get('restartPolicy')!r}: a Job's pods restart Never or OnFailure")
        job = rj.get("template", {}).get("spec", {})
        if "podFailurePolicy" in job:
            _check_pod_failure_policy(f"{base}.template.spec.podFailurePolicy", job["podFailurePolicy"], pod, report)
        vol_names = [v.get("name") for v in pod.get("volumes", [])]
        for _, _, mount_owner in containers:
            for m in mount_owner.get("volumeMounts", []):
                if m.get("name") not in vol_names:
                    report.add("volumes", ppath, f"container {mount_owner.get('name')!r} mounts unknown volume {m.get('name')!r}")
        if job.get("parallelism") != job.get("completions"):
            report.add("parallelism", f"{base}.template.spec", "parallelism must equal completions (one pod per host)")
        if pools is not None:
            _check_placement(base, ppath, rj, job, pod, containers, pools, report)


def _check_formed_slice(base: str, topology: str, job: dict[str, Any], tpu: int, pool_hosts: int, report: Report) -> None:
    """A worker template whose slice is formed on a pool set: what the slice controller's JobSet webhook refuses
    (a topology it cannot parse; TPUs per pod x podset-slice-size other than the piece's chips) and Kueue's
    (a slice size that does not divide the pods), and a slice larger than the pools it selects."""
    path = f"{base}.template.spec.template.metadata.annotations"
    try:
        shape = dynamic_slicing.parse(topology, sub_slicing=True, cubes=dynamic_slicing.MAX_CUBES)
    except dynamic_slicing.TopologyError as e:
        report.add("formed-slice", f"{path}[{dynamic_slicing.SLICE_TOPOLOGY_ANNOTATION}]", str(e))
        return
    annotations = job["template"]["metadata"]["annotations"]
    size = annotations.get(dynamic_slicing.SLICE_SIZE)
    parallelism = job.get("parallelism") or 0
    if parallelism * tpu != shape.chips:
        report.add("formed-slice", f"{base}.template.spec.parallelism",
                   f"{parallelism} pods x {tpu} {TPU_RESOURCE} is not the {shape.chips} chips of {shape.topology}")
    if size != str(shape.piece_hosts) or parallelism % shape.piece_hosts:
        report.add("formed-slice", f"{path}[{dynamic_slicing.SLICE_SIZE}]",
                   f"{size!r}: a {shape.topology} slice is formed of pieces of {shape.piece_hosts} hosts")
    if parallelism > pool_hosts:
        report.add("formed-slice", f"{base}.template.spec.parallelism", f"{parallelism} hosts; the pools it selects have {pool_hosts}")


# The API server's Job validation (k8s v1.36 pkg/apis/batch/validation/validation.go, validatePodFailurePolicy):
# rules the CRD's schema cannot say.
def _check_pod_failure_policy(path: str, policy: dict[str, Any], pod: dict[str, Any], report: Report) -> None:
    if pod.get("restartPolicy") != "Never":
        report.add("pod-failure-policy", path, f"restartPolicy {pod.get('restartPolicy')!r}: only 'Never' is supported when podFailurePolicy is specified")
    names = {c.get("name") for c in [*pod.get("containers", []), *pod.get("initContainers", [])]}
    for i, rule in enumerate(policy.get("rules", [])):
        on_exit = rule.get("onExitCodes")
        if ("onPodConditions" in rule) == (on_exit is not None):
            report.add("pod-failure-policy", f"{path}.rules[{i}]", "specify exactly one of onExitCodes and onPodConditions")
        if on_exit is None:
            continue
        values = on_exit.get("values", [])
        if on_exit.get("containerName") is not None and on_exit["containerName"] not in names:
            report.add("pod-failure-policy", f"{path}.rules[{i}].onExitCodes.containerName",
                       f"{on_exit['containerName']!r} must be one of the container or initContainer names in the pod template")
        if on_exit.get("operator") == "In" and 0 in values:
            report.add("pod-failure-policy", f"{path}.rules[{i}].onExitCodes.values", "must not be 0 for the In operator")
        if not values or len(values) > 255 or values != sorted(set(values)):
            report.add("pod-failure-policy", f"{path}.rules[{i}].onExitCodes.values", "1 to 255 values, ordered, each once")


def _check_placement(base, ppath, rj, job, pod, containers, pools: list[PoolFacts], report: Report) -> None:
    selector = pod.get("nodeSelector", {})
    matches = [p for p in pools if all(p.labels.get(k) == v for k, v in selector.items())]
    if not matches:
        report.add("node-selector", f"{ppath}.nodeSelector", f"{selector} matches no node pool the stack creates")
        return
    tpu = sum(int(quantity.parse(c.get("resources", {}).get("limits", {}).get(TPU_RESOURCE, 0))) for _, _, c in containers)
    tpu_pools = [p for p in matches if p.chips_per_vm]
    if tpu and not tpu_pools:
        report.add("tpu-request", f"{ppath}.nodeSelector", "requests TPUs but selects no TPU pool")
    formed = ((job.get("template") or {}).get("metadata") or {}).get("annotations", {}).get(dynamic_slicing.SLICE_TOPOLOGY_ANNOTATION)
    if formed is not None and tpu_pools:
        _check_formed_slice(base, formed, job, tpu, sum(p.hosts or 0 for p in tpu_pools), report)
    for p in tpu_pools:
        if tpu != p.chips_per_vm:
            report.add("tpu-request", f"{ppath}.containers", f"requests {tpu} {TPU_RESOURCE}; pool {p.name} has {p.chips_per_vm} chips per VM")
        if formed is None and job.get("parallelism") != p.hosts:
            report.add("parallelism", f"{base}.template.spec.parallelism", f"{job.get('parallelism')} pods per slice; pool {p.name} has {p.hosts} hosts")
    if rj.get("name") == HEAD_JOB and tpu:
        report.add("tpu-request", f"{ppath}.containers", "the head pod must not request TPUs")


def jobset_webhook_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """The JobSet as the API server validates it: after the JobSet webhook's defaulting (jobset v0.12.0
    pkg/webhooks/jobset_webhook.go, Default), which runs before any validation. A manifest that leaves these
    fields out (google/pathways-job's JobSets leave the pods' restartPolicy empty) is admitted with them set."""
    out = copy.deepcopy(obj)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    # (a field of the wrong type is left alone: the schema layer names it)
    spec.setdefault("successPolicy", {"operator": "All"})
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    for rj in _dicts(spec.get("replicatedJobs")):
        job = _dict_at(rj, "template", "spec")
        if job is None:
            continue
        job.setdefault("completionMode", "Indexed")
        pod = _dict_at(job, "template", "spec")
        if pod is not None and not pod.get("restartPolicy"):
            pod["restartPolicy"] = "OnFailure"
    network = spec.setdefault("network", {})
    if isinstance(network, dict):
        network.setdefault("enableDNSHostnames", True)
        network.setdefault("publishNotReadyAddresses", True)
    policy = spec.get("failurePolicy")
    for i, rule in enumerate(_dicts(policy.get("rules") if isinstance(policy, dict) else None)):
        if not rule.get("name"):
            rule["name"] = f"failurePolicyRule{i}"
    return out


def _dicts(items: Any) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _dict_at(node: dict[str, Any], *path: str) -> Optional[dict[str, Any]]:
    for key in path:
        node = node.get(key)  # pyright: ignore[reportAssignmentType]
        if not isinstance(node, dict):
            return None
    return node


def check_jobset(obj: dict[str, Any], pools: Optional[list[PoolFacts]] = None) -> Report:
    """All three layers, on the JobSet as JobSet's webhook defaults it; `pools` enables the checks against the
    stack's node pools."""
    report = Report()
    obj = jobset_webhook_defaults(obj)
    for schema_layer in (check_schema, check_job_templates):
        schema_layer(obj, report)
        if report.type_errors:  # later layers read fields by the schema's types (a 7 where a list belongs)
            report.notices.append("semantic checks skipped until the schema's type errors are fixed")
            return report
    check_semantics(obj, pools, report)
    return report


def check_builtin(obj: dict[str, Any]) -> Report:
    """A built-in Kubernetes object (Namespace, Secret, PriorityClass, ValidatingAdmissionPolicy, …)
    against kubernetes-validate's strict schema for the cluster's version: what the API server would
    refuse or silently prune."""
    report = Report()
    errors = _builtin_errors(obj)
    if errors is None:
        report.add("schema", ".", f"no schema for {obj.get('apiVersion')} {obj.get('kind')} in Kubernetes {KUBERNETES_VERSION}")
        return report
    for e in errors:
        report.add("schema", ".".join(str(p) for p in e.path) or ".", e.message)
        return report
    if obj.get("apiVersion") == f"{RBAC_GROUP}/v1" and obj.get("kind") in ("RoleBinding", "ClusterRoleBinding"):
        check_role_binding(obj, report)
    return report


# --- RBAC bindings: what the API server's validation refuses that no schema says -------------------
# Source: kubernetes/kubernetes pkg/apis/rbac/validation/validation.go (ValidateRoleBinding,
# ValidateClusterRoleBinding, validateRoleBindingSubject; read at 036ae50761389440bd949a548e24d9e622492bb8), after
# the defaults of pkg/apis/rbac/v1/defaults.go (SetDefaults_RoleBinding, SetDefaults_ClusterRoleBinding,
# SetDefaults_Subject; read at 7c30c06e721d89056db323a3857a6b89990adf03): an empty apiGroup becomes
# rbac.authorization.k8s.io for a roleRef, a User or a Group, and stays "" for a ServiceAccount.

RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _path_segment_problem(name: str) -> Optional[str]:
    """apimachinery path.IsValidPathSegmentName, the names of roles and bindings (minimalNameRequirements)."""
    if name in (".", ".."):
        return f"may not be {name!r}"
    bad = [c for c in ("/", "%") if c in name]
    return f"may not contain {' or '.join(repr(c) for c in bad)}" if bad else None


def check_role_binding(obj: dict[str, Any], report: Report) -> None:
    """A RoleBinding or ClusterRoleBinding as the API server validates it: its roleRef (apiGroup
    rbac.authorization.k8s.io; kind Role or ClusterRole, a ClusterRoleBinding's ClusterRole only; a name) and each
    subject (a name; kind ServiceAccount, User or Group; a ServiceAccount with apiGroup "", a DNS-subdomain name and,
    in a ClusterRoleBinding, a namespace; a User or Group with apiGroup rbac.authorization.k8s.io)."""
    cluster = obj.get("kind") == "ClusterRoleBinding"
    ref = obj.get("roleRef") or {}
    group = ref.get("apiGroup") or RBAC_GROUP
    if group != RBAC_GROUP:
        report.add("rbac", "roleRef.apiGroup", f"{group!r} is not supported; valid: {RBAC_GROUP!r}")
    kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
    if ref.get("kind") not in kinds:
        report.add("rbac", "roleRef.kind", f"{ref.get('kind')!r} is not supported; valid: {', '.join(kinds)}")
    name = ref.get("name") or ""
    problem = "is required" if not name else _path_segment_problem(name)
    if problem:
        report.add("rbac", "roleRef.name", f"{name!r} {problem}" if name else problem)
    for i, subject in enumerate(obj.get("subjects") or []):
        path, kind, name = f"subjects[{i}]", subject.get("kind"), subject.get("name") or ""
        if not name:
            report.add("rbac", f"{path}.name", "is required")
        if kind == "ServiceAccount":
            if name and (len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name)):
                report.add("rbac", f"{path}.name", f"{name!r} is not a service account name (a DNS-1123 subdomain)")
            if subject.get("apiGroup"):
                report.add("rbac", f"{path}.apiGroup", f"{subject['apiGroup']!r} is not supported for a ServiceAccount; valid: '' (or none)")
            if cluster and not subject.get("namespace"):
                report.add("rbac", f"{path}.namespace", "is required for a ServiceAccount in a ClusterRoleBinding")
        elif kind in ("User", "Group"):
            group = subject.get("apiGroup") or RBAC_GROUP
            if group != RBAC_GROUP:
                report.add("rbac", f"{path}.apiGroup", f"{group!r} is not supported for a {kind}; valid: {RBAC_GROUP!r}")
        else:
            report.add("rbac", f"{path}.kind", f"{kind!r} is not supported; valid: {', '.join(SUBJECT_KINDS)}")


# --- Kueue objects: against the upstream CRDs (Kueue's Go module at the installed version) ---------

KUEUE_REFERENCE = CRDS / "kueue"
KUEUE_PLURALS = {
    "ClusterQueue": "clusterqueues", "LocalQueue": "localqueues", "ResourceFlavor": "resourceflavors",
    "WorkloadPriorityClass": "workloadpriorityclasses", "Topology": "topologies", "AdmissionCheck": "admissionchecks",
}


def kueue_crd_path(kind: str) -> Path:
    return KUEUE_REFERENCE / f"kueue.x-k8s.io_{KUEUE_PLURALS.get(kind, kind.lower() + 's')}.yaml"


@functools.lru_cache(maxsize=None)
def _kueue_validator(kind: str, version: str) -> Optional[tuple[jsonschema.Draft7Validator, dict[str, Any]]]:
    path = kueue_crd_path(kind)
    if not path.exists():
        return None
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    # Pick the served version by name (each CRD serves v1beta1, deprecated, then v1beta2), never by index.
    entry = next((v for v in crd["spec"]["versions"] if v["name"] == version), None)
    if entry is None:
        return None
    schema = entry["schema"]["openAPIV3Schema"]
    return _CrdValidator(schema), schema


def check_kueue(obj: dict[str, Any]) -> Report:
    """Schema (unknown fields refused too) and the CEL rules of the CRDs that jsonschema does not run."""
    report = Report()
    kind, version = obj.get("kind", ""), str(obj.get("apiVersion", "")).rpartition("/")[2]
    found = _kueue_validator(kind, version)
    if found is None:
        report.notices.append(f"Kueue {kind} {version} schema not found under {KUEUE_REFERENCE}; schema check skipped (run `make crds`)")
    else:
        validator, schema = found
        _crd_schema_errors(obj, validator, schema, "kueue-schema", report)
    name = (obj.get("metadata") or {}).get("name", "")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name) or len(name) > 253:
        report.add("name", "metadata.name", f"{name!r} is not a DNS subdomain")
    spec = obj.get("spec") or {}
    if kind == "ClusterQueue":
        # CEL: each flavor lists as many resources as coveredResources (and we list them in that order).
        for i, group in enumerate(spec.get("resourceGroups") or []):
            covered = group.get("coveredResources") or []
            for j, flavor in enumerate(group.get("flavors") or []):
                names = [r.get("name") for r in flavor.get("resources") or []]
                if names != covered:
                    report.add("kueue-cel", f"spec.resourceGroups[{i}].flavors[{j}]", f"resources {names} must match coveredResources {covered}")
                for r in flavor.get("resources") or []:
                    try:
                        quantity.parse(r.get("nominalQuota"))
                    except ValueError as e:
                        report.add("quantity", f"spec.resourceGroups[{i}].flavors[{j}]", str(e))
    if kind == "ResourceFlavor":
        if spec.get("topologyName") and not spec.get("nodeLabels"):
            report.add("kueue-cel", "spec", "at least one nodeLabel is required when topologyName is set")
        for key, value in (spec.get("nodeLabels") or {}).items():
            if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
                report.add("label", f"spec.nodeLabels.{key}", f"{value!r} is not a label value")
    return report


# --- LeaderWorkerSets: the upstream CRD and the LWS webhook's rules (v0.9.0 pkg/webhooks/leaderworkerset_webhook.go)

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LWS_ANNOTATIONS = ("leaderworkerset.sigs.k8s.io/exclusive-topology", "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology")


@functools.lru_cache(maxsize=None)
def _lws_validator() -> Optional[tuple[jsonschema.Draft7Validator, dict[str, Any]]]:
    if not LWS_SCHEMA.exists():
        return None
    crd = yaml.load(LWS_SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    entry = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = entry["schema"]["openAPIV3Schema"]
    return _CrdValidator(schema), schema


GKE_CRDS = CRDS / "gke"


@functools.lru_cache(maxsize=None)
def _gke_validator(api_version: str, kind: str) -> Optional[tuple[jsonschema.Draft7Validator, dict[str, Any]]]:
    """The schema of a kind whose CRD GKE installs (build/crds/gke, from the pinned modules: tools/engines/crds.py)."""
    group, _, version = api_version.rpartition("/")
    for path in sorted(GKE_CRDS.glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        spec = crd.get("spec") or {}
        if spec.get("group") == group and spec.get("names", {}).get("kind") == kind:
            entry = next((v for v in spec["versions"] if v["name"] == version and v.get("served")), None)
            if entry is None:
                return None
            schema = entry["schema"]["openAPIV3Schema"]
            return _CrdValidator(schema), schema
    return None


def gke_kind(api_version: str) -> bool:
    return api_version.startswith(("monitoring.googleapis.com/", "inference.networking.k8s.io/", "gateway.networking.k8s.io/",
                                   "networking.gke.io/", "checkpointing.gke.io/"))


def check_gke_custom(obj: dict[str, Any]) -> Report:
    """A kind whose CRD GKE installs (Managed Prometheus' PodMonitoring, the Inference Extension's InferencePool, the
    Gateway API's Gateway and HTTPRoute, GKE's Gateway policies), against that CRD's schema, unknown fields refused."""
    report = Report()
    found = _gke_validator(str(obj.get("apiVersion")), str(obj.get("kind")))
    if found is None:
        report.add("gke-crd", ".", f"no CRD for {obj.get('apiVersion')} {obj.get('kind')} in {GKE_CRDS} (run `make crds`)")
        return report
    validator, schema = found
    _crd_schema_errors(obj, validator, schema, "gke-crd", report)
    return report


def check_lws(obj: dict[str, Any]) -> Report:
    """The CRD's schema (unknown fields refused), each pod template against the Pod schema, and the rules
    the LWS webhook applies on create: a DNS-1035 name (it names the headless Service), size >= 1,
    replicas >= 0 and replicas x size within int32, a subgroup size that divides size or size - 1 (size - 1
    with LeaderExcluded) and is at most size, and no subgroup-exclusive-topology without a subgroup size."""
    report = Report()
    found = _lws_validator()
    if found is None:
        report.notices.append(f"LeaderWorkerSet schema not found at {LWS_SCHEMA}; schema check skipped (run `make crds`)")
    else:
        validator, schema = found
        _crd_schema_errors(obj, validator, schema, "lws-schema", report)
    if report.type_errors:
        return report
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    name = meta.get("name", "")
    if not _DNS1035.fullmatch(name) or len(name) > 63:
        report.add("lws-webhook", "metadata.name", f"{name!r} is not a DNS-1035 label (LWS names its headless Service after it)")
    template = spec.get("leaderWorkerTemplate") or {}
    size, replicas = template.get("size", 1), spec.get("replicas", 1)
    if size < 1:
        report.add("lws-webhook", "spec.leaderWorkerTemplate.size", "size must be equal or greater than 1")
    if replicas < 0:
        report.add("lws-webhook", "spec.replicas", "replicas must be equal or greater than 0")
    if replicas * size > INT32_MAX:
        report.add("lws-webhook", "spec.replicas", f"the product of replicas and worker replicas must not exceed {INT32_MAX}")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        if key.startswith("leaderworkerset.") and key not in LWS_ANNOTATIONS:
            report.add("lws-annotation", f"metadata.annotations.{key}", (
                f"not an annotation LWS v0.9.0 reads (it reads {', '.join(LWS_ANNOTATIONS)}; the leaderworkerset.gke.io/ "
                "keys of v0.5 and older are ignored)"))
    sub = template.get("subGroupPolicy")
    if sub is None:
        if LWS_ANNOTATIONS[1] in annotations:
            report.add("lws-webhook", f"metadata.annotations.{LWS_ANNOTATIONS[1]}", "cannot have subgroup-exclusive-topology without subGroupSize set")
    else:
        n = sub.get("subGroupSize", 0)
        path = "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize"
        if n < 1:
            report.add("lws-webhook", path, "subGroupSize must be equal or greater than 1")
        elif sub.get("type") == "LeaderExcluded" and (size - 1) % n:
            report.add("lws-webhook", path, "size-1 must be divisible by subGroupSize when using LeaderExcluded")
        elif size % n and (size - 1) % n:
            report.add("lws-webhook", path, "size or size - 1 must be divisible by subGroupSize")
        elif n > size:
            report.add("lws-webhook", path, "subGroupSize cannot be larger than size")
    for role in ("leaderTemplate", "workerTemplate"):
        pod_template = template.get(role)
        if pod_template is None:
            continue
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template", **(pod_template.get("metadata") or {})},
               "spec": pod_template.get("spec") or {}}
        for v in check_builtin(pod).violations:
            report.add(v.rule, f"spec.leaderWorkerTemplate.{role}.{v.path}", v.message)
    return report


# --- Pod Security: each pod an object makes, against its namespace's enforce level (pod_security.py) -------

def check_pod_security(obj: dict[str, Any], policies: dict[str, pod_security.NamespacePolicy]) -> Report:
    """Every pod template of `obj` (pod_security.pod_templates) as the API server's PodSecurity admission checks the
    pods made from it, at the level its namespace enforces (`policies`: pod_security.namespace_policies of everything
    the stack applies; a namespace it does not label has Kubernetes' default, privileged). For a Deployment, Job or
    JobSet the API server only warns; the pods its controllers create are refused, which is what fails a deploy."""
    report = Report()
    namespace = str((obj.get("metadata") or {}).get("namespace") or "default")
    policy = policies.get(namespace, pod_security.NamespacePolicy(pod_security.DEFAULT_LEVEL, pod_security.VERSION))
    if policy.version != pod_security.VERSION and re.fullmatch(r"v1\.(0|[1-9][0-9]*)", policy.version):
        report.notices.append(f"namespace {namespace} enforces Pod Security {policy.level}:{policy.version}; checked at "
                              f"{policy.level}:{pod_security.VERSION}, the version the offline checks implement")
    for path, metadata, spec in pod_security.pod_templates(obj):
        violations = pod_security.check_pod(policy.level, metadata, spec)
        if violations:
            report.add("pod-security", path or ".", f"namespace {namespace}: {pod_security.forbidden_message(policy.level, violations)}")
    return report
