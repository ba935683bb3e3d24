"""Drift: what changed in the live stack since `pulumi up`, from Pulumi's own refresh preview (pure).

`pulumi refresh --preview-only --json` reads every resource of the stack's state from the cloud and the cluster and
says, without writing the state, which differ (op `update`, with `detailedDiff` paths and the old and new states)
and which are gone (op `delete`). With pulumi-kubernetes' server-side apply, a Kubernetes object's refresh compares
only the fields the stack applied: what controllers and the API server set besides (status, defaults) never shows.
Verified on the real CLI and provider against the local control plane (tests_e2e/test_verify.py).

Each change becomes a finding: what changed, old -> new, who changed it (the object's managedFields name the
field's manager now) and the fix, an up of that resource alone (`--target`: a whole `pulumi up --refresh` would
also re-apply what a benign rule let pass, such as the JobSet chart's webhook Secret, which it would replace).
Known benign changes are filtered by rule (BENIGN), each rule tested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from infra.verify.findings import Finding

DRIFT_OPS = ("update", "delete", "replace", "create")
_PATH = re.compile(r'\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]|([^.\[\]]+)')
HIGH = ("admissionregistration.k8s.io", "rbac.authorization.k8s.io", "core/v1:Namespace", "gcp:storage/bucketIAM",
        "gcp:storage/bucket:Bucket", "gcp:compute/firewall", "gcp:container/cluster", "gcp:projects/iam")
MEDIUM = ("kueue.x-k8s.io", "jobset.x-k8s.io", "leaderworkerset.x-k8s.io", "apps/v1", "gcp:container/nodePool")


def path_parts(path: str) -> list[str]:
    """'metadata.labels["a/b"]' -> ['metadata', 'labels', 'a/b']; 'spec.x[0].y' -> ['spec', 'x', '0', 'y']."""
    return [m.group(1) or m.group(2) or m.group(3) for m in _PATH.finditer(path)]


def value_at(obj: Any, parts: list[str]) -> Any:
    for p in parts:
        if isinstance(obj, list) and p.isdigit() and int(p) < len(obj):
            obj = obj[int(p)]
        elif isinstance(obj, dict) and p in obj:
            obj = obj[p]
        else:
            return None
    return obj


def _fields_has(fields: Any, parts: list[str]) -> bool:
    """managedFields' fieldsV1 holds the field (followed by name as far as it goes; list items are keyed: stop there)."""
    depth = 0
    for p in parts:
        key = f"f:{p}"
        if not isinstance(fields, dict) or key not in fields:
            break
        fields, depth = fields[key], depth + 1
    return depth == len(parts) or (depth >= 2 and isinstance(fields, dict) and any(k.startswith("k:") for k in fields))


def changed_by(live: dict[str, Any], parts: list[str]) -> Optional[str]:
    """The field manager (not the stack's pulumi-kubernetes) that owns the field now, and when it last wrote."""
    for entry in reversed(((live.get("metadata") or {}).get("managedFields")) or []):
        manager = str(entry.get("manager") or "")
        if manager.startswith("pulumi-kubernetes") or not _fields_has(entry.get("fieldsV1") or {}, parts):
            continue
        return f"{manager} ({entry.get('operation', '').lower() or 'write'} at {entry.get('time', '?')})"
    return None


@dataclass(frozen=True)
class Step:
    """One resource of the refresh preview that differs."""
    op: str
    urn: str
    type: str
    name: str
    old: dict[str, Any]
    """its state before (outputs: what Pulumi last saw)"""
    new: dict[str, Any]
    """what the refresh read ({} when gone)"""
    paths: tuple[str, ...]
    inputs: dict[str, Any]


@dataclass(frozen=True)
class BenignRule:
    name: str
    why: str
    matches: Callable[[Step, str, list[Step]], bool]
    """(the step, one of its changed paths or '' for a deletion, every step of the preview)"""


def _webhook_cert(step: Step, path: str, _: list[Step]) -> bool:
    return step.type == "kubernetes:core/v1:Secret" and step.name.endswith("-webhook-server-cert") and path.startswith("data[")


def _hpa_replicas(step: Step, path: str, steps: list[Step]) -> bool:
    if step.type != "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet" or path != "spec.replicas":
        return False
    name = value_at(step.old, ["metadata", "name"])
    return any(s.type.endswith(":HorizontalPodAutoscaler") and value_at(s.old, ["spec", "scaleTargetRef", "name"]) == name for s in steps)


def _autoscaled_pool(step: Step, path: str, _: list[Step]) -> bool:
    return step.type == "gcp:container/nodePool:NodePool" and path in ("nodeCount", "initialNodeCount") and bool(step.inputs.get("autoscaling"))


