"""What a stack with pathways:runs makes for ad-hoc runs, and a run's JobSet (pure Python).

- A LocalQueue per ClusterQueue in the stack's namespace (``runs-<clusterqueue>``): a run's JobSet names it, so
  Kueue admits runs against the same quotas, priorities and preemption as the declared workloads.
- For runs.submitters: a Role in that namespace with what ``python -m infra.run`` does (create, read and delete
  JobSets; read their pods, logs and events, the Kueue workloads, the queues' pending lists from Kueue's visibility
  API; port-forward to a head for a notebook) and a ClusterRole to read nodes (``describe`` gathers them).
- A ValidatingAdmissionPolicy: a submitter may create, change or delete only JobSets labelled as runs, so the
  Role cannot reach the stack's own workloads (RBAC has no label scope).
"""

from __future__ import annotations

from typing import Any, Optional

from components.manifests.jobset import USER_CONTAINER, WORKLOAD_LABEL, jobset
from components.manifests.kueue_api import API_VERSION, PRIORITY_LABEL, QUEUE_LABEL
from components.manifests.storage import claim_name
from components.model.cluster.fleet import MULTIKUEUE_USER
from components.model.resolved import ResolvedStack, ResolvedWorkload
from components.model.workloads.resilience import MTC_CSI_DRIVER
from components.model.workloads.runs import MANAGED_BY_LABEL, RUN_MANAGER, RUN_PRIORITIES, run_queue, team_run_priorities
from components.model.workloads.service import ServiceClient
from components.model.workloads.storage import GCSFUSE_DRIVER
from components.model.workloads.teams import TEAM_LABEL, Team

ROLE = "pathways-runs"
RBAC = "rbac.authorization.k8s.io"
ROLE_RULES = (
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["create", "delete", "get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["visibility.kueue.x-k8s.io"], "resources": ["localqueues/pendingworkloads"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["create"]},
    # read-only, for `why` (infra/run/why.py): a run's Jobs (failed pods replaced, podFailurePolicy matches) and the
    # ProvisioningRequests Kueue makes for queued provisioning (their conditions say what GKE answered)
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["autoscaling.x-k8s.io"], "resources": ["provisioningrequests"], "verbs": ["get", "list"]},
    # `submit --workdir`: the run's code, in a ConfigMap named after it and owned by its JobSet (the policy keeps the
    # create to that shape; no read, change or delete: the garbage collector removes it with the run)
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
)
WORKDIR_SUFFIX = "-workdir"
WORKDIR_LABEL = "pathways/workdir"
# cluster-wide reads: nodes (where pods run, what a group has) and ClusterQueues (a held queue, its quota), for `why`
NODE_RULES = ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
              {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "list"]})
POLICY = "pathways-runs-only"
FLEET_DISPATCH_POLICY = "pathways-fleet-dispatch-only"


def run_local_queues(stack: ResolvedStack) -> list[dict[str, Any]]:
    if not stack.run_queues:
        return []
    return [{"apiVersion": API_VERSION, "kind": "LocalQueue", "metadata": {"name": run_queue(cq), "namespace": stack.namespace},
             "spec": {"clusterQueue": cq, "stopPolicy": "None"}} for cq, _ in stack.queue_shards]


def _subjects(submitters: list[ServiceClient]) -> list[dict[str, Any]]:
    return [{"kind": s.kind, "apiGroup": RBAC, "name": s.name} for s in submitters]


def submitter_access(stack: ResolvedStack) -> list[dict[str, Any]]:
    """The policy that keeps runs.submitters to runs, then their Role, ClusterRole and bindings ([] when none are
    listed): the policy first, so no moment grants the Role without it (and destroy removes it last)."""
    if stack.runs is None or not stack.runs.submitters:
        return []
    subjects = _subjects(stack.runs.submitters)
    ns = stack.namespace
    return [
        run_object_quota(stack, ns, ROLE),  # before any grant: no moment without the cap
        *runs_only_policy(stack),
        {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": ROLE, "namespace": ns},
         "rules": [dict(r) for r in ROLE_RULES]},
        {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": ROLE, "namespace": ns},
         "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": ROLE}, "subjects": subjects},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": f"{ROLE}-nodes"},
         "rules": [dict(r) for r in NODE_RULES]},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": f"{ROLE}-nodes"},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": f"{ROLE}-nodes"}, "subjects": subjects},
    ]


