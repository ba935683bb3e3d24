"""Every Kubernetes object the stack makes is made by one resource (#76.2): two resources of one API group, kind,
namespace and name are one object on the API server, which both would apply (server-side apply: the second's
fields conflict, or it silently takes the first's object and deletes it with its own). Refused naming both owners.

Held on the whole stack — controllers' charts, teams, runs' access, serving — as the engine sees it, so it holds
under `pulumi preview --policy-pack policies` as offline. Patches (`...Patch` kinds) edit an object on purpose and
are left out; a name the engine does not know yet (computed) or auto-named cannot clash and is skipped.
"""

from __future__ import annotations

from typing import Any, Mapping

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from policies.rules.common import get

PREFIX = "kubernetes:"


def identity(resource_type: str, props: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    """(API group, kind, namespace, name) of a Kubernetes object, or None for what is no single named object."""
    if not resource_type.startswith(PREFIX) or resource_type.endswith(("Patch", "List")):
        return None
    module, _, kind = resource_type[len(PREFIX):].rpartition(":")
    group = module.rpartition("/")[0]  # core/v1 -> core, kueue.x-k8s.io/v1beta2 -> kueue.x-k8s.io (versions are one object)
    name = get(props, "metadata.name")
    if not isinstance(name, str) or not name or group in ("helm.sh", "yaml", "kustomize"):
        return None  # components (Chart, ConfigGroup), computed or auto-named
    namespace = get(props, "metadata.namespace")
    return group, kind, namespace if isinstance(namespace, str) else "", name


def _validate(args: StackValidationArgs, report) -> None:
    first: dict[tuple[str, str, str, str], str] = {}
    for r in args.resources:
        key = identity(r.resource_type, r.props)
        if key is None:
            continue
        if key in first:
            group, kind, namespace, name = key
            where = f" in namespace {namespace}" if namespace else ""
            report(f"{kind} {name}{where} ({group}) is made by two resources, {first[key]} and {r.urn}: one object "
                   "on the API server, which both would apply; give one of them another name", r.urn)
        else:
            first[key] = r.urn


unique_objects = StackValidationPolicy(
    name="pathways-unique-kubernetes-objects",
    description="Each Kubernetes object (API group, kind, namespace, name) is made by one resource of the stack.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
