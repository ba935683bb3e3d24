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