def _release_channel(step: Step, path: str, _: list[Step]) -> bool:
    if step.type == "gcp:container/cluster:Cluster":
        return path in ("masterVersion", "nodeVersion") and bool((step.inputs.get("releaseChannel") or {}).get("channel"))
    if step.type == "gcp:container/nodePool:NodePool":
        return path == "version" and bool((step.inputs.get("management") or {}).get("autoUpgrade"))
    return False


def _finished_jobset(step: Step, path: str, _: list[Step]) -> bool:
    ttl = value_at(step.old, ["spec", "ttlSecondsAfterFinished"])
    return step.type.endswith(":JobSet") and step.op == "delete" and ttl is not None


BENIGN = (
    BenignRule("controller-filled-webhook-cert", "the JobSet chart (v0.12.0 templates/internalcert/secret.yaml) renders its "
               "webhook Secret with empty ca.crt, ca.key, tls.crt and tls.key, which the controller's certificate rotator "
               "fills", _webhook_cert),
    BenignRule("autoscaler-owned-replicas", "the HorizontalPodAutoscaler of serve.autoscale sets the LeaderWorkerSet's replicas",
               _hpa_replicas),
    BenignRule("cluster-autoscaler-node-count", "GKE's cluster autoscaler sizes an autoscaled node pool", _autoscaled_pool),
    BenignRule("release-channel-version", "GKE upgrades the control plane and auto-upgrading pools on the release channel "
               "(the stack pins a minimum, cluster.minMasterVersion)", _release_channel),
    BenignRule("finished-jobset", "a batch JobSet that finished was removed after its ttlSecondsAfterFinished; set its state: "
               "finished in the stack file so that the next `pulumi up` does not run it again", _finished_jobset),
)


def steps_of(preview: dict[str, Any], ops: tuple[str, ...] = DRIFT_OPS) -> list[Step]:
    """The preview's steps of `ops` (those that differ, by default)."""
    out = []
    for s in preview.get("steps") or []:
        if s.get("op") not in ops:
            continue
        old, new = s.get("oldState") or {}, s.get("newState") or {}
        urn = str(s.get("urn", ""))
        out.append(Step(op=s["op"], urn=urn, type=str(old.get("type") or new.get("type") or urn.split("::")[-2].split("$")[-1]),
                        name=urn.split("::")[-1], old=old.get("outputs") or {}, new=new.get("outputs") or {},
                        paths=tuple(sorted((s.get("detailedDiff") or {}).keys())), inputs=old.get("inputs") or {}))
    return out


def severity(type_: str) -> str:
    if any(t in type_ for t in HIGH):
        return "high"
    return "medium" if any(t in type_ for t in MEDIUM) else "low"


def _shown(value: Any) -> str:
    text = "absent" if value is None else (value if isinstance(value, str) else repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def findings(preview: dict[str, Any], stack: str) -> tuple[list[Finding], dict[str, int]]:
    """The drift findings of a refresh preview, and how many changes each benign rule filtered."""
    steps = steps_of(preview)
    every = steps_of(preview, (*DRIFT_OPS, "refresh", "same"))  # what a rule may look at beside the change
    filtered: dict[str, int] = {}
    out: list[Finding] = []
    for step in steps:
        kind = step.type.rsplit(":", 1)[-1]
        subject = f"{kind} {step.name}"
        for path in step.paths or ("",):
            rule = next((r for r in BENIGN if r.matches(step, path, every)), None)
            if rule is not None:
                filtered[rule.name] = filtered.get(rule.name, 0) + 1
                continue
            target = f"pulumi up --refresh --stack {stack} --target '{step.urn}'"
            if step.op == "delete":
                out.append(Finding(severity(step.type), "drift", subject, "deleted outside the stack (the refresh finds it gone)",
                                   f"`{target}` makes it again (the refresh drops it from the state); if it should stay gone, "
                                   "remove what declares it from the stack file"))
                break
            parts = path_parts(path)
            who = changed_by(step.new, parts)
            old, new = _shown(value_at(step.old, parts)), _shown(value_at(step.new, parts))
            changed = f"{path}: {old} -> {new}" + (f", by {who}" if who else "")
            undo = f"undo it (its field manager now is {who.split(' ')[0]}, so the stack's apply stops at a field conflict until " \
                   "then), then " if who else ""
            out.append(Finding(severity(step.type), "drift", subject, changed,
                               f"{undo}`{target}` puts back {old}; to keep {new}, write it into "
                               f"stacks/Pulumi.{stack}.yaml (review it in a pull request) and `pulumi up`"))
    return out, filtered
