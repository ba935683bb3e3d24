"""`python -m infra.run why`: one dominant reason a run (or a stack-declared workload) is not running, or why it
ended, with its evidence and the fix (pure: the objects the cluster holds in, a Diagnosis out).

What it reads, and whose words it reads them in:
- Kueue v0.19.2 (apis/kueue/v1beta2/workload_types.go): the Workload's conditions QuotaReserved, Admitted, Evicted,
  Preempted, Finished; with the feature gates UnadmittedWorkloadsObservability and UnadmittedWorkloadsExplicitStatus
  (both Beta, off by default in 0.19; the stack turns them on: components/manifests/controller_charts.py)
  QuotaReserved=False carries a tiered reason: WaitingForQuota, ExceedsMaxQuota, Misconfigured, Suspended,
  TopologyPlacementFailed, WaitingForPreemptedWorkloads, NoMatchingFlavor, PendingEvaluation. Without the gates the
  reason is Pending, and the message ("insufficient unused quota ...", "... > maximum capacity ...") is read instead.
  The admission checks' states and the ProvisioningRequests Kueue made (autoscaling.x-k8s.io/v1: Accepted,
  Provisioned, Failed, their messages).
- JobSet v0.12.0 (pkg/constants/constants.go): Completed and Failed conditions with their reasons
  (FailJobSetFailurePolicyAction, ReachedMaxRestarts, FailedJobs), status.restarts and restartsCountTowardsMax, the
  JobCreationFailed event whose message is the API server's refusal of a Job.
- The Job controller (Failed condition messages of podFailurePolicy matches), the scheduler (FailedScheduling), the
  kubelet (containers waiting in ErrImagePull or ImagePullBackOff, terminated with OOMKilled, StartError or an exit
  code; FailedMount, where the GCS FUSE CSI driver reports a refused bucket as PermissionDenied / Error 403).
- Kueue's scheduler events on the Workload, where its scheduling-equivalence shortcut has written over the
  condition's message (infra/run/kueue_verdict.py).
- The stack's own model: each slice group's reservation, topology and size, a declared workload's state and
  fail-fast exit codes, the runs' buckets and account.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

from components.constants import SLICE_GROUP_LABEL as GROUP_LABEL
from components.constants import TPU_TOPOLOGY_LABEL as TOPOLOGY_LABEL
from components.manifests.kueue_api import QUEUE_LABEL
from components.model.cluster.fleet import MULTIKUEUE_CHECK
from components.model.workloads.storage import GCSFUSE_DRIVER
from components.model.workloads.teams import BUDGET_HOLD_ANNOTATION
from infra.run import known_errors
from infra.run.kueue_verdict import quota_verdict
from infra.run.refusals import refusal
from infra.run.stack_args import again
from infra.run.status import condition, is_true
from infra.run.why_facts import (
    IMAGE_WAITING,
    SIGTERM,
    Diagnosis,
    Evidence,
    StackView,
    conditions,
    duration,
    events_of,
    group_of,
    meta,
    one_line,
    parse_time,
    restarts_left,
    role_of,
)
from infra.run.why_scale_up import scaling_up
from infra.run.why_time_limit import stopped_at_limit

# --- terminated containers: the program's own end ----------------------------------------------------------------

@dataclass(frozen=True)
class _Exit:
    pod: str
    role: str
    container: str
    code: int
    reason: str
    at: str
    message: str


def _exits(pods: list[dict[str, Any]]) -> list[_Exit]:
    """Containers that ended with an error, first first; SIGTERM (143) from a deleted pod last."""
    out = []
    for p in pods:
        for s in (p.get("status") or {}).get("containerStatuses") or []:
            for state in (s.get("state") or {}, s.get("lastState") or {}):
                t = state.get("terminated")
                if t and int(t.get("exitCode") or 0) != 0:
                    out.append(_Exit(meta(p).get("name", ""), role_of(p), s.get("name", ""), int(t["exitCode"]),
                                     t.get("reason") or "", t.get("finishedAt") or "", one_line(t.get("message"), 200)))
    return sorted(out, key=lambda e: (e.code == SIGTERM, e.at))


def _fail_fast_codes(ev: Evidence, view: StackView) -> tuple[int, ...]:
    """The exit codes the JobSet's own Jobs fail on at once (podFailurePolicy FailJob onExitCodes), which the
    JobSet's program-error rule turns into a failed run; the stack file's when the JobSet is gone."""
    codes: list[int] = []
    for rj in ((ev.jobset or {}).get("spec") or {}).get("replicatedJobs") or []:
        policy = ((rj.get("template") or {}).get("spec") or {}).get("podFailurePolicy") or {}
        for rule in policy.get("rules") or []:
            on = rule.get("onExitCodes") or {}
            if rule.get("action") == "FailJob" and on.get("operator") == "In":
                codes += [int(c) for c in on.get("values") or []]
    if codes:
        return tuple(sorted(set(codes)))
    declared = view.declared.get(ev.name)
    return declared.fail_on_exit_codes if declared is not None else ()


def _ended(ev: Evidence, view: StackView) -> Diagnosis:
    """A JobSet the JobSet controller failed: OOM, a fail-fast rule, or the program's exit with no restart left."""
    js = ev.jobset or {}
    failed = condition(js, "Failed") or {}
    why = one_line(failed.get("message") or failed.get("reason"))
    exits = _exits(ev.pods)
    job_messages = [one_line((condition(j, "Failed") or {}).get("message")) for j in ev.jobs if is_true(j, "Failed")]
    evidence = [f"the JobSet failed: {why}" if why else "the JobSet failed", f"restarts: {(js.get('status') or {}).get('restarts') or 0}"]
    logs = f"its output: {again('logs', view.stack)} {ev.name}"
    oom = next((e for e in exits if e.reason == "OOMKilled"), None)
    if oom is not None:
        return Diagnosis("oom", f"container {oom.container} of the {oom.role} ran out of memory (OOMKilled, exit {oom.code})",
                         (f"pod {oom.pod}: terminated OOMKilled at {oom.at or '?'}", *evidence),
                         ("give the program less to hold in host memory (smaller batches or data-loader buffers, fewer "
                          "data-loader workers) or, for the head, more memory (--memory); " + logs), tuple(job_messages))
    first = exits[0] if exits else None
    codes = _fail_fast_codes(ev, view)
    rule_hit = failed.get("reason") == "FailJobSetFailurePolicyAction" or (first is not None and first.code in codes)
    if first is not None and rule_hit:
        starting = first.reason in ("StartError", "ContainerCannotRun") or first.code in (126, 127, 128)
        what = "could not start its command" if starting else "exited"
        fix = (f"the container's command could not run (exit {first.code}: {first.reason or 'not found or not executable'}): "
               "check the command and that the image has it; " + logs) if starting else f"fix what the program reports; {logs}"
        return Diagnosis("failure-rule",
                         f"the program of the {first.role} {what} (exit {first.code}), one of the fail-fast codes "
                         f"{list(codes) or '(the rule)'}: the rule failed the run at once, without a restart",
                         (f"pod {first.pod}, container {first.container}: exit {first.code} ({first.reason or 'Error'})"
                          + (f": {first.message}" if first.message else ""), *evidence), fix, tuple(job_messages))
    if first is not None:
        spent = (js.get("status") or {}).get("restarts") or 0
        return Diagnosis("program-failed",
                         f"the program of the {first.role} exited {first.code}" + (f" after {spent} restart(s)" if spent else "")
                         + f"; no restart left ({restarts_left(js)})",
                         (f"pod {first.pod}, container {first.container}: exit {first.code} ({first.reason or 'Error'})", *evidence),
                         f"fix what the program reports; {logs}", tuple(job_messages))
    return Diagnosis("program-failed", f"the run failed: {why or 'no container says why'}", tuple(evidence + job_messages),
                     f"look at the Jobs' and pods' events: {again('describe', view.stack)} {ev.name}")


