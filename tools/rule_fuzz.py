"""A generator of stack files aimed at the refusal rules of issue #76 (a plan that says OK can run): for every rule,
a generated stack that trips it and a near miss, one step away, that plans OK; per rule, the smallest stack that
trips it.

    .venv/bin/python -m tools.rule_fuzz [--stacks N] [--seed S] [--show RULE]

Stacks are drawn from a small genome (slice groups or pool sets, teams and their shares, workloads and serve
endpoints, a fleet manager's teams, file systems, engine flags), with numbers drawn around the edges the rules
judge. Each is judged by the real entry point (`python -m infra.offline plan`, in process): exit 0 is OK; exit 2's
`error:` lines and exit 1's policy violations are matched to the rules by their key and words. A near miss is the
tripping genome with one gene moved one step (a number by one, a name or location to another choice, one list
entry dropped; a value moved before an entry dropped) whose plan is OK. The smallest tripping stack is the one
with the fewest lines of YAML.

The rules and their matchers are RULES below; tests/test_rule_fuzz.py holds every rule to a trip and a near miss
within a fixed budget, so a rule that stops refusing, or starts refusing its near miss, fails the fast tier.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import random
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import yaml

ROOT = Path(__file__).resolve().parents[1]
# The example fleet's workers, copied beside a generated manager: their frozen copies (tests/fixtures/examples), which a
# team's edits to stacks/ never touch, as the fleet genome's group and teams are theirs
FLEET_WORKERS = ("fleet-east", "fleet-central")
EXAMPLES = ROOT / "tests" / "fixtures" / "examples" / "stacks"
V6E_ZONE, TPU7X_ZONE = "us-east5-b", "us-central1-c"
RESERVATION = "golden/reservationBlocks/block-a"
CONTROLLER_NAMESPACES = ("kueue-system", "jobset-system", "lws-system", "pathways")


@dataclass(frozen=True)
class Rule:
    id: str
    issue: str
    what: str
    matches: Callable[[str], bool]


def _has(*words: str, key: str = "") -> Callable[[str], bool]:
    pattern = re.compile(key) if key else None
    return lambda line: all(w in line for w in words) and (pattern is None or bool(pattern.search(line)))


RULES: tuple[Rule, ...] = (
    Rule("ceiling-team", "#76.1", "a workload over its team's ClusterQueue ceiling",
         _has("Kueue would never admit it", "but team ", key=r"workloads\[\d+\]\.slices")),
    Rule("ceiling-stack", "#76.1", "a workload over the stack's ClusterQueue ceiling (the teams' shares taken out)",
         _has("Kueue would never admit it", "but the stack's ClusterQueue", key=r"workloads\[\d+\]\.slices")),
    Rule("ceiling-serve", "#76.1", "a serve endpoint whose autoscaler maximum its queue can never hold",
         _has("Kueue would never admit it", key=r"serve\.(autoscale\.maxReplicas|replicas)")),
    Rule("team-namespace", "#76.2", "a team namespace that is one the stack makes for itself",
         _has("namespace", key=r"teams\[\d+\]\.namespace")),
    Rule("run-queue-name", "#76.2", "a team workload named like its team's run queue (two LocalQueues of one name)",
         _has("a workload's LocalQueue takes its name")),
    Rule("fleet-worker-twice", "#76.2", "a team listing one fleet worker twice (MultiKueueConfig clusters must be unique)",
         _has("is listed twice; name each worker once", key=r"teams\[\d+\]\.workers")),
    Rule("sub-block-shared", "#76.2", "two pool sets naming one reservation sub-block",
         _has("a sub-block is one 16-VM cube", key=r"slices\[\d+\]\.subBlocks")),
    Rule("vllm-quantization", "#76.3", "a vLLM quantization vLLM does not take on TPU, given in serve.extraArgs",
         _has("is not one vLLM takes on TPU", key=r"serve\.extraArgs")),
    Rule("xla-flag-twice", "#76.3", "an XLA flag given twice", _has("is given twice", key=r"xlaFlags")),
    Rule("xla-flag-typed", "#76.3", "an XLA flag a typed key sets (hloDump)", _has("is set by the stack from hloDump", key=r"xlaFlags")),
    Rule("lustre-region", "#76.4", "a Managed Lustre file system located in a region",
         _has("a Managed Lustre instance lives in a zone", key=r"storage\.fileSystems")),
)


# --- the genome ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Group:
    name: str
    count: int = 2  # slices (a pool set: one sub-block each)
    sub_blocks: tuple[str, ...] = ()  # a pool set of tpu7x-128 cubes when given


@dataclass(frozen=True)
class Team:
    name: str
    namespace: str = ""  # "" the default (team-<name>)
    owned: int = 0  # slices of the first group
    borrow: int = -1  # -1: no limit
    lend: int = -1  # -1: no limit
    workers: tuple[str, ...] = ()  # on a fleet manager


@dataclass(frozen=True)
class Workload:
    name: str
    slices: int = 1
    group: int = 0  # which slice group (an index; the first when out of range)
    team: str = ""
    serve: int = 0  # > 0: a vLLM serve endpoint autoscaling to this many replicas
    quantization: str = ""  # given in serve.extraArgs
    xla_flags: tuple[str, ...] = ()
    hlo_dump: bool = False


@dataclass(frozen=True)
class FileSystem:
    name: str
    location: str  # a zone or a region


@dataclass(frozen=True)
class Genome:
    pool_sets: bool = False
    groups: tuple[Group, ...] = (Group("main"),)
    teams: tuple[Team, ...] = ()
    workloads: tuple[Workload, ...] = ()
    file_systems: tuple[FileSystem, ...] = ()
    fleet_manager: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


CHOICES: dict[str, tuple[Any, ...]] = {
    "namespace": ("", "team-x", *CONTROLLER_NAMESPACES),
    "quantization": ("", "fp8", "gptq", "awq", "compressed-tensors"),
    "location": ("us-east5-b", "us-east5", "us-east5-a"),
    "xla_flags": ((), ("--xla_tpu_enable_latency_hiding_scheduler=true",),
                  ("--xla_tpu_enable_latency_hiding_scheduler=true", "--xla_tpu_enable_latency_hiding_scheduler=false"),
                  ("--xla_dump_to=/tmp/hlo",)),
    "workers": ((), ("east",), ("east", "central"), ("east", "east")),
    "name": ("train", "serve", "runs-team-a", "runs-pathways", "exp"),
}
INTS = {"count": (1, 4), "owned": (0, 4), "borrow": (-1, 3), "lend": (-1, 3), "slices": (1, 5), "serve": (0, 4), "group": (0, 1)}
SERVE_VERSION = "jax-0.11.2"  # the pinned vLLM engine's (v0.32.0's tpu-inference requires it)


def random_genome(rng: random.Random) -> Genome:
    pool_sets = rng.random() < 0.2
    if pool_sets:
        subs = [f"sub-{i}" for i in range(4)]
        groups = tuple(Group(f"cubes{i}", 0, tuple(rng.sample(subs, rng.randint(1, 2)))) for i in range(rng.randint(1, 2)))
        return Genome(True, groups, workloads=(Workload("train", 1),))
    if rng.random() < 0.1:  # a fleet manager over the example's workers: its group and teams are theirs
        return Genome(groups=(Group("train"),), fleet_manager=True,
                      teams=(Team("vision", workers=rng.choice((("east",), ("east", "east")))),  # central has no vision team
                             Team("language", workers=rng.choice(CHOICES["workers"]))))
    fleet = False
    groups = tuple(Group(n, rng.randint(*INTS["count"])) for n in ("main", "extra")[:rng.randint(1, 2)])
    left = groups[0].count  # the teams' shares mostly fit the group: a share over it is another rule's
    teams = []
    for n in ("a", "b")[:rng.randint(0, 2)]:
        owned = rng.randint(0, max(0, left))
        left -= owned
        lend = rng.choice((-1, 0, *range(0, owned + 1)))  # a team lends only what it owns: more is another rule's
        teams.append(Team(n, rng.choice(CHOICES["namespace"]) if rng.random() < 0.3 else "", owned,
                          rng.choice((-1, -1, 0, 1, 2)), lend, rng.choice(CHOICES["workers"]) if fleet else ()))
    workloads = []
    for n in range(0 if fleet else rng.randint(0, 2)):
        group = rng.randrange(len(groups))
        most = groups[group].count + (rng.random() < 0.1)  # past the group's count: another rule's, now and then
        serve = rng.randint(1, most) if rng.random() < 0.25 else 0
        workloads.append(Workload(
            rng.choice(CHOICES["name"]) + ("" if n == 0 else f"-{n}"), rng.randint(1, most), group,
            rng.choice(["", "", *(t.name for t in teams)]) if not serve else "", serve,
            rng.choice(CHOICES["quantization"]) if serve else "",
            rng.choice(CHOICES["xla_flags"]) if not serve else (), rng.random() < 0.3 and not serve))
    fs = tuple(FileSystem("lfs", rng.choice(CHOICES["location"])) for _ in range(rng.random() < 0.2))
    return Genome(False, groups, tuple(teams), tuple(workloads), fs, fleet)


def neighbours(g: Genome, drops: bool = True) -> Iterator[Genome]:
    """Every genome one step away: one number by one, one choice to another, one value of a list dropped, and (with
    `drops`) one whole entry (a group, team, workload or file system) dropped."""
    def variants(obj: Any) -> Iterator[Any]:
        if isinstance(obj, tuple) and obj and all(dataclasses.is_dataclass(x) for x in obj):
            for i in range(len(obj)):
                if drops:
                    yield obj[:i] + obj[i + 1:]
                for v in variants(obj[i]):
                    yield obj[:i] + (v,) + obj[i + 1:]
            return
        if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
            return
        for f in dataclasses.fields(obj):
            if not f.compare:
                continue
            value = getattr(obj, f.name)
            if isinstance(value, bool):
                yield dataclasses.replace(obj, **{f.name: not value})
            elif isinstance(value, int) and f.name in INTS:
                lo, hi = INTS[f.name]
                for step in (-1, 1):
                    if lo <= value + step <= hi or (f.name == "count" and value + step >= 1):
                        yield dataclasses.replace(obj, **{f.name: value + step})
            elif f.name in CHOICES:
                for other in CHOICES[f.name]:
                    if other != value:
                        yield dataclasses.replace(obj, **{f.name: other})
            elif isinstance(value, tuple) and value and not dataclasses.is_dataclass(value[0]):
                for i in range(len(value)):
                    yield dataclasses.replace(obj, **{f.name: value[:i] + value[i + 1:]})
            elif isinstance(value, tuple):
                for v in variants(value):
                    yield dataclasses.replace(obj, **{f.name: v})
    yield from variants(g)


# --- a genome as a stack file --------------------------------------------------------------------------------------

def stack_config(g: Genome) -> dict[str, Any]:
    """The genome as a stack file's `config:` mapping."""
    zone = TPU7X_ZONE if g.pool_sets else V6E_ZONE
    cfg: dict[str, Any] = {"gcp:project": "fuzz-proj-123", "gcp:region": zone.rsplit("-", 1)[0], "gcp:zone": zone,
                           "pathways:pathwaysVersion": "jax-0.9.0"}
    if g.pool_sets:
        cfg["pathways:cluster"] = {"releaseChannel": "RAPID"}
        cfg["pathways:slices"] = [{"name": s.name, "tpu": "tpu7x-128", "reservation": RESERVATION, "subBlocks": list(s.sub_blocks)}
                                  for s in g.groups]
    elif g.fleet_manager:  # a manager's groups name the TPU only: its workers hold the slices
        cfg["pathways:slices"] = [{"name": s.name, "tpu": "v6e-16"} for s in g.groups]
    else:
        cfg["pathways:slices"] = [{"name": s.name, "tpu": "v6e-4", "count": s.count} for s in g.groups]
    if any(w.serve for w in g.workloads):
        cfg["pathways:pathwaysVersion"] = SERVE_VERSION
    first = g.groups[0].name if g.groups else "main"
    if g.teams:
        cfg["pathways:cluster"] = {"securityGroup": "gke-security-groups@example.com"}
        cfg["pathways:runs"] = {"submitters": [{"name": "platform@example.com"}]}
        teams = []
        for t in g.teams:
            team: dict[str, Any] = {"name": t.name, "submitters": [{"name": f"{t.name}@example.com"}]}
            if t.namespace:
                team["namespace"] = t.namespace
            if t.owned or t.borrow >= 0 or t.lend >= 0:
                share: dict[str, Any] = {"slices": t.owned}
                for key, value in (("borrow", t.borrow), ("lend", t.lend)):
                    if value >= 0:
                        share[key] = value
                team["slices"] = {first: share}
            if t.workers:
                team["workers"] = list(t.workers)
            teams.append(team)
        cfg["pathways:teams"] = teams
    if g.fleet_manager:
        cfg["pathways:fleet"] = {"role": "manager", "workers": [{"name": "east", "stack": "organization/pathways/fleet-east"},
                                                                {"name": "central", "stack": "organization/pathways/fleet-central"}]}
        cfg.setdefault("pathways:runs", {"submitters": [{"name": "platform@example.com"}]})
        cfg.setdefault("pathways:cluster", {"securityGroup": "gke-security-groups@example.com"})
    workloads = []
    for w in g.workloads:
        if g.pool_sets:
            workloads.append({"name": w.name, "mode": "interactive", "topology": "2x2x2", "sliceGroup": first})
            continue
        out: dict[str, Any] = {"name": w.name}
        if len(g.groups) > 1:
            out["sliceGroup"] = g.groups[w.group if w.group < len(g.groups) else 0].name
        if w.serve:
            serve: dict[str, Any] = {"model": "meta-llama/Llama-3.1-8B-Instruct", "autoscale": {"minReplicas": 1, "maxReplicas": w.serve, "metric": "queue", "target": 4}}
            if w.quantization:
                serve["extraArgs"] = [f"--quantization={w.quantization}"]
            out.update(mode="serve", serve=serve)
        else:
            out.update(image="example.com/trainer:1", slices=w.slices)
            if w.xla_flags:
                out["xlaFlags"] = list(w.xla_flags)
            if w.hlo_dump:
                out["hloDump"] = True
        if w.team:
            out["team"] = w.team
        workloads.append(out)
    if workloads:
        cfg["pathways:workloads"] = workloads
    if g.file_systems:
        cfg["pathways:storage"] = {"fileSystems": [{"name": f.name, "lustre": "lustre-1", "filesystem": "lfs", "ip": "10.20.0.3",
                                                    "capacity": "18000Gi", "location": f.location} for f in g.file_systems]}
    return cfg