# Beside the runs and their code in a namespace: Kubernetes' own (kube-root-ca.crt), and a declared JobSet being
# replaced (delete, then create) while runs are at their cap.
QUOTA_HEADROOM = 8


def run_object_quota(stack: ResolvedStack, namespace: str, name: str) -> dict[str, Any]:
    """Where submitters write (security #73.17): at most runs.maxRuns run JobSets and runs.maxWorkdirs code ConfigMaps,
    counted by the API server (object-count quota), above what the stack itself keeps there, so the next pulumi up's
    JobSets always fit. Pods need none: a run's pods exist only once Kueue admits it, within the TPU quota."""
    assert stack.runs is not None
    declared = sum(1 for w in stack.jobset_workloads if w.namespace == namespace)
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": {"count/jobsets.jobset.x-k8s.io": str(stack.runs.max_runs + declared + QUOTA_HEADROOM),
                              "configmaps": str(stack.runs.max_workdirs + QUOTA_HEADROOM)}}}


def _cel_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values) + "]"


SUBMITTED_BY = "pathways/submitted-by"


def _label_is(obj: str, key: str, values: list[str]) -> str:
    return f"(has({obj}.metadata.labels) && '{key}' in {obj}.metadata.labels && {obj}.metadata.labels['{key}'] in {_cel_list(values)})"


# What a run's pod may not hold: a Secret (by env, envFrom or volume) or a service-account token (the Role reads
# no Secret, so a run could print one through its log), another service account, a priority above the runs'.
# containers and initContainers are different CEL types: each list is checked on its own.
_NO_SECRET_ENV = ("c, (!has(c.env) || c.env.all(e, !has(e.valueFrom) || !has(e.valueFrom.secretKeyRef))) && "
                  "(!has(c.envFrom) || c.envFrom.all(f, !has(f.secretRef)))")


def _volume_rule(v: str, drivers: list[str], read_claims: list[str], write_claims: list[str]) -> str:
    """A run's volume is scratch memory, a CSI volume of the listed drivers (Cloud Storage FUSE: what it reads is its
    service account's grants), or the claim of a file system runs.fileSystems lists, read-only unless listed to write;
    never a Secret, a token, a host path, an NFS server or another claim (security #58.10)."""
    claim = f"{v}.persistentVolumeClaim"
    return (f"has({v}.emptyDir) || (has({v}.csi) && {v}.csi.driver in {_cel_list(drivers)}) || "
            f"(has({v}.configMap) && {v}.configMap.name == object.metadata.name + '{WORKDIR_SUFFIX}') || "
            f"(has({claim}) && ({claim}.claimName in {_cel_list(write_claims)} || "
            f"({claim}.claimName in {_cel_list(read_claims)} && has({claim}.readOnly) && {claim}.readOnly)))")


def _pod_rules(priorities: list[str], accounts: list[str], volume_rule: str) -> str:
    p = "rj.template.spec.template.spec"
    return (f"object.spec.replicatedJobs.all(rj, "
            f"(!has({p}.serviceAccountName) || {p}.serviceAccountName in {_cel_list(accounts)}) && "
            # the deprecated alias, which the API server copies into serviceAccountName when that is empty
            f"(!has({p}.serviceAccount) || {p}.serviceAccount in {_cel_list(accounts)}) && "
            f"has({p}.automountServiceAccountToken) && !{p}.automountServiceAccountToken && "
            f"(!has({p}.volumes) || {p}.volumes.all(v, {volume_rule})) && "
            f"(!has({p}.priorityClassName) || {p}.priorityClassName in {_cel_list(priorities)}) && "
            f"{p}.containers.all({_NO_SECRET_ENV}) && (!has({p}.initContainers) || {p}.initContainers.all({_NO_SECRET_ENV})))")


