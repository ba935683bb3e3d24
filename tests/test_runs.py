"""Ad-hoc runs: what pathways:runs adds to a stack, how a run spec is judged (one line a problem, keyed run.*),
the JobSet a run gets, the submitters' policy as the API server evaluates it, and how `list` reads Kueue's state.
The real controllers' side is tests_e2e/test_runs.py."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from components.manifests import runs as runs_manifest
from components.model.config import ConfigError, as_run, load, load_run, resolve
from components.model.cost.summary import stack_summary
from infra.offline.render import manifests
from infra.run.status import Position, rows, state, table
from tests.conftest import GROUPS_RBAC, config_with, every_stack, example_plan, plan_of, stack_model, stack_plan, write_stack_file
from tests.test_security import _evaluate
from tools.cluster.local import ROOT

VERSION = "jax-0.9.0"
RUNS = {"submitters": [{"name": "researchers@example.com"}, {"kind": "User", "name": "rita@example.com"}]}


def model(**changes):
    cfg = {k.split(":", 1)[1]: v for k, v in config_with(pathwaysVersion=VERSION, **{"runs": RUNS, "cluster": GROUPS_RBAC, **changes}).items()
           if k.startswith("pathways:")}
    return load({**cfg, "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")


def run_object(spec, **changes):
    cfg = load_run(model(**changes), spec)
    stack = resolve(cfg)
    w = stack.workloads[-1]
    return runs_manifest.run_jobset(stack, as_run(stack, w), "rita@example.com")


def problems(spec, **changes) -> list[str]:
    with pytest.raises(ConfigError) as e:
        load_run(model(**changes), spec)
    return str(e.value).splitlines()


def test_a_stack_with_runs_gets_a_run_queue_head_room_and_the_submitters_access():
    plan = plan_of(config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC, workloads=[{"name": "train", "image": "example.com/t:1"}]))
    objs = {(o["kind"], o["metadata"]["name"]): o for o in manifests(plan)}
    queue = objs[("LocalQueue", "runs-pathways")]
    assert queue["metadata"]["namespace"] == "pathways" and queue["spec"] == {"clusterQueue": "pathways", "stopPolicy": "None"}
    role = objs[("Role", "pathways-runs")]
    granted = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    # what the command does, nothing more: no pods create, no exec, no secrets
    assert ("jobset.x-k8s.io", "jobsets", "create") in granted and ("", "pods/portforward", "create") in granted
    assert not {x for x in granted if x[1] in ("secrets", "pods/exec") or (x[1] == "pods" and x[2] == "create")}
    subjects = objs[("RoleBinding", "pathways-runs")]["subjects"]
    assert [(s["kind"], s["name"]) for s in subjects] == [("Group", "researchers@example.com"), ("User", "rita@example.com")]
    # reads for `why`: the run's Jobs and ProvisioningRequests here; nodes and ClusterQueues cluster-wide, never a write
    assert {("batch", "jobs", "list"), ("autoscaling.x-k8s.io", "provisioningrequests", "list")} <= granted
    assert not {x for x in granted if x[1] in ("jobs", "provisioningrequests") and x[2] not in ("get", "list", "watch")}
    assert objs[("ClusterRole", "pathways-runs-nodes")]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
                                                                     {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get", "list"]}]
    assert plan.outputs["runs"] == {"namespace": "pathways", "queues": {"main": "runs-pathways"},
                                    "submit": "python -m infra.run submit --stack test --name <name> --image <image> -- <command>"}
    # one head node for the declared workload, one for runs (runs.headNodes), and Kueue's head quota counts both
    assert plan.outputs["kueue"]["quotas"]["pathways-head"]["cpu"] == "124"


def test_without_runs_the_stack_makes_nothing_for_them_and_submit_says_how_to_turn_them_on():
    plan = plan_of(config_with(pathwaysVersion=VERSION, workloads=[{"name": "train", "image": "example.com/t:1"}]))
    assert plan.outputs.get("runs") is None
    assert not [o for o in manifests(plan) if o["metadata"]["name"].startswith(("runs-", "pathways-runs"))]
    cfg = load({"slices": [{"name": "main", "tpu": "v6e-16"}], "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")
    with pytest.raises(ConfigError) as e:
        load_run(cfg, {"name": "x", "image": "a:1"})
    assert str(e.value) == ("pathways:runs: not set in stack test: it has no queue or head room for ad-hoc runs; add "
                            "`pathways:runs: {}` to the stack file and run pulumi up")


def test_a_run_is_the_stacks_own_jobset_labelled_as_a_run_on_the_run_queue():
    js = run_object({"name": "exp", "image": "example.com/t:1", "command": ["python3", "t.py"], "slices": 1, "env": {"STEPS": "10"}})
    labels = js["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "pathways-run"
    assert labels["kueue.x-k8s.io/queue-name"] == "runs-pathways" and labels["kueue.x-k8s.io/priority-class"] == "pathways-experiment"
    assert js["metadata"]["annotations"] == {"pathways/submitted-by": "rita@example.com"}
    assert js["spec"]["ttlSecondsAfterFinished"] == 7 * 86400  # nothing re-creates a run: its TTL is safe
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    program = next(c for c in head["containers"] if c["name"] == "jax-program")
    assert program["command"] == ["python3", "t.py"] and {"name": "STEPS", "value": "10"} in program["env"]
    assert js["spec"]["replicatedJobs"][1]["replicas"] == 1  # --slices 1 of the group's 2


def test_a_secret_env_stack_still_puts_a_runs_env_in_its_jobset():
    # the stack's secret env becomes a Secret Pulumi makes; a run has no Pulumi behind it, so its env is plain
    js = run_object({"name": "exp", "image": "example.com/t:1", "env": {"A": "1"}})
    program = next(c for c in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == "jax-program")
    assert {"name": "A", "value": "1"} in program["env"] and "secretKeyRef" not in str(program["env"])


@pytest.mark.parametrize("spec,line", [
    ({"name": "train", "image": "a:1"}, "run.name: 'train' is already used by workloads[0]; workload names must be unique"),
    ({"name": "x", "image": "a:latest"}, "run.image: 'a:latest' is not pinned; give an explicit tag (not latest) or a @sha256 digest"),
    ({"name": "x"}, "run.image: required for a batch workload (the user program's image)"),
    ({"name": "x", "image": "a:1", "slices": 3}, "run.slices: 3 exceeds the 2 slice(s) of group 'main' (spares are not for workloads); use 1..2 or raise slices[0].count"),
    ({"name": "x", "mode": "serve"}, "run.mode: 'serve' is not a run mode; valid: batch, interactive (serve and service are the stack's)"),
    ({"name": "x", "image": "a:1", "priority": "serving"}, "run.priority: 'serving' is not a run priority; valid: training, interactive, experiment"),
    ({"name": "x", "image": "a:1", "elastic": {}}, "run.elastic: not a run key; valid: " + ", ".join(__import__("components.model.workloads.runs", fromlist=["RUN_KEYS"]).RUN_KEYS)),
    ({"image": "a:1"}, "run.name: required but not set"),
    ({"name": "x", "image": "a:1", "env": {"JAX_PLATFORMS": "cpu"}}, "run.env: JAX_PLATFORMS is set by the stack (reserved: DATA_LOADER_WORKERS, ENABLE_PATHWAYS_PERSISTENCE, JAX_BACKEND_TARGET, JAX_PLATFORMS, PATHWAYS_HEAD, PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS, PATHWAYS_PROFILING_AUTH_TOKEN, PATHWAYS_PROFILING_SERVER_HOST, PROFILER_PORT, PROFILE_TRACE_DIR); use the workload's own keys instead"),
    ({"name": "a-name-longer-than-22-chars", "image": "a:1"}, "run.name: the coordinator label 'a-name-longer-than-22-chars-pathways-head-0-0.a-name-longer-than-22-chars' would be 73 characters, over Kubernetes' 63 for a label value (JobSet rejects it); use a name of at most 22 characters, or set run.subdomain to at most 17 characters"),
])
def test_a_bad_run_spec_is_refused_with_one_line_naming_the_runs_key(spec, line):
    assert problems(spec, workloads=[{"name": "train", "image": "example.com/t:1"}]) == [line]


def test_a_run_that_needs_more_head_than_the_pool_has_is_refused_but_one_more_head_is_left_to_kueue():
    # the head pool's node count counts declared workloads: a run beyond it waits in Kueue, it is not refused
    ok = load_run(model(headPool={"nodeCount": 1}, workloads=[{"name": "train", "image": "example.com/t:1"}]), {"name": "x", "image": "a:1"})
    assert [w.name for w in ok.workloads] == ["train", "x"]
    assert problems({"name": "x", "image": "a:1", "cpu": "300"})[0].startswith(
        "pathways:headPool.machineType: n2-standard-64 (62.77 vCPU, 242.0 GiB allocatable) cannot hold the head pod of workload 'x'")


def test_a_workload_may_not_take_the_run_queues_name():
    with pytest.raises(ConfigError) as e:
        model(workloads=[{"name": "runs-pathways", "image": "example.com/t:1"}])
    assert str(e.value) == ("pathways:workloads[0].name: 'runs-pathways' is the name of the ad-hoc runs' LocalQueue (pathways:runs), and a "
                            "workload's LocalQueue takes its name; choose another name")
    # without pathways:runs there is no run queue, and the name is the workload's to take
    assert [w.name for w in model(runs=None, workloads=[{"name": "runs-pathways", "image": "example.com/t:1"}]).workloads] == ["runs-pathways"]


def _policy_admits(policy, user, groups, operation, obj, old, resource=("jobset.x-k8s.io", "jobsets")):
    request = {"operation": operation, "userInfo": {"username": user, "groups": groups},
               "resource": {"group": resource[0], "version": "v1", "resource": resource[1]}}
    spec = policy["spec"]
    if not all(_evaluate(m["expression"], {"request": request}) for m in spec["matchConditions"]):
        return True
    return all(_evaluate(v["expression"], {"object": obj, "oldObject": old, "request": request}) for v in spec["validations"])


def _run(**changes):
    """A run's JobSet as the command builds it, with `changes` applied: {"label": (key, value|None)} or a pod edit."""
    js = run_object({"name": "exp", "image": "example.com/t:1"}, workloads=[{"name": "train", "image": "example.com/t:1"}])
    for key, value in changes.get("labels", {}).items():
        if value is None:
            js["metadata"]["labels"].pop(key)
        else:
            js["metadata"]["labels"][key] = value
    if "name" in changes:
        js["metadata"]["name"] = changes["name"]
    if "submitted_by" in changes:  # None: written without it (by hand)
        js["metadata"]["annotations"] = {} if changes["submitted_by"] is None else {"pathways/submitted-by": changes["submitted_by"]}
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    changes.get("pod", lambda p: None)(pod)
    return js