# --- before the pods: Kueue --------------------------------------------------------------------------------------

def _flavor_holders(ev: Evidence, flavors: set[str]) -> list[str]:
    """Admitted workloads of the ClusterQueue holding TPU or head quota in these flavors, with their priority."""
    cq = (((ev.workload or {}).get("status") or {}).get("admission") or {}).get("clusterQueue") or _cq_name(ev)
    out = []
    for w in ev.workloads:
        admission = (w.get("status") or {}).get("admission") or {}
        if not is_true(w, "Admitted") or meta(w).get("name") == meta(ev.workload).get("name"):
            continue
        if cq and admission.get("clusterQueue") != cq:
            continue
        used = {f for ps in admission.get("podSetAssignments") or [] for f in (ps.get("flavors") or {}).values()}
        if flavors and not used & flavors:
            continue
        owner = next((r.get("name") for r in meta(w).get("ownerReferences") or []), meta(w).get("name"))
        out.append(f"{owner} (priority {(w.get('spec') or {}).get('priority', 0)})")
    return sorted(out)


def _cq_name(ev: Evidence) -> Optional[str]:
    return (ev.cluster_queue or {}).get("metadata", {}).get("name")


def _place(ev: Evidence) -> Optional[str]:
    name = meta(ev.workload).get("name")
    mine = next((p for p in ev.pending if meta(p).get("name") == name), None)
    if mine is None:
        return None
    return f"{int(mine.get('positionInClusterQueue', 0)) + 1} in ClusterQueue {_cq_name(ev) or ''}".rstrip()


