"""Pathways images pinned to jax-<version>, one tag across RM, proxy and workers, the sidecar's JAX
equal to it; no `latest` and no untagged image anywhere."""

import re

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from components.manifests.jobset import SIDECAR_CONTAINER
from components.model.config import is_pinned
from policies.rules.common import WORKLOAD_TYPES, containers, get, pod_specs

PATHWAYS_IMAGE = re.compile(r"/pathways/(server|proxy_server):(?P<tag>[^@/]+)$")
SIDECAR_JAX = re.compile(r"-jax_(?P<v>[0-9.]+)$")


def _validate(args: StackValidationArgs, report) -> None:
    pathways_tags: dict[str, str] = {}
    sidecars: list[tuple[str, str, str]] = []
    for js in (r for r in args.resources if r.resource_type in WORKLOAD_TYPES):
        name = f"{js.resource_type.rsplit(':', 1)[-1]} {get(js.props, 'metadata.name')}"
        for _, pod in pod_specs(js.props):
            for c in containers(pod):
                image = c.get("image", "")
                if not is_pinned(image):
                    report(f"{name} container {c.get('name')} uses {image!r}; pin an explicit tag or digest", js.urn)
                    continue
                m = PATHWAYS_IMAGE.search(image)
                if m:
                    if not re.fullmatch(r"jax-[0-9]+\.[0-9]+(\.[0-9]+)?", m.group("tag")):
                        report(f"{name} uses Pathways image {image!r}; tag it jax-<version> matching the program's JAX", js.urn)
                    pathways_tags.setdefault(m.group("tag"), js.urn)
                elif c.get("name") == SIDECAR_CONTAINER:
                    sidecars.append((name, image, js.urn))
    if len(pathways_tags) > 1:
        for urn in pathways_tags.values():
            report(f"Pathways images use several tags ({', '.join(sorted(pathways_tags))}); use one jax-<version> everywhere", urn)
    if len(pathways_tags) == 1:
        (tag,) = pathways_tags
        for name, image, urn in sidecars:
            m = SIDECAR_JAX.search(image)
            if not m or f"jax-{m.group('v')}" != tag:
                report(f"{name}: colocated-Python sidecar {image!r} does not match Pathways {tag}; rebuild it for that JAX", urn)


pinned_images = StackValidationPolicy(
    name="pathways-images-pinned",
    description="Pathways images are tagged jax-<version>, one tag for RM, proxy and workers, the sidecar built for the same JAX; no latest or untagged images.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_validate,
)
