"""The regional vCPU quotas the CPU pools a stack makes draw on, at their largest (#75.3; Pulumi-free): the plan's
CPU pools table says them, `preflight` reads their limits (quota.cpu_quota_needs)."""

from __future__ import annotations

from components.model.capacity import machines
from components.model.capacity.quota import cpu_quota_needs
from components.model.resolved import ResolvedStack


def cpu_quota(stack: ResolvedStack) -> dict[str, int]:
    if stack.existing_cluster:
        return {}  # its pools are someone else's
    pools = [*([(stack.head_machine_type, stack.head_nodes)] if stack.head_node_pool is None else []),
             (stack.system_machine_type, stack.system_max_nodes),
             *([(stack.proxy_machine_type, stack.proxy_nodes)] if stack.proxy_machine_type else []),
             *((stack.head_machine_type, d.head_nodes) for d in stack.domains)]
    return cpu_quota_needs(pools, lambda m: machines.shape(m).vcpus)