def _held_queue(ev: Evidence, view: StackView, queue: str, lq: Optional[dict[str, Any]], reason_text: str) -> Diagnosis:
    declared = view.declared.get(ev.name)
    lq_policy = ((lq or {}).get("spec") or {}).get("stopPolicy") or "None"
    cq_policy = ((ev.cluster_queue or {}).get("spec") or {}).get("stopPolicy") or "None"
    if declared is not None and declared.state == "suspended":
        return Diagnosis("suspended", f"the stack file declares {ev.name} with state: suspended; the stack holds its queue {queue}",
                         (f"LocalQueue {queue}: stopPolicy {lq_policy}", *([reason_text] if reason_text else [])),
                         f"set its state to running in stacks/Pulumi.{view.stack}.yaml, then pulumi up")
    budget = (((ev.cluster_queue or {}).get("metadata") or {}).get("annotations") or {}).get(BUDGET_HOLD_ANNOTATION)
    if lq_policy == "None" and cq_policy != "None" and budget:
        return Diagnosis("over-budget", f"ClusterQueue {_cq_name(ev)} is held: its team is over its chip-hour budget ({budget})",
                         (f"ClusterQueue {_cq_name(ev)}: stopPolicy {cq_policy}, {BUDGET_HOLD_ANNOTATION}: {budget}",
                          *([reason_text] if reason_text else [])),
                         "the usage recorder releases it in the first minute of a month the team is under budget; or raise "
                         f"the team's chipHoursPerMonth in stacks/Pulumi.{view.stack}.yaml and pulumi up (released the next minute)")
    held = f"LocalQueue {queue}" if lq_policy != "None" else f"ClusterQueue {_cq_name(ev)}"
    policy = lq_policy if lq_policy != "None" else cq_policy
    kind = "localqueue" if lq_policy != "None" else "clusterqueue"
    target = f"-n {view.namespace} {queue}" if kind == "localqueue" else str(_cq_name(ev))
    return Diagnosis("queue-held", f"{held} is held (stopPolicy {policy}): Kueue admits nothing from it",
                     (f"{held}: stopPolicy {policy}", *([reason_text] if reason_text else [])),
                     f"an operator holds it (maintenance?); it is released with kubectl patch {kind} {target} --type merge "
                     "-p '{\"spec\":{\"stopPolicy\":\"None\"}}'")