def _pod_label_rule(teams: list[str], allowed: list[str]) -> str:
    """Every label of a run's pods is the run's name as pathways/workload, its team as pathways/team, or a key
    runs.podLabels allows (#73.6); an UPDATE may keep what the JobSet already had (Kueue writes its own on admission)."""
    t = "rj.template.spec.template"
    labels = f"{t}.metadata.labels"
    ok = [f"k in {_cel_list(allowed)}", f"(k == '{WORKLOAD_LABEL}' && {labels}[k] == object.metadata.name)"]
    if teams:
        ok.append(f"(k == '{TEAM_LABEL}' && {labels}[k] in {_cel_list(teams)})")
    own = f"!has({t}.metadata) || !has({labels}) || {labels}.all(k, {' || '.join(ok)})"
    o = "o.template.spec.template"
    kept = (f"request.operation == 'UPDATE' && has({t}.metadata) && has({labels}) && oldObject.spec.replicatedJobs.exists(o, "
            f"o.name == rj.name && has({o}.metadata) && has({o}.metadata.labels) && {o}.metadata.labels == {labels})")
    return f"object.spec.replicatedJobs.all(rj, ({own}) || ({kept}))"


def _run_validations(stack: ResolvedStack, writer: str, writing: str, team: Optional[Team] = None,
                     every_queue: bool = False) -> list[dict[str, str]]:
    """What makes a JobSet write a run's: it is labelled as a run (before and after), queued on a run queue at a run
    priority, not named like a declared workload, and its pods hold no Secret and no token. `writer` names who is
    refused; `writing` prefixes the rules on the new object (true where there is none to judge: a DELETE). A team's
    runs: in its namespace, on its run queue, as the namespace's default account or, with teams[].buckets, its runs'
    account there."""
    assert stack.runs is not None

    def is_run(obj: str) -> str:
        return _label_is(obj, MANAGED_BY_LABEL, [RUN_MANAGER])

    # a team's priority is its runs' ceiling (#73.8): above it, a team's run would preempt what the stack owner
    # ranked above that team's work
    priorities = [f"pathways-{p}" for p in (team_run_priorities(team.priority) if team is not None else RUN_PRIORITIES)]
    # the default account, or the runs' own when runs.buckets grants it buckets (never a declared workload's)
    namespace = team.team_namespace if team is not None else stack.namespace
    buckets = team.buckets if team is not None else stack.runs.buckets  # a team's runs: its own buckets' account (#74.1)
    accounts = ["default", *([stack.run_service_account] if buckets else [])]
    declared = [w.name for w in stack.workloads if w.namespace == namespace]
    queues = [stack.team_run_queue(team)] if team is not None else sorted(set(stack.run_queues.values()))
    if every_queue:  # a fleet's manager dispatches the stack's runs and its teams' (each in its namespace)
        queues = sorted({*queues, *(stack.team_run_queue(t) for t in stack.teams)})
    # a team's runs carry its name; a fleet's manager dispatches every team's
    teams = [team.name] if team is not None else sorted(t.name for t in stack.teams) if every_queue else []
    systems = {fs.name: fs for fs in stack.file_systems}
    listed = [(systems[f.name], f.read_only) for f in stack.runs.file_systems if f.name in systems]
    drivers = [GCSFUSE_DRIVER, *([MTC_CSI_DRIVER] if stack.mtc is not None else [])]
    volume_rule = _volume_rule("v", drivers, [claim_name(stack, fs) for fs, _ in listed],
                               [claim_name(stack, fs) for fs, ro in listed if not ro])
    return [
        # a DELETE has no object, a CREATE no oldObject; an UPDATE may neither take a JobSet in nor out of runs
        {"expression": (f"request.operation == 'DELETE' ? {is_run('oldObject')} : "
                        f"{is_run('object')} && (request.operation == 'CREATE' || {is_run('oldObject')})"),
         "message": f"{writer} may create, change and delete ad-hoc runs only (JobSets labelled {MANAGED_BY_LABEL}={RUN_MANAGER})"},
        *([{"expression": writing + _label_is("object", QUEUE_LABEL, queues),
            "message": f"a run is queued by Kueue: label it {QUEUE_LABEL} with a run queue ({', '.join(queues)})"}] if queues else
          # every slice group is an isolation domain's: the stack's own runs have no queue, and a JobSet with none
          # would run unqueued (Kueue manages only labelled jobs)
          [{"expression": writing + "false", "message": "no slice group is the stack's own (each is an isolation domain's): "
                                                        "submit runs with --team"}] if stack.kueue else []),
        {"expression": writing + _label_is("object", PRIORITY_LABEL, priorities),
         "message": f"a run's priority is one of {', '.join(priorities)} (label {PRIORITY_LABEL})"},
        *([{"expression": writing + f"!(object.metadata.name in {_cel_list(declared)})",
            "message": "a run may not take the name of a workload the stack declares"}] if declared else []),
        {"expression": writing + _pod_label_rule(teams, stack.runs.pod_labels),
         "message": (f"a run's pods carry {WORKLOAD_LABEL}=<the run's name>"
                     + (f", {TEAM_LABEL}={' or '.join(teams)}" if teams else "")
                     + f" and the label keys pathways:runs.podLabels allows ({', '.join(stack.runs.pod_labels) or 'none'}), no other: "
                     "a label the stack selects by would make the run a serving endpoint or a member of its network policy")},
        {"expression": writing + _pod_rules(priorities, accounts, volume_rule),
         "message": ("a run's pods hold no Secret (env, envFrom, volume), no service-account token (automountServiceAccountToken: "
                     f"false, no projected volume), run as {' or '.join(accounts)}, have a priority class among "
                     f"{', '.join(priorities)}, and mount only memory, Cloud Storage FUSE, the run's own <name>{WORKDIR_SUFFIX} "
                     "ConfigMap and the file systems "
                     f"pathways:runs.fileSystems lists ({', '.join(f'{fs.name} read-only' if ro else fs.name for fs, ro in listed) or 'none'})")},
    ]


