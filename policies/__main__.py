"""Policy pack entry point: `pulumi preview --policy-pack policies`.

Only builds the PolicyPack (which starts the analyzer's gRPC server and never returns outside the
engine); the rules live in importable modules that tests and the offline engine call directly.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from pulumi_policy import EnforcementLevel, PolicyPack

from policies.rules import ALL_POLICIES

PolicyPack(
    name="pathways-gke",
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=ALL_POLICIES,
)
