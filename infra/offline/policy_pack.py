"""Build the policy pack as one self-contained folder for `pulumi policy publish`.

`pulumi policy publish DIR` archives only DIR, but the rules reuse the project's Pulumi-free domain
model (components/model, labels, type tokens, the JobSet label formula). This copies the pack and
exactly those modules into one folder, with an entry point that imports from that folder only:

    python -m infra.offline.policy_pack --out build/policy-pack
    pulumi policy publish build/policy-pack

`pulumi preview --policy-pack policies` (in the repository) keeps using policies/ directly.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from infra.offline.stackfile import PROJECT_ROOT

# The Pulumi-free modules the rules import (tests/test_policy_pack.py checks nothing else is needed).
DOMAIN_MODULES = (
    "components/__init__.py",
    "components/constants.py",
    "components/model",
    "components/manifests/__init__.py",
    "components/manifests/formed_slices.py",
    "components/manifests/jobset.py",
    "components/manifests/guardrails.py",
    "components/manifests/kueue.py",
    "components/manifests/kueue_api.py",
    "components/manifests/placement.py",
    "components/manifests/pod_security.py",
    "components/manifests/runs.py",
    "components/manifests/service_access.py",
    "components/manifests/storage.py",
)

ENTRY_POINT = '''"""Policy pack entry point (built by infra/offline/policy_pack.py): everything it imports is in this folder."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.rules import ALL_POLICIES  # noqa: E402

PolicyPack(name="pathways-gke", enforcement_level=EnforcementLevel.MANDATORY, policies=ALL_POLICIES)
'''


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def build(out: Path) -> Path:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in ("PulumiPolicy.yaml", "requirements.txt"):
        shutil.copy2(PROJECT_ROOT / "policies" / name, out / name)
    (out / "__main__.py").write_text(ENTRY_POINT)
    _copy(PROJECT_ROOT / "policies" / "__init__.py", out / "policies" / "__init__.py")
    _copy(PROJECT_ROOT / "policies" / "rules", out / "policies" / "rules")
    for module in DOMAIN_MODULES:
        _copy(PROJECT_ROOT / module, out / module)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.offline.policy_pack", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "build" / "policy-pack")
    args = parser.parse_args(argv)
    print(f"built the policy pack in {build(args.out)}; publish it with: pulumi policy publish {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