def _admission_policy(name: str, resources: list[tuple[str, str]], who: str, validations: list[dict[str, str]],
                      namespaces: list[str] | None) -> list[dict[str, Any]]:
    """A ValidatingAdmissionPolicy on writes of `resources` ((group, resource)) by `who` (CEL), and its binding in
    `namespaces` (None: every namespace)."""
    binding: dict[str, Any] = {"policyName": name, "validationActions": ["Deny"]}
    if namespaces is not None:
        binding["matchResources"] = {"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]}}
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
         "spec": {
             "failurePolicy": "Fail",
             "matchConstraints": {"resourceRules": [{
                 "apiGroups": [group], "apiVersions": ["*"], "resources": [resource],
                 "operations": ["CREATE", "UPDATE", "DELETE"]} for group, resource in resources]},
             "matchConditions": [{"name": "writer", "expression": who}],
             "validations": [{**v, "reason": "Forbidden"} for v in validations],
         }},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
         "spec": binding},
    ]


def runs_only_policy(stack: ResolvedStack, team: Optional[Team] = None) -> list[dict[str, Any]]:
    """What the submitters may do with JobSets (their Role names every JobSet; RBAC has no label scope): create,
    change and delete those labelled as runs only; and a run they create, by the command or by hand, is queued on a
    run queue at a run priority, is not named like a declared workload, and holds no Secret and no token. A team's
    (pathways-runs-only-<team>): its submitters, in its namespace, on its run queue."""
    assert stack.runs is not None
    submitters = team.submitters if team is not None else stack.runs.submitters
    users = [s.name for s in submitters if s.kind == "User"]
    groups = [s.name for s in submitters if s.kind == "Group"]
    who = " || ".join([
        *([f"request.userInfo.username in {_cel_list(users)}"] if users else []),
        *([f"(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {_cel_list(groups)}))"] if groups else []),
    ])
    writer = f"team {team.name}'s submitters" if team is not None else "runs.submitters"
    jobsets = [{**v, "expression": f"request.resource.resource != 'jobsets' || ({v['expression']})"}
               for v in [*_run_validations(stack, writer, "request.operation == 'DELETE' || ", team), _submitted_by_validation()]]
    return _admission_policy(f"{POLICY}-{team.name}" if team is not None else POLICY, [("jobset.x-k8s.io", "jobsets"), ("", "configmaps")],
                             who, [*jobsets, *_workdir_validations()], [team.team_namespace if team is not None else stack.namespace])


def _annotation(obj: str) -> str:
    return f"(has({obj}.metadata.annotations) && '{SUBMITTED_BY}' in {obj}.metadata.annotations ? {obj}.metadata.annotations['{SUBMITTED_BY}'] : '')"


