"""The notebook image a stack's runs use by default (infra/images/notebook): its pins, its tag and where it is pushed.

The recipe is one lock for one jax; a stack whose pathwaysVersion names another jax is told so, not handed an image
whose kernel would speak another JAX to the run's proxy (tests/test_notebook_image.py keeps the recipe and the
stacks that take runs in step)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from components.model.config import StackConfig

RECIPE = Path(__file__).resolve().parent / "images" / "notebook"
LOCK = RECIPE / "requirements.lock"
REPOSITORY = "pathways"
"""The Artifact Registry (docker) repository, in the stack's project and region, the image is pushed to."""


class NotebookImageError(ValueError):
    pass


def pins() -> dict[str, str]:
    """Package -> exact version, from the lock."""
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", LOCK.read_text(), re.M)}


def tag() -> str:
    """jax-<version>-<the recipe's hash>: a new lock or Dockerfile is a new tag, never a moved one."""
    digest = hashlib.sha256(LOCK.read_bytes() + (RECIPE / "Dockerfile").read_bytes()).hexdigest()[:12]
    return f"jax-{pins()['jax']}-{digest}"


def default_image(cfg: StackConfig) -> str:
    """<region>-docker.pkg.dev/<project>/pathways/notebook:<tag> for a stack whose jax the recipe pins."""
    jax = pins()["jax"]
    if cfg.jax_version != jax:
        raise NotebookImageError(
            f"the notebook recipe (infra/images/notebook) pins jax {jax}, and stack {cfg.stack} runs "
            f"{cfg.pathways_version or 'no pathwaysVersion'}: give --image with JupyterLab and jax {cfg.jax_version}, or "
            "re-lock the recipe for it (make notebook-lock)")
    return f"{cfg.region}-docker.pkg.dev/{cfg.project}/{REPOSITORY}/notebook:{tag()}"


def build_command(cfg: StackConfig) -> str:
    return (f"gcloud builds submit infra/images/notebook --config infra/images/notebook/cloudbuild.yaml "
            f"--substitutions=_IMAGE={default_image(cfg)} --project {cfg.project} --region {cfg.region}")
