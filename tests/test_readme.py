"""The README documents what users run and every config key the model accepts."""

from pathlib import Path

from components.model.config import key_paths

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_config_key_is_in_the_reference():
    missing = [k for k in key_paths() if f"`{k}`" not in README]
    assert missing == []


def test_readme_shows_the_commands():
    for cmd in ("make plan", "make test", "make bench", "pulumi preview --policy-pack policies", "python -m infra.offline render"):
        assert cmd in README, cmd


def test_every_documented_key_is_accepted():
    # The other direction: a key the README's reference table documents must still exist in the model,
    # so the check above cannot pass by the model's key list shrinking.
    import re

    table = README.split("## Configuration reference", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(pathways:[A-Za-z0-9_.\[\]]+|gcp:[a-z]+)`", table))
    assert len(documented) > 60
    unknown = sorted(documented - set(key_paths()))
    assert unknown == []
