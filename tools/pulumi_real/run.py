"""Run the real Pulumi CLI (tools/engines/pulumi, v3.274.1) on this project, offline and throwaway:

- a file backend and PULUMI_HOME in a work directory, the passphrase secrets provider, no update check
  and no plugin downloads (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION);
- the provider plugins installed into that PULUMI_HOME from the binaries tools/engines built, at exactly
  the versions the Python SDKs in requirements.lock ask for;
- the program run by tools/pulumi_real/host.py (the SDK's own language server, `--client`), the policy
  pack launched by tools/pulumi_real/policy-pack;
- a copy of Pulumi.yaml and the stack file in the work directory, so nothing is written to the checkout.

    run = PulumiRun(workdir, stack="e2e", config={...})
    run.cli("preview", "--policy-pack", POLICIES)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = ROOT / "build" / "engines" / "bin"
# The policy pack, launched as a binary analyzer (see policy-pack): what `--policy-pack policies` runs.
POLICIES = HERE / "policy-pack"
PASSPHRASE = "throwaway-e2e-passphrase"


class PulumiError(RuntimeError):
    pass


def engine_plugins() -> dict[str, str]:
    """Provider plugins tools/engines builds, by name, at their pinned (= SDK) versions."""
    out = {}
    for spec in (ROOT / "tools" / "engines").glob("*/engine.json"):
        d = json.loads(spec.read_text())
        for b in d["binaries"]:
            if b["name"].startswith("pulumi-resource-"):
                out[b["name"][len("pulumi-resource-"):]] = d["version"]
    return out


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class PulumiRun:
    def __init__(self, workdir: Path, stack: str, config: dict[str, Any], secrets: Optional[dict[str, str]] = None,
                 program: Optional[str] = None, state: Optional[Path] = None):
        self.workdir = workdir
        self.stack = stack
        self.project = workdir / "project"
        self.home = workdir / "pulumi-home"
        # `state`: a backend other runs share (a stack reference reads the stacks of its own backend); each run keeps
        # its own project and home, so each CLI call acts on the stack it selected
        self.state = state or workdir / "state"
        self._running: Optional[subprocess.Popen[str]] = None
        # main: infra must exist beside Pulumi.yaml; the program itself runs in the host from the checkout
        for d in (self.project / "stacks", self.project / "infra", self.home, self.state):
            d.mkdir(parents=True, exist_ok=True)
        project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
        (self.project / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")},
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.state}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
            "PATHWAYS_POLICY_PYTHON": sys.executable,
            **({"PATHWAYS_PULUMI_PROGRAM": program} if program else {}),
            "PATHWAYS_PULUMI_ROOT": str(self.project),
            # Not the engines' bin: the CLI would take a provider from PATH over the one installed at its version.
            "PATH": os.environ.get("PATH", ""),
        }
        self._install_plugins()
        self.cli_raw("stack", "init", stack, "--secrets-provider", "passphrase", check=True)
        self.set_config(config)
        for key, value in (secrets or {}).items():
            self.cli_raw("config", "set", "--secret", "--path", key, value, check=True)

    def _install_plugins(self) -> None:
        for name, version in engine_plugins().items():
            binary = BIN / f"pulumi-resource-{name}"
            if binary.exists():
                self.cli_raw("plugin", "install", "resource", name, version, "--file", str(binary), check=True)

    @property
    def stack_file(self) -> Path:
        return self.project / "stacks" / f"Pulumi.{self.stack}.yaml"

    def set_config(self, config: dict[str, Any], secrets: Optional[dict[str, str]] = None) -> None:
        """The stack file's config, written as `pulumi config set --path` would keep it: the secrets set so far
        stay, unless `secrets` is given, which replaces them (`pulumi config set --secret --path` each)."""
        doc = yaml.safe_load(self.stack_file.read_text()) if self.stack_file.exists() else {}
        secure = {k: v for k, v in (doc.get("config") or {}).items() if isinstance(v, dict) and "secure" in json.dumps(v)}
        doc["config"] = {**config, **(secure if secrets is None else {})}
        self.stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
        for key, value in (secrets or {}).items():
            self.cli_raw("config", "set", "--secret", "--path", key, value, check=True)

    def rename(self, stack: str) -> None:
        """`pulumi stack rename`: the same resources under another stack name (their URNs rewritten in state)."""
        if stack != self.stack:
            self.cli_raw("stack", "rename", stack, check=True)
            self.stack = stack

    def cli_raw(self, *args: str, check: bool = False, timeout: float = 900) -> Result:
        t0 = time.monotonic()
        proc = subprocess.Popen([str(BIN / "pulumi"), *args, "--non-interactive"], cwd=self.project, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._running = proc
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            raise PulumiError(f"pulumi {' '.join(args)} did not finish in {timeout:g} s:\n{(stdout + stderr)[-4000:]}") from None
        finally:
            self._running = None
        result = Result(proc.returncode, stdout, stderr, time.monotonic() - t0)
        if check and proc.returncode != 0:
            raise PulumiError(f"pulumi {' '.join(args)} failed ({proc.returncode}):\n{result.output[-4000:]}")
        return result

    def cli(self, *args: str, check: bool = False, timeout: float = 900) -> Result:
        """A command that runs the program: the SDK's language server in a process of its own, then the CLI
        pointed at it."""
        host = subprocess.Popen([sys.executable, "-m", "tools.pulumi_real.host"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={k: v for k, v in self.env.items() if k != "PULUMI_HOME"})
        try:
            assert host.stdout is not None
            port = host.stdout.readline().strip()
            if not port.isdigit():
                raise PulumiError(f"the language host did not start: {host.stderr.read() if host.stderr else ''}")
            return self.cli_raw(*args, f"--client=127.0.0.1:{port}", check=check, timeout=timeout)
        finally:
            host.kill()
            host.wait(timeout=30)

    def interrupt(self) -> None:
        """Stop the command that runs now (Ctrl-C, then a kill): Pulumi cancels what it has not started and
        records what was in flight when it returns; a kill would leave those as pending operations."""
        proc = self._running
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()

    def state_file(self) -> str:
        """The stack's checkpoint as the file backend stores it."""
        found = list(self.state.rglob(f"{self.stack}.json"))
        if not found:
            raise PulumiError(f"no state for stack {self.stack} under {self.state}")
        return found[0].read_text()

    def cleanup(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