def size(g: Genome) -> int:
    return len(yaml.safe_dump({"config": stack_config(g)}).splitlines())


# --- judging --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    code: int
    lines: tuple[str, ...]
    rules: frozenset[str]

    @property
    def ok(self) -> bool:
        return self.code == 0


class Judge:
    """Judges generated stacks. `model` is the stack model's refusals alone (components.model.config.load, which
    every rule here is part of: milliseconds); `plan` is the real entry point (`python -m infra.offline plan`, in
    process, in a scratch folder beside the fleet's example worker stacks), which a trip and a near miss are confirmed
    by: a trip prints its rule's line, a near miss exits 0."""

    def __init__(self) -> None:
        from infra.offline.__main__ import main

        self._main = main
        self._dir = Path(tempfile.mkdtemp(prefix="rule-fuzz-"))
        for w in FLEET_WORKERS:
            shutil.copy(EXAMPLES / f"Pulumi.{w}.yaml", self._dir / f"Pulumi.{w}.yaml")
        self._models: dict[str, Verdict] = {}
        self._plans: dict[str, Verdict] = {}
        self.plans = 0

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    @staticmethod
    def _verdict(code: int, lines: tuple[str, ...]) -> Verdict:
        return Verdict(code, lines, frozenset(r.id for r in RULES for line in lines if r.matches(line)))

    def model(self, g: Genome) -> Verdict:
        from components.model.config import load
        from components.model.errors import ConfigError
        from infra.offline.stackfile import flatten, raw_values

        text = yaml.safe_dump(stack_config(g), sort_keys=True)
        if text not in self._models:
            flat, secrets = flatten(stack_config(g))
            try:
                load(raw_values(flat), "fuzz", frozenset(secrets))
                verdict = self._verdict(0, ())
            except ConfigError as e:
                verdict = self._verdict(2, tuple(f"error: {p}" for p in e.problems))
            self._models[text] = verdict
        return self._models[text]

    def plan(self, g: Genome) -> Verdict:
        text = yaml.safe_dump({"config": stack_config(g)}, sort_keys=False)
        if text not in self._plans:
            path = self._dir / "Pulumi.fuzz.yaml"
            path.write_text(text)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = self._main(["plan", "--config", str(path)])
            self.plans += 1
            lines = tuple(line for line in err.getvalue().splitlines() if line.startswith("error: "))
            if code == 1:  # the policy pack's violations, each a message line under its [level] line
                lines += tuple(line.strip() for line in out.getvalue().splitlines() if line.startswith("      "))
            self._plans[text] = self._verdict(code, lines)
        return self._plans[text]


