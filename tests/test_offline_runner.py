"""tools/cluster/offline.py, the wrapper `make e2e` runs the real-engine tier in: what it does where no
network namespace can be made (the namespace itself is proven by tests_e2e/test_offline.py)."""

from __future__ import annotations

import pytest

from tools.cluster import offline


def test_without_a_namespace_ci_fails_and_says_why(monkeypatch, capsys):
    monkeypatch.setattr(offline, "_unshare_args", lambda: None)
    monkeypatch.setenv(offline.REQUIRE, "1")
    assert offline.main(["--", "true"]) == 1
    assert "cannot make a network namespace here" in capsys.readouterr().err


def test_without_a_namespace_a_developer_is_told_the_proof_was_not_made(monkeypatch, capsys):
    monkeypatch.setattr(offline, "_unshare_args", lambda: None)
    monkeypatch.delenv(offline.REQUIRE, raising=False)
    ran = []
    monkeypatch.setattr(offline.os, "execvp", lambda file, args: ran.append(args))
    offline.main(["--", "pytest", "tests_e2e"])
    assert ran == [["pytest", "tests_e2e"]]
    assert "NOT proven offline" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--"], ["--inside", "--"]])
def test_a_command_is_required(argv, capsys):
    assert offline.main(argv) == 2
    assert "usage" in capsys.readouterr().err


def test_the_namespace_is_entered_with_the_command_after_it(monkeypatch):
    monkeypatch.setattr(offline, "_unshare_args", lambda: ["unshare", "-n"])
    calls = []

    class Done:
        returncode = 0

    monkeypatch.setattr(offline.subprocess, "run", lambda args, **_: calls.append(args) or Done())
    assert offline.main(["--", "pytest", "-q"]) == 0
    (args,) = calls
    assert args[:2] == ["unshare", "-n"] and args[3:] == ["-m", "tools.cluster.offline", "--inside", "--", "pytest", "-q"]
