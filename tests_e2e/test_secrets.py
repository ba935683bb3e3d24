"""Issue #36.3 with the real Pulumi CLI: a value set with `pulumi config set --secret --path` anywhere but a
workload's env values is refused by the stack's program before any resource, with the offline tools' line, and the
secret appears nowhere: not in the CLI's output, not in the state, not in the stack file (ciphertext only).

The CLI tells the program only that `pathways:workloads` holds a secret; which leaf is the secret is in the stack
file, which the program finds under the project root the Python language host passes it
(tests_e2e/project_root_host.py gives this tier's host the same). The refusal comes from reading the config, so
these scenarios need no cluster: the stack is in existing-cluster mode on a kubeconfig that is never opened."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from components.model.config import secret_path_problems
from tests_e2e.project_root_host import ROOT_ENV
from tools.pulumi_real.run import PulumiError, PulumiRun

TOKEN = "hf_access_token=PLAINTEXT-hf_6e5d4c3b2a19"
PROGRAM = "tests_e2e.project_root_host:main"
EXTRA_ARG = "pathways:workloads[0].serve.extraArgs[0]"
CONFIG = {
    "gcp:project": "test-proj-123", "gcp:region": "us-east5", "gcp:zone": "us-east5-b",
    "pathways:slices": [{"name": "main", "tpu": "v6e-16", "count": 2}],
    "pathways:pathwaysVersion": "jax-0.5.3",  # the release jetstream-pathways:v0.2.0 runs on
    "pathways:cluster": {"existing": {"kubeconfig": "/nonexistent/e2e-secrets/kubeconfig"}},
    "pathways:bucket": {"name": "test-proj-123-e2e-pathways"},
    "pathways:kubernetes": {"installControllers": False},
    # the value the secret replaces: `config set --path` sets list item 0, which must exist
    "pathways:workloads": [{"name": "chat", "mode": "serve",
                            "serve": {"model": "llama3.1-8b", "weights": "gs://team-weights/llama3.1-8b", "extraArgs": ["placeholder"]}}],
}
BATCH = {**CONFIG, "pathways:workloads": [{"name": "train", "image": "example.com/trainer:1", "args": ["--steps=10"]}]}


def run_with_secret(workdir: Path, stack: str, config: dict, path: str) -> PulumiRun:
    run = PulumiRun(workdir, stack, copy.deepcopy(config), secrets={path: TOKEN}, program=PROGRAM)
    run.env[ROOT_ENV] = str(run.project)
    return run


def refusal(path: str) -> str:
    (problem,) = secret_path_problems("pathways:workloads", [path])
    return str(problem)


def assert_nowhere(run: PulumiRun, *outputs: str) -> None:
    for text in outputs:
        assert TOKEN not in text and "hf_6e5d4c3b2a19" not in text
    assert "secure:" in run.stack_file.read_text() and TOKEN not in run.stack_file.read_text()  # ciphertext only
    try:
        state = run.state_file()
    except PulumiError:
        state = ""  # no checkpoint written: nothing to leak
    assert TOKEN not in state and "hf_6e5d4c3b2a19" not in state


@pytest.fixture(scope="module")
def serve_extra_arg(tmp_path_factory):
    run = run_with_secret(tmp_path_factory.mktemp("secrets"), "secrets", CONFIG, EXTRA_ARG)
    yield run
    run.cleanup()


def test_a_secret_serve_arg_is_refused_by_the_real_cli(serve_extra_arg):
    result = serve_extra_arg.cli("preview", "--json")
    assert result.returncode != 0, result.output[-3000:]
    assert refusal(EXTRA_ARG) in result.output, result.output[-3000:]  # the offline tools' line
    assert "Traceback" not in result.output
    assert_nowhere(serve_extra_arg, result.stdout, result.stderr)


def test_up_is_refused_too_and_creates_nothing(serve_extra_arg):
    result = serve_extra_arg.cli("up", "--yes")
    assert result.returncode != 0 and refusal(EXTRA_ARG) in result.output, result.output[-3000:]
    assert_nowhere(serve_extra_arg, result.stdout, result.stderr)
    # the engine registers the stack itself before the program runs; the program registered nothing after it
    latest = json.loads(serve_extra_arg.state_file())["checkpoint"].get("latest") or {}
    assert {r["type"] for r in latest.get("resources") or []} <= {"pulumi:pulumi:Stack"}, latest


def test_a_secret_batch_arg_is_refused_the_same_way(tmp_path):
    path = "pathways:workloads[0].args[0]"
    run = run_with_secret(tmp_path / "batch", "secrets-batch", BATCH, path)
    try:
        result = run.cli("preview", "--json")
        assert result.returncode != 0 and refusal(path) in result.output, result.output[-3000:]
        assert_nowhere(run, result.stdout, result.stderr)
    finally:
        run.cleanup()