@dataclass
class Found:
    rule: Rule
    trips: list[Genome] = field(default_factory=list)
    """clean trips by the model, smallest first (a pydantic refusal can hide a later check's: not every one has a
    near miss)"""
    trip: Optional[Genome] = None
    trip_lines: int = 0
    message: str = ""
    near: Optional[Genome] = None


def _clean(verdict: Verdict) -> Optional[Rule]:
    """The rule a verdict trips alone (each of its lines is that rule's), or None."""
    if len(verdict.rules) != 1:
        return None
    rule = next(r for r in RULES if r.id in verdict.rules)
    return rule if all(rule.matches(line) for line in verdict.lines) else None


def search(stacks: int, seed: int, judge: Judge, keep: int = 8, confirm: bool = True) -> dict[str, Found]:
    """Draw `stacks` genomes and keep each rule's `keep` smallest clean trips; each rule's trip is then the smallest
    of them that the entry point refuses for that rule alone and that has a near miss (the smallest neighbour whose
    plan is OK). Without `confirm`, the model's smallest clean trips only (no plans)."""
    rng = random.Random(seed)
    found = {r.id: Found(r) for r in RULES}
    for _ in range(stacks):
        g = random_genome(rng)
        rule = _clean(judge.model(g))
        if rule is not None and g not in found[rule.id].trips:
            trips = found[rule.id].trips
            trips.append(g)
            trips.sort(key=size)
            del trips[keep:]
    for f in found.values():
        if not confirm:
            f.trip = f.trips[0] if f.trips else None
            continue
        for trip in f.trips:
            planned = judge.plan(trip)
            if _clean(planned) is not f.rule:
                continue  # the entry point says more (or otherwise): not this rule's trip alone
            # a value moved first (the rule's own edge: one slice less, a zone for a region); an entry dropped only
            # where no value move plans OK
            near = next((n for candidates in (neighbours(trip, drops=False), neighbours(trip))
                         for n in sorted(candidates, key=size) if judge.model(n).ok and judge.plan(n).ok), None)
            if f.trip is None:
                f.trip, f.trip_lines, f.message = trip, size(trip), planned.lines[0]
            if near is not None:
                f.trip, f.trip_lines, f.message, f.near = trip, size(trip), planned.lines[0], near
                break
    return found


def report(found: dict[str, Found]) -> str:
    rows = []
    for f in found.values():
        trip = f"{f.trip_lines} lines" if f.trip else "NOT TRIPPED"
        near = "a near miss plans OK" if f.near else ("NO NEAR MISS" if f.trip else "-")
        rows.append(f"{f.rule.issue:7} {f.rule.id:20} {trip:12} {near:22} {f.message[:110]}")
    return "\n".join(rows)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.rule_fuzz", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--stacks", type=int, default=400)
    p.add_argument("--seed", type=int, default=76)
    p.add_argument("--show", help="print this rule's smallest tripping stack and its near miss")
    args = p.parse_args(argv)
    judge = Judge()
    try:
        found = search(args.stacks, args.seed, judge)
    finally:
        judge.close()
    print(report(found))
    print(f"{args.stacks} generated stacks, {judge.plans} plans")
    if args.show:
        f = found[args.show]
        for title, g in (("trips it", f.trip), ("near miss", f.near)):
            if g is not None:
                print(f"--- {title}:\n{yaml.safe_dump({'config': stack_config(g)}, sort_keys=False)}")
    return 0 if all(f.trip and f.near for f in found.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
