"""What a resource waits for, when some of it is made by a remote component (a helm.v4.Chart).

A Chart is a component the Kubernetes provider builds: the policy analyzer does not list components, so a
dependency on the Chart alone is invisible to the policy pack under the real engine, and says nothing about
which of its objects (the CRD, the controller's Deployment, the webhook configurations) come first. The
Chart's `resources` output lists those objects: depending on them waits for each (Pulumi awaits a
Deployment until it is available) and shows the policy pack the CRD among the dependencies."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

import pulumi

# a resource, or a Chart's `resources` (Output[Sequence[Resource] | None] in the SDK's typing)
Dependency = Union[pulumi.Resource, pulumi.Output[Optional[Sequence[Any]]]]


def all_of(deps: Iterable[Dependency]) -> pulumi.Output[list[pulumi.Resource]]:
    """One `depends_on` value for resources and lists of resources (a Chart's `resources`): every resource
    in them, and the Charts themselves (an output carries the resource it came from)."""
    parts = [d.apply(lambda rs: list(rs or [])) if isinstance(d, pulumi.Output) else pulumi.Output.from_input([d]) for d in deps]
    return pulumi.Output.all(*parts).apply(lambda lists: [r for rs in lists for r in rs])
