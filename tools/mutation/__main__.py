"""python -m tools.mutation: see harness.py."""

import sys

from .harness import main

sys.exit(main())
