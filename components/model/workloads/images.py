"""Container image references: what the stack accepts as pinned, and the tags and proxy images it derives from them."""

from __future__ import annotations

import re
from typing import Optional

PATHWAYS_REGISTRY = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways"
# An image reference as the registry API writes it (distribution/reference grammar, simplified):
# [host[:port]/]path[:tag][@sha256:<64 hex>], path components lowercase.
_IMAGE_REF = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?"
)


def is_pinned(image: str) -> bool:
    """A well-formed reference with a full @sha256 digest, or an explicit tag that is not `latest`."""
    if not _IMAGE_REF.fullmatch(image):
        return False
    if "@" in image:
        return True  # the grammar admits only @sha256:<64 hex>
    tag = image_tag(image)
    return tag is not None and tag != "latest"


def check_pinned_image(image: str) -> str:
    if len(image) > 512 or not _IMAGE_REF.fullmatch(image):
        raise ValueError(f"{image[:80]!r} is not an image reference; use [registry/]path:tag or path@sha256:<64 hex digits>")
    if not is_pinned(image):
        raise ValueError(f"{image!r} is not pinned; give an explicit tag (not latest) or a @sha256 digest")
    return image


def image_tag(image: str) -> Optional[str]:
    """The tag of an image reference (also in name:tag@sha256:...), or None (digest only / no tag)."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def derived_proxy_image(server_image: str) -> Optional[str]:
    """.../server:T -> .../proxy_server:T; None where no same-release proxy can be named (a digest
    names one image, and a path not ending in /server has no known proxy beside it)."""
    if "@" in server_image:
        return None
    name, _, tag = server_image.rpartition(":")
    if not tag or "/" in tag or not name.endswith("/server"):
        return None
    return f"{name[: -len('server')]}proxy_server:{tag}"


# Pathways releases (server and proxy_server images, tagged jax-<version>) that public sources show in use. Google
# publishes no list: "Each Pathways release clearly specifies the compatible JAX versions through a tag of the form
# jax-<version>" (Google, "Port JAX workloads to Pathways", JAX versioning, 2026-04-06), and its own tools default to
# :latest (xpk src/xpk/commands/workload.py, Cluster Toolkit gke_job_orchestrator.go, pathwaysutils jobset.py). A tag
# found nowhere (jax-0.7.2 and jax-0.11.2, once in this project's examples, among them) may not exist: the plan says so.
PATHWAYS_TAG_SOURCES = {
    "jax-0.5.1": "apple/axlearn axlearn/cloud/gcp/pathways_utils.py @a6fb221b (2025-04-29)",
    "jax-0.5.3": "Google's GKE tutorial 'Serve an LLM using multi-host TPUs with JetStream and Pathways' (2026-04-10)",
    "jax-0.8.0": "AI-Hypercomputer/pathways-utils shared_pathways_service/yamls/pw-proxy.yaml @073335fb (2025-12-11)",
    "jax-0.9.0": "AI-Hypercomputer/pathways-utils deploy_pathways_service.py, its default since c2a9fe0e (2026-04-13)",
    "jax-0.9.2": "samos123/pathways-cli src/pwy/templates.py @2e107507 (2026-05-31; a personal repository)",
    "jax-0.10.0": "samos123/pathways-cli src/pwy/templates.py @a00af3d5 (2026-05-31; a personal repository)",
}


def unsourced_pathways_tags(images: list[str]) -> list[str]:
    """The jax-<version> tags of Google's Pathways images among `images` that no public source shows."""
    tags = {image_tag(i) for i in images if i.startswith(PATHWAYS_REGISTRY + "/") and "@" not in i}
    return sorted(t for t in tags if t and t.startswith("jax-") and t not in PATHWAYS_TAG_SOURCES)


def pathways_tag_notices(images: list[str]) -> list[str]:
    return [f"Pathways images :{tag}: no public source shows this release (components/model/workloads/images.py lists "
            f"those found, e.g. jax-0.9.0); confirm it exists before `pulumi up`: gcloud artifacts docker tags list "
            f"{PATHWAYS_REGISTRY}/server --filter='tags:{tag}'" for tag in unsourced_pathways_tags(images)]
