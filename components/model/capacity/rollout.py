"""How the stack's node pools come up without tripping GKE's limits on concurrent operations.

In 2023 GKE answered more than 5 node-pool operations in flight per cluster with 429 "Too many
operations: cluster ... hits the concurrent operations quota 5" (hashicorp/terraform-provider-google
#15205, #15579). Since then a GKE engineer wrote in #15579 that most node-pool operations run
concurrently, GKE's quotas page lists no such limit, and Google's own xpk creates 100 node pools at once
since February 2026 (AI-Hypercomputer/xpk PR #1068, up from 10). The provider Pulumi's gcp package is
built from still retries a 429 (GoogleCloudPlatform/magic-modules#8828) until the resource's create
timeout, which starts when Pulumi sends the request, and Pulumi starts every ready resource at once.

So the stack still orders its node pools in lanes, pool k waiting on pool k - concurrency, with the
default concurrency xpk uses (100): at most that many pool operations are in flight, each timeout starts
when its operation can start, and deletes (reverse dependency order) keep the same bound. The plan's
deploy time also gives the estimate under the 2023 quota of 5, for clusters where GKE still enforces it;
`cluster.nodePoolConcurrency: 5` restores that bound.
"""

from __future__ import annotations

import math
from typing import Optional

DEFAULT_CONCURRENCY = 100  # xpk since PR #1068 (Feb 2026)
LEGACY_GKE_QUOTA = 5  # the quota in GKE's 2023 429 text
MAX_CONCURRENCY = 1000
# Pulumi's Python SDK walks a resource's depends_on chain recursively when it registers it
# (pulumi/runtime/resource_cycle_breaker.py, one frame per resource); a lane of 1002 pools exceeds
# Python's recursion limit, 501 does not. Half of what is proven to work:
MAX_LANE_LENGTH = 250


def lane_predecessor(index: int, concurrency: int) -> Optional[int]:
    """The pool the index-th node pool (stack order) waits on, if any."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    return index - concurrency if index >= concurrency else None


def waves(pools: int, concurrency: int) -> int:
    """Sequential rounds of pool operations a create of `pools` node pools needs."""
    return math.ceil(pools / concurrency) if pools else 0


# Typical times, minutes: assumptions for the deploy-time estimate (infra/offline/critical_path.py) and the plan's
# reshape line, not figures GKE publishes. A multi-host TPU pool brings up and links all hosts of a slice; a
# flex-start pool is created empty. A slice reshaped on a pool set's provisioned cubes (dynamic slicing): GKE says
# dynamic slicing starts workloads "up to five times" faster (its dynamic-slicing concept page), so a fifth of a
# multi-host pool's, within the 3 minutes the slice controller gives a Slice to become Ready (--activation-timeout).
EXPECTED_MINUTES = {"cluster": 10.0, "cpu-pool": 4.0, "tpu-pool": 6.0, "tpu-pool-multi-host": 10.0, "empty-pool": 3.0,
                    "chart": 2.0, "slice-reshape": 2.0}
