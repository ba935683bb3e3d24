"""The plan's pool sets (tpu7x dynamic slicing, docs/dynamic-slicing.md): where each workload's slices land.

For every pool set, the workloads that run on it, in the order Kueue admits them (higher priority first, then declared
order; each admitted before the next arrives), placed
as Kueue's topology-aware scheduling would place them (slice_placement.py): the sub-blocks and hosts each slice takes,
or why it waits; the hosts left free; and the time a reshape takes against a new node pool's (rollout.EXPECTED_MINUTES).
"""

from __future__ import annotations

from typing import Any, Optional

from components.model.capacity import dynamic_slicing as ds
from components.model.capacity.pools import RESERVATION_PATH, SliceGroup
from components.model.capacity.rollout import EXPECTED_MINUTES
from components.model.capacity.slice_placement import PoolSet
from components.model.common import PRIORITY_CLASSES
from components.model.resolved import ResolvedStack


def _ranges(hosts: list[int]) -> str:
    """0,1,2,5 -> 0-2,5"""
    out, start = [], None
    for i, h in enumerate(hosts):
        if start is None:
            start = h
        if i + 1 == len(hosts) or hosts[i + 1] != h + 1:
            out.append(str(start) if start == h else f"{start}-{h}")
            start = None
    return ",".join(out)


def placements(stack: ResolvedStack, group: SliceGroup) -> tuple[list[dict[str, Any]], int]:
    """The running workloads on one pool set, placed in declared order, and the hosts they leave free."""
    pool = PoolSet(group.count, group.forms_sub_slices, ds.topology_name(group.name), ds.flavor_name(group.name))
    out = []
    running = [w for w in stack.workloads if w.group is group and w.state == "running" and w.formed is not None]
    # Kueue's order (pkg/cache/queue/cluster_queue.go baseCompareFunc): higher priority first, then the earlier
    # created; the stack creates them in declared order
    for w in sorted(running, key=lambda w: -PRIORITY_CLASSES[w.priority][0]):
        assert w.formed is not None  # running, above
        p = pool.place(w.name, w.formed.topology, w.slices)
        slices = []
        for s in p.slices:
            by_cube: dict[int, list[int]] = {}
            for cube, host in s.hosts:
                by_cube.setdefault(cube, []).append(host)
            slices.append({"subBlocks": [group.sub_blocks[c] for c in s.cubes],
                           "hosts": [{"subBlock": group.sub_blocks[c], "hosts": _ranges(sorted(h))} for c, h in by_cube.items()]})
        out.append({"workload": w.name, "topology": w.formed.topology, "count": w.slices, "slices": slices, "waits": p.waits})
    return out, pool.free_hosts


def pool_sets_summary(stack: ResolvedStack) -> Optional[list[dict[str, Any]]]:
    groups = [g for g in stack.slices if g.dynamic]
    if not groups:
        return None
    out = []
    for g in groups:
        placed, free = placements(stack, g)
        m = RESERVATION_PATH.fullmatch(g.reservation or "")
        out.append({
            "group": g.name, "block": m["block"] if m else None, "subBlocks": list(g.sub_blocks), "subSlicing": g.forms_sub_slices,
            "hosts": g.count * ds.CUBE_HOSTS, "freeHosts": free, "placements": placed,
            "reshapeMinutes": EXPECTED_MINUTES["slice-reshape"], "nodePoolMinutes": EXPECTED_MINUTES["tpu-pool-multi-host"],
        })
    return out


def pool_set_notices(stack: ResolvedStack) -> list[str]:
    """What the stack leaves to the user: the in-cluster slice controller (docs/dynamic-slicing.md)."""
    return [f"pool set {g.name}: install the Kueue slice controller (GKE \"Use dynamic slicing\", docs/dynamic-slicing.md) "
            f"before its workloads: the stack does not, and until it runs the AdmissionCheck {ds.topology_name(g.name)} "
            f"stays inactive, which leaves the pool set's own ClusterQueue {ds.topology_name(g.name)} inactive: its "
            "workloads wait, the other slice groups' are admitted as usual"
            for g in stack.slices if g.dynamic and stack.kueue]


def pool_sets_text(s: Optional[list[dict[str, Any]]], table: Any) -> list[str]:
    if not s:
        return []
    lines = ["", "Pool sets (tpu7x dynamic slicing, docs/dynamic-slicing.md): each workload's slices as Kueue would place "
                 "them, in Kueue's order (priority, then as declared; each admitted before the next arrives; equally free cubes in the order listed):"]
    for g in s:
        lines.append(f"  {g['group']}: sub-blocks {', '.join(g['subBlocks'])} of block {g['block']} "
                     f"({g['hosts']} hosts; sub-slices {'on' if g['subSlicing'] else 'off'}); "
                     f"a reshape takes ~{g['reshapeMinutes']:g} min, a new node pool ~{g['nodePoolMinutes']:g} min")
        rows = [["workload", "topology", "slice", "sub-blocks: hosts"]]
        for p in g["placements"]:
            if p["waits"]:
                rows.append([p["workload"], f"{p['topology']} x{p['count']}", "-", f"waits: {p['waits']}"])
            for i, sl in enumerate(p["slices"]):
                rows.append([p["workload"], f"{p['topology']} x{p['count']}", str(i),
                             "; ".join(f"{h['subBlock']}: {h['hosts']}" for h in sl["hosts"])])
        lines += ["  " + r for r in table(rows)] if len(rows) > 1 else ["    no running workload on it"]
        lines.append(f"    free after them: {g['freeHosts']} of {g['hosts']} hosts")
    return lines
