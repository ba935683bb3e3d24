"""Pulumi entry point of the bootstrap project (bootstrap/Pulumi.yaml, program directory bootstrap/).

Pulumi runs this file with runpy.run_path("bootstrap"), which puts bootstrap/ (not the repository root) on
sys.path. Put the root there so `bootstrap` and `components` import as the tests import them.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from bootstrap.program import main

main()