def _not_admitted(ev: Evidence, view: StackView) -> Optional[Diagnosis]:
    js = ev.jobset or {}
    queue = (meta(js).get("labels") or {}).get(QUEUE_LABEL)
    if queue is None:
        return None
    lq = next((q for q in ev.local_queues if meta(q).get("name") == queue), None)
    wl = ev.workload
    if lq is None and not any(u.startswith("localqueues") for u in ev.unread):
        known = sorted(meta(q).get("name", "") for q in ev.local_queues)
        return Diagnosis("no-such-queue", f"the JobSet names LocalQueue {queue}, which does not exist in {view.namespace}: Kueue never admits it",
                         (f"label {QUEUE_LABEL}: {queue}", f"LocalQueues in {view.namespace}: {', '.join(known) or 'none'}"),
                         f"label it {QUEUE_LABEL}: {(view.run_queues or ('<a queue above>',))[0]} (python -m infra.run submit does), "
                         "or delete it and submit it again")
    if lq is None:
        lq = {}
    if wl is None:
        return Diagnosis("created", "Kueue has not made its Workload yet", (f"LocalQueue {queue}",),
                         "wait a few seconds; if it stays, Kueue's controller is not running (kubectl -n kueue-system get pods)")
    if (wl.get("spec") or {}).get("active") is False:
        return stopped_at_limit(ev, wl, view) or Diagnosis("deactivated", f"its Kueue Workload {meta(wl).get('name')} is deactivated (spec.active: false): Kueue neither admits nor queues it",
                         tuple(dict.fromkeys(one_line(c.get("message")) for c in conditions(wl) if c.get("type") in ("Evicted", "Requeued") and c.get("message"))),
                         f"reactivate it: kubectl patch workloads.kueue.x-k8s.io -n {view.namespace} {meta(wl).get('name')} --type merge "
                         "-p '{\"spec\":{\"active\":true}}' (or delete the run)")
    preempted = _preemption(ev, view)
    if preempted is not None and not is_true(wl, "Admitted"):
        return preempted
    if is_true(wl, "Admitted"):
        return None
    reserved = condition(wl, "QuotaReserved")
    lq_stop = ((lq.get("spec") or {}).get("stopPolicy") or "None") != "None"
    cq_stop = (((ev.cluster_queue or {}).get("spec") or {}).get("stopPolicy") or "None") != "None"
    if lq_stop or cq_stop or (reserved or {}).get("reason") == "Suspended":
        return _held_queue(ev, view, queue, lq, one_line((reserved or {}).get("message")))
    if is_true(wl, "QuotaReserved"):
        return _checks(ev, view)
    return _waiting(ev, view, reserved or {})


def _preemption(ev: Evidence, view: StackView) -> Optional[Diagnosis]:
    wl = ev.workload or {}
    c = next((c for c in conditions(wl) if c.get("status") == "True" and (
        c.get("type") == "Preempted" or (c.get("type") == "Evicted" and c.get("reason") == "Preempted"))), None)
    if c is None:
        return None
    message = one_line(c.get("message"))
    uid = re.search(r"UID: ([0-9a-f-]+)", message)
    by = next((w for w in ev.workloads if uid and meta(w).get("uid") == uid.group(1)), None)
    who = (next((r.get("name") for r in meta(by).get("ownerReferences") or []), meta(by).get("name")) if by else "another workload")
    mine = (wl.get("spec") or {}).get("priority", 0)
    theirs = (by or {}).get("spec", {}).get("priority")
    return Diagnosis("preempted", f"Kueue preempted it for {who}" + (f" (priority {theirs}, above its {mine})" if theirs is not None else "")
                     + "; it waits to be admitted again",
                     (f"Workload {meta(wl).get('name')}: {c.get('type')} ({c.get('reason')}): {message}",),
                     f"it runs again when {who} frees the quota; to keep its place, submit it at a higher priority "
                     "(--priority training; a team's runs up to the team's priority) or on a group the other does not use")


def _relevant(message: str) -> str:
    """Of Kueue's flavor-by-flavor message, the parts that say what is short ("couldn't assign flavors to pod set
    worker: flavor tpu-big doesn't match node affinity, insufficient unused quota for google.com/tpu in flavor
    tpu-main, 4 more needed"): the flavors that could never hold it are noise."""
    head, _, rest = message.partition(": ")
    parts = [p for p in re.split(r", (?=flavor |insufficient )", rest) if re.search(r"insufficient|more needed|maximum capacity|exceed", p)
             and "maximum capacity (0)" not in p]  # a flavor that holds none of it (the head flavor for TPUs)
    return f"{head}: {', '.join(parts)}" if parts and rest else message


