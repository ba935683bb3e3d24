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
