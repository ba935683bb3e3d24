"""Where Kueue's topology-aware scheduling puts each slice on a pool set, predicted offline (Pulumi-free).

The workload's worker PodSet asks for one block (podset-required-topology) and pieces of `piece_hosts` pods each in one
partition (podset-slice-required-topology, podset-slice-size): a sub-slice is one piece, a super-slice one piece per
cube. This is Kueue v0.19.2's BestFit placement for that request (pkg/cache/scheduler/tas_flavor_snapshot.go:
fillInCounts, findLevelWithFitDomains, updateCountsToMinimumGeneric, sortedDomains, buildAssignment), on hosts that
each take one worker (a worker asks for all 4 chips of its VM):
- counts: a domain's podCount is its free hosts; at the slice level sliceCount = podCount // piece_hosts, above it the
  sum of its children's, below it 0;
- first the flavor's quota (the pool set's chips): more chips than are free waits "insufficient unused quota";
- the block must hold every piece (required), else the workload waits: "doesn't allow to fit";
- level by level down to the slice level, the chosen domains' children are sorted (sliceCount descending, podCount
  ascending, then label values) and take pieces greedily, the last one best-fit (the first domain with the fewest
  pieces that still hold the rest); below it each domain hands its pods to its children the same way, one by one;
- the assignment lists the hosts by label values; Job j of the JobSet takes the j-th run of hosts, and the slice
  controller makes Slice j of the j-th run of partitions.

Where domains tie, Kueue orders them by their label values: GKE's partition IDs, which the plan cannot know. The
prediction orders them as the sub-blocks are declared, and hosts in a cube by their index (the tier's partition IDs
sort so); on GKE a tie may go to an equally free cube or partition instead. With sub-slices off, Kueue orders a cube's
hosts by hostname: which pod of a Job runs on which host of its cubes may differ, its cubes do not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from components.model.capacity import dynamic_slicing as ds


@dataclass
class _Domain:
    path: tuple[int, ...]  # (cube, partition per level..., host) indexes: the order of their label values
    children: list["_Domain"] = field(default_factory=list)
    host: Optional[tuple[int, int]] = None  # (cube, host) for a leaf
    pods: int = 0
    pieces: int = 0


@dataclass(frozen=True)
class FormedSlice:
    """One slice of a workload: the cubes and hosts (cube index, host index) it takes."""

    cubes: tuple[int, ...]
    hosts: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Placement:
    """A workload's slices on the pool set, or why it waits."""

    workload: str
    topology: str
    slices: tuple[FormedSlice, ...] = ()
    waits: Optional[str] = None
    """Kueue's reason when the pool set cannot hold it now: "... doesn't allow to fit ..."."""