def _waiting(ev: Evidence, view: StackView, reserved: dict[str, Any]) -> Diagnosis:
    # Kueue's scheduling-equivalence shortcut may have written over the scheduler's words (infra/run/kueue_verdict.py)
    verdict = quota_verdict(ev.workload, [*ev.events, *ev.workload_events], ev.workloads)
    reason = verdict.reason if verdict else reserved.get("reason") or ""
    message = _relevant(one_line(verdict.message if verdict else reserved.get("message"), 1000))
    wl = ev.workload or {}
    flavors = set(re.findall(r"in flavor ([a-z0-9.-]+)", message))
    said = f"Kueue ({reason}): {message}" if message else f"Kueue: {reason or 'no condition yet'}"
    if verdict is not None and verdict.source != "condition":
        said += {"event": " (its scheduler's event: the Workload's condition says only that it was set aside as equivalent to one that failed)",
                 "bypassed": " (Kueue set it aside unevaluated, as one of the same shape and priority did not fit; "
                             "it looks again when quota frees or the queue changes)"}.get(
            verdict.source, f" (said of {verdict.source.removeprefix('workload ')}, of the same shape and priority: "
                            "Kueue set this one aside unevaluated)")
    # Kueue's tiered reason when its gates are on; else (reason Pending) its message: more than a flavor can ever
    # hold ("> maximum capacity") in every flavor it tried, and no flavor that would fit once freed ("unused")
    exceeds = reason == "ExceedsMaxQuota" or (reason in ("", "Pending") and "maximum capacity" in message and "unused quota" not in message)
    if exceeds:
        return Diagnosis("over-quota", "it asks for more than its ClusterQueue can ever hold: Kueue will never admit it",
                         (said,),
                         "ask for at most what the slice group holds (--slices, the group's count), or grow the group in the stack file")
    if reason == "Misconfigured" or (reason in ("", "Pending") and ("doesn't exist" in message or "is inactive" in message)):
        return Diagnosis("no-such-queue", f"Kueue cannot queue it: {message or reason}", (said,),
                         f"label it {QUEUE_LABEL}: one of {', '.join(view.run_queues) or 'the stack queues'}; "
                         f"python -m infra.run submit does")
    # a pool set (docs/dynamic-slicing.md): its Topology is slices-<group>, and Kueue says how many pieces fit
    # (pkg/cache/scheduler/tas_flavor_snapshot.go notFitMessage); with UnadmittedWorkloadsObservability off the reason is Pending
    pool_set = re.search(r'topology "slices-([a-z0-9-]+)" (?:doesn\'t allow to fit any|allows to fit only)', message)
    if pool_set:
        holders = _flavor_holders(ev, {f"tpu-{pool_set[1]}"})
        return Diagnosis("topology", f"pool set {pool_set[1]} has no free cubes or partitions in the shape of its slice now"
                         + (f": held by {', '.join(holders[:4])}" if holders else ""), (said,),
                         "it starts when a holder ends and frees them; to start sooner, ask for a smaller topology "
                         "(the plan's Pool sets table shows what fits beside the others), or add sub-blocks to the pool set")
    if reason == "TopologyPlacementFailed":
        return Diagnosis("topology", "Kueue finds no placement that fits its topology", (said,),
                         "ask for a slice shape (topology) the group's nodes have")
    if reason == "WaitingForPreemptedWorkloads":
        return Diagnosis("waiting-for-preemption", "Kueue preempted lower-priority workloads for it and waits for their pods to end",
                         (said,), "nothing to do: it is admitted once they are gone")
    place = _place(ev)
    holders = _flavor_holders(ev, flavors)
    return Diagnosis("waiting-for-quota",
                     "waiting in line for quota" + (f": {place}" if place else "") + (f", held by {', '.join(holders[:4])}" if holders else ""),
                     tuple(x for x in (said if message else "Kueue has not considered it yet",
                                       f"priority {(wl.get('spec') or {}).get('priority', 0)}") if x),
                     "it starts when the holders finish or are deleted; to start sooner, ask for fewer slices or another slice group")


