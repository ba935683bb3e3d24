"""`python -m infra.run profile` (infra/run/profile.py) against a stand-in kubectl whose port-forward serves
pathwaysutils' profiler protocol (POST /profiling, {"duration_ms", "repository_path"}, a bearer token when the server
has one): what it asks for, where the trace goes, and what it says when the server is not there or wants a token.
A real capture needs a Pathways backend and TPUs; the run's side (the env the builder writes) is checked here too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from components.manifests import runs as runs_manifest
from components.model.config import resolve
from tests.conftest import GROUPS_RBAC, ROOT, config_with, write_stack_file
from tests.test_runs import RUNS, VERSION, _policy_admits, model

FAKE_KUBECTL = textwrap.dedent('''\
    #!{python}
    import http.server, json, os, sys
    args = [a for a in sys.argv[1:] if not a.startswith(("--kubeconfig", "--context"))]
    pod = json.loads(os.environ["FAKE_POD"])
    if args[:2] == ["get", "jobsets.jobset.x-k8s.io"]:
        print(json.dumps({{"metadata": {{"name": args[2]}}}}))
    elif args[:2] == ["get", "pods"]:
        print(json.dumps({{"items": [pod]}}))
    elif args[0] == "port-forward":
        local = int(args[-1].split(":")[0])
        want = os.environ.get("FAKE_TOKEN")

        class Profiler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with open(os.environ["FAKE_LOG"], "a") as log:
                    log.write(json.dumps({{"path": self.path, "body": body, "auth": self.headers.get("Authorization"),
                                          "forward": args}}) + "\\n")
                ok = not want or self.headers.get("Authorization") == "Bearer " + want
                self.send_response(200 if ok else 401)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps({{"response": "profiling completed"}} if ok else {{"detail": "Unauthorized"}}).encode())

            def log_message(self, *a):
                pass

        http.server.HTTPServer(("127.0.0.1", local), Profiler).serve_forever()
    else:
        sys.exit("unexpected: " + " ".join(args))
    ''')


def _run_spec(tmp_path, extra=()):
    path = write_stack_file(tmp_path, config_with(pathwaysVersion=VERSION, runs=RUNS, cluster=GROUPS_RBAC))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"profiling": {}}))
    proc = subprocess.run([sys.executable, "-m", "infra.run", "submit", "--config", str(path), "--name", "exp", "--image", "example.com/t:1",
                           "--spec", str(spec), "--dry-run", *extra, "--", "python3", "train.py"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return path, yaml.safe_load(proc.stdout)


def test_a_runs_profiler_listens_on_the_heads_loopback_and_holds_no_token(tmp_path):
    _, js = _run_spec(tmp_path)
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    env = {e["name"]: e for e in next(c for c in head["containers"] if c["name"] == "jax-program")["env"]}
    assert env["PATHWAYS_PROFILING_SERVER_HOST"]["value"] == "127.0.0.1" and "PATHWAYS_PROFILING_AUTH_TOKEN" not in env
    assert env["PROFILER_PORT"]["value"] == "9999"
    assert env["PROFILE_TRACE_DIR"]["value"] == env["PATHWAYS_PROFILING_ALLOWED_GCS_BUCKETS"]["value"]
    assert env["PROFILE_TRACE_DIR"]["value"].endswith("/exp/profiles/") and env["PROFILE_TRACE_DIR"]["value"].startswith("gs://")
    # the runs policy takes it: no Secret behind it
    assert _policy_admits(runs_manifest.runs_only_policy(resolve(model()))[0], "rita@example.com", [], "CREATE", js, None)


def _profile(tmp_path, js, *flags, token=None):
    head = {"metadata": {"name": "exp-pathways-head-0-0-abcde", "creationTimestamp": "2026-12-06T08:00:00Z"},
            "spec": js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"], "status": {"phase": "Running"}}
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL.format(python=sys.executable))
    kubectl.chmod(0o755)
    log = tmp_path / "requests.jsonl"
    env = {**os.environ, "KUBECTL": str(kubectl), "FAKE_POD": json.dumps(head), "FAKE_LOG": str(log), **({"FAKE_TOKEN": token} if token else {})}
    proc = subprocess.run([sys.executable, "-m", "infra.run", "profile", "--config", str(tmp_path / "Pulumi.test.yaml"), "exp", *flags],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    return proc, [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_profile_asks_the_runs_server_for_a_trace_into_the_artifacts_bucket(tmp_path):
    _, js = _run_spec(tmp_path)
    proc, asked = _profile(tmp_path, js, "--duration", "2s")
    assert proc.returncode == 0, proc.stderr
    (request,) = asked
    assert request["path"] == "/profiling" and request["auth"] is None and request["body"]["duration_ms"] == 2000
    where = request["body"]["repository_path"]
    assert where.startswith("gs://") and "/exp/profiles/" in where and where.endswith("/")
    assert f"profile of exp in {where}" in proc.stdout and f"xprof --logdir={where}" in proc.stdout
    # through the API server to the pod, from this machine's loopback only
    assert request["forward"][:4] == ["port-forward", "-n", "pathways", "--address=127.0.0.1"]
    assert request["forward"][4] == "pod/exp-pathways-head-0-0-abcde" and request["forward"][5].endswith(":9999")


def test_a_server_with_a_token_is_asked_with_it_and_says_so_without(tmp_path):
    _, js = _run_spec(tmp_path)
    refused, _ = _profile(tmp_path, js, "--duration", "1s", token="s3cret")
    assert refused.returncode == 1 and "give --token-file" in refused.stderr, refused.stderr
    (tmp_path / "token").write_text("s3cret\n")
    ok, asked = _profile(tmp_path, js, "--duration", "1s", "--token-file", str(tmp_path / "token"), token="s3cret")
    assert ok.returncode == 0, ok.stderr
    assert asked[-1]["auth"] == "Bearer s3cret"


@pytest.mark.parametrize("drop", ["PROFILER_PORT"])
def test_a_run_without_a_profiler_is_told_how_to_get_one(tmp_path, drop):
    _, js = _run_spec(tmp_path)
    for c in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"]:
        c["env"] = [e for e in c.get("env") or [] if e["name"] != drop]
    proc, asked = _profile(tmp_path, js)
    assert proc.returncode == 1 and asked == []
    assert "run exp: it serves no profiler: give the run `profiling: {}`" in proc.stderr, proc.stderr


def test_a_trace_of_no_time_is_refused_before_anything_runs(tmp_path):
    _, js = _run_spec(tmp_path)
    proc, asked = _profile(tmp_path, js, "--duration", "0")
    assert (proc.returncode, asked) == (2, []) and "error: --duration 0 traces nothing; valid: 1s or more (10s, 2m)" in proc.stderr