def _submitted_by_validation() -> dict[str, str]:
    """A run's pathways/submitted-by is who created it, as the API server knows them, and stays so (#73.21): no
    submitter runs code under a teammate's name. A run created without it (by hand) is unattributed, never misattributed."""
    return {"expression": (f"request.operation == 'DELETE' || (request.operation == 'CREATE' ? "
                           f"{_annotation('object')} in ['', request.userInfo.username] : "
                           f"{_annotation('object')} == {_annotation('oldObject')})"),
            "message": (f"a run's annotation {SUBMITTED_BY} is who creates it (the username `kubectl auth whoami` prints; "
                        "python -m infra.run submit writes it) and never changes")}


def _workdir_validations() -> list[dict[str, str]]:
    """A ConfigMap a submitter creates is a run's code (`submit --workdir`): named <run>-workdir, labelled as such,
    and owned by that run's JobSet, so it can never take the name of one the stack makes and goes with the run."""
    cm = "request.resource.resource != 'configmaps' || "
    owned = ("has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, r.kind == 'JobSet' && "
             f"object.metadata.name == r.name + '{WORKDIR_SUFFIX}')")
    return [{"expression": (cm + f"request.operation == 'CREATE' && {_label_is('object', WORKDIR_LABEL, ['true'])} && {owned} && "
                            "has(object.immutable) && object.immutable"),
             "message": (f"runs.submitters create only a run's code: an immutable ConfigMap <run>{WORKDIR_SUFFIX} labelled "
                         f"{WORKDIR_LABEL}=true and owned by the run's JobSet (python -m infra.run submit --workdir)")}]


def fleet_dispatch_policy(stack: ResolvedStack) -> list[dict[str, Any]]:
    """On a fleet worker, the twin of the runs-only policy for the manager's Kueue (its token's user): in every
    namespace, it writes JobSets only in the fleet's namespaces, only runs (what a manager dispatches), and no
    LeaderWorkerSet. Its Role already confines it to those namespaces; this holds if a binding is widened by hand."""
    if stack.fleet is None or not stack.fleet.worker or stack.runs is None:
        return []
    namespaces = list(stack.fleet.dispatch_namespaces)
    runs = _run_validations(stack, "the fleet's manager",
                            "request.operation == 'DELETE' || request.resource.resource != 'jobsets' || ", every_queue=True)
    validations = [
        {"expression": f"request.namespace in {_cel_list(namespaces)}",
         "message": f"the fleet's manager writes in the fleet's namespaces only ({', '.join(namespaces)})"},
        {"expression": "request.resource.resource == 'jobsets'",
         "message": "the fleet dispatches ad-hoc runs, which are JobSets; no LeaderWorkerSet"},
        # a rule on a JobSet's fields is true for the LWS refused above, so its one message stands alone
        *({**v, "expression": f"request.resource.resource != 'jobsets' || ({v['expression']})"}
          for v in runs[:1]),
        *runs[1:],
    ]
    return _admission_policy(FLEET_DISPATCH_POLICY, [("jobset.x-k8s.io", "jobsets"), ("leaderworkerset.x-k8s.io", "leaderworkersets")],
                             f"request.userInfo.username == '{MULTIKUEUE_USER}'", validations, None)


def run_jobset(stack: ResolvedStack, w: ResolvedWorkload, submitted_by: str = "") -> dict[str, Any]:
    """An ad-hoc run's JobSet: the stack's builder, labelled as a run (not Pulumi's), on its run queue."""
    obj = jobset(stack, w)
    for rj in obj["spec"]["replicatedJobs"]:
        for c in rj["template"]["spec"]["template"]["spec"]["containers"]:
            if c["name"] == USER_CONTAINER:
                # the last lines of its output in the container's status when it fails (Kubernetes: "FallbackToLogsOnError
                # will read the most recent contents of the container logs for the container status message when the
                # container exits with an error"), where `why` reads them once the pod's logs are gone (#74.3)
                c["terminationMessagePolicy"] = "FallbackToLogsOnError"
    labels = obj["metadata"]["labels"]
    labels[MANAGED_BY_LABEL] = RUN_MANAGER
    if submitted_by:
        obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}), SUBMITTED_BY: submitted_by}
    return obj


def runs_output(stack: ResolvedStack) -> dict[str, Any] | None:
    """The stack output `runs`: where ad-hoc runs go and how to submit one (None without pathways:runs)."""
    if stack.runs is None:
        return None
    return {
        "namespace": stack.namespace,
        "queues": dict(stack.run_queues),
        "submit": f"python -m infra.run submit --stack {stack.stack} --name <name> --image <image> -- <command>",
    }
