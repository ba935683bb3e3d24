"""python -m tools.mutation: see harness.py."""

import sys

from tools.mutation.harness import main

sys.exit(main())
