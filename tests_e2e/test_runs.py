"""Ad-hoc runs (python -m infra.run) on the stack the real `pulumi up` deployed, as a researcher listed in
runs.submitters (a client certificate in that group): the run's JobSet passes the guards and Kueue and its pods
run where the stack's own run; a second waits and `list` says why and where it stands (Kueue's visibility API);
`pulumi up` leaves both alone; the submitter cannot touch the stack's own JobSet; `delete` removes a run and its
pods, and the one that waited is admitted."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from infra import notebook_image
from tests.conftest import GROUPS_RBAC, config_with
from tests_e2e.conftest import expect_no_changes
from tests_e2e.helpers import is_true, nodes, over_the_ceiling_is_never_admitted, pods, resolved, user_stack_file, wait_running, workload
from tools.cluster.local import ROOT, LocalCluster

VERSION = "jax-0.9.0"
RESEARCHERS = "researchers@example.com"
IMAGE = "example.com/trainer:1"
# one declared training run on one of the two v6e-16 slices (4 hosts each); room for two runs' heads
CONFIG = config_with(pathwaysVersion=VERSION, runs={"submitters": [{"name": RESEARCHERS}], "headNodes": 2}, cluster=GROUPS_RBAC,
                     workloads=[{"name": "train", "image": IMAGE, "slices": 1}])


def run(cluster: LocalCluster, stack_file: Path, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command, rest = args[0], args[1:]
    return subprocess.run([sys.executable, "-m", "infra.run", command, "--config", str(stack_file), "--kubeconfig", str(kubeconfig), *rest],
                          cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=300)


def session(cluster: LocalCluster, title: str, proc: subprocess.CompletedProcess[str]) -> None:
    """Keep what the commands printed (docs/runs.md quotes this session) in the tier's work directory."""
    with open(cluster.workdir / "runs-session.txt", "a", encoding="utf-8") as out:
        out.write(f"$ python -m infra.run {title}\n{proc.stdout}{proc.stderr}\n")