def _secret_env(pod):
    next(c for c in pod["containers"] if c["name"] == "jax-program")["env"].append(
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "train-env", "key": "T"}}})


def _secret_volume(pod):
    pod.setdefault("volumes", []).append({"name": "s", "secret": {"secretName": "train-profiling-token"}})


def _token(pod):
    pod["automountServiceAccountToken"] = True


def _serving_pods(pod):
    pod["priorityClassName"] = "pathways-serving"


RUN = _run(submitted_by="bob@example.com")
DECLARED = {"metadata": {"name": "train", "labels": {"app.kubernetes.io/managed-by": "pulumi"}}}
BARE = {"metadata": {"name": "bare"}, "spec": {"replicatedJobs": []}}
TEAM = ("bob@example.com", ["researchers@example.com"])


@pytest.mark.parametrize("user,groups,operation,obj,old,admitted", [
    (*TEAM, "CREATE", RUN, None, True),
    (*TEAM, "CREATE", BARE, None, False),
    (*TEAM, "CREATE", DECLARED, None, False),
    (*TEAM, "CREATE", _run(labels={"kueue.x-k8s.io/queue-name": None}), None, False),  # Kueue would ignore it
    (*TEAM, "CREATE", _run(labels={"kueue.x-k8s.io/queue-name": "train"}), None, False),  # a declared workload's queue
    (*TEAM, "CREATE", _run(labels={"kueue.x-k8s.io/priority-class": "pathways-serving"}), None, False),
    (*TEAM, "CREATE", _run(name="train"), None, False),  # the next pulumi up would fail on it
    (*TEAM, "CREATE", _run(pod=_secret_env), None, False),  # its log could print the stack's Secret
    (*TEAM, "CREATE", _run(pod=_secret_volume), None, False),
    (*TEAM, "CREATE", _run(pod=_token), None, False),
    (*TEAM, "CREATE", _run(pod=_serving_pods), None, False),  # the scheduler would preempt serving for it
    (*TEAM, "DELETE", None, RUN, True),
    (*TEAM, "DELETE", None, DECLARED, False),
    ("rita@example.com", [], "DELETE", None, DECLARED, False),
    (*TEAM, "UPDATE", RUN, DECLARED, False),  # relabelling the stack's JobSet
    (*TEAM, "UPDATE", DECLARED, RUN, False),
    ("admin@example.com", ["platform@example.com"], "DELETE", None, DECLARED, True),  # not a submitter: RBAC decides
    ("system:serviceaccount:kube-system:generic-garbage-collector", [], "UPDATE", RUN, RUN, True),
    # #73.21: the annotation is who creates the run, and stays so
    (*TEAM, "CREATE", _run(submitted_by="rita@example.com"), None, False),  # bob's code under rita's name
    (*TEAM, "CREATE", _run(submitted_by=None), None, True),  # unattributed (by hand), never misattributed
    (*TEAM, "UPDATE", _run(submitted_by="rita@example.com"), RUN, False),
    (*TEAM, "UPDATE", _run(submitted_by=None), RUN, False),
])
def test_the_submitters_may_touch_runs_only(user, groups, operation, obj, old, admitted):
    stack = resolve(model(workloads=[{"name": "train", "image": "example.com/t:1"}]))
    policy = next(o for o in runs_manifest.submitter_access(stack) if o["kind"] == "ValidatingAdmissionPolicy")
    assert _policy_admits(policy, user, groups, operation, obj, old) is admitted


