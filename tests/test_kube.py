"""`infra/run/kube.py`, the kubectl wrapper behind `python -m infra.run`, against a stand-in kubectl: what it sends
to the cluster (the flags, the selector, the stdin), and the one line a user reads when the cluster refuses, is
silent or answers nonsense. The real API server answers it in the real-engine tier (tests_e2e/test_runs.py)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from infra.run.kube import DELETE_TIMEOUT_SECONDS, Kubectl, KubeError

# answers by the first rule whose args are a prefix of the call's (kubeconfig and context flags left out); logs each call
STAND_IN = textwrap.dedent('''\
    #!{python}
    import json, os, sys, time
    argv = sys.argv[1:]
    args = [a for a in argv if not a.startswith(("--kubeconfig=", "--context="))]
    stdin = "" if sys.stdin.isatty() else sys.stdin.read()
    with open(os.environ["FAKE_KUBECTL_LOG"], "a") as log:
        log.write(json.dumps({{"argv": argv, "stdin": stdin}}) + "\\n")
    for rule in json.loads(os.environ["FAKE_KUBECTL_RULES"]):
        if args[:len(rule["args"])] == rule["args"] and rule.get("stdin_has", "") in stdin:
            time.sleep(rule.get("sleep", 0))
            sys.stdout.write(rule.get("stdout", ""))
            sys.stderr.write(rule.get("stderr", ""))
            sys.exit(rule.get("rc", 0))
    sys.exit("unexpected: " + " ".join(args))
    ''')


class StandIn:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        self.binary = tmp_path / "kubectl"
        self.binary.write_text(STAND_IN.format(python=sys.executable))
        self.binary.chmod(0o755)
        self.log = tmp_path / "calls.jsonl"
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("KUBECTL", str(self.binary))
        monkeypatch.setenv("FAKE_KUBECTL_LOG", str(self.log))
        self.answers([])

    def answers(self, rules: list[dict[str, Any]]) -> None:
        self.monkeypatch.setenv("FAKE_KUBECTL_RULES", json.dumps(rules))

    def calls(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def kubectl(tmp_path, monkeypatch) -> StandIn:
    return StandIn(tmp_path, monkeypatch)


def _items(*objs: dict[str, Any]) -> str:
    return json.dumps({"items": list(objs)})


def test_no_kubectl_is_one_line_naming_the_way_to_get_it(monkeypatch):
    monkeypatch.delenv("KUBECTL", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(KubeError) as e:
        Kubectl()
    assert str(e.value) == "kubectl not found on PATH; install it (gcloud components install kubectl) or set KUBECTL"


def test_the_users_kubeconfig_and_context_go_on_every_call(kubectl):
    kubectl.answers([{"args": ["get"], "stdout": _items()}])
    Kubectl("/home/u/kc", "gke_p_z_c").items("pods", "team-a")
    Kubectl().items("pods", "team-a")
    first, second = (c["argv"] for c in kubectl.calls())
    assert first[:2] == ["--kubeconfig=/home/u/kc", "--context=gke_p_z_c"]
    assert not any(a.startswith(("--kubeconfig", "--context")) for a in second)


def test_items_asks_for_json_in_the_namespace_with_the_selector(kubectl):
    pod = {"metadata": {"name": "p"}}
    kubectl.answers([{"args": ["get", "pods"], "stdout": _items(pod)}, {"args": ["get", "nodes"], "stdout": "{}"}])
    kube = Kubectl()
    assert kube.items("pods", "team-a", selector="app=x") == [pod]
    assert kube.items("pods", "team-a") == [pod]
    assert kube.cluster_items("nodes") == []
    with_selector, without, cluster = (c["argv"] for c in kubectl.calls())
    assert with_selector == ["get", "pods", "-n", "team-a", "-o", "json", "--selector=app=x"]
    assert without == ["get", "pods", "-n", "team-a", "-o", "json"]
    assert cluster == ["get", "nodes", "-o", "json"]


def test_a_refusal_is_the_first_line_kubectl_printed(kubectl):
    kubectl.answers([{"args": ["get"], "rc": 1, "stderr": "\n  \nError from server (Forbidden): pods is forbidden\nmore detail\n"}])
    with pytest.raises(KubeError) as e:
        Kubectl().items("pods", "team-b")
    assert str(e.value) == "kubectl get pods: Error from server (Forbidden): pods is forbidden"


def test_a_refusal_without_stderr_quotes_stdout_or_says_there_was_nothing(kubectl):
    kubectl.answers([{"args": ["get", "pods"], "rc": 1, "stdout": "only on stdout\n"}, {"args": ["get", "nodes"], "rc": 1}])
    kube = Kubectl()
    with pytest.raises(KubeError, match="^kubectl get pods: only on stdout$"):
        kube.items("pods", "a")
    with pytest.raises(KubeError, match="^kubectl get nodes: no output$"):
        kube.cluster_items("nodes")


def test_an_answer_that_is_not_json_is_named(kubectl):
    kubectl.answers([{"args": ["get"], "stdout": "<html>proxy login</html>\n"}])
    with pytest.raises(KubeError) as e:
        Kubectl().items("jobsets", "a")
    assert str(e.value) == "kubectl get jobsets: kubectl did not answer with JSON: <html>proxy login</html>"


def test_a_silent_cluster_is_a_timeout_in_seconds(kubectl):
    kubectl.answers([{"args": ["get"], "sleep": 5}])
    with pytest.raises(KubeError) as e:
        Kubectl().run("get", "pods", timeout=0.5)
    assert str(e.value) == "kubectl get: no answer from the cluster in 0.5 s"


def test_a_kubectl_that_cannot_run_is_named(tmp_path, monkeypatch):
    broken = tmp_path / "kubectl"
    broken.write_text("not a program")
    broken.chmod(0o644)
    monkeypatch.setenv("KUBECTL", str(broken))
    with pytest.raises(KubeError) as e:
        Kubectl().items("pods", "a")
    assert str(e.value) == f"cannot run {broken}: Permission denied"


def test_run_without_check_returns_the_failure_to_the_caller(kubectl):
    kubectl.answers([{"args": ["get"], "rc": 3, "stderr": "boom\n"}])
    proc = Kubectl().run("get", "x", check=False)
    assert (proc.returncode, proc.stderr) == (3, "boom\n")


def test_refusal_is_a_server_side_dry_run_of_the_object(kubectl):
    obj = {"kind": "JobSet", "metadata": {"name": "exp", "namespace": "a"}}
    kubectl.answers([{"args": ["create"], "stdout": "jobset.jobset.x-k8s.io/exp\n"}])
    kube = Kubectl()
    assert kube.refusal(obj) is None
    call = kubectl.calls()[0]
    assert call["argv"] == ["create", "--dry-run=server", "-o", "name", "-f", "-"] and json.loads(call["stdin"]) == obj
    kubectl.answers([{"args": ["create"], "rc": 1, "stderr": 'The jobsets "exp" is invalid:\n  policy denied\n'}])
    assert kube.refusal(obj) == 'The jobsets "exp" is invalid: policy denied'
    kubectl.answers([{"args": ["create"], "rc": 1, "stdout": "denied on stdout"}])
    assert kube.refusal(obj) == "denied on stdout"


def test_get_jobset_tells_a_missing_run_from_a_refusal(kubectl):
    js = {"metadata": {"name": "exp"}}
    kubectl.answers([{"args": ["get", "jobsets.jobset.x-k8s.io", "exp"], "stdout": json.dumps(js)},
                     {"args": ["get", "jobsets.jobset.x-k8s.io", "gone"], "rc": 1,
                      "stderr": 'Error from server (NotFound): jobsets.jobset.x-k8s.io "gone" not found\n'},
                     {"args": ["get", "jobsets.jobset.x-k8s.io", "old"], "rc": 1, "stderr": "error: the server doesn't have a resource type \"jobsets\" (not found)\n"},
                     {"args": ["get", "jobsets.jobset.x-k8s.io", "hidden"], "rc": 1, "stderr": "Error from server (Forbidden): no\n"},
                     {"args": ["get", "jobsets.jobset.x-k8s.io", "junk"], "stdout": "junk"}])
    kube = Kubectl()
    assert kube.get_jobset("team-a", "exp") == js
    assert kubectl.calls()[0]["argv"] == ["get", "jobsets.jobset.x-k8s.io", "exp", "-n", "team-a", "-o", "json"]
    with pytest.raises(KubeError, match="^no run gone in namespace team-a$"):
        kube.get_jobset("team-a", "gone")
    with pytest.raises(KubeError, match="^no run old in namespace team-a$"):
        kube.get_jobset("team-a", "old")
    with pytest.raises(KubeError, match=r"^kubectl get jobset hidden: Error from server \(Forbidden\): no$"):
        kube.get_jobset("team-a", "hidden")
    with pytest.raises(KubeError, match="^kubectl get jobset junk: kubectl did not answer with JSON: junk$"):
        kube.get_jobset("team-a", "junk")


def _pod(name: str, created: str, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T09:00:00Z"
    return {"metadata": meta}


def test_head_pod_is_the_newest_live_one_selected_by_run_and_head_job(kubectl):
    old, new, dying = _pod("old", "2026-12-06T08:00:00Z"), _pod("new", "2026-12-06T08:30:00Z"), _pod("dying", "2026-12-06T08:45:00Z", True)
    kubectl.answers([{"args": ["get", "pods"], "stdout": _items(old, dying, new)}])
    kube = Kubectl()
    assert (kube.head_pod("team-a", "exp") or {}).get("metadata") == new["metadata"]
    assert kubectl.calls()[0]["argv"][-1] == "--selector=jobset.sigs.k8s.io/jobset-name=exp,jobset.sigs.k8s.io/replicatedjob-name=pathways-head"
    # only dying pods: the newest of them; none at all: None
    kubectl.answers([{"args": ["get", "pods"], "stdout": _items(_pod("a", "2026-12-06T08:00:00Z", True), dying)}])
    assert (kube.head_pod("team-a", "exp") or {}).get("metadata") == dying["metadata"]
    kubectl.answers([{"args": ["get", "pods"], "stdout": _items()}])
    assert kube.head_pod("team-a", "exp") is None


def test_get_node_returns_the_node_or_the_reason_in_one_line(kubectl):
    kubectl.answers([{"args": ["get", "node", "n1"], "stdout": '{"metadata": {"name": "n1"}}'},
                     {"args": ["get", "node", "n2"], "rc": 1, "stderr": 'Error from server (NotFound): nodes "n2" not found\nx\n'}])
    kube = Kubectl()
    assert kube.get_node("n1") == {"metadata": {"name": "n1"}}
    assert kube.get_node("n2") == 'n2: Error from server (NotFound): nodes "n2" not found'


def test_whoami_is_the_username_or_empty(kubectl):
    kubectl.answers([{"args": ["auth", "whoami"], "stdout": json.dumps({"status": {"userInfo": {"username": "rita@example.com"}}})}])
    kube = Kubectl()
    assert kube.whoami() == "rita@example.com"
    assert kubectl.calls()[0]["argv"] == ["auth", "whoami", "-o", "json"]
    kubectl.answers([{"args": ["auth", "whoami"], "stdout": json.dumps({"status": {}})}])
    assert kube.whoami() == ""
    kubectl.answers([{"args": ["auth", "whoami"], "rc": 1, "stderr": "forbidden"}])
    assert kube.whoami() == ""


def test_create_never_overwrites_and_names_the_way_out(kubectl):
    obj = {"kind": "JobSet", "metadata": {"name": "exp", "namespace": "team-a"}}
    kubectl.answers([{"args": ["create"], "stdout": json.dumps({**obj, "status": {}})}])
    kube = Kubectl()
    assert kube.create(obj) == {**obj, "status": {}}
    call = kubectl.calls()[0]
    assert call["argv"] == ["create", "-o", "json", "-f", "-"] and json.loads(call["stdin"]) == obj
    kubectl.answers([{"args": ["create"], "rc": 1, "stderr": 'Error from server (AlreadyExists): jobsets.jobset.x-k8s.io "exp" already exists\n'}])
    with pytest.raises(KubeError) as e:
        kube.create(obj)
    assert str(e.value) == ("a JobSet named exp already exists in team-a; delete it first (python -m infra.run delete) or "
                            "choose another --name")
    kubectl.answers([{"args": ["create"], "rc": 1, "stderr": "object already exists\n"}])
    with pytest.raises(KubeError, match="^a JobSet named exp already exists in team-a"):
        kube.create(obj)
    kubectl.answers([{"args": ["create"], "rc": 1, "stderr": "admission webhook denied the request\nline 2\n"}])
    with pytest.raises(KubeError) as e:
        kube.create(obj)
    assert str(e.value) == "the cluster refused JobSet exp: admission webhook denied the request"
    kubectl.answers([{"args": ["create"], "stdout": "jobset created"}])
    with pytest.raises(KubeError, match="^kubectl create JobSet: kubectl did not answer with JSON: jobset created$"):
        kube.create(obj)


def test_delete_waits_in_the_foreground_and_outlasts_kubectls_own_timeout(kubectl, monkeypatch):
    kubectl.answers([{"args": ["delete"]}])
    seen: dict[str, Any] = {}
    real_run = Kubectl.run

    def spy(self, *args, **kw):
        seen.update(kw)
        return real_run(self, *args, **kw)

    monkeypatch.setattr(Kubectl, "run", spy)
    Kubectl().delete_jobset("team-a", "exp")
    assert kubectl.calls()[0]["argv"] == ["delete", "jobsets.jobset.x-k8s.io", "exp", "-n", "team-a", "--cascade=foreground",
                                          "--wait=true", f"--timeout={DELETE_TIMEOUT_SECONDS}s"]
    assert DELETE_TIMEOUT_SECONDS == 300 and seen["timeout"] == DELETE_TIMEOUT_SECONDS + 60
    kubectl.answers([{"args": ["delete"], "rc": 1, "stderr": "error: timed out waiting for the condition\n"}])
    monkeypatch.setattr(Kubectl, "run", real_run)
    with pytest.raises(KubeError, match="^kubectl delete jobsets.jobset.x-k8s.io: error: timed out waiting for the condition$"):
        Kubectl().delete_jobset("team-a", "exp")


def test_pending_workloads_reads_kueues_visibility_api(kubectl):
    path = "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/runs/pendingworkloads"
    kubectl.answers([{"args": ["get", "--raw", path], "stdout": _items({"metadata": {"name": "w"}, "positionInLocalQueue": 0})}])
    kube = Kubectl()
    assert kube.pending_workloads("team-a", "runs") == [{"metadata": {"name": "w"}, "positionInLocalQueue": 0}]
    kubectl.answers([{"args": ["get", "--raw", path], "stdout": "{}"}])
    assert kube.pending_workloads("team-a", "runs") == []
    kubectl.answers([{"args": ["get", "--raw", path], "rc": 1, "stderr": "Error from server (ServiceUnavailable): the server is currently unable\n"}])
    assert kube.pending_workloads("team-a", "runs") == "Error from server (ServiceUnavailable): the server is currently unable"
    kubectl.answers([{"args": ["get", "--raw", path], "stdout": "<html>\n"}])
    assert kube.pending_workloads("team-a", "runs") == "not JSON: <html>"


def test_logs_stream_to_stdout_and_a_failure_names_the_pod(kubectl, capfd):
    kubectl.answers([{"args": ["logs"], "stdout": "step 1 loss 2.3\n"}])
    kube = Kubectl()
    assert kube.stream_logs("team-a", "exp-head-0", "jax-program", follow=True) == 0
    assert capfd.readouterr().out == "step 1 loss 2.3\n"
    assert kubectl.calls()[0]["argv"] == ["logs", "-n", "team-a", "exp-head-0", "-c", "jax-program", "--follow"]
    kube.stream_logs("team-a", "exp-head-0", "jax-program", follow=False)
    assert kubectl.calls()[1]["argv"] == ["logs", "-n", "team-a", "exp-head-0", "-c", "jax-program"]
    kubectl.answers([{"args": ["logs"], "rc": 1, "stderr": 'Error from server (BadRequest): container "jax-program" is waiting\n'}])
    with pytest.raises(KubeError) as e:
        kube.stream_logs("team-a", "exp-head-0", "jax-program", follow=False)
    assert str(e.value) == 'kubectl logs exp-head-0: Error from server (BadRequest): container "jax-program" is waiting'


def test_port_forward_binds_the_loopback_only(kubectl):
    expected = ["port-forward", "-n", "team-a", "--address=127.0.0.1", "pod/exp-head-0", "8471:29000"]
    kubectl.answers([{"args": ["port-forward"], "rc": 0}])
    kube = Kubectl("/kc")
    assert kube.port_forward("team-a", "exp-head-0", 8471, 29000) == 0
    proc = kube.start_port_forward("team-a", "exp-head-0", 8471, 29000)
    assert proc.wait(timeout=30) == 0
    assert [c["argv"] for c in kubectl.calls()] == [["--kubeconfig=/kc", *expected]] * 2
    kubectl.answers([{"args": ["port-forward"], "rc": 7}])
    assert kube.port_forward("team-a", "exp-head-0", 8471, 29000) == 7


def test_port_forward_with_a_kubectl_that_cannot_run_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECTL", str(tmp_path / "missing-kubectl"))
    with pytest.raises(KubeError, match=f"^cannot run {tmp_path}/missing-kubectl: No such file or directory$"):
        Kubectl().start_port_forward("a", "p", 1, 2)


def test_port_forward_in_the_foreground_ends_quietly_on_ctrl_c(kubectl, monkeypatch):
    import subprocess

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "run", interrupted)
    assert Kubectl().port_forward("a", "p", 1, 2) == 0


# --- the commands a user runs, over the stand-in (the real API server answers them in tests_e2e/test_runs.py) ---


def _stack_file(tmp_path: Path) -> Path:
    from tests.conftest import GROUPS_RBAC, config_with, write_stack_file
    from tests.test_runs import RUNS, VERSION

    return write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC))


def _namespace(path: Path) -> str:
    from infra.run.__main__ import _stack, parser

    return _stack(parser().parse_args(["list", "--config", str(path)])).kubernetes.namespace


def _jobset(name: str, run: bool) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "pathways-run"} if run else {}
    return {"metadata": {"name": name, "labels": labels}}


def test_delete_all_removes_only_the_runs_and_says_which(kubectl, tmp_path, capsys):
    from infra.run.__main__ import main

    path = _stack_file(tmp_path)
    ns = _namespace(path)
    kubectl.answers([{"args": ["get", "jobsets.jobset.x-k8s.io"], "stdout": _items(_jobset("exp-a", True), _jobset("exp-b", True))},
                     {"args": ["delete"]}])
    assert main(["delete", "--all", "--config", str(path)]) == 0
    assert capsys.readouterr().out == f"deleted 2 run(s) in {ns}: exp-a, exp-b\n"
    get, *deletes = (c["argv"] for c in kubectl.calls())
    assert get[-1] == "--selector=app.kubernetes.io/managed-by=pathways-run"
    assert [d[:5] for d in deletes] == [["delete", "jobsets.jobset.x-k8s.io", n, "-n", ns] for n in ("exp-a", "exp-b")]
    kubectl.answers([{"args": ["get", "jobsets.jobset.x-k8s.io"], "stdout": _items()}])
    assert main(["delete", "--all", "--config", str(path)]) == 0
    assert capsys.readouterr().out == f"deleted 0 run(s) in {ns}\n"


def test_delete_refuses_a_jobset_the_stack_declares(kubectl, tmp_path, capsys):
    from infra.run.__main__ import main

    path = _stack_file(tmp_path)
    kubectl.answers([{"args": ["get", "jobsets.jobset.x-k8s.io", "train"], "stdout": json.dumps(_jobset("train", False))},
                     {"args": ["get", "jobsets.jobset.x-k8s.io", "exp"], "stdout": json.dumps(_jobset("exp", True))}, {"args": ["delete"]}])
    assert main(["delete", "train", "--config", str(path)]) == 1
    assert capsys.readouterr().err == ("error: train is not an ad-hoc run: it is declared in the stack file and Pulumi manages it "
                                       "(set its state or remove it there, then pulumi up)\n")
    assert not [c for c in kubectl.calls() if c["argv"][0] == "delete"]
    assert main(["delete", "exp", "--config", str(path)]) == 0
    assert capsys.readouterr().out == "run exp deleted, with its Jobs and pods\n"


def test_security_73_4_a_run_whose_code_cannot_be_shipped_is_deleted_and_says_so(kubectl, tmp_path, capsys):
    """Someone made <run>-workdir first (they may read the JobSet's uid and race submit): submit deletes the run it
    just made, so nothing waits for or runs that code, and says so in one line, exit 4."""
    from infra.run.__main__ import main

    path = _stack_file(tmp_path)
    ns = _namespace(path)
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print(1)\n")
    kubectl.answers([
        {"args": ["auth", "whoami"], "stdout": json.dumps({"status": {"userInfo": {"username": "rita@example.com"}}})},
        {"args": ["create"], "stdin_has": '"kind": "ConfigMap"', "rc": 1,
         "stderr": 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "exp-workdir" already exists\n'},
        {"args": ["create"], "stdin_has": '"kind": "JobSet"', "stdout": json.dumps({"metadata": {"name": "exp", "uid": "u-1"}})},
        {"args": ["delete", "jobsets.jobset.x-k8s.io", "exp"]}])
    assert main(["submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1", "--workdir", str(code),
                 "--", "python3", "train.py"]) == 4
    assert capsys.readouterr().err == (
        f"error: run exp's code was not shipped, so the run was deleted and nothing ran: a ConfigMap named exp-workdir already "
        f"exists in {ns}: someone made it before submit could (a run's code is made by its own submit only)\n")
    creates = [json.loads(c["stdin"]) for c in kubectl.calls() if c["argv"][0] == "create"]
    assert [o["kind"] for o in creates] == ["JobSet", "ConfigMap"]
    assert creates[1]["immutable"] is True and creates[1]["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    assert [c["argv"][:5] for c in kubectl.calls() if c["argv"][0] == "delete"] == [["delete", "jobsets.jobset.x-k8s.io", "exp", "-n", ns]]
