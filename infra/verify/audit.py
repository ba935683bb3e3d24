"""Audit: the policy pack judging the live stack (pure). A refresh preview holds, for every resource of the
state, what the cloud and the cluster hold now (the new state where the refresh found a change, the old where it
found none, nothing where it found the resource gone): those objects, as a plan, go through the same rules and
policy config as `pulumi preview` (infra/offline/policy_runner.py). A violation that appeared after deploy (a guard
binding deleted in a protected stack, a Pod Security label lowered, a bucket made public) is a finding."""

from __future__ import annotations

from typing import Any, Optional

from infra.offline.engine import Plan, Registration
from infra.offline.policy_runner import run_policies
from infra.verify.findings import Finding


def live_plan(preview: dict[str, Any], stack: str, declared: Optional[Plan] = None) -> Plan:
    """The stack as the refresh read it: each resource's live outputs (inputs where a provider has none), with the
    resource options the program declares (`declared`, its offline plan: protect, deleteBeforeReplace are options of
    the program, not state a refresh reads)."""
    options = {r.urn: r.options for r in declared.resources} if declared is not None else {}
    resources = []
    for s in preview.get("steps") or []:
        if s.get("op") == "delete":
            continue  # gone
        state = s.get("newState") or s.get("oldState") or {}
        if not state.get("type") or str(state.get("type", "")).startswith("pulumi:providers:"):
            continue
        urn = str(s.get("urn") or state.get("urn", ""))
        live = state.get("outputs") or state.get("inputs") or {}
        resources.append(Registration(
            urn=urn, type=str(state["type"]), name=urn.split("::")[-1], parent=str(state.get("parent") or ""),
            custom=bool(state.get("custom", True)), inputs=dict(live), dependencies=tuple(state.get("dependencies") or ()),
            options=options.get(urn) or {"protect": bool(state.get("protect", False))},
        ))
    return Plan(stack=stack, resources=resources)


def findings(preview: dict[str, Any], stack: str, policies: list[Any], config: Optional[dict[str, Any]] = None,
             declared: Optional[Plan] = None) -> list[Finding]:
    out = []
    for v in run_policies(live_plan(preview, stack, declared), policies, config):
        name = v.urn.split("::")[-1] if v.urn else "the stack"
        severity = "high" if v.enforcement == "mandatory" else "medium"
        out.append(Finding(severity, "audit", name, f"{v.policy} ({v.enforcement}): {v.message}",
                           f"the live object breaks a rule its plan passed: re-apply the stack (`pulumi up --refresh --stack "
                           f"{stack}`), or if the rule should give way, say so in policies/config.{stack}.json (docs/policy-pack.md)"))
    return out