def test_the_policy_comes_before_the_access_it_guards():
    kinds = [o["kind"] for o in runs_manifest.submitter_access(resolve(model()))]
    assert kinds == ["ResourceQuota", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "Role", "RoleBinding",
                     "ClusterRole", "ClusterRoleBinding"]


def _workload(conditions, queue="runs-pathways", uid="u1", name="jobset-exp-1"):
    return {"metadata": {"name": name, "ownerReferences": [{"kind": "JobSet", "uid": uid}], "creationTimestamp": "2026-12-04T10:00:00Z"},
            "spec": {"queueName": queue}, "status": {"conditions": conditions}}


def _cond(kind, status="True", reason="", message=""):
    return {"type": kind, "status": status, "reason": reason, "message": message}


JOBSET = {"metadata": {"name": "exp", "uid": "u1", "creationTimestamp": "2026-12-04T10:00:00Z",
                       "labels": {"app.kubernetes.io/managed-by": "pathways-run", "kueue.x-k8s.io/queue-name": "runs-pathways",
                                  "kueue.x-k8s.io/priority-class": "pathways-experiment"}}, "spec": {}}
WAITING = "couldn't assign flavors to pod set worker: insufficient quota for google.com/tpu in flavor tpu-main, request > maximum capacity (16 > 0)"


