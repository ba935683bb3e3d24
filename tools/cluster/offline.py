"""Run a command with no network route off this machine: a Linux network namespace with loopback and one
end of a veth pair whose other end is down (no carrier), carrying the default route (kube-apiserver wants
a default route to pick its advertise address). An IP connection to anywhere but this machine goes nowhere
and times out. What it does not cover: Unix sockets of daemons on the host (there is no mount namespace),
and a privileged process that deliberately enters another namespace.

    python -m tools.cluster.offline -- python -m pytest tests_e2e

`make e2e` runs the real-engine tier this way, so the whole tier — the control plane, the controllers, the
Pulumi CLI and its provider, the policy pack, Google's pathwaysutils client — is proven to need nothing
off the machine (issue #24: prove it). Go's module proxy is switched off in there (GOPROXY=off): the
engines are built before. Where a network namespace cannot be made (no `unshare`, no permission) the
command does not run: the tier is only ever run, and passed, offline.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

MARKER = "PATHWAYS_OFFLINE_NETNS"  # set inside the namespace, for the tier's own check (tests_e2e/test_offline.py)
OUTER = "PATHWAYS_OUTER_NETNS"  # the network namespace the wrapper was started in, to compare with
DEVICE, PEER, ADDRESS = "offline0", "offline1", "10.254.254.1/24"
# A public address to prove the point on: Google's DNS, port 53 (any address off the machine would do).
PROBE = ("8.8.8.8", 53)


def say(msg: str) -> None:
    print(f"[offline] {msg}", file=sys.stderr, flush=True)


def reaches_off_machine(timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection(PROBE, timeout=timeout):
            return True
    except OSError:
        return False


def interfaces() -> set[str]:
    return {name for _, name in socket.if_nameindex()}


def _inside(cmd: list[str]) -> int:
    # a fresh network namespace has loopback only: never rewire a namespace that has more (the host's)
    if interfaces() != {"lo"}:
        say(f"--inside runs only in a new network namespace; this one has {sorted(interfaces())}")
        return 1
    for args in (["link", "set", "lo", "up"], ["link", "add", DEVICE, "type", "veth", "peer", "name", PEER],
                 ["addr", "add", ADDRESS, "dev", DEVICE], ["link", "set", DEVICE, "up"], ["route", "add", "default", "dev", DEVICE]):
        proc = subprocess.run(["ip", *args], capture_output=True, text=True)
        if proc.returncode != 0:
            say(f"ip {' '.join(args)} failed: {proc.stderr.strip()}")
            return 1
    if reaches_off_machine():
        say(f"a connection to {PROBE[0]}:{PROBE[1]} got through inside the namespace; refusing to go on")
        return 1
    say(f"no route off this machine (network namespace: loopback and {DEVICE}, no carrier; "
        f"{PROBE[0]}:{PROBE[1]} unreachable); GOPROXY=off")
    os.execvpe(cmd[0], cmd, {**os.environ, MARKER: "1", "GOPROXY": "off"})
    return 1  # execvpe does not return


def _unshare_args() -> list[str] | None:
    """How to enter a new network namespace and make a veth pair in it here, or None."""
    if not shutil.which("unshare") or not shutil.which("ip"):
        return None
    for args in (["unshare", "-n"], ["unshare", "-rn"]):  # as root; else as root of a new user namespace
        if subprocess.run([*args, "ip", "link", "add", DEVICE, "type", "veth", "peer", "name", PEER], capture_output=True).returncode == 0:
            return args
    return None


def main(argv: list[str]) -> int:
    inside = argv[:1] == ["--inside"]
    if inside:
        argv = argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        say("usage: python -m tools.cluster.offline -- COMMAND [ARGS...]")
        return 2
    if inside:
        return _inside(argv)
    unshare = _unshare_args()
    if unshare is None:
        say("cannot make a network namespace here: `unshare -n` as root, or `unshare -rn` with user namespaces, and "
            "iproute2's `ip` with veth links are needed; the real-engine tier runs only where nothing can leave the machine")
        return 1
    # exec, not a child: signals (Ctrl-C, a CI timeout) reach the command as if it ran directly
    cmd = [*unshare, sys.executable, "-m", "tools.cluster.offline", "--inside", "--", *argv]
    os.environ[OUTER] = os.readlink("/proc/self/ns/net")
    os.execvp(cmd[0], cmd)
    return 1  # execvp does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
