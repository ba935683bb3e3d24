"""How the stack's node pools come up without tripping GKE's limit on concurrent operations.

GKE runs one cluster-level operation, or one operation per node pool, at a time, and answers a cluster
with more operations in flight than its quota with 429 "Too many operations: cluster ... hits the
concurrent operations quota 5" (GKE, "Troubleshoot concurrent operations"; the error text as reported in
hashicorp/terraform-provider-google#15205 and #15579). The provider Pulumi's gcp package is built from
retries that 429 on node pool create/update/delete (GoogleCloudPlatform/magic-modules#8828, retry in
resource_container_node_pool.go) but only until the resource's create timeout, which starts when Pulumi
sends the request. Pulumi itself starts every ready resource at once (`--parallel` defaults to unbounded),
so 256 pools would all start their clocks together and the late ones time out in the queue.

So the stack orders its node pools in lanes: pool k waits on pool k - concurrency. At most `concurrency`
pool operations are in flight, each timeout starts when its operation can start, and deletes (run in
reverse dependency order) keep the same bound.
"""

from __future__ import annotations

import math
from typing import Optional

GKE_CONCURRENT_OPERATIONS = 5  # the quota in GKE's 429 text
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
