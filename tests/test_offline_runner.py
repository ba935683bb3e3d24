"""tools/cluster/offline.py, the wrapper `make e2e` runs the real-engine tier in: what it does where no
network namespace can be made (the namespace itself is proven by tests_e2e/test_offline.py)."""

from __future__ import annotations

import pytest

from tools.cluster import offline


def test_without_a_namespace_the_command_does_not_run_and_it_says_why(monkeypatch, capsys):
    monkeypatch.setattr(offline, "_unshare_args", lambda: None)
    ran = []
    monkeypatch.setattr(offline.os, "execvp", lambda file, args: ran.append(args))
    assert offline.main(["--", "pytest", "tests_e2e"]) == 1
    assert ran == []
    assert "cannot make a network namespace here" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [[], ["--"], ["--inside", "--"]])
def test_a_command_is_required(argv, capsys):
    assert offline.main(argv) == 2
    assert "usage" in capsys.readouterr().err


def test_the_namespace_is_entered_by_exec_with_the_command_after_it(monkeypatch):
    # exec: the wrapper leaves no parent behind that a signal could kill while the tier runs on
    monkeypatch.setattr(offline, "_unshare_args", lambda: ["unshare", "-n"])
    monkeypatch.setenv(offline.OUTER, "unset")  # restored after the test
    execs = []
    monkeypatch.setattr(offline.os, "execvp", lambda file, args: execs.append(args))
    offline.main(["--", "pytest", "-q"])
    (args,) = execs
    assert args[:2] == ["unshare", "-n"] and args[3:] == ["-m", "tools.cluster.offline", "--inside", "--", "pytest", "-q"]
    assert offline.os.environ[offline.OUTER].startswith("net:[")  # what the tier compares its own namespace with


class Proc:
    def __init__(self, returncode, stderr=""):
        self.returncode, self.stderr = returncode, stderr


def test_inside_refuses_a_namespace_that_is_not_new(monkeypatch, capsys):
    monkeypatch.setattr(offline, "interfaces", lambda: {"lo", "eth0"})
    ran = []
    monkeypatch.setattr(offline.subprocess, "run", lambda args, **_: ran.append(args) or Proc(0))
    assert offline.main(["--inside", "--", "true"]) == 1
    assert ran == [] and "only in a new network namespace" in capsys.readouterr().err


def test_inside_stops_when_the_wiring_fails(monkeypatch, capsys):
    monkeypatch.setattr(offline, "interfaces", lambda: {"lo"})
    monkeypatch.setattr(offline.subprocess, "run", lambda args, **_: Proc(2, "RTNETLINK answers: Operation not permitted"))
    assert offline.main(["--inside", "--", "true"]) == 1
    assert "Operation not permitted" in capsys.readouterr().err


def test_inside_refuses_when_the_probe_gets_through(monkeypatch, capsys):
    monkeypatch.setattr(offline, "interfaces", lambda: {"lo"})
    monkeypatch.setattr(offline.subprocess, "run", lambda args, **_: Proc(0))
    monkeypatch.setattr(offline, "reaches_off_machine", lambda: True)
    monkeypatch.setattr(offline.os, "execvpe", lambda *a: pytest.fail("ran the command although the probe got through"))
    assert offline.main(["--inside", "--", "true"]) == 1
    assert "refusing to go on" in capsys.readouterr().err


def test_inside_runs_the_command_marked_and_without_the_module_proxy(monkeypatch):
    monkeypatch.setattr(offline, "interfaces", lambda: {"lo"})
    wired = []
    monkeypatch.setattr(offline.subprocess, "run", lambda args, **_: wired.append(args[1:]) or Proc(0))
    monkeypatch.setattr(offline, "reaches_off_machine", lambda: False)
    execs = []
    monkeypatch.setattr(offline.os, "execvpe", lambda file, args, env: execs.append((args, env)))
    offline.main(["--inside", "--", "pytest", "tests_e2e"])
    ((args, env),) = execs
    assert args == ["pytest", "tests_e2e"] and env[offline.MARKER] == "1" and env["GOPROXY"] == "off"
    assert ["route", "add", "default", "dev", offline.DEVICE] in wired
