"""What a config change does to a running stack, from the two offline plans, without credentials.

Per resource: create / update (which inputs) / replace (which input forces it, by the providers'
rules in change_rules) / delete, plus in-place updates that recreate nodes, and what each replace,
delete or disruptive update interrupts. The guard: in a protected stack, losing a stateful resource
needs an entry in pathways:allowDisruption, and a zone move is refused outright.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from components.constants import BUCKET, CLUSTER, JOBSET, LEADER_WORKER_SET, NODE_POOL, ROLE_LABEL, SLICE_GROUP_LABEL
from components.manifests.guardrails import NODE_GUARD, TEMPLATE_GUARD
from components.model.cost.cost import HOURS_PER_MONTH
from infra.offline.change_rules import REPLACE_REFUSED, STATEFUL_TYPES, disruptive_paths, forcing_paths, name_collision
from infra.offline.engine import Plan, Registration
from infra.offline.stackfile import SECRET

ORDER = {"replace": 0, "delete": 1, "update": 2, "create": 3}
# JobSet v0.12.0's CRD makes these immutable by CEL (x-kubernetes-validations self == oldSelf, "Value is
# immutable"; also volumeClaimPolicies and replicatedJobs[].dependsOn, which the program never sets). A
# replacement's preview is pulumi-kubernetes' server-side dry-run create against the live object
# (await.Creation): it retries under a generated name only when the refusal says "field is immutable" (the
# webhook's message, e.g. for replicatedJobs), not CEL's "Value is immutable", so the preview fails. CEL
# transition rules do not run when the new object lacks the field, so only a field the new JobSet sets counts.
JOBSET_CEL_IMMUTABLE = ("spec.failurePolicy", "spec.network", "spec.startupPolicy", "spec.successPolicy")
K8S_PROVIDER = "pulumi:providers:kubernetes"
KUEUE_TOPOLOGY = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"
KUEUE_FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
NAMESPACE = "kubernetes:core/v1:Namespace"


@dataclass
class Change:
    name: str
    type: str
    action: str  # create | update | replace | delete
    changed: list[str] = field(default_factory=list)
    forced_by: list[str] = field(default_factory=list)
    disruptive: list[str] = field(default_factory=list)
    interrupts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    values: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Changed input path -> (old, new)."""
    collides: bool = False
    """A replacement created under the name the original still holds (create-before-delete): the real `pulumi up`
    fails on it (change_rules.name_collision)."""

    @property
    def kind(self) -> str:
        return self.type.rsplit(":", 1)[-1]

    @property
    def destructive(self) -> bool:
        return self.action in ("replace", "delete") or bool(self.disruptive)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "action": self.action, "changed": self.changed,
                "forcedBy": self.forced_by, "collides": self.collides, "disruptive": self.disruptive, "interrupts": self.interrupts, "notes": self.notes,
                "values": {p: {"old": old, "new": new} for p, (old, new) in self.values.items()}}


@dataclass
class Verdict:
    protected: bool
    refusals: list[str] = field(default_factory=list)
    unused_allowances: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    """allowDisruption patterns that would cover several refused resources at once."""

    @property
    def ok(self) -> bool:
        return not self.refusals


