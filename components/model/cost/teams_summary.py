"""The plan's teams table (pathways:teams, docs/teams.md): each team's slices per group, owned and borrowable, its
weight and budget, the monthly cost of its owned slices at full use, and the slices it holds when every team wants
all of them (fair sharing's equilibrium: teams.expected_shares)."""

from __future__ import annotations

from typing import Any, Optional

from components.constants import HEAD_ROLE, ROLE_LABEL
from components.model.capacity.queue_shares import ceiling, stack_queues
from components.model.cost.pricing import HOURS_PER_MONTH, tpu_chip_price
from components.model.resolved import QUEUE, ResolvedStack
from components.model.workloads.teams import Team, expected_shares


def teams_summary(stack: ResolvedStack) -> Optional[dict[str, Any]]:
    if not stack.teams:
        return None
    unowned = {g.name: stack.group_slices(g) - stack.team_owned(g) for g in stack.slices}

    def lists(t: Team, group: str) -> bool:
        """Whether the team's queue lists the group: its isolation domain's groups, or every group of none."""
        d = stack.group_domain(group)
        return (d.name if d else None) == t.isolation_domain

    contention = {g.name: expected_shares(max(0, unowned[g.name]), [
        (t.name, t.slices[g.name].slices if g.name in t.slices else 0,
         t.slices[g.name].borrow if g.name in t.slices else None, t.weight) for t in stack.teams if lists(t, g.name)])
        for g in stack.slices}
    queues = stack_queues(stack.slices, stack.teams, QUEUE, {g.name: stack.group_slices(g) for g in stack.slices})
    root_of = {t.cohort: QUEUE for t in stack.teams if t.cohort}
    teams = []
    for t in stack.teams:
        groups, monthly, priced = [], 0.0, True
        chips = stack.owned_chips(t)
        for g in stack.slices:
            if not lists(t, g.name):
                groups.append({"group": g.name, "listed": False})
                continue
            share = t.slices.get(g.name)
            owned = share.slices if share else 0
            groups.append({"group": g.name, "listed": True, "owned": owned, "borrow": share.borrow if share else None,
                           "lend": share.lend if share else None, "underContention": round(contention[g.name][t.name], 2),
                           # the most one of its workloads can hold, nothing else running (admission_checks' bound)
                           "ceiling": None if g.dynamic else ceiling(queues, t.cluster_queue, g.name, root_of).slices})
            price, _ = tpu_chip_price(g.tpu.family, g.capacity, stack.prices)
            if owned and price is None:
                priced = False
            monthly += owned * g.tpu.chips * (price or 0) * HOURS_PER_MONTH
        teams.append({
            "name": t.name, "namespace": t.team_namespace, "clusterQueue": t.cluster_queue, "runQueue": stack.team_run_queue(t),
            "cohort": t.cohort, "weight": t.weight, "priority": t.priority, "submitters": [s.name for s in t.submitters],
            "isolationDomain": t.isolation_domain,
            "groups": groups, "ownedChips": chips, "chipHoursPerMonthOwned": chips * HOURS_PER_MONTH,
            "monthlyAtFullOwnedUse": round(monthly, 2) if priced else None, "budgetChipHoursPerMonth": t.chip_hours_per_month,
            # who reads what (#74.1): the team's runs' account in its namespace, on each of its buckets
            "buckets": [{"name": b.name, "readOnly": b.read_only} for b in t.buckets],
        })
    return {"teams": teams, "fairSharing": True,
            "unowned": [{"group": g, "slices": n, "isolationDomain": d.name if (d := stack.group_domain(g)) else None}
                        for g, n in unowned.items()],
            # each domain's own identity, pools and bucket (isolation.py): who holds what
            "isolationDomains": [{"name": d.name, "teams": list(d.teams), "groups": list(d.groups), "headPool": d.head_pool,
                                  "nodeServiceAccount": d.node_account_id, "bucket": d.bucket_name,
                                  "artifactsBucket": d.artifacts_bucket_name} for d in stack.domains]}


