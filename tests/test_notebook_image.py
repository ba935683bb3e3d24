"""A notebook image that matches the stack: the recipe (infra/images/notebook) pins JupyterLab, jax and pathwaysutils
in a hash-checked lock, its tag names the recipe's hash, `submit --notebook` uses it by default, and a stack that
takes runs on another jax fails here (and is refused by submit) until the recipe is re-locked for it."""

from __future__ import annotations

import re

import pytest
import yaml

from components.manifests.jobset import ROOTLESS
from infra import notebook_image
from infra.run.__main__ import main as run_main
from tests.conftest import STACKS, every_stack, example_path, stack_config, stack_model

RUN_STACKS = [s for s in STACKS if stack_model(s).runs is not None]


def test_the_lock_pins_every_package_with_hashes():
    pins = notebook_image.pins()
    assert {"jax", "jaxlib", "pathwaysutils", "jupyterlab"} <= set(pins)
    assert pins["jax"] == pins["jaxlib"]
    text = notebook_image.LOCK.read_text()
    entries = re.findall(r"^[A-Za-z0-9_.-]+==[^\n]*(?:\n[ \t]+[^\n]*)*", text, re.M)
    assert len(entries) == len(pins) > 50 and all("--hash=sha256:" in e for e in entries)
    # no libtpu: the kernel reaches the TPUs through the run's IFRT proxy
    assert not any(name.startswith("libtpu") for name in pins)


@every_stack("stack", RUN_STACKS)
def test_each_stack_that_takes_runs_runs_the_jax_the_recipe_pins(stack):
    version = stack_config(stack).get("pathways:pathwaysVersion")
    assert version == f"jax-{notebook_image.pins()['jax']}", (
        f"stack {stack} runs {version}, the notebook image jax {notebook_image.pins()['jax']}: re-lock infra/images/notebook "
        "for it (make notebook-lock)")


def test_the_dockerfile_installs_exactly_the_lock_as_the_runs_user():
    dockerfile = (notebook_image.RECIPE / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)$", dockerfile, re.M)
    assert re.fullmatch(r"python:3\.11-slim-bookworm(@sha256:[0-9a-f]{64})?", base)
    assert "--require-hashes --no-deps -r /tmp/requirements.lock" in dockerfile
    assert f"USER {ROOTLESS['runAsUser']}:{ROOTLESS['runAsGroup']}" in dockerfile
    build = yaml.safe_load((notebook_image.RECIPE / "cloudbuild.yaml").read_text())
    assert build["images"] == ["${_IMAGE}"] and "${_IMAGE}" in build["steps"][0]["args"]


def test_the_tag_names_the_recipe_so_a_new_lock_is_a_new_tag(tmp_path, monkeypatch):
    before = notebook_image.tag()
    assert before.startswith(f"jax-{notebook_image.pins()['jax']}-")
    for name in ("requirements.lock", "Dockerfile"):
        (tmp_path / name).write_bytes((notebook_image.RECIPE / name).read_bytes())
    monkeypatch.setattr(notebook_image, "RECIPE", tmp_path)
    monkeypatch.setattr(notebook_image, "LOCK", tmp_path / "requirements.lock")
    assert notebook_image.tag() == before
    (tmp_path / "requirements.lock").write_text((tmp_path / "requirements.lock").read_text() + "\n")
    assert notebook_image.tag() != before


def test_submit_notebook_uses_the_stacks_image_by_default(capsys):
    assert run_main(["submit", "--config", str(example_path("dev")), "--name", "nb", "--notebook", "--dry-run"]) == 0
    images = re.findall(r"image: (\S+)", capsys.readouterr().out)
    assert f"us-east5-docker.pkg.dev/pathways-dev-123/pathways/notebook:{notebook_image.tag()}" in images
    assert run_main(["notebook-image", "--config", str(example_path("dev"))]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == f"us-east5-docker.pkg.dev/pathways-dev-123/pathways/notebook:{notebook_image.tag()}"
    assert "gcloud builds submit infra/images/notebook --config infra/images/notebook/cloudbuild.yaml" in err


def test_a_stack_on_another_jax_is_told_instead_of_given_a_mismatched_kernel(tmp_path, capsys):
    other = tmp_path / "Pulumi.other.yaml"
    doc = yaml.safe_load(example_path("dev").read_text())
    doc["config"]["pathways:pathwaysVersion"] = "jax-0.8.1"
    other.write_text(yaml.safe_dump(doc))
    assert run_main(["submit", "--config", str(other), "--name", "nb", "--notebook", "--dry-run"]) == 2
    assert ("error: the notebook recipe (infra/images/notebook) pins jax 0.9.0, and stack other runs jax-0.8.1: give --image "
            "with JupyterLab and jax 0.8.1, or re-lock the recipe for it (make notebook-lock)") in capsys.readouterr().err
    # an image of its own is taken as given
    assert run_main(["submit", "--config", str(other), "--name", "nb", "--notebook", "--dry-run", "--image", "example.com/nb:1"]) == 0


@pytest.mark.parametrize("module", ["jax", "pathwaysutils"])
def test_the_docs_name_the_pins(module):
    runs = (notebook_image.RECIPE.parents[2] / "docs" / "runs.md").read_text()
    assert f"{module}=={notebook_image.pins()[module]}" in runs