def _checks(ev: Evidence, view: StackView) -> Diagnosis:
    """Quota reserved, admission checks not ready: the ProvisioningRequest (queued provisioning) is the usual one."""
    wl = ev.workload or {}
    name = meta(wl).get("name")
    checks = (wl.get("status") or {}).get("admissionChecks") or []
    mine = [pr for pr in ev.provisioning_requests if any(r.get("name") == name for r in meta(pr).get("ownerReferences") or [])]
    mine.sort(key=lambda pr: meta(pr).get("creationTimestamp", ""))
    said = []
    for pr in mine[-2:]:
        for c in conditions(pr):
            if c.get("status") == "True":
                said.append(f"ProvisioningRequest {meta(pr).get('name')}: {c.get('type')} ({c.get('reason')}): {one_line(c.get('message'), 200)}")
    states = [f"admission check {c.get('name')}: {c.get('state')}" + (f" ({one_line(c.get('message'), 160)})" if c.get("message") else "")
              for c in checks]
    if any(c.get("name") == MULTIKUEUE_CHECK and c.get("state") != "Ready" for c in checks):
        return Diagnosis("dispatching", "reserved on the fleet manager; MultiKueue has not yet found a worker whose Kueue admits it",
                         tuple(states), "it runs on the first worker that admits it; each worker's `why` says why it waits there")
    failed = any("Failed" in s for s in said)
    return Diagnosis("not-provisioned",
                     "Kueue reserved its quota and waits for GKE to provision its nodes (queued provisioning)"
                     + (": the last request failed, Kueue retries" if failed else ""),
                     tuple(states + said) or ("no ProvisioningRequest yet",),
                     "GKE provisions when it finds the capacity; to run sooner, give the group a capacity ladder "
                     "(slices[].ladder) onto a reservation or spot, or ask for fewer slices")


# --- admitted: the pods ------------------------------------------------------------------------------------------

def _refused_children(ev: Evidence, view: StackView) -> Optional[Diagnosis]:
    for e in reversed(events_of(ev, "JobCreationFailed", "FailedCreate")):
        found = refusal(e.get("message") or "", view)
        if found is not None:
            return found
    return None


def _bucket(pod: dict[str, Any]) -> Optional[str]:
    for v in (pod.get("spec") or {}).get("volumes") or []:
        csi = v.get("csi") or {}
        if csi.get("driver") == GCSFUSE_DRIVER:
            return (csi.get("volumeAttributes") or {}).get("bucketName")
    return None


def _mount_refused(ev: Evidence, view: StackView) -> Optional[Diagnosis]:
    pods = {meta(p).get("name"): p for p in ev.pods}
    for e in reversed(events_of(ev, "FailedMount")):
        message = one_line(e.get("message"), 400)
        if not re.search(r"PermissionDenied|Error 403|does not have storage\.|AccessDenied", message):
            continue
        pod = pods.get((e.get("involvedObject") or {}).get("name"))
        bucket = _bucket(pod) if pod else None
        listed = bucket in view.runs_buckets if bucket else False
        return Diagnosis("bucket-access", f"its pods cannot mount bucket {bucket or '(the mount)'}: Cloud Storage refused the run's identity",
                         (f"kubelet: {message}", f"the runs' account: {view.runs_account or 'the workload account'}"),
                         (f"the bucket is in {view.buckets_key}, so its grant is missing on Cloud Storage: run the bootstrap again "
                          "(pulumi up of pathways-bootstrap; another project's bucket needs its externalBuckets entry)") if listed else
                         f"list the bucket in {view.buckets_key} of stacks/Pulumi.{view.stack}.yaml (readOnly: false to write) and run the bootstrap")
    return None


