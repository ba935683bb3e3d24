"""Every quantity the stack writes is in the form the API server stores (k8s.io/apimachinery resource.Quantity's
canonical form): anything else ("0Gi" for "0", "1000m" for "1") is a change on every `pulumi preview`, the
perpetual diff the real-engine tier found on a serving-only stack's ClusterQueue."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from components.model.quantity import canonical
from infra.offline.render import manifests
from tests.conftest import STACKS, config_with, plan_of, stack_plan

QUANTITY_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit", "sizeLimit"}


def quantities(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("requests", "limits") and isinstance(v, dict):
                yield from ((f"{path}.{k}.{r}", q) for r, q in v.items())
            elif k in QUANTITY_KEYS and isinstance(v, (str, int)):
                yield f"{path}.{k}", v
            else:
                yield from quantities(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from quantities(v, f"{path}[{i}]")


VARIANTS = {
    "serve-only": config_with(slices=[{"name": "serve", "tpu": "v6e-16", "count": 2}], pathwaysVersion="jax-0.11.2", workloads=[
        {"name": "llama", "mode": "serve", "serve": {"replicas": 2, "model": "meta-llama/Llama-3.1-8B-Instruct",
                                                    "weights": "gs://test-models/llama3.1-8b"}}]),
    "serve-jetstream": config_with(slices=[{"name": "serve", "tpu": "v6e-16", "count": 2}], pathwaysVersion="jax-0.5.3", workloads=[
        {"name": "llama", "mode": "serve", "serve": {"engine": "jetstream", "replicas": 2, "model": "llama3.1-8b",
                                                    "weights": "gs://test-models/llama3.1-8b"}}]),
    "kueue-off": config_with(pathwaysVersion="jax-0.9.0", kubernetes={"kueue": {"enabled": False}},
                             workloads=[{"name": "train", "image": "example.com/t:1", "slices": 1}]),
}


@pytest.mark.every_stack
@pytest.mark.parametrize("name", [*STACKS, *VARIANTS])
def test_every_quantity_is_canonical(name):
    plan = stack_plan(name) if name in STACKS else plan_of(VARIANTS[name], name)
    found = [(f"{o['kind']}/{o['metadata']['name']}{path}", q) for o in manifests(plan) for path, q in quantities(o)]
    assert found, "no quantities found: the walk is broken"
    assert [(where, q, canonical(q)) for where, q in found if str(q) != canonical(q)] == []


def test_the_canonical_form_is_the_api_servers():
    # k8s.io/apimachinery/pkg/api/resource/quantity.go CanonicalizeBytes: zero is "0"; binary stays binary with
    # the largest exact suffix from 1024 up; decimals take the largest exponent keeping the number whole
    assert [canonical(q) for q in ("0Gi", "0", "242Gi", "1024Mi", "1536Mi", "512Mi", "1000m", "1500m", "0.5", "1000", "24", "32G")] == [
        "0", "0", "242Gi", "1Gi", "1536Mi", "512Mi", "1", "1500m", "500m", "1k", "24", "32G"]
