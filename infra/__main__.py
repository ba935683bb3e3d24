"""Pulumi entry point (Pulumi.yaml: main: infra).

Pulumi runs this file with runpy.run_path("infra"), which puts infra/ (not the project root) on
sys.path. Put the root there so `components` and `infra` import exactly as tests and tools import them.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from infra.program import main

main()