def teams_text(s: Optional[dict[str, Any]], table: Any, money: Any) -> list[str]:
    if not s:
        return []
    lines = ["", "Teams (docs/teams.md): owned slices (+ at most this many borrowed; 'any' when unlimited) per group, the "
                 "most one workload can hold (max), and what each holds when every team wants all (fair sharing by weight):"]
    groups = [g["group"] for g in s["teams"][0]["groups"]]
    domains = bool(s.get("isolationDomains"))
    rows = [["team", "namespace", *(["isolation"] if domains else []), *groups, "weight", "budget chip-h/month", "owned at full use/month"]]
    for t in s["teams"]:
        cells = [f"{g['owned']} +{'any' if g['borrow'] is None else g['borrow']} max {g['ceiling']} ~{g['underContention']:g}"
                 if g["listed"] else "-" for g in t["groups"]]
        if domains:
            cells.insert(0, t["isolationDomain"] or "shared")
        budget = "-" if t["budgetChipHoursPerMonth"] is None else f"{t['budgetChipHoursPerMonth']:,}"
        cost = "no price" if t["monthlyAtFullOwnedUse"] is None else money(t["monthlyAtFullOwnedUse"])
        rows.append([t["name"], t["namespace"], *cells, f"{t['weight']:g}", budget, f"{t['chipHoursPerMonthOwned']:,} chip-h, {cost}"])
    lines += table(rows)
    lines.append("  the stack's own queue keeps " + ", ".join(f"{u['slices']} of {u['group']}" for u in s["unowned"] if not u["isolationDomain"])
                 + " and lends them; a team's owned slices lent while idle come back when it needs them (preemption)")
    for d in s.get("isolationDomains", []):
        lines.append(f"  isolation domain {d['name']} ({', '.join(d['teams'])}): groups {', '.join(d['groups'])} and head pool "
                     f"{d['headPool']} run as {d['nodeServiceAccount']}, its cache and artifacts in gs://{d['bucket']} and "
                     f"gs://{d['artifactsBucket']}; its teams borrow from each other only ('-': a group its queues do not list)")
    for t in s["teams"]:
        if t["buckets"]:
            lines.append(f"  {t['name']}'s runs mount: " + ", ".join(f"gs://{b['name']} ({'read' if b['readOnly'] else 'read-write'})"
                                                                   for b in t["buckets"]) + "; no other team's runs can")
    over = [t["name"] for t in s["teams"] if t["budgetChipHoursPerMonth"] is not None and t["chipHoursPerMonthOwned"] > t["budgetChipHoursPerMonth"]]
    if over:
        lines.append(f"  owned slices used all month exceed the budget of: {', '.join(over)}")
    return lines


def teams_notices(stack: ResolvedStack) -> list[str]:
    """What teams are not (security #73.2): teams that share nodes act as one node service account."""
    shared = [t.name for t in stack.teams if t.isolation_domain is None]
    out = []
    if shared:
        out.append(f"team{'s' if len(shared) > 1 else ''} {', '.join(shared)}: a quota boundary, not a security boundary: "
                   "their runs and the stack's own use the host network on the same pools and act as their one node "
                   "service account, so a member of one can read the others' scratch and artifacts objects and reach their "
                   "Pathways servers; give teams that must not trust each other an isolationDomain (docs/teams.md, Isolation)")
    for d in stack.domains:
        if stack.existing_cluster:
            key, value, _ = d.taint
            out.append(f"isolation domain {d.name} on a cluster made elsewhere: the stack makes its queues, flavors and guard, "
                       f"not its nodes. Its head pool ({ROLE_LABEL}={HEAD_ROLE}) and the pools of {', '.join(d.groups)} must carry "
                       f"{key}={value} as a label and a NoSchedule taint and run as a node service account of their own, "
                       f"behind firewall rules of their own, and its runs write gs://{d.bucket_name} and "
                       f"gs://{d.artifacts_bucket_name}, granted to that account only (docs/teams.md, Isolation)")
        if len(d.teams) > 1:
            out.append(f"teams {', '.join(d.teams)} share isolation domain {d.name}: its nodes and identity, so they trust "
                       "each other; give each its own domain where they must not")
    return out
