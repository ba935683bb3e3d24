"""The controller releases a stack may install (#75.5), and how each is checked: pure data.

`real engines`: built from its Go module (tools/engines/control-plane) and run by the real-engine tier, whose
kubelet stand-in runs a controller's pod only when its image is that version (tools/cluster/local.py). `offline`: its chart and CRDs
fetched from its Go module (tools/engines/versions/<name>-<version>): the offline plan expands its own chart, and
the fast tier holds every object the example stacks render against its CRDs (tests/test_controller_versions.py).
The first of each is the default. A release outside the table is refused in one line: this product has not seen it.
Newer releases than these are not served by the module proxy this project builds from; they join the table when
they are, with the build and tier run that check them.
"""

from __future__ import annotations

REAL_ENGINES = "real engines"
OFFLINE = "offline"

TESTED: dict[str, dict[str, str]] = {
    "jobset": {"0.12.0": REAL_ENGINES, "0.11.0": OFFLINE},
    "kueue": {"0.19.2": REAL_ENGINES, "0.19.1": OFFLINE},
    "lws": {"0.9.0": REAL_ENGINES, "0.8.0": OFFLINE},
}
TITLES = {"jobset": "JobSet", "kueue": "Kueue", "lws": "LeaderWorkerSet"}


def default(name: str) -> str:
    return next(iter(TESTED[name]))


def refusal(name: str, version: str) -> str | None:
    """Why `version` of controller `name` is refused, or None."""
    if version in TESTED[name]:
        return None
    listed = ", ".join(f"{v} ({how})" for v, how in TESTED[name].items())
    return (f"{version} is not a {TITLES[name]} release this product has been tested with: {listed}; "
            "docs/operating.md, Controller versions")