def listed(cluster: LocalCluster, stack_file: Path, kubeconfig: Path) -> dict[str, dict[str, str]]:
    proc = run(cluster, stack_file, kubeconfig, "list", "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr  # the visibility API answered
    return {row["name"]: row for row in map(json.loads, proc.stdout.splitlines())}


@pytest.fixture(scope="module")
def deployed(cluster, stacks, tmp_path_factory):
    stacks.use("runs", CONFIG)
    wait_running(cluster, "pathways", "train", 1 + 4)
    stack_file = user_stack_file(cluster, CONFIG, tmp_path_factory.mktemp("runs"), "runs")
    rita = cluster.user_kubeconfig("rita@example.com", (RESEARCHERS,))
    yield stack_file, rita
    # what docs/runs.md says to do before `pulumi destroy`: Kueue keeps a ClusterQueue while it has admitted workloads
    cleared = run(cluster, stack_file, rita, "delete", "--all")
    assert cleared.returncode == 0, cleared.stderr
    assert not [j for j in cluster.get("jobsets", "-n", "pathways")["items"] if j["metadata"]["name"].startswith("exp-")]


def test_a_researcher_submits_lists_and_deletes_runs_that_kueue_queues_beside_the_stacks_own(cluster, stacks, deployed):
    stack_file, rita = deployed
    train_uid = cluster.get("jobset", "-n", "pathways", "train")["metadata"]["uid"]
    stack = resolved(CONFIG, "runs")  # #76.1: its own queue's ceiling is the real Kueue's
    over_the_ceiling_is_never_admitted(cluster, stack, next(w for w in stack.workloads if w.name == "train"))

    submitted = run(cluster, stack_file, rita, "submit", "--name", "exp-a", "--image", IMAGE, "--slices", "1", "--", "python3", "train.py")
    assert submitted.returncode == 0, submitted.stderr
    assert "run exp-a submitted to pathways on queue runs-pathways" in submitted.stdout
    session(cluster, "submit --stack runs --name exp-a --image example.com/trainer:1 --slices 1 -- python3 train.py", submitted)
    # the JobSet controller made the pods (so the guards admitted them) and the scheduler put them where the
    # stack's own go: the head on a head node, the workers on one slice of the group
    running = wait_running(cluster, "pathways", "exp-a", 1 + 4)
    labels = nodes(cluster)
    heads = [p for p in running if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    assert [labels[p["spec"]["nodeName"]].get("pathways/role") for p in heads] == ["head"]
    pools = {labels[p["spec"]["nodeName"]]["cloud.google.com/gke-nodepool"] for p in running if p not in heads}
    assert len(pools) == 1 and {labels[p["spec"]["nodeName"]].get("pathways/slice-group") for p in running if p not in heads} == {"main"}
    admitted = workload(cluster, "pathways", "exp-a")
    assert is_true(admitted, "Admitted") and admitted["status"]["admission"]["clusterQueue"] == "pathways"
    assert admitted["spec"]["queueName"] == "runs-pathways" and admitted["spec"]["priority"] == 100_000  # pathways-experiment
    assert {p["metadata"]["annotations"].get("pathways/submitted-by") for p in [cluster.get("jobset", "-n", "pathways", "exp-a")]} == {"rita@example.com"}

    # the group's two slices are taken (train, exp-a): a second run waits, and list says why and where
    assert run(cluster, stack_file, rita, "submit", "--name", "exp-b", "--image", IMAGE, "--slices", "1", "--", "python3", "b.py").returncode == 0
    cluster.wait_for("exp-b pending in Kueue", lambda: (lambda w: w and not is_true(w, "QuotaReserved") and (w.get("status") or {}).get("conditions"))(
        workload(cluster, "pathways", "exp-b")))
    rows = cluster.wait_for("exp-b's place in line", lambda: (lambda r: r if r["exp-b"]["position"] != "-" else None)(listed(cluster, stack_file, rita)))
    assert (rows["train"]["owner"], rows["train"]["state"]) == ("stack", "admitted")
    assert (rows["exp-a"]["owner"], rows["exp-a"]["state"]) == ("run", "admitted")
    assert (rows["exp-b"]["owner"], rows["exp-b"]["state"], rows["exp-b"]["position"]) == ("run", "waiting", "1 in ClusterQueue, 1 in LocalQueue")
    # the API server counts every JobSet of the namespace (train, exp-a, exp-b) against the runs' object quota (#73.17)
    quota = cluster.wait_for("the run object quota's count", lambda: (lambda q: q if (q.get("status") or {}).get("used", {}).get(
        "count/jobsets.jobset.x-k8s.io") == "3" else None)(cluster.get("resourcequota", "-n", "pathways", "pathways-runs")))
    assert int(quota["status"]["hard"]["count/jobsets.jobset.x-k8s.io"]) == 500 + 1 + 8  # runs.maxRuns, train, headroom
    assert "insufficient unused quota for google.com/tpu in flavor tpu-main, 16 more needed" in rows["exp-b"]["why"], rows["exp-b"]
    assert not pods(cluster, "pathways", "exp-b")
    text = run(cluster, stack_file, rita, "list")
    session(cluster, "list --stack runs", text)
    assert text.stdout.splitlines()[0].split() == ["NAME", "OWNER", "STATE", "QUEUE", "POSITION", "PRIORITY", "AGE", "REASON", "WHY"]
    assert [line.split()[:3] for line in text.stdout.splitlines()[1:]] == [["train", "stack", "admitted"], ["exp-a", "run", "admitted"], ["exp-b", "run", "waiting"]]

    # the stack's `pulumi up` neither sees nor touches the runs: no change proposed, both still there
    expect_no_changes(stacks.current)
    up = stacks.current.run.cli("up", "--yes", "--skip-preview")
    assert up.returncode == 0, up.output[-3000:]
    assert {j["metadata"]["name"] for j in cluster.get("jobsets", "-n", "pathways")["items"]} == {"train", "exp-a", "exp-b"}
    assert cluster.get("jobset", "-n", "pathways", "train")["metadata"]["uid"] == train_uid

    # the submitter's Role names every JobSet; the policy keeps it to runs
    refused = cluster.kubectl("delete", "jobset", "-n", "pathways", "train", kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "pathways-runs-only" in refused.stderr and "ad-hoc runs only" in refused.stderr, refused.stderr
    not_a_run = run(cluster, stack_file, rita, "delete", "train")
    assert not_a_run.returncode == 1 and "train is not an ad-hoc run" in not_a_run.stderr
    session(cluster, "delete --stack runs train", not_a_run)
    unlabelled = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "sneaky", "namespace": "pathways"},
                  "spec": {"replicatedJobs": []}}
    sneaky = cluster.apply([unlabelled], server_side=False, kubeconfig=rita, check=False)
    assert sneaky.returncode != 0 and "pathways-runs-only" in sneaky.stderr, sneaky.stderr
    # a run made by hand is held to what the command makes: queued by Kueue, no Secret in its pods
    printed = run(cluster, stack_file, rita, "submit", "--name", "by-hand", "--image", IMAGE, "--dry-run")
    unqueued = yaml.safe_load(printed.stdout)
    del unqueued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    refused = cluster.apply([unqueued], server_side=False, kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "a run is queued by Kueue" in refused.stderr, refused.stderr
    leaking = yaml.safe_load(printed.stdout)
    head = leaking["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    next(c for c in head["containers"] if c["name"] == "jax-program")["env"].append(
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "train-env", "key": "T"}}})
    refused = cluster.apply([leaking], server_side=False, kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "a run's pods hold no Secret" in refused.stderr, refused.stderr
    # nor under a teammate's name (#73.21): the API server's username is the only submitter a run may name
    posing = yaml.safe_load(printed.stdout)
    posing["metadata"]["annotations"] = {"pathways/submitted-by": "bob@example.com"}
    refused = cluster.apply([posing], server_side=False, kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "pathways/submitted-by is who creates it" in refused.stderr, refused.stderr
    # nor with a label the stack selects by (#73.6): LeaderWorkerSet's would make it a serving endpoint's backend
    joining = yaml.safe_load(printed.stdout)
    joining["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["labels"].update(
        {"leaderworkerset.sigs.k8s.io/name": "chat", "leaderworkerset.sigs.k8s.io/worker-index": "0"})
    refused = cluster.apply([joining], server_side=False, kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "runs.podLabels allows" in refused.stderr, refused.stderr

    # describe gathers what support needs into one file
    out = stack_file.parent / "exp-b.yaml"
    described = run(cluster, stack_file, rita, "describe", "exp-b", "--out", str(out))
    assert described.returncode == 0, described.stderr
    session(cluster, "describe --stack runs exp-b --out exp-b.yaml", described)
    bundle = yaml.safe_load(out.read_text())
    assert bundle["jobset"]["metadata"]["name"] == "exp-b" and bundle["kueueWorkload"]["spec"]["queueName"] == "runs-pathways"
    assert bundle["pendingWorkloads"][0]["positionInClusterQueue"] == 0

    # delete removes the run with its pods; Kueue then admits the one that waited
    deleted = run(cluster, stack_file, rita, "delete", "exp-a")
    assert deleted.returncode == 0, deleted.stderr
    session(cluster, "delete --stack runs exp-a", deleted)
    assert cluster.kubectl("get", "jobset", "-n", "pathways", "exp-a", check=False).returncode != 0
    assert not pods(cluster, "pathways", "exp-a")
    wait_running(cluster, "pathways", "exp-b", 1 + 4)
    assert listed(cluster, stack_file, rita)["exp-b"]["state"] == "admitted"
    session(cluster, "list --stack runs", run(cluster, stack_file, rita, "list"))
    assert run(cluster, stack_file, rita, "delete", "exp-b").returncode == 0


def test_an_idle_notebook_gives_its_slice_back_and_a_finished_run_goes_after_its_ttl(cluster, deployed):
    stack_file, rita = deployed
    # a notebook on the group's free slice, stopping after 10 minutes idle, removed 20 s after it ends
    nb = run(cluster, stack_file, rita, "submit", "--name", "nb", "--notebook", "--image", "example.com/jupyter-jax:1", "--slices", "1",
             "--idle-stop", "10m", "--ttl", "20s")
    assert nb.returncode == 0, nb.stderr
    session(cluster, "submit --stack runs --name nb --notebook --image example.com/jupyter-jax:1 --slices 1 --idle-stop 10m --ttl 20s", nb)
    heads = [p for p in wait_running(cluster, "pathways", "nb", 1 + 4) if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    program = next(c for c in heads[0]["spec"]["containers"] if c["name"] == "jax-program")
    # JupyterLab's own idle shutdown, as the API server stored the pod: idle kernels culled, then the server exits
    assert {"--ServerApp.shutdown_no_activity_timeout=600", "--MappingKernelManager.cull_idle_timeout=600",
            "--MappingKernelManager.cull_connected=True"} <= set(program["command"]), program["command"]
    js = cluster.get("jobset", "-n", "pathways", "nb")
    assert js["spec"]["ttlSecondsAfterFinished"] == 20 and js["metadata"]["annotations"]["pathways/notebook-idle-stop-seconds"] == "600"
    # its login (#73.16): a password kept for rita alone; the JobSet, which every submitter reads, holds its hash
    kept = cluster.workdir / "config" / "pathways" / "notebooks" / "runs" / "pathways" / "nb"
    password = kept.read_text().strip()
    assert kept.stat().st_mode & 0o777 == 0o600 and password not in json.dumps(js)
    (flag,) = [a for a in next(c for c in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]
                               if c["name"] == "jax-program")["command"] if a.startswith("--PasswordIdentityProvider.hashed_password=")]
    _, salt, digest = flag.split("=", 1)[1].split(":", 2)
    assert hashlib.sha256((password + salt).encode()).hexdigest() == digest
    # the group is full (train and nb): the next run waits for the notebook's slice
    assert run(cluster, stack_file, rita, "submit", "--name", "exp-next", "--image", IMAGE, "--slices", "1", "--", "python3", "n.py").returncode == 0
    cluster.wait_for("exp-next waits", lambda: (lambda w: w and not is_true(w, "QuotaReserved") and (w.get("status") or {}).get("conditions"))(
        workload(cluster, "pathways", "exp-next")))
    # Jupyter stops the idle server (kwok runs no Jupyter: the tier ends the head's program with 0, as Jupyter's exit
    # is): the JobSet completes, Kueue gives the slice back, and the waiting run gets it
    cluster.kubectl("annotate", "pod", "-n", "pathways", heads[0]["metadata"]["name"], "e2e.pathways/fail=true", "e2e.pathways/exit-code=0")
    cluster.wait_for("the notebook's JobSet completed", lambda: is_true(cluster.get("jobset", "-n", "pathways", "nb"), "Completed"), timeout=60)
    ended = time.monotonic()
    wait_running(cluster, "pathways", "exp-next", 1 + 4)
    # the JobSet controller removes the finished notebook after its ttl, pods and all
    cluster.wait_for("nb removed after its ttl", lambda: cluster.kubectl("get", "jobset", "-n", "pathways", "nb", check=False).returncode != 0,
                     timeout=90, interval=1)
    assert time.monotonic() - ended >= 15 and not pods(cluster, "pathways", "nb")
    assert run(cluster, stack_file, rita, "delete", "exp-next").returncode == 0


def test_a_run_ships_its_code_without_an_image(cluster, deployed, tmp_path):
    stack_file, rita = deployed
    code = tmp_path / "code"
    (code / "data").mkdir(parents=True)
    (code / "train.py").write_text("print('step', 1)\n")
    (code / "data" / "shard-0").write_bytes(b"x" * 4096)
    (code / ".gitignore").write_text("data/\n")

    def submit(name: str, *flags: str) -> float:
        t0 = time.monotonic()
        proc = run(cluster, stack_file, rita, "submit", "--name", name, "--slices", "1", *flags, "--", "python3", "train.py")
        assert proc.returncode == 0, proc.stderr
        session(cluster, f"submit --stack runs --name {name} --slices 1 {' '.join(flags)} -- python3 train.py", proc)
        wait_running(cluster, "pathways", name, 1 + 4)
        return time.monotonic() - t0

    # a one-line change, shipped with the run: the researcher's own submit (the ConfigMap is theirs to create)
    (code / "train.py").write_text("print('step', 2)\n")
    shipped = submit("exp-wd", "--image", IMAGE, "--workdir", str(code))
    js = cluster.get("jobset", "-n", "pathways", "exp-wd")
    cm = cluster.get("configmap", "-n", "pathways", "exp-wd-workdir")
    # what was shipped is what the dry run said, named by its hash; the data/ the .gitignore leaves out is not
    dry = run(cluster, stack_file, rita, "submit", "--name", "exp-wd", "--image", IMAGE, "--workdir", str(code), "--dry-run", "--", "python3", "train.py")
    assert dry.returncode == 0 and "ships 2 file(s)" in dry.stderr and "data/shard-0" not in dry.stderr, dry.stderr
    sha = js["metadata"]["annotations"]["pathways/workdir-sha256"]
    assert cm["metadata"]["annotations"]["pathways/workdir-sha256"] == sha and f"sha256 {sha}" in dry.stderr
    assert [(r["kind"], r["name"], r["uid"]) for r in cm["metadata"]["ownerReferences"]] == [("JobSet", "exp-wd", js["metadata"]["uid"])]
    (head,) = [p for p in pods(cluster, "pathways", "exp-wd") if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    program = next(c for c in head["spec"]["containers"] if c["name"] == "jax-program")
    assert program["command"][:2] == ["/bin/sh", "-c"] and program["command"][-2:] == ["python3", "train.py"]
    # #73.4: the head checks the code against the digest its submitter wrote into the pod template; the code cannot change
    assert program["command"][3] == sha and cm["immutable"] is True
    mutable = {**cm, "metadata": {k: v for k, v in cm["metadata"].items() if k in ("name", "namespace", "labels", "annotations", "ownerReferences")},
               "immutable": False}
    mutable["metadata"]["name"] = "exp-wd2-workdir"
    mutable["metadata"]["ownerReferences"] = [{**r, "name": "exp-wd2"} for r in cm["metadata"]["ownerReferences"]]
    refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(mutable), kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "an immutable ConfigMap <run>-workdir" in refused.stderr, refused.stderr
    # a ConfigMap of another shape is refused to the researcher (the runs policy), and the run's goes with the run
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "train-config", "namespace": "pathways"}, "data": {}}
    refused = cluster.kubectl("create", "-f", "-", stdin=json.dumps(other), kubeconfig=rita, check=False)
    assert refused.returncode != 0 and "pathways-runs-only" in refused.stderr, refused.stderr
    assert run(cluster, stack_file, rita, "delete", "exp-wd").returncode == 0
    cluster.wait_for("the run's code goes with it", lambda: cluster.kubectl("get", "configmap", "-n", "pathways", "exp-wd-workdir",
                                                                           check=False).returncode != 0, timeout=60)
    # the image path, for the same change: a new tag (built and pushed elsewhere: minutes that this tier cannot count)
    rebuilt = submit("exp-img", "--image", "example.com/trainer:2")
    assert run(cluster, stack_file, rita, "delete", "exp-img").returncode == 0
    # #74.3: the code alone, no --image: the stack's run image (the notebook recipe's), unpacked into a volume of its own
    submit("exp-wd0", "--workdir", str(code))
    (head,) = [p for p in pods(cluster, "pathways", "exp-wd0") if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    program = next(c for c in head["spec"]["containers"] if c["name"] == "jax-program")
    assert program["image"].endswith(f"/pathways/notebook:{notebook_image.tag()}"), program["image"]
    assert {"name": "workdir-code", "mountPath": "/workdir"} in [{k: m[k] for k in ("name", "mountPath")} for m in program["volumeMounts"]]
    assert program["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert run(cluster, stack_file, rita, "delete", "exp-wd0").returncode == 0
    # #74.4: Kueue ends a run at its time limit (its maximum execution time), and `why` says so
    limited = run(cluster, stack_file, rita, "submit", "--name", "exp-tl", "--image", IMAGE, "--slices", "1", "--time-limit", "15s",
                  "--", "python3", "train.py")
    assert limited.returncode == 0, limited.stderr
    wait_running(cluster, "pathways", "exp-tl", 1 + 4)
    cluster.wait_for("Kueue stops exp-tl at its 15 s limit", lambda: any(
        c.get("type") == "Evicted" and c.get("reason") == "DeactivatedDueToMaximumExecutionTimeExceeded"
        for c in ((workload(cluster, "pathways", "exp-tl") or {}).get("status") or {}).get("conditions") or []), timeout=120)
    cluster.wait_for("exp-tl's pods are gone", lambda: not pods(cluster, "pathways", "exp-tl"), timeout=120)
    why = run(cluster, stack_file, rita, "why", "exp-tl", "--json")
    assert why.returncode == 0 and json.loads(why.stdout)["reason"] == "time-limit", why.stdout + why.stderr
    session(cluster, "why --stack runs exp-tl", run(cluster, stack_file, rita, "why", "exp-tl"))
    assert run(cluster, stack_file, rita, "delete", "exp-tl").returncode == 0
    with open(cluster.workdir / "runs-session.txt", "a", encoding="utf-8") as out:
        out.write(f"# submit to running: --workdir {shipped:.1f} s, a rebuilt image's tag {rebuilt:.1f} s (its build and push not counted)\n")


CLIENT = ROOT / "build" / "run-client" / "bin" / "pathways-run"  # make run-client: the package, installed as docs/runs.md says


def test_day_one_as_docs_runs_md_writes_it_with_the_installed_client_from_the_code_folder(cluster, deployed, tmp_path):
    """#74.6: the researcher's day one (docs/runs.md) with `pathways-run` as installed, run from a folder of code
    outside the checkout, the stack file named once by PATHWAYS_STACK_CONFIG and the kubeconfig kubectl's own way
    (KUBECONFIG): its help, the program of step 3 shipped by `submit --workdir .` alone, the next commands it prints
    as this client's, `list`, and `delete`."""
    stack_file, rita = deployed
    code = tmp_path / "my-model"
    code.mkdir()
    (code / "train.py").write_text("import pathwaysutils\npathwaysutils.initialize()\nimport jax\nprint(jax.devices())\n")
    # no PYTHONPATH to the checkout: the installed package alone (its venv's interpreter runs it)
    env = {k: v for k, v in cluster.env.items() if k != "PYTHONPATH"}
    env.update(PATHWAYS_STACK_CONFIG=str(stack_file), KUBECONFIG=str(rita))

    def client(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([str(CLIENT), *args], cwd=code, env=env, capture_output=True, text=True, timeout=300)
        with open(cluster.workdir / "runs-session.txt", "a", encoding="utf-8") as out:
            out.write(f"$ pathways-run {' '.join(args)}\n{proc.stdout}{proc.stderr}\n")
        return proc

    helped = client("--help")
    assert helped.returncode == 0, helped.stderr
    for command in ("submit", "list", "logs", "delete", "describe", "why", "profile", "notebook", "notebook-image", "teams"):
        assert command in helped.stdout, command  # step 1's expected list
    submitted = client("submit", "--name", "first-run", "--slices", "1", "--workdir", ".", "--", "python3", "train.py")
    assert submitted.returncode == 0, submitted.stderr
    out = submitted.stdout + submitted.stderr
    assert "its code: ., 1 file(s)" in out, out  # step 4's expected lines
    assert "run first-run submitted to pathways on queue runs-pathways" in out, out
    assert "where it stands: pathways-run list" in out and "its output:      pathways-run logs first-run --follow" in out, out
    assert "python -m infra.run" not in out, out  # every command printed is this client's
    running = wait_running(cluster, "pathways", "first-run", 1 + 4)
    (head,) = [p for p in running if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    program = next(c for c in head["spec"]["containers"] if c["name"] == "jax-program")
    assert program["command"][-2:] == ["python3", "train.py"] and program["image"].endswith(f"/pathways/notebook:{notebook_image.tag()}")
    listed = client("list")
    assert listed.returncode == 0 and "first-run" in listed.stdout, listed.stdout + listed.stderr
    # a second run waits (the stack's own run and first-run hold both slices): `why` says what it waits for
    second = client("submit", "--name", "second-run", "--slices", "1", "--workdir", ".", "--time-limit", "15s", "--", "python3", "train.py")
    assert second.returncode == 0, second.stderr
    waiting = cluster.wait_for("why says second-run waits for quota", lambda: (w := client("why", "second-run", "--json")).returncode == 0
                               and json.loads(w.stdout)["reason"] == "waiting-for-quota" and w, timeout=120, interval=3)
    assert "waiting in line for quota" in json.loads(waiting.stdout)["summary"], waiting.stdout
    deleted = client("delete", "first-run")  # step 6
    assert deleted.returncode == 0, deleted.stderr
    assert not pods(cluster, "pathways", "first-run")
    # the waiting run gets the freed slice; its time limit (step 4's --time-limit) ends it, and `why` says so
    wait_running(cluster, "pathways", "second-run", 1 + 4)
    stopped = cluster.wait_for("why says second-run met its time limit", lambda: (w := client("why", "second-run", "--json")).returncode == 0
                               and json.loads(w.stdout)["reason"] == "time-limit" and w, timeout=180, interval=3)
    assert stopped
    assert client("delete", "second-run").returncode == 0