class PoolSet:
    """The free hosts of a pool set's cubes, as Kueue's TAS cache counts them."""

    def __init__(self, cubes: int, sub_slicing: bool, topology_name: str = "pool-set", flavor: str = "pool-set"):
        self.cubes = cubes
        self.shapes = ds.partition_shapes(sub_slicing)
        self.topology_name = topology_name
        self.flavor = flavor
        self.used: set[tuple[int, int]] = set()

    @property
    def free_hosts(self) -> int:
        return self.cubes * ds.CUBE_HOSTS - len(self.used)

    def _tree(self) -> _Domain:
        """block -> cube -> each sub-slice partition -> host, with every host's free pod."""
        block = _Domain(path=())
        for cube in range(self.cubes):
            node = _Domain(path=(cube,))
            block.children.append(node)
            parents: dict[tuple[int, ...], _Domain] = {(): node}
            for shape in self.shapes[1:]:
                level: dict[tuple[int, ...], _Domain] = {}
                for host in range(ds.CUBE_HOSTS):
                    chain = tuple(ds.partition_index(host, s) for s in self.shapes[1:self.shapes.index(shape) + 1])
                    if chain not in level:
                        d = _Domain(path=(cube, *chain))
                        parents[chain[:-1]].children.append(d)
                        level[chain] = d
                parents = level
            for host in range(ds.CUBE_HOSTS):
                chain = tuple(ds.partition_index(host, s) for s in self.shapes[1:])
                leaf = _Domain(path=(cube, *chain, host), host=(cube, host))
                parents[chain].children.append(leaf)
        return block

    def place(self, workload: str, topology: str, count: int) -> Placement:
        """Place `count` slices of `topology` (a legal SliceShape) and keep their hosts used."""
        shape = ds.SliceShape(topology)
        piece = shape.piece_hosts
        needed = count * (shape.cubes or 1)
        # Kueue checks quota before placement: the flavor's quota is the pool set's chips
        chips, free = count * shape.chips, self.free_hosts * ds.CHIPS_PER_HOST
        if chips > free:
            return Placement(workload, topology, waits=f"insufficient unused quota for google.com/tpu in flavor {self.flavor}, "
                                                        f"{chips - free} more needed")
        slice_level = 1 + self.shapes.index(shape.partition)  # block is level 0, the cube level 1
        block = self._tree()
        depth = len(self.shapes) + 1  # the host level's index
        _fill(block, 0, slice_level, depth, piece, self.used)
        if block.pieces < needed:
            fit = block.pieces
            unit = "slice"
            name = f'"{self.topology_name}"'  # as Kueue quotes it (%q)
            reason = (f"topology {name} doesn't allow to fit any of {needed} {unit}(s)" if fit == 0 else
                      f"topology {name} allows to fit only {fit} out of {needed} {unit}(s)")
            return Placement(workload, topology, waits=reason)
        _take(block, needed, piece)  # the one block takes them all
        chosen = [block]
        level = 0
        while level < slice_level:
            chosen = _consume(_sorted([c for d in chosen for c in d.children]), needed, piece)
            level += 1
        while level < depth:
            nxt = []
            for d in chosen:
                nxt += _consume_pods(_sorted(d.children), d.pods)
            chosen = nxt
            level += 1
        hosts = sorted((d for d in chosen if d.pods > 0), key=lambda d: d.path)
        per_slice = shape.hosts
        slices = []
        for j in range(count):
            run = [d.host for d in hosts[j * per_slice:(j + 1) * per_slice] if d.host is not None]
            slices.append(FormedSlice(cubes=tuple(dict.fromkeys(c for c, _ in run)), hosts=tuple(run)))
        self.used.update(h for s in slices for h in s.hosts)
        return Placement(workload, topology, slices=tuple(slices))


def _fill(d: _Domain, level: int, slice_level: int, depth: int, piece: int, used: set[tuple[int, int]]) -> None:
    if level == depth:
        assert d.host is not None
        d.pods = 0 if d.host in used else 1
        d.pieces = 0
        return
    for c in d.children:
        _fill(c, level + 1, slice_level, depth, piece, used)
    d.pods = sum(c.pods for c in d.children)
    if level == slice_level:
        d.pieces = d.pods // piece
    elif level < slice_level:
        d.pieces = sum(c.pieces for c in d.children)
    else:
        d.pieces = 0  # below the slice level Kueue counts no pieces


def _sorted(domains: list[_Domain]) -> list[_Domain]:
    return sorted(domains, key=lambda d: (-d.pieces, d.pods, d.path))


def _take(d: _Domain, pieces: int, piece: int) -> None:
    d.pieces, d.pods = pieces, pieces * piece


def _consume(domains: list[_Domain], needed: int, piece: int) -> list[_Domain]:
    """updateCountsToMinimumGeneric in slice units: greedy, the last domain best-fit."""
    out: list[_Domain] = []
    remaining = needed
    for i, d in enumerate(domains):
        if d.pieces >= remaining:
            d = _best_fit(domains[i:], remaining, lambda x: x.pieces)
            _take(d, remaining, piece)
            out.append(d)
            return out
        _take(d, d.pieces, piece)
        remaining -= d.pieces
        out.append(d)
    raise AssertionError("the block held every piece, so its cubes do")


def _consume_pods(domains: list[_Domain], count: int) -> list[_Domain]:
    """The same one pod at a time, below the slice level."""
    out: list[_Domain] = []
    remaining = count
    for i, d in enumerate(domains):
        if d.pods >= remaining:
            d = _best_fit(domains[i:], remaining, lambda x: x.pods)
            d.pods = remaining
            out.append(d)
            return out
        remaining -= d.pods
        out.append(d)
    raise AssertionError("a domain handed out more pods than its children hold")


def _best_fit(domains: list[_Domain], needed: int, count) -> _Domain:
    """findBestFitDomainBy: the first domain with the smallest count that still holds `needed`."""
    best, best_count = domains[0], None
    for d in domains:
        n = count(d)
        if n >= needed and (best_count is None or n < best_count):
            best, best_count = d, n
    return best
