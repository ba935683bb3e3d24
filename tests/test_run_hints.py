"""What a researcher can do about the cluster's answers (#74.7): no credentials -> the stack's get-credentials command
(kubectl's own noise dropped); Forbidden -> who to ask, the team's submitters when a team is given."""

from __future__ import annotations

import os
import stat

from components.model.config import load
from infra.run import hints
from infra.run.__main__ import main as run_main
from tests.conftest import GROUPS_RBAC, config_with, write_stack_file

CONFIG = config_with(pathwaysVersion="jax-0.9.0", cluster=GROUPS_RBAC, runs={"submitters": [{"name": "researchers@example.com"}]},
                     teams=[{"name": "vision", "submitters": [{"name": "vision@example.com"}]}])
NO_CONFIG = ('E1207 07:04:11.496503 654 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API group list: Get '
             '\\"http://localhost:8080/api?timeout=32s\\": dial tcp 127.0.0.1:8080: connect: connection refused"')
FORBIDDEN = ('Error from server (Forbidden): jobsets.jobset.x-k8s.io is forbidden: User "rita@example.com" cannot create resource '
             '"jobsets" in API group "jobset.x-k8s.io" in the namespace "team-vision"')


def _cfg():
    return load({k.split(":", 1)[1]: v for k, v in CONFIG.items() if k.startswith("pathways:")}
                | {"project": "test-proj-123", "region": "us-east5", "zone": "us-east5-b"}, "test")


def test_each_answer_gets_its_one_line():
    cfg = _cfg()
    line, whole = hints.hint(NO_CONFIG, cfg) or ("", False)
    assert whole and line.startswith("kubectl has no credentials for stack test's cluster: fetch them with "
                                     "`gcloud container clusters get-credentials pathways-test --location us-east5-b "
                                     "--project test-proj-123 --dns-endpoint`")
    line, whole = hints.hint(FORBIDDEN, cfg, "vision") or ("", True)
    assert not whole and line.startswith("you are not among team vision's submitters (pathways:teams[].submitters: "
                                         "vision@example.com) of stack test: ask your platform team to add you")
    line, _ = hints.hint(FORBIDDEN, cfg) or ("", True)
    assert "the runs' submitters (pathways:runs.submitters: researchers@example.com)" in line
    assert hints.hint("Error from server (NotFound): jobsets.jobset.x-k8s.io \"x\" not found", cfg) is None


def test_the_command_says_it_instead_of_kubectls_noise(tmp_path, capsys, monkeypatch):
    said = tmp_path / "said.txt"
    said.write_text(NO_CONFIG + "\n")
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(f"#!/bin/sh\ncat '{said}' >&2\nexit 1\n")
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("KUBECTL", str(kubectl))
    path = write_stack_file(tmp_path, CONFIG)
    assert run_main(["list", "--config", str(path)]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: kubectl has no credentials for stack test's cluster"), err
    assert os.environ["KUBECTL"] == str(kubectl)