def _unscheduled(ev: Evidence, view: StackView, pending: list[dict[str, Any]]) -> Diagnosis:
    pod = pending[0]
    said = next((one_line(e.get("message")) for e in reversed(events_of(ev, "FailedScheduling"))), "") or one_line(
        (condition(pod, "PodScheduled") or {}).get("message"))
    group = group_of(pod, view)
    evidence = [f"{len(pending)} pod(s) unscheduled, e.g. {meta(pod).get('name')} ({role_of(pod)})", *([f"scheduler: {said}"] if said else [])]
    if group is not None:
        mine = [n for n in ev.nodes if (meta(n).get("labels") or {}).get(GROUP_LABEL) == group.name]
        wanted = group.count * group.hosts
        want_topology = ((pod.get("spec") or {}).get("nodeSelector") or {}).get(TOPOLOGY_LABEL) or group.topology
        shapes = sorted({(meta(n).get("labels") or {}).get(TOPOLOGY_LABEL, "?") for n in mine})
        evidence.append(f"group {group.name}: {len(mine)} of {wanted} nodes" + (f", topology {', '.join(shapes)}" if mine else ""))
        if mine and want_topology and any(s != want_topology for s in shapes):
            return Diagnosis("topology", f"group {group.name}'s nodes have TPU topology {', '.join(shapes)}; its pods ask for {want_topology}",
                             tuple(evidence),
                             f"recreate the group's node pools with topology {want_topology} (pulumi up replaces pools made by hand), "
                             "or ask for a slice shape the nodes have")
        if len(mine) < wanted and group.reservation:
            return Diagnosis("no-free-hosts", f"group {group.name}'s reservation {group.reservation} has no free hosts: GKE made "
                             f"{len(mine)} of its {wanted} nodes", tuple(evidence),
                             f"free hosts in reservation {group.reservation} (or its block), or move the group to a capacity "
                             "ladder with spot or flex-start rungs (slices[].ladder)")
        if len(mine) < wanted:
            return scaling_up(ev, group.name, len(mine), wanted, tuple(evidence)) or Diagnosis("no-capacity", f"group {group.name} has {len(mine)} of its {wanted} nodes: GKE has not made the rest",
                             tuple(evidence), "check the node pools' errors in the console (stock-out, quota); a capacity ladder "
                             "(slices[].ladder) lets workloads run elsewhere meanwhile")
    return Diagnosis("unschedulable", f"the scheduler cannot place its pods: {said or 'no reason given yet'}", tuple(evidence),
                     f"{again('describe', view.stack)} {ev.name} gathers the pods, nodes and events to look at")