@pytest.mark.parametrize("jobset_status,conditions,position,want", [
    ({}, [_cond("QuotaReserved", "False", "Pending", WAITING)], Position(2, 0), ("waiting", "3 in ClusterQueue, 1 in LocalQueue", WAITING)),
    ({}, [_cond("QuotaReserved"), _cond("Admitted", message="The workload is admitted")], None, ("admitted", "-", "The workload is admitted")),
    ({}, [_cond("QuotaReserved", "False"), _cond("Evicted", reason="Preempted", message="Preempted to accommodate a workload (UID: x) due to prioritization in the ClusterQueue")],
     Position(0, 0), ("preempted", "1 in ClusterQueue, 1 in LocalQueue", "Preempted to accommodate a workload (UID: x) due to prioritization in the ClusterQueue")),
    ({}, [_cond("QuotaReserved"), _cond("Admitted", "False", message="The workload has not all checks ready")], None,
     ("admission checks", "-", "The workload has not all checks ready")),
    # while its pods go, a preempted workload is still Admitted: Evicted decides
    ({}, [_cond("QuotaReserved"), _cond("Admitted"), _cond("Evicted", reason="Preempted", message="Preempted to accommodate a workload")],
     None, ("preempted", "-", "Preempted to accommodate a workload")),
    ({"conditions": [_cond("Completed", reason="AllJobsCompleted", message="jobset completed successfully")]}, [_cond("Finished")], None,
     ("finished", "-", "jobset completed successfully")),
    ({"conditions": [_cond("Failed", reason="FailedJobs", message="jobset failed due to reaching max number of restarts")]}, [], None,
     ("failed", "-", "jobset failed due to reaching max number of restarts")),
])
def test_list_reads_kueues_and_the_jobset_controllers_conditions(jobset_status, conditions, position, want):
    js = {**JOBSET, "status": jobset_status}
    assert state(js, _workload(conditions), True, position) == want


