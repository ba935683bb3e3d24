"""A warm pytest runner for `make mutation` (harness.py): pays for the SDK imports once, not once per mutant.

    python -m tools.mutation.runner      (cwd: a scratch copy of the project)

Importing the Pulumi providers takes seconds, longer than most mutants need to fail a test. This
process imports, once, every third-party module a plan and the test modules use (found by planning
the dev stack and collecting the suite in a throwaway child, so no Pulumi state is left here), then
for each request forks a child that drops every project module from sys.modules (so it imports the
mutated source afresh) and runs pytest in-process.

Protocol: one JSON request per stdin line, {"tests": [...], "timeout": seconds}; one JSON answer per
stdout line, {"code": pytest's exit code or null when over time, "output": its last lines}.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path.cwd().resolve()
sys.dont_write_bytecode = True  # a mutant may have the original's size and mtime second: never reuse bytecode


def _is_project(module) -> bool:
    if module.__name__ == "__main__":  # this runner: keep it
        return False
    path = str(getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", None) or []), "") or "")
    installed = path.startswith((sys.prefix, sys.base_prefix)) or "site-packages" in path  # a venv inside the project
    return (path.startswith(str(ROOT)) and not installed) or module.__name__ == "conftest" or module.__name__.startswith("tests")


def _drop_project_modules() -> None:
    for name, module in list(sys.modules.items()):
        if module is not None and _is_project(module):
            del sys.modules[name]


def _third_party_modules() -> list[str]:
    """The non-project modules a plan of the dev stack and the suite's collection import (in a child)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: plan, collect, report, exit
        os.close(read)
        names: list[str] = []
        with contextlib.suppress(BaseException):
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
                import pytest

                from infra.offline import engine, stackfile

                config, secrets = stackfile.load_config(stackfile.PROJECT_ROOT / "tests" / "fixtures" / "examples" / "stacks" / "Pulumi.dev.yaml")
                engine.run(config, "dev", secrets)
                pytest.main(["-q", "--collect-only", "-p", "no:cacheprovider", "-n", "0", "tests"])
        # in import order (sys.modules keeps it): a package before the submodules its __init__ imports
        names = [n for n, m in sys.modules.items() if m is not None and not _is_project(m)]
        os.write(write, "\n".join(names).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode().split()


def warm() -> None:
    for name in _third_party_modules():
        with contextlib.suppress(BaseException):
            importlib.import_module(name)
    _drop_project_modules()


def run(tests: list[str], timeout: float) -> dict:
    with tempfile.TemporaryFile() as out:
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                _drop_project_modules()
                os.dup2(out.fileno(), 1)
                os.dup2(out.fileno(), 2)
                import pytest

                code = int(pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-n", "0", *tests]))
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
        deadline = time.monotonic() + timeout
        status = None
        while status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
            elif time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            else:
                time.sleep(0.02)
        out.seek(0)
        text = out.read().decode(errors="replace")
    return {"code": status, "output": "\n".join(text.splitlines()[-40:])}


def main() -> int:
    warm()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(run(request["tests"], float(request["timeout"]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