def _running(ev: Evidence, view: StackView) -> Optional[Diagnosis]:
    js = ev.jobset or {}
    # a pod that ended (a replaced worker's, Failed) is history: the Job made another
    live = [p for p in ev.pods if not meta(p).get("deletionTimestamp") and (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]
    waiting = [(p, s) for p in live for s in (p.get("status") or {}).get("containerStatuses") or []
               if ((s.get("state") or {}).get("waiting") or {}).get("reason") in IMAGE_WAITING]
    if waiting:
        pod, s = waiting[0]
        w = s["state"]["waiting"]
        return Diagnosis("image-pull", f"the kubelet cannot pull image {s.get('image')} ({w.get('reason')})",
                         (f"pod {meta(pod).get('name')}, container {s.get('name')}: {one_line(w.get('message'), 240) or w.get('reason')}",),
                         "check the image's name and tag (pinned, as docs/runs.md says), and that the nodes' service account may "
                         "read its registry (roles/artifactregistry.reader)")
    mount = _mount_refused(ev, view)
    if mount is not None:
        return mount
    pending = [p for p in live if not (p.get("spec") or {}).get("nodeName")]
    # the scheduler tried and said no (FailedScheduling, PodScheduled False): a pod it has not tried yet is starting
    refused = [p for p in pending if (condition(p, "PodScheduled") or {}).get("status") == "False"]
    if refused:
        return _unscheduled(ev, view, refused)
    if pending:
        return Diagnosis("starting", f"{len(pending)} pod(s) wait for the scheduler", (),
                         "wait a few seconds; `describe` gathers their events if they stay")
    running = [p for p in live if (p.get("status") or {}).get("phase") == "Running"]
    worker = ((ev.workload or {}).get("status") or {}).get("clusterName")
    if not live and worker:
        return Diagnosis("dispatched", f"MultiKueue dispatched it to the worker cluster {worker}: its pods run there",
                         (f"Workload {meta(ev.workload).get('name')}: status.clusterName {worker}",),
                         f"ask that cluster: python -m infra.run why --stack <{worker}'s stack> {ev.name}")
    if not live:
        return Diagnosis("starting", "admitted; the JobSet controller has not made its pods yet", (),
                         "wait a few seconds; `describe` gathers its events if it stays")
    if len(running) < len(live):
        return Diagnosis("starting", f"{len(running)} of {len(live)} pods run; the others are starting",
                         tuple(f"{meta(p).get('name')}: {(p.get('status') or {}).get('phase')}" for p in live if p not in running)[:4],
                         "wait; `describe` gathers their events if they stay")
    restarts = int((js.get("status") or {}).get("restarts") or 0)
    replaced = sum(int((j.get("status") or {}).get("failed") or 0) for j in ev.jobs)
    since = min((parse_time((p.get("status") or {}).get("startTime")) or 0 for p in running), default=0)
    if restarts or replaced:
        restarting = condition(js, "Restarting") or next(
            (c for c in conditions(js) if str(c.get("reason", "")).startswith(("FailurePolicy_", "DefaultFailurePolicy"))), None)
        said = [f"the JobSet restarted {restarts} time(s)" + (f": {one_line(restarting.get('reason'))}, {one_line(restarting.get('message'))}"
                                                               if restarting else "")] if restarts else []
        said += [f"Job {meta(j).get('name')}: {(j.get('status') or {}).get('failed')} failed pod(s) replaced"
                 for j in ev.jobs if int((j.get("status") or {}).get("failed") or 0)]
        said += [one_line(e.get("message")) for e in events_of(ev, "RestartJobSetFailurePolicyAction", "PodFailurePolicy",
                                                              "BackoffLimitExceeded", "TaintManagerEviction", "NodeNotReady")][-2:]
        return Diagnosis("restarted", f"running again ({len(running)} pods) after {restarts} JobSet restart(s) and {replaced} replaced pod(s)",
                         tuple(said), f"nothing to do while it runs; restarts left {restarts_left(js)} "
                         f"(its output: {again('logs', view.stack)} {ev.name})")
    return Diagnosis("running", f"all {len(running)} pods run" + (f", for {duration(ev.now - since)}" if since and ev.now else ""),
                     (), f"nothing to do; its output: {again('logs', view.stack)} {ev.name} --follow")


# --- the answer --------------------------------------------------------------------------------------------------

def diagnose(ev: Evidence, view: StackView) -> Diagnosis:
    """The dominant reason; a failed or restarted program's known error (known_errors) named with its fix."""
    found = _diagnose(ev, view)
    known = known_errors.match(known_errors.terminated_messages(ev.pods)) if found.reason in ("program-failed", "failure-rule", "restarted") else None
    return found if known is None else Diagnosis(known.reason, known.summary, (f"its output says: {known.says}", *found.evidence), known.fix, found.detail)


def _diagnose(ev: Evidence, view: StackView) -> Diagnosis:
    """The dominant reason, in the order a run lives: gone, ended, held before Kueue, refused, then its pods."""
    js = ev.jobset
    if js is None:
        return Diagnosis("not-found", f"there is no JobSet {ev.name} in {view.namespace}",
                         ("a run deleted, or past its ttlSecondsAfterFinished, is gone with its pods and logs",),
                         f"{again('list', view.stack)} shows what there is; a JobSet made by hand that the cluster "
                         "refused was never created: `why --file` says why")
    if is_true(js, "Completed"):
        done = condition(js, "Completed") or {}
        start = parse_time(next((c.get("lastTransitionTime") for c in conditions(ev.workload) if c.get("type") == "Admitted"), None)) \
            or parse_time(meta(js).get("creationTimestamp"))
        end = parse_time(done.get("lastTransitionTime"))
        ran = f" after {duration(end - start)}" if start and end else ""
        return Diagnosis("finished", f"it completed{ran}: {one_line(done.get('message')) or 'jobset completed successfully'}",
                         (f"JobSet Completed ({done.get('reason')}) at {done.get('lastTransitionTime')}",),
                         f"nothing to do; its output: {again('logs', view.stack)} {ev.name}")
    if is_true(js, "Failed"):
        return _ended(ev, view)
    declared = view.declared.get(ev.name)
    if declared is not None and declared.state == "suspended" and declared.local_queue is None and (js.get("spec") or {}).get("suspend"):
        return Diagnosis("suspended", f"the stack file declares {ev.name} with state: suspended", ("JobSet spec.suspend: true",),
                         f"set its state to running in stacks/Pulumi.{view.stack}.yaml, then pulumi up")
    held = _not_admitted(ev, view)
    if held is not None:
        return held
    refused = _refused_children(ev, view)
    if refused is not None:
        return refused
    return _running(ev, view) or Diagnosis("running", "running", (), "nothing to do")