def changed_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Dotted input paths whose values differ (lists compare whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in sorted(set(before) | set(after)):
            out += changed_paths(before.get(key), after.get(key), f"{prefix}.{key}" if prefix else key)
        return out
    return [] if before == after else [prefix]


def changed_values(before: Any, after: Any, prefix: str = "") -> dict[str, tuple[Any, Any]]:
    """Leaf path -> (old, new), into lists of equal length too (spec.replicatedJobs[1].replicas: 4 -> 8):
    what a reviewer reads, where changed_paths gives what the replacement rules match."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for key in sorted(set(before) | set(after)):
            out.update(changed_values(before.get(key), after.get(key), f"{prefix}.{key}" if prefix else key))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = {}
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            out.update(changed_values(b, a, f"{prefix}[{i}]"))
        return out
    return {} if before == after else {prefix: (before, after)}


def changed_secrets(before: Registration, after: Registration) -> list[str]:
    """Input paths of secrets whose values differ while both plans show the same mask: a plain env value of a
    workload whose env goes into its Kubernetes Secret (the whole key is secret once any value under it is)."""
    a, b = before.secret_digests, after.secret_digests  # a path in both is masked in both (a secret turned plain is a changed input)
    return sorted(p for p in set(a) & set(b) if a[p] != b[p])


def _key(r: Registration) -> str:
    # URNs carry the parent type chain, which is the same for both plans of one program.
    return r.urn


def _workloads_on(plan: Plan) -> dict[str, list[Registration]]:
    """JobSets and LeaderWorkerSets by the slice group their workers select."""
    out: dict[str, list[Registration]] = {}
    for js in plan.by_type(JOBSET):
        for rj in js.input("spec.replicatedJobs") or []:
            spec = (((rj.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec", {})
            group = spec.get("nodeSelector", {}).get(SLICE_GROUP_LABEL)
            # a capacity ladder's workers select its rungs as a set (components/manifests/jobset.py)
            terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
            rungs = [v for t in terms for e in t.get("matchExpressions") or [] if e.get("key") == SLICE_GROUP_LABEL for v in e.get("values") or []]
            for g in dict.fromkeys([group, *rungs] if group else rungs):
                out.setdefault(g, []).append(js)
    for lws in plan.by_type(LEADER_WORKER_SET):
        group = (lws.input("spec.leaderWorkerTemplate.workerTemplate.spec.nodeSelector") or {}).get(SLICE_GROUP_LABEL)
        if group:
            out.setdefault(group, []).append(lws)
    return out


def _serving_effect(lws: Registration, verb: str) -> str:
    # an autoscaled set has no spec.replicas (its HorizontalPodAutoscaler owns the count), and may be at one replica
    name, replicas = lws.input("metadata.name"), lws.input("spec.replicas")
    if verb == "roll":
        down = "at one replica" if replicas is None else "with one replica" if replicas <= 1 else None
        what = ("drops in-flight requests on each replica as it is recreated, one at a time"
                + (f"; {down} the endpoint is down until it has loaded the model again" if down else ""))
    else:
        what = "drops in-flight requests; the endpoint is down until new replicas have loaded the model"
    return f"{name} (serve, {'autoscaled' if replicas is None else replicas} replica(s)): {what}"


def _run_effect(js: Registration, verb: str) -> str:
    if js.type == LEADER_WORKER_SET:
        return _serving_effect(js, verb)
    name = js.input("metadata.name")
    batch = "successPolicy" in (js.input("spec") or {})
    restarts = js.input("spec.failurePolicy.maxRestarts") or 0
    if verb == "restart":
        what = "restarts from its last checkpoint, or from step 0 without one" if batch else "drops every notebook session"
    else:
        what = "stops the run" if batch else "stops the endpoint"
    return f"{name} ({'batch' if batch else 'interactive'}, maxRestarts {restarts}): {what}"


def _interrupts(r: Registration, before: Plan, after: Plan, verb: str) -> list[str]:
    plans = (before, after)
    jobsets = {js.input("metadata.name"): js for p in plans for t in (JOBSET, LEADER_WORKER_SET) for js in p.by_type(t)}
    if r.type == JOBSET:
        return [_run_effect(r, "restart" if verb == "update" else verb)]
    if r.type == LEADER_WORKER_SET:
        # an in-place template change rolls the replicas; a replacement or deletion takes them all at once
        return [_serving_effect(r, "roll" if verb == "update" else verb)]
    if r.type == CLUSTER:
        return ["every workload and slice of the stack"] + [_run_effect(js, "restart") for js in jobsets.values()]
    if r.type == NODE_POOL:
        labels = r.input("nodeConfig.labels") or {}
        if labels.get(ROLE_LABEL) == "head":  # serve leaders run on their slices, not here
            return [_run_effect(js, "restart") for js in jobsets.values() if js.type == JOBSET]
        group = labels.get(SLICE_GROUP_LABEL)
        if group:
            hit = {js.input("metadata.name"): js for p in plans for js in _workloads_on(p).get(group, [])}
            return [_run_effect(js, "restart") for js in hit.values()] or [f"slice group {group}: no workload runs on it"]
        return []
    if r.type == NAMESPACE:
        ns = r.input("metadata.name")
        return [_run_effect(js, "restart") for js in jobsets.values() if js.input("metadata.namespace") == ns]
    if r.type == K8S_PROVIDER:
        return ["every Kubernetes object is re-created"] + [_run_effect(js, "restart") for js in jobsets.values()]
    if r.type == BUCKET:
        return ["objects in the bucket (the compilation cache recompiles on the next start)"]
    return []


def _secret_readers(secret: Registration, before: Plan, after: Plan) -> list[str]:
    """The workloads whose containers take env from this Secret (secretKeyRef), by name."""
    name, ns = secret.input("metadata.name"), secret.input("metadata.namespace")
    out = set()
    for p in (before, after):
        for t in (JOBSET, LEADER_WORKER_SET):
            for w in p.by_type(t):
                if w.input("metadata.namespace") == ns and any(ref.get("name") == name for ref in _secret_refs(w.inputs)):
                    out.add(w.input("metadata.name"))
    return sorted(out)


def _secret_refs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value["secretKeyRef"]] if isinstance(value.get("secretKeyRef"), dict) else []
        return own + [r for v in value.values() for r in _secret_refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _secret_refs(v)]
    return []


def _value_at(inputs: dict[str, Any], dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _kueue_immutable(a: Registration, b: Registration) -> tuple[str, ...]:
    """The inputs Kueue refuses to change in place on this object (CEL self == oldSelf)."""
    if b.type == KUEUE_TOPOLOGY:
        return ("spec.levels",)
    if b.type == KUEUE_FLAVOR and (_value_at(a.inputs, "spec.topologyName") or _value_at(b.inputs, "spec.topologyName")):
        return ("spec.nodeLabels", "spec.tolerations", "spec.topologyName")
    return ()


def diff(before: Plan, after: Plan) -> list[Change]:
    old = {_key(r): r for r in before.resources}
    new = {_key(r): r for r in after.resources}
    changes: list[Change] = []
    replaced_providers: set[str] = set()
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None:
            assert b is not None
            changes.append(Change(b.name, b.type, "create"))
            continue
        if b is None:
            c = Change(a.name, a.type, "delete")
            c.interrupts = _interrupts(a, before, after, "stop")
            changes.append(c)
            continue
        secret = changed_secrets(a, b)
        paths = sorted(changed_paths(a.inputs, b.inputs) + secret)
        if not paths:
            continue
        forced = forcing_paths(b.type, paths, b.options.get("replaceOnChanges") or [])
        c = Change(b.name, b.type, "replace" if forced else "update", paths, forced, [] if forced else disruptive_paths(b.type, paths),
                   values={**changed_values(a.inputs, b.inputs), **{p: (SECRET, SECRET) for p in secret}})
        if secret:
            c.notes.append(f"a secret value changed ({', '.join(secret)}); its values are not shown")
            readers = _secret_readers(b, before, after)
            if readers:
                c.notes.append(f"read as env by {', '.join(readers)} when its containers start: running pods keep the old "
                               "values until they restart")
        if c.destructive:
            c.interrupts = _interrupts(b, before, after, "restart" if forced else "update")
        c.collides = name_collision(b.type, forced, a.inputs, b.inputs, bool(b.options.get("deleteBeforeReplace")))
        cel_immutable = sorted({r for p in forced for r in JOBSET_CEL_IMMUTABLE
                                if b.type == JOBSET and (p == r or p.startswith(r + ".")) and _value_at(b.inputs, r) is not None})
        if cel_immutable:
            c.notes.append(
                f"the real `pulumi preview` fails on this replacement ({', '.join(cel_immutable)}: 'Value is immutable'): "
                "pulumi-kubernetes previews the new JobSet as a server-side dry run against the live one, which the JobSet "
                "CRD's CEL rule refuses. Make it two changes: remove the workload (a batch run: state finished), then add "
                "it back with the new value")
        kueue_immutable = [p for p in paths if any(p == r or p.startswith(r + ".") for r in _kueue_immutable(a, b))]
        if kueue_immutable:
            c.notes.append(
                f"the real `pulumi up` fails on this change ({', '.join(kueue_immutable)}): Kueue v0.19.2 makes a Topology's "
                "levels immutable, and a ResourceFlavor's nodeLabels, tolerations and topologyName once it names a Topology "
                "(apis/kueue/v1beta2 topology_types.go, resourceflavor_types.go). A pool set's subSlicing, or turning a pool "
                "set into fixed slices, needs a new slice-group name (docs/dynamic-slicing.md)")
        if forced and b.type == K8S_PROVIDER:
            replaced_providers.add(key)
        changes.append(c)
    # A new cluster identity re-creates everything that provider manages.
    if replaced_providers:
        by_name = {(c.type, c.name): c for c in changes}
        for r in after.resources:
            if r.options.get("provider") in replaced_providers and r.custom:
                c = by_name.get((r.type, r.name))
                if c is None:
                    c = Change(r.name, r.type, "replace")
                    changes.append(c)
                if c.action in ("update", "replace"):
                    c.action = "replace"
                    c.forced_by = c.forced_by or ["its provider's clusterIdentifier"]
                    c.interrupts = _interrupts(r, before, after, "restart")
    return sorted(changes, key=lambda c: (ORDER[c.action], c.name))


def stack_zone(plan: Plan) -> Optional[str]:
    """The one zone the stack's nodes live in."""
    for r in plan.by_type(NODE_POOL):
        if r.input("nodeLocations"):
            return r.input("nodeLocations")[0]
    cluster = next(iter(plan.by_type(CLUSTER)), None)
    return cluster.input("location") if cluster else None


# Compute Engine lets no one cancel, change or delete a submitted calendar-mode request ("Create a future reservation
# request in calendar mode", limitations): any change to one is refused, protected stack or not, with no allowance.
UNCHANGEABLE_TYPES = ("gcp:compute/futureReservation:FutureReservation",)
GUARD_TYPES = ("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy",
               "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding")
GUARD_NAMES = (NODE_GUARD, TEMPLATE_GUARD)


def guard(changes: list[Change], before: Plan, after: Plan, protected: bool, allowed: list[str]) -> Verdict:
    verdict = Verdict(protected)
    for c in changes:
        # (a delete only forgets it: the stack keeps it in Compute Engine, retain_on_delete, once `protect` is lifted)
        if c.type in UNCHANGEABLE_TYPES and c.action in ("update", "replace"):
            what = {"update": f"changes {', '.join(c.changed)} of it", "replace": "replaces it"}[c.action]
            verdict.refusals.append(
                f"{c.name} ({c.kind}): this change {what}, but a submitted calendar-mode future reservation cannot be "
                "changed, cancelled or deleted; put its settings back (a new request is a new group and reservation)")
        if c.collides:
            name = _physical_name(after, c)
            verdict.refusals.append(
                f"{c.name} ({c.kind}): replaced under its own name {name!r} (forced by {', '.join(c.forced_by)}); Pulumi "
                "creates the replacement before deleting the original, so the real `pulumi up` fails with 'already "
                f"exists'. {REPLACE_REFUSED.get(c.type, 'Put the value back, or give the resource another name')}")
    if not protected:
        return verdict
    old_zone, new_zone = stack_zone(before), stack_zone(after)
    if before.resources and old_zone and new_zone and old_zone != new_zone:
        verdict.refusals.append(
            f"zone {old_zone} -> {new_zone}: a protected stack never moves zones (reservations are zonal and every "
            "slice, pool and workload would be re-created); build a new stack in the new zone instead"
        )
    # the admission guards: no allowance covers losing one (they keep other pods off the Pathways nodes)
    guards = {(r.type, r.name) for r in before.resources if r.type in GUARD_TYPES
              and (r.input("metadata.name") in GUARD_NAMES or r.input("spec.policyName") in GUARD_NAMES)}
    for c in changes:
        if (c.type, c.name) not in guards:
            continue
        if c.action in ("delete", "replace") or "spec.validationActions" in c.changed:
            what = {"delete": "deletes it", "replace": "replaces it (a moment without it)"}.get(c.action, "changes what it does on a refusal")
            verdict.refusals.append(
                f"{c.name} ({c.kind}): this change {what}, but a protected stack keeps its admission guards in force; "
                "put them back (pathways:kubernetes.guards), no allowDisruption covers this")
    used: set[str] = set()
    for c in changes:
        if c.type not in STATEFUL_TYPES or not c.destructive:
            continue
        match = [a for a in allowed if fnmatch.fnmatchcase(c.name, a)]
        used |= set(match)
        if not match:
            what = {"replace": "replaces it", "delete": "deletes it"}.get(c.action, _recreates(c))
            verdict.refusals.append(
                f"{c.name} ({c.kind}): this change {what} in a protected stack; if intended, add {c.name!r} to "
                "pathways:allowDisruption in the same change"
            )
    verdict.unused_allowances = [a for a in allowed if a not in used]
    verdict.suggestions = _wildcards([c.name for c in changes if c.type in STATEFUL_TYPES and c.destructive
                                      and not any(fnmatch.fnmatchcase(c.name, a) for a in allowed)])
    return verdict


def _physical_name(plan: Plan, c: Change) -> Any:
    return next((r.input("name") for r in plan.resources if r.name == c.name and r.type == c.type), c.name)


def _wildcards(names: list[str]) -> list[str]:
    """One pattern per family of numbered names (slices-train-0, slices-train-1, ... -> slices-train-*)
    that has at least two refused members."""
    families: dict[str, list[str]] = {}
    for name in names:
        m = re.fullmatch(r"(.+-)[0-9]+", name)
        if m:
            families.setdefault(m.group(1), []).append(name)
    return [f"{prefix}*" for prefix, members in sorted(families.items()) if len(members) > 1]


VALUE_LIMIT = 60
"""Characters a changed value is shown with (old and new each); --json has them whole."""
_CONTEXT = 20  # characters kept before the first difference when a value is cut


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _shown(old: Any, new: Any, limit: int = VALUE_LIMIT) -> tuple[str, str]:
    """Old and new value, each cut to `limit` characters around their first difference, so that two long
    values that differ (an image tag at the end of a long path) never print the same."""
    a, b = _text(old), _text(new)
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    def cut(text: str) -> str:
        if len(text) <= limit:
            return text
        # one start for both sides, at most _CONTEXT characters before the first difference (so they part inside
        # what is shown) and no later than the longer value needs to show its end
        start = max(0, min(first - _CONTEXT, max(len(a), len(b)) - (limit - 1)))
        head = "…" if start else ""
        body = text[start:]
        room = limit - len(head)
        return head + (body if len(body) <= room else body[: room - 1] + "…")

    return cut(a), cut(b)


@dataclass(frozen=True)
class Capacity:
    """What a plan holds and costs, for the change's delta."""

    chips: int
    hourly: float


def capacity_text(before: Optional[Capacity], after: Capacity) -> str:
    if before is None:
        return f"Capacity: {after.chips} TPU chips, about ${after.hourly:,.2f}/hour"
    delta = after.hourly - before.hourly
    sign = "+" if delta >= 0 else "-"
    return (f"Capacity: {before.chips} -> {after.chips} TPU chips; estimated cost ${before.hourly:,.2f} -> ${after.hourly:,.2f}/hour "
            f"({sign}${abs(delta):,.2f}/hour, {sign}${abs(delta) * HOURS_PER_MONTH:,.0f}/month)")


def _recreates(c: Change) -> str:
    return "recreates its replicas" if c.type == LEADER_WORKER_SET else "recreates its nodes"


MAX_VALUES_SHOWN = 8


def render_text(changes: list[Change], verdict: Verdict, title: str, capacity: Optional[str] = None) -> str:
    marks = {"create": "+", "update": "~", "replace": "-/+", "delete": "-"}
    lines = [title, ""]
    if not changes:
        lines.append("  no changes")
    for c in changes:
        detail = ""
        if c.action == "replace":
            detail = f"forced by {', '.join(c.forced_by)}"
        elif c.action == "update":
            detail = ", ".join(c.changed[:6]) + (" …" if len(c.changed) > 6 else "")
            if c.disruptive:
                detail += f"  [{'recreates replicas' if c.type == LEADER_WORKER_SET else 'recreates nodes'}: {', '.join(c.disruptive)}]"
        lines.append(f"  {marks[c.action]:>3} {c.action:<8} {c.name} ({c.kind})" + (f"  {detail}" if detail else ""))
        shown = list(c.values.items())
        for path, (old, new) in shown[:MAX_VALUES_SHOWN]:
            shown_old, shown_new = _shown(old, new)
            lines.append(f"          {path}: {shown_old} -> {shown_new}")
        if len(shown) > MAX_VALUES_SHOWN:
            lines.append(f"          … {len(shown) - MAX_VALUES_SHOWN} more (--json has them all)")
        for n in c.notes:
            lines.append(f"          note: {n}")
        for i in c.interrupts:
            lines.append(f"          interrupts: {i}")
    counts = {a: sum(1 for c in changes if c.action == a) for a in ORDER}
    lines += ["", "Summary: " + ", ".join(f"{n} to {a}" for a, n in counts.items())]
    interrupted = sorted({i.split(" (")[0] for c in changes for i in c.interrupts if " (" in i})
    if interrupted:
        lines.append(f"Interrupts running work: {', '.join(interrupted)}")
    if capacity:
        lines.append(capacity)
    if verdict.protected or verdict.refusals:
        lines.append("")
        lines.append(f"Guard ({'protected' if verdict.protected else 'unprotected'} stack): "
                     + ("passed" if verdict.ok else f"REFUSED ({len(verdict.refusals)})"))
        lines += [f"  {r}" for r in verdict.refusals]
        if verdict.suggestions:
            lines.append(f"  to allow each group's pools at once: pathways:allowDisruption: {json.dumps(verdict.suggestions)}")
        if verdict.unused_allowances:
            lines.append(f"  note: pathways:allowDisruption entries that match nothing here: {', '.join(verdict.unused_allowances)}")
    return "\n".join(lines) + "\n"