def test_list_rows_join_each_jobset_to_its_kueue_workload_and_say_whose_it_is():
    declared = {"metadata": {"name": "train", "uid": "u0", "creationTimestamp": "2026-12-04T09:00:00Z",
                             "labels": {"app.kubernetes.io/managed-by": "pulumi", "kueue.x-k8s.io/queue-name": "train"}}, "spec": {}}
    found = rows([JOBSET, declared], [_workload([_cond("QuotaReserved", "False", message=WAITING)]),
                                      _workload([_cond("Admitted")], queue="train", uid="u0", name="jobset-train-1")],
                 {"jobset-exp-1": Position(0, 0)}, True, now=1_796_378_400.0, reasons={"exp": "waiting-for-quota"})
    assert [(r.name, r.owner, r.state, r.queue, r.position, r.reason) for r in found] == [
        ("train", "stack", "admitted", "train", "-", "-"),
        ("exp", "run", "waiting", "runs-pathways", "1 in ClusterQueue, 1 in LocalQueue", "waiting-for-quota")]
    text = table(found)
    assert text.splitlines()[0].split() == ["NAME", "OWNER", "STATE", "QUEUE", "POSITION", "PRIORITY", "AGE", "REASON", "WHY"]
    assert "  waiting-for-quota  " in text.splitlines()[2]
    # Kueue's shortcut left only "Bypassed ..." on the condition: the list says what its scheduler said (its event)
    from infra.run.kueue_verdict import BYPASSED
    shortcut = _workload([_cond("QuotaReserved", "False", "WaitingForQuota", BYPASSED)])
    event = {"type": "Warning", "reason": "WaitingForQuota", "message": WAITING, "eventTime": "2026-12-04T10:00:01Z",
             "involvedObject": {"kind": "Workload", "name": "jobset-exp-1"}}
    assert [r.why for r in rows([JOBSET], [shortcut], {}, True, now=1_796_378_400.0)] == [BYPASSED]
    assert [r.why for r in rows([JOBSET], [shortcut], {}, True, now=1_796_378_400.0, events=[event])] == [WAITING]
    # without Kueue, a JobSet is what its own spec says
    assert state(JOBSET, None, False, None) == ("running", "-", "")
    assert state(JOBSET, None, True, None) == ("created", "-", "Kueue has not made its Workload yet")


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "infra.run", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_submit_dry_run_prints_the_jobset_and_a_bad_flag_is_one_error_line(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    ok = _cli("submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1", "--env", "A=1", "--env", "HF_TOKEN=hf_abcdef",
              "--dry-run", "--", "python3", "-m", "t")
    assert ok.returncode == 0, ok.stderr
    # security #73.15: a secret-looking value in plain text is said, not passed silently
    assert ok.stderr.startswith("note: --env HF_TOKEN looks like a secret: a run's env is written into its JobSet in plain text"), ok.stderr
    js = yaml.safe_load(ok.stdout)
    assert js["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pathways-run" and "&id" not in ok.stdout
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert next(c for c in head["containers"] if c["name"] == "jax-program")["command"] == ["python3", "-m", "t"]
    bad = _cli("submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:latest", "--dry-run")
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "error: run.image: 'example.com/t:latest' is not pinned; give an explicit tag (not latest) or a @sha256 digest\n")
    env = _cli("submit", "--config", str(path), "--name", "exp", "--env", "NOEQUALS", "--dry-run")
    assert (env.returncode, env.stderr) == (2, "error: --env 'NOEQUALS' is not NAME=VALUE\n")
    spec = tmp_path / "run.yaml"
    spec.write_text("name: from-file\nimage: example.com/t:1\ncommand: [python3, f.py]\nslices: 1\n")
    from_file = _cli("submit", "--config", str(path), "--spec", str(spec), "--slices", "2", "--dry-run")
    assert from_file.returncode == 0, from_file.stderr
    assert yaml.safe_load(from_file.stdout)["spec"]["replicatedJobs"][1]["replicas"] == 2  # a flag overrides the file


def test_the_cluster_commands_need_kubectl_and_say_so(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    proc = subprocess.run([sys.executable, "-m", "infra.run", "list", "--config", str(path)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert (proc.returncode, proc.stderr) == (1, "error: kubectl not found on PATH; install it (gcloud components install kubectl) or set KUBECTL\n")


def test_a_notebook_run_is_jupyterlab_on_the_heads_loopback_and_takes_no_command(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    ok = _cli("submit", "--config", str(path), "--name", "nb", "--notebook", "--image", "example.com/jupyter-jax:1", "--dry-run")
    assert ok.returncode == 0, ok.stderr
    js = yaml.safe_load(ok.stdout)
    assert js["metadata"]["annotations"]["pathways/notebook-port"] == "8888"
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    program = next(c for c in head["containers"] if c["name"] == "jax-program")
    # loopback only: the head pod is hostNetwork, so any other address would be the node's, open to the VPC; and it
    # stops itself after the stack's idle time (runs.notebookIdleStopSeconds, 2 h by default): Jupyter's own culling
    # (jupyter_server 2.21.1: serverapp.py ServerApp.shutdown_no_activity_timeout; services/kernels/kernelmanager.py
    # MappingKernelManager.cull_idle_timeout, cull_connected, cull_interval)
    assert program["command"][:9] == ["jupyter", "lab", "--ip=127.0.0.1", "--port=8888", "--no-browser",
                                      "--ServerApp.shutdown_no_activity_timeout=7200", "--MappingKernelManager.cull_idle_timeout=7200",
                                      "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_interval=300"]
    # #73.16: a password made here, JupyterLab holding its salted hash only (no token, so none in the pod's log)
    hashed_flag, required, no_change = program["command"][9:]
    assert (required, no_change) == ("--PasswordIdentityProvider.password_required=True",
                                     "--PasswordIdentityProvider.allow_password_change=False")
    algorithm, salt, digest = hashed_flag.removeprefix("--PasswordIdentityProvider.hashed_password=").split(":", 2)
    (password,) = re.findall(r"password \(JupyterLab holds its hash only\): (\S+)", ok.stderr)
    # jupyter_server 2.21.1 auth/security.py passwd_check: hashlib.new(algorithm) over password + salt, hex
    assert algorithm == "sha256" and len(password) >= 24 and hashlib.new(algorithm, (password + salt).encode()).hexdigest() == digest
    assert "token" not in " ".join(program["command"]).lower()
    assert js["metadata"]["annotations"]["pathways/notebook-idle-stop-seconds"] == "7200"
    # the kernel reaches the run's own proxy on the head, in the cluster (ALTS between Google Cloud machines)
    assert {"name": "JAX_BACKEND_TARGET", "value": "grpc://$(PATHWAYS_HEAD):29000"} in program["env"]
    both = _cli("submit", "--config", str(path), "--name", "nb", "--notebook", "--image", "example.com/jupyter-jax:1", "--dry-run", "--", "python3", "x.py")
    assert (both.returncode, both.stderr) == (2, "error: --notebook runs JupyterLab as the program of a batch run: give no command or mode\n")


@pytest.mark.parametrize("flags, command_tail, ttl", [
    (("--idle-stop", "30m"), ["--no-browser", "--ServerApp.shutdown_no_activity_timeout=1800",
                              "--MappingKernelManager.cull_idle_timeout=1800"], 604800),
    (("--idle-stop", "0", "--ttl", "2h"), ["--no-browser"], 7200),  # 0: never; the ttl for when it is stopped
])
def test_a_notebook_stops_when_idle_and_a_run_goes_after_its_ttl(tmp_path, flags, command_tail, ttl):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    ok = _cli("submit", "--config", str(path), "--name", "nb", "--notebook", "--image", "example.com/jupyter-jax:1", "--dry-run", *flags)
    assert ok.returncode == 0, ok.stderr
    js = yaml.safe_load(ok.stdout)
    program = next(c for c in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == "jax-program")
    tail = [a for a in program["command"] if not a.startswith("--PasswordIdentityProvider.")]
    assert tail[4:][:len(command_tail)] == command_tail and (len(command_tail) > 1 or len(tail) == 5)
    assert js["spec"]["ttlSecondsAfterFinished"] == ttl


@pytest.mark.parametrize("flags, error", [
    (("--idle-stop", "1h"), "error: --idle-stop stops an idle notebook: give it with --notebook"),
    (("--ttl", "2w"), "is not a duration; valid: seconds, or a number with s, m, h or d (30m, 2h, 7d)"),
])
def test_ttl_and_idle_stop_refuse_what_they_cannot_mean(tmp_path, flags, error):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    proc = _cli("submit", "--config", str(path), "--name", "x", "--image", "example.com/t:1", "--dry-run", *flags)
    assert proc.returncode == 2 and error in proc.stderr, proc.stderr


def test_the_error_lines_docs_runs_md_quotes_are_what_submit_prints():
    text = (ROOT / "docs" / "runs.md").read_text()
    examples = re.findall(r"^\$ (python -m infra\.run submit --stack dev [^\n]*)\n(error: [^\n]*)$", text, re.M)
    assert len(examples) == 3
    for command, error in examples:
        proc = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert (proc.returncode, proc.stderr) == (2, error + "\n"), command


def test_the_policy_pack_refuses_a_wider_runs_role_and_an_open_binding():
    from infra.offline.policy_runner import run_policies
    from policies.rules import ALL_POLICIES
    from tests.test_policies import mutate

    plan = example_plan("dev")
    assert [v for v in run_policies(plan, ALL_POLICIES) if v.policy == "pathways-service-access"] == []
    wider = mutate(plan, "kubernetes:rbac.authorization.k8s.io/v1:Role", "runs-role-pathways-runs", "rules.3.verbs", ["get", "list", "watch", "create"])
    assert [v.message for v in run_policies(wider, ALL_POLICIES) if v.policy == "pathways-service-access"] == [
        "Role pathways-runs grants create events, create pods, beyond what ad-hoc runs' submitters (python -m infra.run) use; remove those rules"]
    opened = mutate(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "runs-clusterrolebinding-pathways-runs-nodes",
                    "subjects.0.name", "system:authenticated")
    assert [v.message for v in run_policies(opened, ALL_POLICIES) if v.policy == "pathways-service-access"] == [
        "ClusterRoleBinding pathways-runs-nodes binds system:authenticated: everyone could run programs on the stack's TPUs; "
        "bind named users or groups"]


def test_the_notebook_port_is_bounded(tmp_path):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs={}))
    proc = _cli("notebook", "--config", str(path), "nb", "--port", "80")
    assert proc.returncode == 2 and "argument --port: '80' is not a local port; valid: 1024 to 65535" in proc.stderr


def test_an_inactive_workload_says_why_and_a_fleet_table_shows_where_each_run_went():
    """state() for a Workload Kueue holds inactive (spec.active false), and list's CLUSTER column on a fleet manager."""
    inactive = {**_workload([_cond("QuotaReserved", "False")]), "spec": {"queueName": "runs-pathways", "active": False}}
    assert state(JOBSET, inactive, True, None) == ("inactive", "-", "spec.active is false")
    requeued = {**inactive, "status": {"conditions": [_cond("Requeued", "False", message="exceeded the backoff limit")]}}
    assert state(JOBSET, requeued, True, None) == ("inactive", "-", "exceeded the backoff limit")
    dispatched = {**_workload([_cond("QuotaReserved"), _cond("Admitted")]), "status": {
        "conditions": [_cond("QuotaReserved"), _cond("Admitted")], "clusterName": "east"}}
    found = rows([JOBSET], [dispatched], {}, True, now=1_796_378_400.0)
    lines = table(found).splitlines()
    assert lines[0].split() == ["NAME", "OWNER", "STATE", "CLUSTER", "QUEUE", "POSITION", "PRIORITY", "AGE", "REASON", "WHY"]
    assert lines[1].split()[:5] == ["exp", "run", "admitted", "east", "runs-pathways"]


@pytest.mark.parametrize("key", ["maxRestarts", "workerRestartsPerHost", "onFailure", "persistence", "xlaFlags", "dataLoaderWorkers", "shmSize",
                                 "ttlSecondsAfterFinished"])
def test_every_run_key_is_a_key_a_run_may_give(key):
    """RUN_KEYS is what `submit` accepts: each of these is taken (a dropped key would refuse a run that gives it)."""
    from components.model.workloads.runs import RUN_KEYS

    assert key in RUN_KEYS
    values = {"maxRestarts": 2, "workerRestartsPerHost": 1, "onFailure": {"failOnExitCodes": [42]}, "persistence": True, "xlaFlags": ["--xla_dump_to=/tmp"],
              "dataLoaderWorkers": 4, "shmSize": "16Gi", "ttlSecondsAfterFinished": 60}
    cfg = load_run(model(), {"name": "x", "image": "a:1", key: values[key]})
    assert cfg.workloads[-1].name == "x"
    if key == "workerRestartsPerHost":  # a run that should not retry its worker: the Job's backoffLimit follows
        run = resolve(cfg).workloads[-1]
        assert run.worker_backoff_limit == run.group.tpu.hosts == 4  # v6e-16: 4 hosts x 1 (16 by default)


def test_runs_may_have_no_head_nodes_of_their_own():
    assert model(runs={**RUNS, "headNodes": 0}).runs.head_nodes == 0


def test_submit_help_says_what_each_flag_takes():
    out = _cli("submit", "--help").stdout
    for text in ("batch (default) or interactive (a head for a notebook)", "program image, pinned (tag or digest)",
                 "print the JobSet (and what --workdir ships), create nothing", "(one of runs.buckets; with --team, of the team's buckets)", "(one of runs.fileSystems; not with --team)"):
        assert text in " ".join(out.split()), text


@pytest.mark.parametrize("idle, hours", [(None, 2), (0, 168), (1800, 0.5)])
def test_the_plan_prices_a_notebook_left_idle_a_week_with_and_without_the_idle_stop(idle, hours):
    runs = {**RUNS, **({"notebookIdleStopSeconds": idle} if idle is not None else {})}
    slices = [{"name": "main", "tpu": "v6e-16"}, {"name": "flex", "tpu": "v6e-16", "flexStart": True}]
    cfg = {k.split(":", 1)[1]: v for k, v in config_with(pathwaysVersion=VERSION, runs=runs, cluster=GROUPS_RBAC, slices=slices).items()
           if k.startswith("pathways:")}
    summary = stack_summary(resolve(load({**cfg, "project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")))["runs"]
    week = {n["group"]: n for n in summary["idleNotebookWeek"]}
    assert set(week) == {"main", "flex"}
    for n in week.values():
        assert n["withoutIdleStop"] == pytest.approx(n["hourly"] * 168, rel=1e-3)
        assert n["withIdleStop"] == pytest.approx(n["hourly"] * hours, rel=1e-3)
    # a fixed pool bills anyway (the stop frees the slice); a flex-start one stops billing with the notebook
    assert (week["main"]["billedAnyway"], week["flex"]["billedAnyway"]) == (True, False)


def test_security_73_15_only_a_plain_secret_looking_env_value_is_noted():
    from infra.run.__main__ import _secret_notes

    assert _secret_notes({"env": {"WANDB_API_KEY": "0123abcd", "MODE": "fast"}})[0].startswith("note: --env WANDB_API_KEY ")
    assert _secret_notes({"env": {"MODE": "fast", "STEPS": "10"}}) == []


@every_stack()
def test_security_73_17_every_namespace_submitters_write_caps_their_objects_above_what_the_stack_keeps(stack):
    """Derived from each stack's file: wherever a Role lets submitters create runs, a ResourceQuota made before it caps
    run JobSets at runs.maxRuns and code ConfigMaps at runs.maxWorkdirs, on top of the JobSets the stack itself keeps
    in that namespace (so its next pulumi up always fits) and of the ConfigMaps it makes there (none)."""
    plan, model = stack_plan(stack), stack_model(stack)
    roles = [r for r in plan.by_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
             if r.input("metadata.name").startswith(runs_manifest.ROLE)]
    if model.runs is None or not roles:
        assert not plan.by_type("kubernetes:core/v1:ResourceQuota")
        return
    quotas = {q.input("metadata.namespace"): q for q in plan.by_type("kubernetes:core/v1:ResourceQuota")}
    assert set(quotas) == {r.input("metadata.namespace") for r in roles}
    for role in roles:
        ns = role.input("metadata.namespace")
        quota = quotas[ns]
        kept = [j for j in plan.by_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet") if j.input("metadata.namespace") == ns]
        made_maps = [c for c in plan.by_type("kubernetes:core/v1:ConfigMap") if c.input("metadata.namespace") == ns]
        assert quota.input("spec.hard") == {
            "count/jobsets.jobset.x-k8s.io": str(model.runs.max_runs + len(kept) + runs_manifest.QUOTA_HEADROOM),
            "configmaps": str(model.runs.max_workdirs + len(made_maps) + runs_manifest.QUOTA_HEADROOM)}
        # the cap exists before anything grants the Role: the policy after it, the Role after the policy
        guards = ("ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ResourceQuota")
        chain, at = [], role
        while at is not None:
            chain.append(at.type.rsplit(":", 1)[1])
            at = next((r for r in map(plan.get, at.dependencies) if r.type.rsplit(":", 1)[1] in guards), None)
        assert chain == ["Role", *guards], chain


def test_security_73_17_a_submit_over_the_cap_says_what_to_do():
    from infra.run.kube import Kubectl, KubeError

    refusal = ('Error from server (Forbidden): error when creating "STDIN": jobsets.jobset.x-k8s.io "exp" is forbidden: '
               "exceeded quota: pathways-runs, requested: count/jobsets.jobset.x-k8s.io=1, used: count/jobsets.jobset.x-k8s.io=508, "
               "limited: count/jobsets.jobset.x-k8s.io=508\n")
    kube = Kubectl(None, None)
    kube.run = lambda *a, **k: subprocess.CompletedProcess(a, 1, "", refusal)  # type: ignore[method-assign]
    with pytest.raises(KubeError) as e:
        kube.create({"kind": "JobSet", "metadata": {"name": "exp", "namespace": "pathways"}})
    assert str(e.value).startswith("pathways holds as many runs (or --workdir codes) as the stack allows "
                                   "(pathways:runs.maxRuns, maxWorkdirs): delete finished ones")
    assert "limited: count/jobsets.jobset.x-k8s.io=508" in str(e.value)


def test_security_73_16_the_notebooks_password_stays_with_its_submitter(tmp_path, monkeypatch):
    from infra.run import notebook_auth

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    kept = notebook_auth.remember("dev", "team-a", "nb", "s3cret-pw")
    assert kept == tmp_path / "config" / "pathways" / "notebooks" / "dev" / "team-a" / "nb"
    assert kept.stat().st_mode & 0o777 == 0o600 and notebook_auth.recall("dev", "team-a", "nb") == "s3cret-pw"
    assert notebook_auth.recall("dev", "pathways", "nb") is None  # another namespace's run of that name: not this one
    # never through a link someone left there
    kept.unlink()
    kept.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        notebook_auth.remember("dev", "team-a", "nb", "x")
    assert not (tmp_path / "elsewhere").exists() and notebook_auth.recall("dev", "team-a", "nb") is None
    # the hash jupyter_server checks: sha256 over password + salt
    assert notebook_auth.hashed("pw", "abc") == "sha256:abc:" + hashlib.sha256(b"pwabc").hexdigest()
    assert notebook_auth.new_password() != notebook_auth.new_password()


def test_an_experiment_that_fails_is_not_run_again_unless_asked_and_keeps_its_last_words():
    # #74.3: an experiment's failed program is not restarted three times by default; a disruption still restarts it
    # (the failure rules' defaults, unspent), and the program's output end stays in its status for `why`
    js = run_object({"name": "exp", "image": "example.com/t:1"})
    policy = js["spec"]["failurePolicy"]
    assert policy["maxRestarts"] == 0 and any(r["action"] == "RestartJobSetAndIgnoreMaxRestarts" for r in policy["rules"]), policy
    (head,) = [c for c in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"] if c["name"] == "jax-program"]
    assert head["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert run_object({"name": "exp", "image": "example.com/t:1", "maxRestarts": 2})["spec"]["failurePolicy"]["maxRestarts"] == 2
    # a training run (the default of a stack whose runs.priority says so) keeps the batch default of 3
    trained = run_object({"name": "exp", "image": "example.com/t:1", "priority": "training"}, runs={**RUNS, "priority": "training"})
    assert trained["spec"]["failurePolicy"]["maxRestarts"] == 3


def test_a_time_limit_is_kueues_maximum_execution_time_on_the_runs_jobset(tmp_path):
    # #74.4: Kueue v0.19.2 reads the label (positive seconds) into the Workload's maximumExecutionTimeSeconds
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC))
    base = ["submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1", "--dry-run"]
    proc = _cli(*base, "--time-limit", "2h", "--", "python3", "train.py")
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout)["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] == "7200"
    spec = tmp_path / "run.yaml"
    spec.write_text(yaml.safe_dump({"name": "exp", "image": "example.com/t:1", "command": ["python3"], "timeLimitSeconds": 600}))
    proc = _cli("submit", "--config", str(path), "--spec", str(spec), "--dry-run")
    assert yaml.safe_load(proc.stdout)["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] == "600"
    spec.write_text(yaml.safe_dump({"name": "exp", "image": "example.com/t:1", "command": ["python3"], "timeLimitSeconds": "soon"}))
    proc = _cli("submit", "--config", str(path), "--spec", str(spec), "--dry-run")
    assert proc.returncode == 2 and proc.stderr == ("error: run.timeLimitSeconds: 'soon' is not a time limit; valid: 1 to 7776000 seconds "
                                                    "(--time-limit 2h)\n"), proc.stderr
    no_kueue = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC,
                                                      kubernetes={"kueue": {"enabled": False}}), "Pulumi.nk.yaml")
    proc = _cli("submit", "--config", str(no_kueue), "--name", "exp", "--image", "example.com/t:1", "--time-limit", "1h", "--dry-run",
                "--", "python3")
    assert proc.returncode == 2 and "a time limit is Kueue's" in proc.stderr, proc.stderr
