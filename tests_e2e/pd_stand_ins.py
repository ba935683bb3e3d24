"""Processes for a split endpoint's pods, which kwok only pretends to run: each in a network namespace of its own
holding the pod's IP (a veth pair routed from the host, as the tier's kubelet plugs in a controller's sandbox,
tools/cluster/kubelet.py), started with the pod's own command line and environment (the downward API resolved),
its program a stand-in (tools/cluster/stand_in_vllm.py for `vllm serve`, tools/cluster/stand_in_pd_proxy.py for
tpu-inference's proxy). Pods reach one another through the host, which forwards between the veths while these run.
Linux, root (the tier's offline namespace)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Optional

from components.model.workloads import vllm

ROOT = Path(__file__).resolve().parents[1]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class PodStandIns:
    def __init__(self, workdir: Path, gateway: str):
        self.workdir = workdir
        self.gateway = gateway
        self.record = workdir / "requests.jsonl"
        self.services = workdir / "services.json"
        self._procs: list[subprocess.Popen[bytes]] = []
        self._namespaces: list[str] = []
        self._forwarding: Optional[str] = None

    def __enter__(self) -> "PodStandIns":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.record.write_text("")
        forwarding = Path("/proc/sys/net/ipv4/ip_forward")
        self._forwarding = forwarding.read_text().strip()
        forwarding.write_text("1")
        return self

    def __exit__(self, *exc: Any) -> None:
        for proc in self._procs:
            proc.kill()
            proc.wait(timeout=10)
        for name in self._namespaces:
            subprocess.run(["ip", "link", "del", f"h{name}"], capture_output=True)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        if self._forwarding is not None:
            Path("/proc/sys/net/ipv4/ip_forward").write_text(self._forwarding)

    def resolve(self, names: dict[str, list[str]]) -> None:
        """What the cluster's DNS and kube-proxy would give the proxy: <service>.<namespace>.svc -> ready pod IPs."""
        self.services.write_text(json.dumps(names))

    def _plug(self, pod: dict[str, Any]) -> str:
        ip = pod["status"]["podIP"]
        name = f"pd{pod['metadata']['uid'].replace('-', '')[:10]}"
        _ip("netns", "add", name)
        self._namespaces.append(name)
        _ip("link", "add", f"h{name}", "type", "veth", "peer", "name", "eth0", "netns", name)
        for args in (["link", "set", "lo", "up"], ["addr", "add", f"{ip}/32", "dev", "eth0"], ["link", "set", "eth0", "up"],
                     ["route", "add", self.gateway, "dev", "eth0"], ["route", "add", "default", "via", self.gateway, "dev", "eth0"]):
            _ip("-n", name, *args)
        _ip("link", "set", f"h{name}", "up")
        _ip("route", "replace", f"{ip}/32", "dev", f"h{name}")
        return name

    def start(self, pod: dict[str, Any]) -> None:
        """Run the pod's one container's command line with its stand-in program."""
        (c,) = pod["spec"]["containers"]
        command = [*(c.get("command") or []), *(c.get("args") or [])]
        if command[:2] == list(vllm.COMMAND):
            program = [sys.executable, "-m", "tools.cluster.stand_in_vllm", *command[1:]]
        elif command[:2] == ["python3", vllm.PROXY_SCRIPT]:
            program = [sys.executable, "-m", "tools.cluster.stand_in_pd_proxy", *command[2:]]
        else:
            raise AssertionError(f"{pod['metadata']['name']}: no stand-in runs {command[:2]}")
        fields = {"status.podIP": pod["status"]["podIP"], "metadata.name": pod["metadata"]["name"]}
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
               "STAND_IN_RECORD": str(self.record), "STAND_IN_SERVICES": str(self.services)}
        for e in c.get("env") or []:
            if "value" in e:
                env[e["name"]] = e["value"]
            elif "fieldRef" in (e.get("valueFrom") or {}):
                env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
        name = self._plug(pod)
        log = (self.workdir / f"{pod['metadata']['name']}.log").open("ab")
        self._procs.append(subprocess.Popen(["ip", "netns", "exec", name, *program], env=env, cwd=ROOT, stdout=log,
                                            stderr=subprocess.STDOUT))

    @staticmethod
    def wait_answering(ip: str, port: int = vllm.PORT, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://{ip}:{port}{vllm.HEALTH_PATH}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing answers at {ip}:{port}")
            time.sleep(0.2)

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.record.read_text().splitlines() if line]


def complete(ip: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(f"http://{ip}:{vllm.PORT}{vllm.COMPLETIONS_PATH}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())
