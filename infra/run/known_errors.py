"""Errors a researcher's first programs hit, known by the words they print, with the one fix each (#74.3; pure).

The words come from the container's status: a run's program container has terminationMessagePolicy
FallbackToLogsOnError (components/manifests/runs.py), so when it fails Kubernetes keeps the end of its output
(at most 80 lines, 2 KiB) in `state.terminated.message`, which `why` reads after the logs are gone and `logs`
checks after printing them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional


@dataclass(frozen=True)
class KnownError:
    reason: str  # why's reason (docs/runs.md's table)
    says: str  # the words in the program's output
    summary: str
    fix: str


KNOWN = (
    # jax/_src/xla_bridge.py backends(): "Unable to initialize backend '{platform}': {err}" with JAX_PLATFORMS=proxy
    # and no proxy backend registered (pathwaysutils/_initialize.py initialize() registers it)
    KnownError("proxy-not-initialized", "Unable to initialize backend 'proxy'",
               "the program used JAX before the Pathways proxy backend was registered (JAX_PLATFORMS=proxy)",
               "call `import pathwaysutils; pathwaysutils.initialize()` before the first JAX call, with pathwaysutils "
               "installed in the image (pip install pathwaysutils), as docs/runs.md's day one shows"),
    KnownError("proxy-not-initialized", "No module named 'pathwaysutils'",
               "the program imports pathwaysutils, which its image does not have",
               "install pathwaysutils in the image (pip install pathwaysutils), or use the stack's run image (no --image)"),
)


def terminated_messages(pods: Iterable[dict[str, Any]]) -> list[str]:
    """Every terminated container's message (now or in its last state), in pod order."""
    out = []
    for p in pods:
        for s in (p.get("status") or {}).get("containerStatuses") or []:
            for state in (s.get("state") or {}, s.get("lastState") or {}):
                message = (state.get("terminated") or {}).get("message")
                if message:
                    out.append(str(message))
    return out


def match(texts: Iterable[str]) -> Optional[KnownError]:
    """The first known error any text says."""
    for text in texts:
        for known in KNOWN:
            if known.says in text:
                return known
    return None
